"""mpiopt built against the MPI standard ABI (MPI 5.0's mpi_abi.h; `make build-abi`: build/abi,
flavour `abi`; docs/install-abi.md): the configure check left the Fortran entry points out and
kept every C one, and the drop-in's C programs (tests/c/plain_*.c, dropin_allreduce.c: unmodified
MPI programs, preloaded) pass with the ABI library that built them, launched by its own mpiexec
(the one CMake recorded, MPIOPT_MPIEXEC), at 1 to 3 ranks. Every run has MPIOPT_REPORT=1 and must
show mpiopt running reductions: a library that did not load, or took nothing, fails.

Runs where build/abi is built. Where it is not, skipped; under MPIOPT_REQUIRE_BUILD=1 a failure
when an MPI with mpicc_abi is installed under build/mpis (`make test` then builds build/abi).
An mpi4py linked with libmpi_abi (PyPI's mpi4py 4.1 wheels carry none: docs/install-abi.md) is
tested where MPIOPT_ABI_PYTHON names a Python that imports one."""
import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import REQUIRE_BUILD, report_rows, report_total
from mpiopt import mpi
from test_kernels import C_EXPECTED, parse_pairs
from test_user_op import other_thread_calls

ROOT = mpi.repo_root()
BUILD = mpi.build_dir("abi")
LIB = BUILD / "lib" / "libmpiopt.so"


def _cache(name: str) -> str | None:
    cache = BUILD / "CMakeCache.txt"
    if not cache.exists():
        return None
    m = re.search(rf"^{name}:[A-Z]+=(.*)$", cache.read_text(errors="replace"), re.M)
    return m.group(1) if m else None


@pytest.fixture(scope="module")
def abi():
    """(the build's C compiler, its launcher) of build/abi; skip or fail where it is not built."""
    if not LIB.exists():
        wrappers = sorted((ROOT / "build" / "mpis").glob("*/bin/mpicc_abi"))
        reason = "build/abi not built (make build-abi)"
        if REQUIRE_BUILD and wrappers:
            pytest.fail(f"{reason}, though {wrappers[0]} is installed; MPIOPT_REQUIRE_BUILD=1 "
                        "makes this a failure")
        pytest.skip(reason)
    cc, mpiexec = _cache("CMAKE_C_COMPILER"), _cache("MPIOPT_MPIEXEC")
    assert cc and mpiexec and Path(mpiexec).exists(), (cc, mpiexec)
    return Path(cc), Path(mpiexec)


def launch(abi, np, argv, preload=True, env=None, timeout=180, lib=LIB):
    """Runs argv at np ranks with the ABI build's own mpiexec (its bin/ first on PATH, as
    Hydra starts its proxies by name), libmpiopt preloaded, MPIOPT_REPORT=1."""
    mpiexec = abi[1]
    full = dict(os.environ, MPIOPT_REPORT="1")
    full.update(env or {})
    full["PATH"] = f"{mpiexec.parent}:{full.get('PATH', '')}"
    if preload:
        full["LD_PRELOAD"] = str(lib)
    else:
        full.pop("LD_PRELOAD", None)
    return subprocess.run([str(mpiexec), "-np", str(np), *map(str, argv)], capture_output=True,
                          text=True, env=full, timeout=timeout)


def ldd(path) -> str:
    return subprocess.run(["ldd", str(path)], capture_output=True, text=True).stdout


def assert_taken(r):
    """The run passed and mpiopt's report says it ran reductions."""
    total = report_total(r.stderr)
    assert r.returncode == 0 and total and total[0] > 0, r.stdout[-2000:] + r.stderr[-3000:]
    return total


def test_built_as_the_abi_without_fortran_entry_points(abi):
    assert _cache("MPIOPT_DETECTED_FLAVOUR") == "abi"
    assert _cache("MPIOPT_HAVE_MPI_FINT") in ("", "0", "FALSE", "OFF")
    libs = ldd(LIB)
    assert re.search(r"^\s*libmpi_abi\.so\S* => /", libs, re.M), libs
    assert not re.search(r"libmpi\.so\.\d|libmpich", libs), libs   # no vendor ABI beside it
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(LIB)], capture_output=True,
                             text=True, check=True).stdout
    names = {line.split()[-1] for line in symbols.splitlines() if line.strip()}
    for c in ("MPI_Allreduce", "MPI_Reduce", "MPI_Reduce_local", "MPI_Iallreduce", "MPI_Ireduce",
              "MPI_Allreduce_init", "MPI_Reduce_init", "MPI_Allreduce_c", "MPI_Scan",
              "MPI_Exscan", "MPI_Wait", "MPI_Op_create"):
        assert c in names, c
    # the Fortran entry points' names: mpi_allreduce_, MPI_ALLREDUCE, mpi_wait_f08_, … (the C
    # ones are mixed case, MPI_Allreduce)
    fortran = sorted(n for n in names if re.match(r"(mpi_[a-z0-9_]+|MPI_[A-Z0-9_]+)$", n))
    assert not fortran, fortran[:10]


