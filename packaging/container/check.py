"""The image's self-check (packaging/container/Dockerfile, docs/install.md): an mpi4py allreduce,
run as `mpiopt run --report -np 2 -- python3 /opt/mpiopt/share/check.py`; rank 0 prints how many
results were wrong and the MPI, and mpiopt's report (--report) which calls it ran."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
x = np.arange(1000, dtype=np.float64) + comm.rank
y = np.empty_like(x)
wrong = 0
for _ in range(10):
    comm.Allreduce(x, y, op=MPI.SUM)
    wrong += int((y != comm.size * np.arange(1000) + comm.size * (comm.size - 1) / 2).sum())
if comm.rank == 0:
    print(f"check: {comm.size} ranks, {wrong} wrong, {MPI.Get_library_version().splitlines()[0].strip()}")
raise SystemExit(1 if wrong else 0)
