"""MPI_Scan and MPI_Exscan through the drop-in (src/coll/entry/scan.c, algorithms/scan.c), on both
MPIs: tests/c/plain_scan.c checks blocking, nonblocking and persistent scans of every op and type
against a rank-order reference (odd and large counts, in place, misaligned buffers, a
non-commutative user op, wrapping char and short sums, error classes), and MPIOPT_REPORT shows
that mpiopt's algorithms ran every call: auto's choice (shared memory up to 8 ranks, recursive
doubling above) and each algorithm forced. The Fortran and mpi4py doors of the scans are
tested with the reduce-scatters' (test_reduce_scatter.py)."""
import os

import pytest

from mpiopt import mpi
from conftest import assert_all_taken, assert_vendor_when_asked, rank_param, require_build

KINDS = ("MPI_Scan", "MPI_Exscan", "MPI_Iscan", "MPI_Iexscan", "MPI_Scan_init", "MPI_Exscan_init")


def run_scan(flavour, p, preload=True, env=None, max_count="20001"):
    exe = mpi.binary(flavour, "test-plain_scan")
    return mpi.run(flavour, p, [exe, max_count], preload=preload,
                   env=dict(os.environ, **(env or {})), timeout=300)


@pytest.mark.parametrize("flavour,p", [rank_param(f, p) for f in mpi.FLAVOURS for p in (1, 2, 3, 5, 8, 17)])
def test_every_form_matches_the_reference(flavour, p):
    require_build(flavour)
    r = run_scan(flavour, p, env={"MPIOPT_REPORT": "1"}, max_count="20001" if p <= 8 else "3001")
    assert r.returncode == 0 and " 0 failures" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    # nonblocking calls are schedules of messages: recursive doubling whatever auto chose
    blocking = [k for k in KINDS if k in ("MPI_Scan", "MPI_Exscan")]
    assert_all_taken(r.stderr, blocking, "shared_memory" if p <= 8 else "recursive_doubling")
    assert_all_taken(r.stderr, [k for k in KINDS if k not in blocking], "^recursive_doubling \\d+$")


@pytest.mark.parametrize("algorithm,p", [("recursive_doubling", 3), ("shared_memory", 9)])
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_each_algorithm_forced(flavour, algorithm, p):
    """The algorithm auto does not take at that p, forced: shared memory's fold of 8 lower
    inputs, recursive doubling's partial steps (p = 3)."""
    require_build(flavour)
    r = run_scan(flavour, p, env={"MPIOPT_REPORT": "1", "MPIOPT_SCAN": algorithm,
                                  "MPIOPT_EXSCAN": algorithm}, max_count="3001")
    assert r.returncode == 0 and " 0 failures" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    assert_all_taken(r.stderr, ["MPI_Scan", "MPI_Exscan"], algorithm)
    assert_all_taken(r.stderr, [k for k in KINDS if k not in ("MPI_Scan", "MPI_Exscan")],
                     "^recursive_doubling \\d+$")


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_exscan_pair_without_single_copy(flavour):
    """p = 2 takes the single-copy exscan pair from 16 KiB where the ranks may read each other
    (the test above); with MPIOPT_SHM_SINGLE_COPY=0, as where they may not, those exscans are
    recursive doubling's one message and the rest shared memory's window, still exact."""
    require_build(flavour)
    r = run_scan(flavour, 2, env={"MPIOPT_REPORT": "1", "MPIOPT_SHM_SINGLE_COPY": "0"})
    assert r.returncode == 0 and " 0 failures" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    assert_all_taken(r.stderr, KINDS)


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_vendor_when_asked(flavour):
    """MPIOPT_SCAN / MPIOPT_EXSCAN=vendor hand every call on, and the report says why; Open MPI
    4.1's own scans then saturate small sums, where mpiopt's wrap (the test above)."""
    require_build(flavour)
    r = run_scan(flavour, 2, env={"MPIOPT_REPORT": "1", "MPIOPT_SCAN": "vendor",
                                  "MPIOPT_EXSCAN": "vendor"}, max_count="1001")
    assert_vendor_when_asked(r, KINDS, flavour, "scan|exscan")
