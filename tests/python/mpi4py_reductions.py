"""An mpi4py program for the drop-in (tests/python/test_mpi4py.py): buffer reductions of NumPy
arrays of every dtype mpi4py maps to a predefined MPI type, in place too, blocking, nonblocking and
persistent, and the lowercase pickle API; each result checked against NumPy. Prints
"mpi4py_reductions: N checks, F failures" on rank 0."""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
checks = failures = 0


def check(ok, what):
    global checks, failures
    checks += 1
    if not ok:
        failures += 1
        sys.stderr.write(f"mpi4py_reductions: rank {rank}: FAILED {what}\n")


def contribution(dtype, r, n=37):
    """Rank r's input: small values, so that sums and products stay exact in every dtype."""
    i = np.arange(n)
    if dtype == np.bool_:
        return (i + r) % 3 != 0
    return ((i + r) % 4 + 1).astype(dtype)


OPS = {"SUM": (MPI.SUM, np.add), "PROD": (MPI.PROD, np.multiply), "MAX": (MPI.MAX, np.maximum),
       "MIN": (MPI.MIN, np.minimum), "LAND": (MPI.LAND, np.logical_and),
       "BAND": (MPI.BAND, np.bitwise_and)}


def expected(dtype, fn, n=37):
    parts = [contribution(dtype, r, n) for r in range(size)]
    out = parts[0]
    for p in parts[1:]:
        out = fn(out, p)
    return out.astype(dtype)


NUMERIC = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
           np.float32, np.float64, np.complex64, np.complex128]
for dtype in NUMERIC + [np.bool_]:
    ops = ["LAND"] if dtype == np.bool_ else ["SUM", "PROD"]
    if not np.issubdtype(dtype, np.complexfloating) and dtype != np.bool_:
        ops += ["MAX", "MIN"]
    if np.issubdtype(dtype, np.integer):
        ops += ["BAND"]
    for opname in ops:
        op, fn = OPS[opname]
        name = f"{np.dtype(dtype).name} {opname}"
        want = expected(dtype, fn)
        a = contribution(dtype, rank)
        b = np.empty_like(a)
        comm.Allreduce(a, b, op=op)
        check(np.array_equal(b, want), f"Allreduce {name}")
        c = a.copy()
        comm.Allreduce(MPI.IN_PLACE, c, op=op)
        check(np.array_equal(c, want), f"Allreduce in place {name}")
        r = np.empty_like(a)
        comm.Reduce(a, r, op=op, root=size - 1)
        if rank == size - 1:
            check(np.array_equal(r, want), f"Reduce {name}")
        d = np.empty_like(a)
        comm.Iallreduce(a, d, op=op).Wait()
        check(np.array_equal(d, want), f"Iallreduce {name}")

# persistent (MPI-4), restarted with new contents
if hasattr(comm, "Allreduce_init"):
    try:
        a = np.zeros(1000)
        b = np.empty_like(a)
        req = comm.Allreduce_init(a, b, op=MPI.SUM)
        for k in range(5):
            a[:] = rank + k
            req.Start()
            req.Wait()
            check(np.all(b == size * (size - 1) / 2 + size * k), f"Allreduce_init round {k}")
        req.Free()
    except NotImplementedError:
        pass

# local reduction and the lowercase (pickle) API
x = np.arange(5, dtype=np.float64)
y = np.ones(5)
MPI.SUM.Reduce_local(x, y)
check(np.array_equal(y, x + 1), "Reduce_local")
check(comm.allreduce(rank) == size * (size - 1) // 2, "allreduce (pickle)")
check(comm.reduce([rank], root=0) == (list(range(size)) if rank == 0 else None), "reduce (pickle)")
check(MPI.Query_thread() == MPI.THREAD_MULTIPLE, "mpi4py's default thread level")

all_checks, all_failures = comm.allreduce(checks), comm.allreduce(failures)
if rank == 0:
    print(f"mpi4py_reductions: {all_checks} checks, {all_failures} failures", flush=True)
