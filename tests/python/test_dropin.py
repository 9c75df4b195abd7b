"""LD_PRELOAD drop-in of MPI_Allreduce / MPI_Reduce into programs that know nothing of mpiopt:
a C program built with the plain mpicc, a Fortran program (`use mpi`), and an mpi4py program.
MPIOPT_VERBOSE=1 proves each call went through mpiopt (rank 0 names the algorithm per size
class); forcing algorithms with MPIOPT_ALLREDUCE / MPIOPT_REDUCE checks they really ran."""
import os
import subprocess
import sys
import textwrap

import pytest

from mpiopt import mpi
from conftest import mpi4py_flavour, require_build

ROOT = mpi.repo_root()


def built(flavour):
    require_build(flavour)


def verbose(stderr, op):
    return [l for l in stderr.splitlines() if l.startswith(f"mpiopt: {op} ")]


@pytest.fixture(scope="module", params=mpi.FLAVOURS)
def c_program(request, tmp_path_factory):
    flavour = request.param
    built(flavour)
    exe = tmp_path_factory.mktemp(flavour) / "dropin_allreduce"
    subprocess.run([f"mpicc.{flavour}", "-O2", "-o", str(exe), str(ROOT / "tests/c/dropin_allreduce.c")],
                   check=True)
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    assert "mpiopt" not in ldd   # really unmodified: only the vendor's MPI
    return flavour, exe


@pytest.mark.parametrize("algorithms", [("auto", "auto"), ("rabenseifner", "ring"),
                                        ("binary_blocks", "binomial")])
def test_c_program(c_program, algorithms):
    flavour, exe = c_program
    env = dict(os.environ, MPIOPT_VERBOSE="1", MPIOPT_ALLREDUCE=algorithms[0],
               MPIOPT_REDUCE=algorithms[1])
    r = mpi.run(flavour, 3, [exe], preload=True, env=env, timeout=180)
    assert r.returncode == 0 and "dropin: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    allreduce, reduce = verbose(r.stderr, "allreduce"), verbose(r.stderr, "reduce")
    assert allreduce and reduce, r.stderr[-2000:]
    if algorithms[0] != "auto":
        # the program's own MPI_MAX of an int is commutative: the forced algorithm runs
        assert all(l.endswith(": " + algorithms[0]) for l in allreduce), allreduce
        assert all(l.endswith(": " + algorithms[1]) for l in reduce), reduce


def test_c_program_without_preload_does_not_print(c_program):
    flavour, exe = c_program
    if flavour == "mpich":
        pytest.skip("MPICH 4.0.2 itself crashes on MPI_IN_PLACE at a non-zero MPI_Reduce root")
    r = mpi.run(flavour, 2, [exe], env=dict(os.environ, MPIOPT_VERBOSE="1"), timeout=120)
    assert "dropin: ok" in r.stdout
    assert not verbose(r.stderr, "allreduce")


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_fortran_program(flavour):
    built(flavour)
    exe = mpi.binary(flavour, "ftest-dropin_allreduce")
    if not exe.exists():
        pytest.skip("no Fortran compiler in this build")
    for forced in ("auto", "ring"):
        env = dict(os.environ, MPIOPT_VERBOSE="1", MPIOPT_ALLREDUCE=forced, MPIOPT_REDUCE=forced)
        r = mpi.run(flavour, 3, [exe], preload=True, env=env, timeout=120)
        assert r.returncode == 0 and "fdropin: ok" in r.stdout, r.stdout + r.stderr[-2000:]
        lines = verbose(r.stderr, "allreduce") + verbose(r.stderr, "reduce")
        # 3 double allreduce/reduce sizes + the logical LOR (commutative): all named
        assert len(lines) >= 2, r.stderr[-2000:]
        if forced == "ring":
            assert all(l.endswith(": ring") for l in lines), lines


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
    comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)
    ok = ok and a == b
    total = comm.reduce(rank, op=MPI.SUM, root=p - 1)   # pickled: MPI_Reduce is not used
    x = array('i', [rank])
    y = array('i', [0])
    comm.Reduce(x, y, op=MPI.SUM, root=p - 1)
    if rank == p - 1:
        ok = ok and y[0] == p * (p - 1) // 2 and total == y[0]
    oks = comm.allgather(ok)
    if rank == 0:
        print("mpi4py dropin:", "ok" if all(oks) else "FAILED")
""")


def test_mpi4py_program(tmp_path):
    flavour = mpi4py_flavour()
    script = tmp_path / "prog.py"
    script.write_text(MPI4PY_PROGRAM)
    env = dict(os.environ, MPIOPT_VERBOSE="1", MPIOPT_ALLREDUCE="recursive_doubling",
               MPIOPT_REDUCE="rabenseifner")
    r = mpi.run(flavour, 3, [sys.executable, script], preload=True, env=env, timeout=180)
    assert r.returncode == 0 and "mpi4py dropin: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    assert any(l.endswith(": recursive_doubling") for l in verbose(r.stderr, "allreduce")), r.stderr
    assert any(l.endswith(": rabenseifner") for l in verbose(r.stderr, "reduce")), r.stderr
