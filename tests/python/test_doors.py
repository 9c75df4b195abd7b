"""Every door into a reduction (issue 27): MPI-4's large-count calls (tests/c/plain_large_count.c)
and `use mpi_f08` (tests/fortran/dropin_f08.f90) under the drop-in, with MPIOPT_VERBOSE proving
that mpiopt's forced algorithm took the calls, not the vendor."""
import os
import subprocess

import pytest

from mpiopt import mpi
from conftest import require_build


def verbose_lines(stderr, call):
    return [l for l in stderr.splitlines() if l.startswith(f"mpiopt: {call} ")]


def exported(flavour, symbol):
    out = subprocess.run(["nm", "-D", "--defined-only", str(mpi.library(flavour))],
                         capture_output=True, text=True, check=True).stdout
    return any(line.split()[-1] == symbol for line in out.splitlines() if line.strip())


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_large_count_entry_points_where_the_mpi_has_them(flavour):
    """MPICH 4 (MPI-4) declares MPI_Allreduce_c and the rest: the drop-in defines them; Open MPI
    4.1 (MPI-3.1) does not, and neither does the drop-in built for it."""
    require_build(flavour)
    names = ["MPI_Allreduce_c", "MPI_Reduce_c", "MPI_Reduce_local_c", "MPI_Iallreduce_c",
             "MPI_Ireduce_c", "MPI_Allreduce_init_c", "MPI_Reduce_init_c"]
    have = [n for n in names if exported(flavour, n)]
    assert have == (names if flavour == "mpich" else []), have


@pytest.mark.parametrize("p", [1, 2, 3, 5])
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_large_count_calls_are_taken(flavour, p):
    require_build(flavour)
    exe = mpi.binary(flavour, "test-plain_large_count")
    for alg in ("ring", "recursive_doubling", "auto"):
        env = dict(os.environ, MPIOPT_VERBOSE="1", MPIOPT_ALLREDUCE=alg, MPIOPT_REDUCE=alg)
        r = mpi.run(flavour, p, [exe], preload=True, env=env, timeout=120)
        if flavour == "openmpi":
            assert r.returncode == 0 and "large_count: not in this MPI" in r.stdout
            return
        assert r.returncode == 0 and " 0 failures" in r.stdout, r.stdout + r.stderr[-2000:]
        if alg != "auto" and p > 1:
            for call in ("allreduce", "reduce", "iallreduce", "ireduce", "allreduce_init",
                         "reduce_init"):
                lines = verbose_lines(r.stderr, call)
                assert lines and all(f": {alg}" in l for l in lines), (call, r.stderr[-2000:])


def test_large_count_above_int_max_goes_to_the_vendor():
    """2^31 + 8 MPI_UNSIGNED_CHAR in place at np 2 (2 GiB a rank): exact, through the vendor's
    MPI_Allreduce_c. Skipped where the machine lacks the memory."""
    require_build("mpich")
    with open("/proc/meminfo") as f:
        avail_kib = next(int(l.split()[1]) for l in f if l.startswith("MemAvailable:"))
    if avail_kib < 7 * 1024 * 1024:
        pytest.skip(f"needs ~7 GiB free, {avail_kib // 1024} MiB available")
    exe = mpi.binary("mpich", "test-plain_large_count")
    r = mpi.run("mpich", 2, [exe, "huge"], preload=True, timeout=600)
    assert r.returncode == 0 and " 0 failures" in r.stdout, r.stdout + r.stderr[-2000:]


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_use_mpi_f08_is_taken(flavour, p):
    """Open MPI's mpi_f08 calls PMPI_* directly: the drop-in's f08 names take it; MPICH's goes
    through the C MPI_* functions, except its wait family (PMPI_Wait & co.), which the drop-in's
    f08 names take on both MPIs."""
    require_build(flavour)
    exe = mpi.binary(flavour, "ftest-dropin_f08")
    if not exe.exists():
        pytest.skip("no Fortran compiler in this build")
    for alg in ("ring", "binomial"):
        env = dict(os.environ, MPIOPT_VERBOSE="1", MPIOPT_ALLREDUCE=alg, MPIOPT_REDUCE=alg)
        r = mpi.run(flavour, p, [exe], preload=True, env=env, timeout=120)
        assert r.returncode == 0 and "ff08: ok" in r.stdout, r.stdout + r.stderr[-2000:]
        assert any(f": {alg}" in l for l in verbose_lines(r.stderr, "allreduce")), r.stderr
        assert any(f": {alg}" in l for l in verbose_lines(r.stderr, "reduce")), r.stderr
        if p > 1:   # nonblocking, completed by the f08 wait family (MPICH's once hung)
            for call in ("iallreduce", "ireduce"):
                assert any(f": {alg}," in l for l in verbose_lines(r.stderr, call)), r.stderr
