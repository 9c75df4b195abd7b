"""The drop-in never crashes a correct MPI program: tests/c/plain_lifetimes.c under every algorithm
and `auto`, both MPIs, 1 to 5 ranks. Cases that must pass run as a list in one job (a launch
costs more than most cases; each case prints its own line, and every one must say 0 failures);
the controls, which must fail, run one case a job.

- lifetimes: a user op, a derived datatype or a communicator freed between start and wait while
  other collectives (likely reusing the freed handle) start and complete; persistent requests
  restarted with new contents and freed while active;
- errors: every bad argument under MPI_ERRORS_RETURN and a counting user handler, blocking,
  nonblocking and persistent;
- threads: MPI_THREAD_MULTIPLE with a communicator a thread;
- progress: MPI_Comm_idup's beside MPI_Iallreduce (the shape that hung), vendor and mpiopt
  collectives completed in reverse order around blocking point-to-point.

The control: with MPIOPT_DEFER_FREES=0 (schedules hold nothing) the op and communicator cases
must fail on both MPIs (and the datatype case on MPICH, which reuses the freed handle at once):
the lifetime cases can fail. One MPI runs the lifetime cases under valgrind, which must report no
invalid read, write or jump."""
import os
import re
import shutil
import subprocess
import time

import pytest

from mpiopt import algorithms, jobs, mpi
from conftest import report_rows, require_build, timed_out_output

LIFETIME_CASES = ("op", "type", "comm", "persistent")
# the controls' floor for "a hang counts as failing" (seconds; each uses ten times its passing run)
CONTROL_MIN_TIMEOUT = 5
# a control expected to fail: Open MPI 4.1's mpirun waits odls_base_sigkill_timeout (1 s, and
# again) after a rank dies before it exits itself; 0 ends the job at once (2.4 s -> 0.4 s a run)
FAILING_RUN_ENV = {"OMPI_MCA_odls_base_sigkill_timeout": "0"}


def every_algorithm(flavour):
    return ["auto", *algorithms.names(flavour, kinds=("mpiopt",))]


def run_case(flavour, p, case, env=None, timeout=120, wrapper=(), count=None):
    """(returncode or None on a timeout, stdout, stderr) of one case under the drop-in. A hung run
    ends whole (jobs.run: every process of its session, Open MPI's ranks in their own process
    groups included), so no rank is left spinning through the rest of the suite."""
    exe = mpi.binary(flavour, "test-plain_lifetimes")
    argv = [*wrapper, str(exe), case] + ([str(count)] if count else [])
    cmd = mpi.launcher(flavour, p) + argv
    try:
        r = jobs.run(cmd, capture_output=True, text=True, timeout=timeout,
                     env=mpi.launch_env(flavour, True, dict(os.environ, **(env or {}))))
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        return (None, *timed_out_output(e))


def forced(alg):
    return {} if alg == "auto" else {"MPIOPT_ALLREDUCE": alg, "MPIOPT_REDUCE": alg}


def assert_passed(result, what, cases=None):
    """The run exited 0 and each of its cases (a comma-separated list: each its own line)
    printed 0 failures."""
    rc, out, err = result
    said = dict(re.findall(r"^lifetimes (\w+): \d+ checks, (\d+) failures$", out, re.M))
    expected = cases.split(",") if cases else list(said) or ["?"]
    assert rc == 0 and all(said.get(c) == "0" for c in expected), \
        f"{what}: rc={rc}\n{out[-1500:]}\n{err[-3000:]}"


# MPICH at p = 5 (17 s of ranks polling on 2 cores) in the full tier; its p = 3 in `make test`
@pytest.mark.parametrize("flavour,p", [pytest.param(f, p, id=f"{f}-{p}",
                                                    marks=[pytest.mark.full] if (f, p) == ("mpich", 5) else [])
                                       for f in mpi.FLAVOURS for p in (1, 2, 3, 5)])
def test_lifetimes_every_algorithm(flavour, p):
    require_build(flavour)
    cases = ",".join(LIFETIME_CASES)
    for alg in every_algorithm(flavour):
        assert_passed(run_case(flavour, p, cases, forced(alg)), f"{cases} p={p} {alg}", cases)