@pytest.fixture(scope="module")
def c_program(abi, tmp_path_factory):
    """tests/c/dropin_allreduce.c built by the ABI's own wrapper: a program that knows nothing
    of mpiopt and links libmpi_abi alone."""
    exe = tmp_path_factory.mktemp("abi") / "dropin_allreduce"
    subprocess.run([str(abi[0]), "-O2", "-o", str(exe), str(ROOT / "tests/c/dropin_allreduce.c")],
                   check=True)
    libs = ldd(exe)
    assert "libmpi_abi.so" in libs and "mpiopt" not in libs, libs
    return exe


@pytest.mark.parametrize("algorithms", [("auto", "auto"), ("rabenseifner", "ring")])
def test_c_program(abi, c_program, algorithms):
    env = {"MPIOPT_VERBOSE": "1", "MPIOPT_ALLREDUCE": algorithms[0], "MPIOPT_REDUCE": algorithms[1]}
    r = launch(abi, 3, [c_program], env=env)
    assert "dropin: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    assert_taken(r)
    for call, alg in (("allreduce", algorithms[0]), ("reduce", algorithms[1])):
        lines = [l for l in r.stderr.splitlines() if l.startswith(f"mpiopt: {call} ")]
        assert lines, r.stderr[-2000:]
        if alg != "auto":
            assert all(l.endswith(": " + alg) for l in lines), lines


def test_c_program_without_preload_is_the_vendors(abi, c_program):
    r = launch(abi, 2, [c_program], preload=False, env={"MPIOPT_VERBOSE": "1"})
    assert r.returncode == 0 and "dropin: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    assert report_total(r.stderr) is None and "mpiopt:" not in r.stderr


# (program, ranks, arguments, environment): the runs of the drop-in's C programs, each as its own
# test file runs it for the Debian MPIs
PLAIN = [
    ("plain_nonblocking", 3, ["1000", "free-active"], {}),
    ("plain_nonblocking", 2, ["70000"], {"MPIOPT_ALLREDUCE": "ring", "MPIOPT_REDUCE": "binomial"}),
    *[("plain_lifetimes", 3, [case], {}) for case in
      ("op", "type", "comm", "fresh", "persistent", "errors", "threads", "idup", "order")],
    ("plain_lifetimes", 2, ["persistent"], {"MPIOPT_ALLREDUCE": "recursive_doubling"}),
    ("plain_large_count", 2, [], {"MPIOPT_ALLREDUCE": "ring", "MPIOPT_REDUCE": "ring"}),
    ("plain_scan", 3, ["20001"], {}),
    ("plain_many_comms", 2, ["live", "200", "65536"], {}),
]


@pytest.mark.parametrize("program,np,args,env", PLAIN,
                         ids=[f"{p}-{'-'.join(a) or 'np' + str(n)}" for p, n, a, _ in PLAIN])
def test_plain_program(abi, program, np, args, env):
    r = launch(abi, np, [BUILD / "bin" / f"test-{program}", *args], env=env)
    assert re.search(r"\b0 failures", r.stdout), r.stdout[-2000:] + r.stderr[-3000:]
    assert_taken(r)


def test_report_counts_every_call(abi):
    p = 2
    r = launch(abi, p, [BUILD / "bin" / "test-plain_report"],
               env={"MPIOPT_ALLREDUCE": "binomial", "MPIOPT_REDUCE": "binomial"})
    assert " 0 failures" in r.stdout, r.stdout + r.stderr[-3000:]
    rows = report_rows(r.stderr)
    # as test_report.py: 5 allreduces of mpiopt's a rank, one with holes and one on an
    # intercommunicator the vendor's; the two nonblocking and the reduce mpiopt's
    assert rows["MPI_Allreduce"][:3] == (p * 7, p * 5, p * 2), r.stderr
    assert rows["MPI_Iallreduce"][:3] == (2 * p, 2 * p, 0)
    assert rows["MPI_Reduce"][:3] == (p, p, 0)
    assert rows["MPI_Reduce_local"][:3] == (2 * p, p, p)


