"""What every pytest suite shares: the `mpiopt` command runner and the build paths.

A test that needs a build asks for the `flavours` fixture (or uses `needs_build`): on a
developer's machine without `make build` those tests are skipped, but where the build is
required (MPIOPT_REQUIRE_BUILD=1, set by .ci/run) a missing build fails them instead."""
from __future__ import annotations

import importlib.util
import contextlib
import io
import os
import re
import subprocess
import sys

import pytest

from mpiopt import dropin_report, mpi

BUILT_FLAVOURS = mpi.built_flavours()


def _open_mpi_chooses_ob1_alone() -> bool:
    """Whether Open MPI, left to choose, takes the ob1 PML here: one launch with the PML
    framework verbose, of a program of this build (its usage error after MPI_Init is enough)."""
    exe = mpi.binary("openmpi", "test-plain_lifetimes")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_MCA_pml")}
    env["OMPI_MCA_pml_base_verbose"] = "10"
    try:
        r = subprocess.run(mpi.launcher("openmpi", 1) + [str(exe), "no-case"], capture_output=True,
                           text=True, timeout=60, env=mpi.launch_env("openmpi", False, env))
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(re.search(r"selected ob1 best priority", r.stderr))


# Every Open MPI launch of the suite (over a thousand) opens each PML component to choose one;
# opening `cm`, which looks for MTL hardware (PSM2, Portals) this machine lacks, is most of a
# 2-rank MPI_Init here (0.38 s a launch, 0.15 with the choice made). Where Open MPI's own
# choice is ob1 (Debian 12's: its openmpi-mca-params.conf excludes ucx, and cm finds no MTL), the
# suite names ob1 for every job it starts: the same component, without the search. Where the
# choice differs (another MPI build, a machine with such a network) nothing is set.
if "openmpi" in BUILT_FLAVOURS and "OMPI_MCA_pml" not in os.environ and _open_mpi_chooses_ob1_alone():
    os.environ["OMPI_MCA_pml"] = "ob1"


def pytest_configure(config):
    # the tiers (Makefile): `make test` runs -m "not full"; `make test-full` runs everything
    config.addinivalue_line("markers", "full: a long run, in `make test-full` only (the README's "
                            "simulations of 1000 ranks or more, MPICH above 8 ranks and its test_coll matrix at 6-8, the tree at 33 and MPICH's at 64, MPICH's 200-communicator budget at 3 and lifetimes at 5, MPICH on 4 namespace nodes and its forced algorithms under srun)")
REQUIRE_BUILD = os.environ.get("MPIOPT_REQUIRE_BUILD", "") not in ("", "0")