@pytest.mark.parametrize("p", [2, 3])
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_nonblocking_first_on_a_communicator_freed_before_the_wait(flavour, p):
    """Issue 37: MPI_Iallreduce / MPI_Ireduce as the first call on a fresh MPI_Comm_dup, freed
    before MPI_Wait (two at once, started in opposite orders on even and odd ranks): exact under
    every algorithm, and mpiopt's schedule ran every one (the communicator's record is made by
    MPI_Comm_dup). The control: Open MPI 4.1's own (MPIOPT_ALLREDUCE=vendor) crashes here."""
    require_build(flavour)
    for alg in every_algorithm(flavour):
        result = run_case(flavour, p, "fresh", dict(forced(alg), MPIOPT_REPORT="1"))
        assert_passed(result, f"fresh p={p} {alg}")
        rows = report_rows(result[2])
        for call in ("MPI_Iallreduce", "MPI_Ireduce"):
            assert call in rows and rows[call][1] == rows[call][0] > 0, (alg, call, result[2][-2000:])
    if flavour == "openmpi":
        rc, out, err = run_case(flavour, p, "fresh", dict(forced("vendor"), **FAILING_RUN_ENV),
                                timeout=60)
        assert rc != 0, f"Open MPI's own passed the fresh case: the control shows nothing\n{out}"


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_error_classes_every_algorithm(flavour, p):
    """The standard's classes, raised once through the communicator's handler, whether or not
    mpiopt's algorithm would have run (vendor included: MPICH 4.0.2 alone crashes on a negative
    count under MPI_ERRORS_RETURN)."""
    require_build(flavour)
    for alg in ["vendor", *every_algorithm(flavour)]:
        assert_passed(run_case(flavour, p, "errors", forced(alg)), f"errors p={p} {alg}")


@pytest.mark.parametrize("p", [2, 3])
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_thread_multiple_separate_communicators(flavour, p):
    """Three threads, each starting, waiting for and completing its own collectives, the scans
    and reduce-scatters among them: the nonblocking ones are mpiopt's schedules (MPIOPT_REPORT
    shows none handed to the vendor)."""
    require_build(flavour)
    for alg in ("auto", "binomial", "rabenseifner", "ring"):
        env = dict(forced(alg), MPIOPT_REPORT="1")
        result = run_case(flavour, p, "threads", env, count=1001)
        assert_passed(result, f"threads p={p} {alg}")
        rows = report_rows(result[2])
        for call in ("MPI_Iallreduce", "MPI_Ireduce", "MPI_Scan", "MPI_Iexscan",
                     "MPI_Reduce_scatter_block", "MPI_Ireduce_scatter"):
            assert call in rows and rows[call][1] == rows[call][0] > 0, (alg, call, result[2][-2000:])


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_progress_with_vendor_collectives(flavour):
    require_build(flavour)
    cases = "idup,order"
    for p in (2, 3, 4):
        algs = every_algorithm(flavour) if p == 3 else ["auto"]
        for alg in algs:
            assert_passed(run_case(flavour, p, cases, forced(alg), timeout=90),
                          f"{cases} p={p} {alg}", cases)


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_control_without_deferral_lifetime_cases_fail(flavour):
    """The lifetime cases can fail: with the deferral off they do (wrong results, a crash or a
    hang), on the same algorithm that passes above."""
    require_build(flavour)
    env = dict(forced("ring"), MPIOPT_DEFER_FREES="0", **FAILING_RUN_ENV)
    must_fail = ["op", "comm"] + (["type"] if flavour == "mpich" else [])
    for case in must_fail:
        start = time.monotonic()
        assert_passed(run_case(flavour, 3, case, forced("ring")), f"{case} with deferral")
        # a hang counts as failing: ten times what the case just took with the deferral (under
        # the same load), at least CONTROL_MIN_TIMEOUT s (Open MPI's comm case hangs)
        timeout = max(CONTROL_MIN_TIMEOUT, 10 * (time.monotonic() - start))
        rc, out, err = run_case(flavour, 3, case, env, timeout=timeout)
        assert rc != 0, f"{case} passed with MPIOPT_DEFER_FREES=0:\n{out}"


def test_lifetimes_under_valgrind():
    """No use after free in the lifetime cases (MPICH, np 2): valgrind reports every invalid read,
    write and jump, whether or not it happens to crash."""
    require_build("mpich")
    if not shutil.which("valgrind"):
        pytest.fail("valgrind is not installed (make deps installs it)")
    cases = "op,type,comm"
    rc, out, err = run_case("mpich", 2, cases, forced("ring"), timeout=600, count=20,
                            wrapper=("valgrind", "-q", "--error-exitcode=99",
                                     "--leak-check=no", "--undef-value-errors=no"))
    assert_passed((rc, out, err), f"{cases} under valgrind", cases)
    for bad in ("Invalid read", "Invalid write", "Jump to the invalid", "Invalid free"):
        assert bad not in err, f"valgrind: {bad}\n{err[-4000:]}"


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_fortran_frees_and_errors(flavour, p):
    """The same from `use mpi` (tests/fortran/dropin_lifetimes.f90): MPI_OP_FREE and MPI_COMM_FREE
    with an allreduce pending, and bad arguments answered with the standard's classes."""
    require_build(flavour)
    exe = mpi.binary(flavour, "ftest-dropin_lifetimes")
    if not exe.exists():
        pytest.skip("no Fortran compiler in this build")
    for alg in every_algorithm(flavour):
        r = mpi.run(flavour, p, [exe], preload=True, env=dict(os.environ, **forced(alg)),
                    timeout=120)
        assert r.returncode == 0 and "flifetimes: ok" in r.stdout, \
            f"{alg}: {r.stdout[-1000:]}{r.stderr[-2000:]}"
