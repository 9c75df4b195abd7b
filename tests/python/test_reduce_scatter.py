"""MPI_Reduce_scatter_block and MPI_Reduce_scatter through the drop-in
(src/coll/entry/reduce_scatter.c, algorithms/reduce_scatter.c), on both MPIs:
tests/c/plain_reduce_scatter.c checks blocking, nonblocking and persistent calls of every op and
type against a rank-order reference (equal, uneven and empty blocks, in place, misaligned
buffers, a non-commutative user op, wrapping char and short sums, error classes), under auto and
under each algorithm forced, and MPIOPT_REPORT shows which of mpiopt's algorithms ran every
call. The Fortran and mpi4py doors of the whole family (scans too) are tested here, one launch
each."""
import os
import re
import sys
import textwrap

import pytest

from mpiopt import algorithms, mpi
from conftest import (assert_all_taken, assert_vendor_when_asked, mpi4py_flavour, rank_param,
                      report_rows, require_build)

KINDS = ("MPI_Reduce_scatter_block", "MPI_Reduce_scatter", "MPI_Ireduce_scatter_block",
         "MPI_Ireduce_scatter", "MPI_Reduce_scatter_block_init", "MPI_Reduce_scatter_init")


def run_plain(flavour, p, preload=True, env=None, max_count="3001", types="all"):
    exe = mpi.binary(flavour, "test-plain_reduce_scatter")
    return mpi.run(flavour, p, [exe, max_count, types], preload=preload,
                   env=dict(os.environ, **(env or {})), timeout=300)


# auto from 1 to 17 ranks; each algorithm forced (rabenseifner: a power of two, and p = 6 for
# its fold; a call the ring cannot take, a non-commutative op, goes to auto's choice)
CASES = [("auto", 1), ("auto", 2), ("auto", 3), ("auto", 8), ("auto", 17),
         ("rabenseifner", 4), ("rabenseifner", 6), ("ring", 5), ("binomial", 6),
         ("shared_memory", 3)]


@pytest.mark.parametrize("flavour,p,algorithm", [rank_param(f, p, a, id=f"{f}-{a}-{p}")
                                                 for f in mpi.FLAVOURS for a, p in CASES])
def test_every_form_matches_the_reference(flavour, algorithm, p):
    require_build(flavour)
    env = {"MPIOPT_REPORT": "1", "MPIOPT_REDUCE_SCATTER": algorithm,
           "MPIOPT_REDUCE_SCATTER_BLOCK": algorithm}
    # every type where calls are cheap; three (int, unsigned char, double) where each costs
    # context switches: more ranks than cores, or an algorithm forced (its own cases)
    few = p > 4 or algorithm != "auto"
    r = run_plain(flavour, p, env=env, max_count="3001" if p <= 8 else "1001",
                  types="few" if few else "all")
    assert r.returncode == 0 and " 0 failures" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    assert_all_taken(r.stderr, KINDS,
                     rf"\b{algorithm} \d+" if algorithm != "auto" and p > 1 else None)


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_vendor_when_asked(flavour):
    """MPIOPT_REDUCE_SCATTER(_BLOCK)=vendor hand every call on, and the report says why; Open MPI
    4.1's own reduce-scatters then saturate small sums, where mpiopt's wrap (the tests above)."""
    require_build(flavour)
    r = run_plain(flavour, 2, env={"MPIOPT_REPORT": "1", "MPIOPT_REDUCE_SCATTER": "vendor",
                                   "MPIOPT_REDUCE_SCATTER_BLOCK": "vendor"}, max_count="1001")
    assert_vendor_when_asked(r, KINDS, flavour, "reduce_scatter|reduce_scatter_block")


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_fortran_reduction_family(flavour):
    """`use mpi`: MPI_SCAN, MPI_EXSCAN, MPI_REDUCE_SCATTER_BLOCK, MPI_REDUCE_SCATTER (also in
    place) and their MPI_I forms, all mpiopt's."""
    require_build(flavour)
    exe = mpi.binary(flavour, "ftest-dropin_reduction_family")
    if not exe.exists():
        pytest.skip("no Fortran compiler in this build")
    r = mpi.run(flavour, 3, [exe], preload=True, env=dict(os.environ, MPIOPT_REPORT="1"),
                timeout=120)
    assert r.returncode == 0 and "ffamily: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    rows = report_rows(r.stderr)
    for kind in ("MPI_SCAN", "MPI_EXSCAN", "MPI_ISCAN", "MPI_IEXSCAN", "MPI_REDUCE_SCATTER_BLOCK",
                 "MPI_REDUCE_SCATTER", "MPI_IREDUCE_SCATTER_BLOCK", "MPI_IREDUCE_SCATTER"):
        calls, by_mpiopt, _, _ = rows[f"{kind} (Fortran)"]
        assert calls > 0 and by_mpiopt == calls, (kind, rows)