def run_mpiopt(*args, cwd=None, env=None, timeout=900, input=None) -> subprocess.CompletedProcess:
    """`mpiopt ARGS…` as a user runs it: a new process, text output captured."""
    return subprocess.run([sys.executable, "-m", "mpiopt", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=timeout, input=input)


def run_mpiopt_in_process(*args, cwd=None) -> subprocess.CompletedProcess:
    """The same in this process, for the many quick calls of pure-Python commands (a new
    interpreter per call is slow on a loaded machine)."""
    from mpiopt.cli import main
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as e:      # argparse errors
                code = e.code
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


# The rank counts of `make test` (the tier rule, one place): Open MPI at every p the tests name, up
# to 17 ranks on 2 cores; MPICH, which polls while oversubscribed (3-5x Open MPI's time a run),
# up to MPICH_TEST_MAX_P. MPICH's wider runs are in `make test-full` (marker `full`).
MPICH_TEST_MAX_P = 8


def wide(flavour: str, p: int) -> bool:
    """Whether a run of `flavour` at p ranks belongs to the full tier only."""
    return flavour == "mpich" and p > MPICH_TEST_MAX_P


def rank_param(flavour: str, p: int, *rest, id: str | None = None):
    """pytest.param(flavour, p, *rest), marked `full` where wide(flavour, p)."""
    return pytest.param(flavour, p, *rest, id=id, marks=[pytest.mark.full] if wide(flavour, p) else [])


def timed_out_output(e) -> tuple[str, str]:
    """(stdout, stderr) read before a subprocess.TimeoutExpired, as text (it may hold bytes)."""
    text = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
    return text(e.stdout), text(e.stderr)


@pytest.fixture
def mpiopt():
    """The command runner: mpiopt("bench", "--help").returncode == 0."""
    return run_mpiopt


def require_build(flavour: str | None = None):
    """Skip (developer machine) or fail (MPIOPT_REQUIRE_BUILD=1) when `flavour`'s build, or
    with no flavour every build, is missing."""
    if (flavour in BUILT_FLAVOURS) if flavour else BUILT_FLAVOURS:
        return
    reason = f"{flavour or 'libmpiopt'} not built (make build)"
    if REQUIRE_BUILD:
        pytest.fail(f"{reason}; MPIOPT_REQUIRE_BUILD=1 makes this a failure")
    pytest.skip(reason)


# For tests that need some build: skipped without one, except where the build is required (then
# they run and fail on the missing build).
needs_build = pytest.mark.skipif(not BUILT_FLAVOURS and not REQUIRE_BUILD,
                                 reason="libmpiopt not built (make build)")


@pytest.fixture
def flavours():
    """The MPI flavours built here (at least one, or the test is skipped / failed)."""
    require_build()
    return list(BUILT_FLAVOURS)


# ---- MPIOPT_REPORT's table (src/coll/engine/report.c), as the tests read it ----
def report_rows(stderr: str) -> dict:
    """{entry point: (calls, by mpiopt, by vendor, details)} from the report rank 0 printed."""
    return {name: (r.calls, r.by_mpiopt, r.by_vendor, r.details)
            for name, r in dropin_report.rows(stderr).items()}


def assert_all_taken(stderr: str, kinds, details_match=None):
    """Every call of each entry point in kinds ran mpiopt's algorithms (an `_init` kind may be
    missing: an MPI without persistent collectives), details matching the regex where given."""
    rows = report_rows(stderr)
    for kind in kinds:
        if kind.endswith("_init") and kind not in rows:
            continue
        calls, by_mpiopt, _, details = rows[kind]
        assert calls > 0 and by_mpiopt == calls, (kind, rows)
        if details_match:
            assert re.search(details_match, details), (kind, details)


def assert_vendor_when_asked(r, kinds, flavour: str, calls_regex: str):
    """A plain reduction program (its FAIL lines name the call by calls_regex) run under the
    drop-in with MPIOPT_<COLLECTIVE>=vendor: every call of kinds went to the vendor and the report
    says why. On Open MPI 4.1 the program then sees the vendor's own results, whose unsigned char
    and short sums saturate (its avx op component): the control for the runs where mpiopt takes
    them and they wrap."""
    assert r.returncode == 0, r.stderr[-3000:]
    rows = report_rows(r.stderr)
    seen = [kind for kind in kinds if kind in rows]
    assert seen, rows
    for kind in seen:
        calls, _, by_vendor, details = rows[kind]
        assert by_vendor == calls > 0 and "MPIOPT_<COLLECTIVE>=vendor" in details, rows
    if flavour == "openmpi":
        wrong = re.findall(rf"^FAIL rank \d+ (?:{calls_regex}) \w+ sum (unsigned char|short) ",
                           r.stdout, re.M)
        assert {"unsigned char", "short"} <= set(wrong), r.stdout[-3000:]


def report_total(stderr: str):
    """(calls mpiopt ran, all calls) from the report's last line, or None."""
    return dropin_report.total(stderr)


def mpi4py_flavour(built=None) -> str:
    """The MPI flavour mpi4py is linked with, found without importing it (importing mpi4py.MPI
    initializes MPI in the pytest process, as an Open MPI singleton whose environment variables,
    inherited by every later mpirun the tests start, make those launches fail); skips the test
    when mpi4py is missing or linked with an MPI not in `built` (default: the built flavours)."""
    spec = importlib.util.find_spec("mpi4py.MPI") if importlib.util.find_spec("mpi4py") else None
    if spec is None or not spec.origin:
        pytest.skip("mpi4py is not installed in this Python")
    flavour = mpi.linked_flavour(spec.origin)
    if flavour is None or flavour not in (mpi.built_flavours() if built is None else built):
        pytest.skip(f"mpi4py is linked with an MPI mpiopt has no build for ({flavour})")
    return flavour


def launched_program(cmd) -> tuple[str, str]:
    """(program, ranks) of a command line: its first word's name (python -m mpiopt X:
    'mpiopt X'), and the word after -np / -n, or '' without one."""
    argv = [cmd] if isinstance(cmd, (str, bytes, os.PathLike)) else list(cmd)
    argv = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in argv]
    if not argv:
        return "?", ""
    name = os.path.basename(argv[0].split()[0]) if argv[0] else "?"
    if name.startswith("python") and argv[1:3] in (["-m", "mpiopt"], ["-m", "mpiopt.cli"]):
        name = f"mpiopt {argv[3] if len(argv) > 3 else ''}".strip()
    ranks = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-np", "-n")), "")
    return name, ranks


# ---- what the suite's programs did (tests/durations.py reads both logs):
# MPIOPT_TEST_CHECKS_LOG=FILE: every captured output of a subprocess.run in this process, lines
# with "N checks", appended with the test id (added up: the suite's checked cases, to compare two
# runs of it); MPIOPT_TEST_LAUNCHES_LOG=FILE: every subprocess.run / jobs.run, a line each with the
# test id, the program (mpirun.openmpi, smpirun, mpicc, python, ...), its ranks and its seconds:
# where a file's time goes, launch by launch ----
_CHECKS_LOG = os.environ.get("MPIOPT_TEST_CHECKS_LOG")
_LAUNCHES_LOG = os.environ.get("MPIOPT_TEST_LAUNCHES_LOG")
if _CHECKS_LOG or _LAUNCHES_LOG:
    import time as _time

    from mpiopt import jobs as _jobs
    _CHECKS_RE = re.compile(r"^(.*?\b(\d+) checks\b.*)$", re.M)

    def _counting(real):
        def run(*args, **kwargs):
            test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
            start = _time.monotonic()
            ok = False
            try:
                r = real(*args, **kwargs)
                ok = True
            finally:
                if _LAUNCHES_LOG:
                    name, ranks = launched_program(args[0] if args else kwargs.get("args", "?"))
                    with open(_LAUNCHES_LOG, "a") as f:
                        f.write(f"{test}\t{name}\t{ranks}\t{_time.monotonic() - start:.3f}"
                                f"\t{r.returncode if ok else 'raised'}\n")
            out = r.stdout.decode(errors="replace") if isinstance(r.stdout, bytes) else r.stdout
            found = _CHECKS_RE.findall(out or "") if _CHECKS_LOG and isinstance(out, str) else []
            if found:
                with open(_CHECKS_LOG, "a") as f:
                    for line, n in found:
                        f.write(f"{test}\t{n}\t{line.strip()}\n")
            return r
        return run

    # the tests' own launches, and mpiopt's (mpi.run and the commands start jobs by jobs.run)
    subprocess.run = _counting(subprocess.run)
    _jobs.run = _counting(_jobs.run)