def test_scan_every_form_is_mpiopts(abi):
    r = launch(abi, 2, [BUILD / "bin" / "test-plain_scan", "3001"])
    assert " 0 failures" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]
    rows = report_rows(r.stderr)
    for kind in ("MPI_Scan", "MPI_Exscan", "MPI_Iscan", "MPI_Iexscan", "MPI_Scan_init",
                 "MPI_Exscan_init"):
        calls, by_mpiopt, _, details = rows[kind]
        # blocking: auto's shared memory at p = 2; the schedules: recursive doubling
        expected = "shared_memory" if kind in ("MPI_Scan", "MPI_Exscan") else "recursive_doubling"
        assert calls > 0 and by_mpiopt == calls and expected in details, (kind, rows)


def test_reduce_local_is_mpiopts(abi):
    r = launch(abi, 1, [BUILD / "bin" / "test-plain_reduce_local"])
    assert_taken(r)
    # the report's lines are on stderr: stdout is the program's pairs alone
    assert parse_pairs(r.stdout) == C_EXPECTED


def test_threaded_user_ops(abi):
    r = launch(abi, 3, [BUILD / "bin" / "test-plain_user_op"],
               env={"MPIOPT_USER_OP_THREADS": "2", "MPIOPT_THREAD_MIN_BYTES": "0"}, timeout=240)
    assert r.returncode == 0 and "user_op: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    commutative, ordered = other_thread_calls(r.stdout)
    assert commutative > 0 and ordered == 0


def test_profiler_with_the_dropin(abi, tmp_path):
    """libmpiopt-profile of the same build in front of the drop-in: exact bytes of a ring."""
    nranks, nbytes, iters = 3, 1000, 5
    lib = f"{BUILD / 'lib' / 'libmpiopt-profile.so'}:{LIB}"
    r = launch(abi, nranks, [BUILD / "bin" / "test-plain_profile_check", "ring", nbytes, iters],
               env={"MPIOPT_PROFILE_DIR": str(tmp_path), "MPIOPT_REPORT": "0"}, lib=lib)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    data = json.loads((tmp_path / "mpiopt-profile.json").read_text())
    assert data["flavour"] == "abi"
    call = data["calls"]["MPI_Sendrecv"]
    assert call["calls"]["min"] == call["calls"]["max"] == iters
    assert call["bytes"]["min"] == call["bytes"]["max"] == nbytes * iters


MPI4PY_PROGRAM = textwrap.dedent("""
    from array import array
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    n = 70000
    a = array('d', (rank + i for i in range(n)))
    b = array('d', bytes(8 * n))
    comm.Allreduce(a, b, op=MPI.SUM)
    ok = all(b[i] == p * (p - 1) / 2 + p * i for i in range(0, n, 97))
    x, y = array('i', [rank]), array('i', [0])
    comm.Reduce(x, y, op=MPI.SUM, root=p - 1)
    if rank == p - 1:
        ok = ok and y[0] == p * (p - 1) // 2
    comm.Scan(x, y, op=MPI.SUM)
    ok = ok and y[0] == rank * (rank + 1) // 2
    comm.Iallreduce(x, y, op=MPI.MAX).Wait()
    ok = ok and y[0] == p - 1
    oks = comm.allgather(ok)
    if rank == 0:
        print("mpi4py abi:", "ok" if all(oks) else "FAILED", MPI.Get_library_version().split(chr(10))[0])
""")


def test_mpi4py_on_the_abi(abi, tmp_path):
    """An mpi4py built against the ABI (MPIOPT_ABI_PYTHON: a Python importing it; docs/
    install-abi.md says how to build one): its Allreduce, Reduce, Scan and Iallreduce are
    mpiopt's (mpi4py 4 on an MPI-4 library calls the large-count _c forms)."""
    python = os.environ.get("MPIOPT_ABI_PYTHON")
    if not python:
        pytest.skip("MPIOPT_ABI_PYTHON not set (no mpi4py wheel on PyPI carries an ABI extension)")
    origin = subprocess.run([python, "-c", "import importlib.util as u; "
                             "print(u.find_spec('mpi4py.MPI').origin)"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert "libmpi_abi.so" in ldd(origin), f"{origin} does not link libmpi_abi"
    script = tmp_path / "prog.py"
    script.write_text(MPI4PY_PROGRAM)
    r = launch(abi, 3, [python, script])
    assert "mpi4py abi: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    rows = report_rows(r.stderr)
    for call in ("MPI_Allreduce", "MPI_Reduce", "MPI_Scan", "MPI_Iallreduce"):
        calls = [v for k, v in rows.items() if re.match(rf"{call}(_c)?$", k)]   # _c: MPI-4's door
        assert calls and sum(c[1] for c in calls) > 0, (call, rows)
