"""MPIOPT_REPORT (issue 27): at MPI_Finalize rank 0 prints, for every reduction entry point the
program used, the calls of all ranks that mpiopt's algorithms ran and those handed to the vendor
with the reason; a program whose calls mpiopt never saw gets a warning. The program,
tests/c/plain_report.c, makes known numbers of calls of each kind, and checks its results."""
import os

import pytest

from mpiopt import mpi
from conftest import report_rows as report, require_build


def run_report(flavour, p, args=(), **env):
    require_build(flavour)
    exe = mpi.binary(flavour, "test-plain_report")
    full_env = dict(os.environ, MPIOPT_REPORT="1", **env)
    r = mpi.run(flavour, p, [exe, *args], preload=True, env=full_env, timeout=120)
    assert r.returncode == 0 and " 0 failures" in r.stdout, r.stdout + r.stderr[-3000:]
    return r


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_report_counts_every_call_of_every_rank(flavour, p):
    r = run_report(flavour, p, MPIOPT_ALLREDUCE="binomial", MPIOPT_REDUCE="binomial")
    rows = report(r.stderr)
    inter = 1 if p >= 2 else 0
    assert rows["MPI_Allreduce"][:3] == (p * (6 + inter), p * 5, p * (1 + inter)), r.stderr
    assert "binomial %d" % (5 * p) in rows["MPI_Allreduce"][3]
    assert "datatype (derived with holes, or no kernel) %d" % p in rows["MPI_Allreduce"][3]
    if inter:
        assert "intercommunicator %d" % p in rows["MPI_Allreduce"][3]
    assert rows["MPI_Reduce"][:3] == (p, p, 0)
    assert rows["MPI_Iallreduce"][:3] == (2 * p, 2 * p, 0)
    assert rows["MPI_Reduce_local"][:3] == (2 * p, p, p)
    assert "user-defined op %d" % p in rows["MPI_Reduce_local"][3]
    total = p * (6 + inter) + p + 2 * p + 2 * p
    taken = 5 * p + p + 2 * p + p
    assert f"mpiopt: {taken} of {total} reduction calls ran mpiopt's algorithms" in r.stderr
    # printed once, by rank 0
    assert r.stderr.count("mpiopt report (MPIOPT_REPORT)") == 1, r.stderr


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_report_names_why_calls_went_to_the_vendor(flavour):
    r = run_report(flavour, 2, MPIOPT_ALLREDUCE="vendor", MPIOPT_REDUCE="vendor",
                   MPIOPT_NONBLOCKING="0")
    rows = report(r.stderr)
    assert rows["MPI_Allreduce"][1] == 0
    # the environment decides first: every call, also those mpiopt could not take
    assert "MPIOPT_<COLLECTIVE>=vendor 14" in rows["MPI_Allreduce"][3], r.stderr
    assert rows["MPI_Reduce"][:3] == (2, 0, 2)
    assert rows["MPI_Iallreduce"][:3] == (4, 0, 4)
    assert "MPIOPT_NONBLOCKING=0 4" in rows["MPI_Iallreduce"][3]


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_report_under_thread_multiple(flavour):
    """mpi4py's default level: the nonblocking calls are mpiopt's schedules too."""
    r = run_report(flavour, 2, ["multiple"], MPIOPT_ALLREDUCE="ring")
    rows = report(r.stderr)
    assert rows["MPI_Iallreduce"][:3] == (4, 4, 0), r.stderr
    assert "ring 4" in rows["MPI_Iallreduce"][3]
    assert "ring 10" in rows["MPI_Allreduce"][3]


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_report_warns_when_no_reduction_reached_mpiopt(flavour):
    r = run_report(flavour, 2, ["none"])
    assert "mpiopt: warning: no reduction call reached mpiopt (all 2 ranks)" in r.stderr, r.stderr
    assert "mpiopt report (MPIOPT_REPORT)" not in r.stderr


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_report_warns_when_mpiopt_ran_none_of_the_calls(flavour):
    r = run_report(flavour, 2, MPIOPT_ALLREDUCE="vendor", MPIOPT_REDUCE="vendor",
                   MPIOPT_NONBLOCKING="0")
    # MPI_Reduce_local's MPI_SUM still ran mpiopt's kernel: 2 of the calls
    assert "mpiopt: 2 of " in r.stderr, r.stderr


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_report_names_the_large_count_and_fortran_doors(flavour):
    require_build(flavour)
    env = dict(os.environ, MPIOPT_REPORT="1", MPIOPT_ALLREDUCE="ring", MPIOPT_REDUCE="ring")
    exe = mpi.binary(flavour, "ftest-dropin_allreduce")
    if exe.exists():
        r = mpi.run(flavour, 2, [exe], preload=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        rows = report(r.stderr)
        assert rows["MPI_ALLREDUCE (Fortran)"][1] > 0 and "ring" in rows["MPI_ALLREDUCE (Fortran)"][3]
    if flavour == "mpich":     # MPI-4: the _c calls exist
        r = mpi.run(flavour, 2, [mpi.binary(flavour, "test-plain_large_count")], preload=True,
                    env=env, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        rows = report(r.stderr)
        for name in ("MPI_Allreduce_c", "MPI_Reduce_c", "MPI_Iallreduce_c", "MPI_Ireduce_c",
                     "MPI_Allreduce_init_c", "MPI_Reduce_init_c"):
            assert rows[name][1] == rows[name][0] > 0, (name, r.stderr)
        assert rows["MPI_Reduce_local_c"][3].startswith("mpiopt kernels")


def test_report_is_silent_when_off():
    flavour = mpi.FLAVOURS[0]
    require_build(flavour)
    env = {k: v for k, v in os.environ.items() if k != "MPIOPT_REPORT"}
    r = mpi.run(flavour, 2, [mpi.binary(flavour, "test-plain_report")], preload=True, env=env,
                timeout=120)
    assert r.returncode == 0 and "mpiopt" not in r.stderr, r.stderr
