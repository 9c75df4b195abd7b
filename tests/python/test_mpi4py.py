"""mpi4py as a client of the drop-in (issue 27): tests/python/mpi4py_reductions.py, run with the
mpi4py of this environment (a 4.x wheel: one extension per MPI ABI, calling the MPI-4
large-count functions where the library has them) under each MPI's launcher, at mpi4py's default
thread level (MPI_THREAD_MULTIPLE). Results are checked against NumPy; MPIOPT_REPORT shows which
entry points mpiopt took: on MPICH 4 the `_c` ones, and none handed to the vendor."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpiopt import mpi
from conftest import report_rows, report_total, require_build

PROGRAM = Path(__file__).with_name("mpi4py_reductions.py")


def have_mpi4py():
    return subprocess.run([sys.executable, "-c", "import mpi4py"], capture_output=True).returncode == 0


def mpich_abi_dir(tmp_path):
    """mpi4py's MPICH extension links libmpi.so.12, the MPICH ABI's name; Debian's MPICH ships
    the library as libmpich.so.12 only."""
    libmpich = Path("/usr/lib/x86_64-linux-gnu/libmpich.so.12")
    d = tmp_path / "mpich-abi"
    d.mkdir(exist_ok=True)
    if libmpich.exists() and not (d / "libmpi.so.12").exists():
        (d / "libmpi.so.12").symlink_to(libmpich)
    return d


@pytest.mark.skipif(not have_mpi4py(), reason="mpi4py not installed")
@pytest.mark.parametrize("p", [2, 3])
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_mpi4py_reductions_are_mpioptS(flavour, p, tmp_path):
    require_build(flavour)
    env = dict(os.environ, MPIOPT_REPORT="1", MPIOPT_ALLREDUCE="ring", MPIOPT_REDUCE="binomial")
    if flavour == "mpich":
        env["LD_LIBRARY_PATH"] = f"{mpich_abi_dir(tmp_path)}:{env.get('LD_LIBRARY_PATH', '')}"
    r = mpi.run(flavour, p, [sys.executable, str(PROGRAM)], preload=True, env=env, timeout=300)
    assert r.returncode == 0 and " 0 failures" in r.stdout, r.stdout + r.stderr[-3000:]
    rows = report_rows(r.stderr)
    suffix = "_c" if flavour == "mpich" else ""     # MPICH 4 is an MPI-4 library
    for call in ("Allreduce", "Reduce", "Iallreduce", "Reduce_local"):
        name = f"MPI_{call}{suffix}"
        assert name in rows, (name, r.stderr[-3000:])
        calls, taken, vendor, _ = rows[name]
        assert calls > 0 and taken == calls and vendor == 0, (name, rows[name])
    if flavour == "mpich":      # MPI-4 persistent calls
        assert rows["MPI_Allreduce_init_c"][1] == p, rows      # one init a rank, 5 starts
    assert report_total(r.stderr) == (sum(v[1] for v in rows.values()),
                                       sum(v[0] for v in rows.values()))