MPI4PY_FAMILY = textwrap.dedent("""
    from array import array
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    n = 5001
    a = array('d', (rank + i for i in range(n)))
    b = array('d', bytes(8 * n))
    incl = [rank * (rank + 1) / 2 + (rank + 1) * i for i in range(n)]
    excl = [(rank - 1) * rank / 2 + rank * i for i in range(n)]
    comm.Scan(a, b, op=MPI.SUM)
    ok = list(b) == incl
    comm.Exscan(a, b, op=MPI.SUM)
    ok = ok and (rank == 0 or list(b) == excl)
    comm.Iscan(a, b, op=MPI.SUM).Wait()
    ok = ok and list(b) == incl
    comm.Iexscan(a, b, op=MPI.SUM).Wait()
    ok = ok and (rank == 0 or list(b) == excl)
    # reduce-scatter of p*n elements, element k of rank q being q + k
    s = array('d', (rank + k for k in range(p * n)))
    block = [p * (p - 1) / 2 + p * (rank * n + i) for i in range(n)]
    comm.Reduce_scatter_block(s, b, op=MPI.SUM)
    ok = ok and list(b) == block
    comm.Reduce_scatter(s, b, [n] * p, op=MPI.SUM)
    ok = ok and list(b) == block
    comm.Ireduce_scatter_block(s, b, op=MPI.SUM).Wait()
    ok = ok and list(b) == block
    comm.Ireduce_scatter(s, b, [n] * p, op=MPI.SUM).Wait()
    ok = ok and list(b) == block
    oks = comm.allgather(ok)
    if rank == 0:
        print("mpi4py family:", "ok" if all(oks) else "FAILED")
""")


def test_mpi4py_reduction_family(tmp_path):
    """mpi4py's Scan, Exscan, Reduce_scatter_block, Reduce_scatter and their I forms reach
    mpiopt's algorithms through the drop-in."""
    flavour = mpi4py_flavour()
    script = tmp_path / "family.py"
    script.write_text(MPI4PY_FAMILY)
    r = mpi.run(flavour, 3, [sys.executable, script], preload=True,
                env=dict(os.environ, MPIOPT_REPORT="1"), timeout=180)
    assert r.returncode == 0 and "mpi4py family: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    rows = report_rows(r.stderr)
    for kind in ("MPI_Scan", "MPI_Exscan", "MPI_Iscan", "MPI_Iexscan") + KINDS[:4]:
        calls, by_mpiopt, _, _ = rows[kind]
        assert calls == 3 and by_mpiopt == 3, (kind, rows)


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_family_rows_are_listed(flavour):
    """include/mpiopt_algorithms.h's MPIOPT_FAMILY_LIST reaches `--list-algorithms --json`, which
    the benchmarks' columns and their checks come from."""
    require_build(flavour)
    assert algorithms.names(flavour, kinds=("mpiopt",), family="reduce_scatter") == \
        ["binomial", "ring", "rabenseifner", "shared_memory"]
    assert algorithms.names(flavour, kinds=("mpiopt",), family="scan") == \
        ["recursive_doubling", "shared_memory"]
