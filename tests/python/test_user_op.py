"""Threaded user-defined ops: the MPIOPT_USER_OP_THREADS drop-in in an unmodified C program
(tests/c/plain_user_op.c) through every allreduce algorithm, both MPIs, exact against a
rank-order reference; non-commutative ops keep rank order and are never threaded. The C API's
exactness is tests/c/unit_user_op.c (ctest); the Fortran binding is tests/fortran/user_op.f90."""
import os
import re
import subprocess

import pytest

from conftest import BUILT_FLAVOURS, require_build
from mpiopt import algorithms, mpi
from mpiopt.benchmarks import user_op as user_op_bench

# auto and every algorithm of the registry
ALGORITHMS = algorithms.names(kinds=("auto", "mpiopt")) if BUILT_FLAVOURS else []


def other_thread_calls(stdout):
    m = re.search(r"other-thread calls: commutative (\d+), non-commutative (\d+)", stdout)
    assert m, stdout
    return int(m.group(1)), int(m.group(2))


def run_program(flavour, env, ranks=3):
    require_build(flavour)
    return mpi.run(flavour, ranks, [mpi.binary(flavour, "test-plain_user_op")], preload=True,
                   env=dict(os.environ, MPIOPT_THREAD_MIN_BYTES="0", **env), timeout=240,
                   bind_none=True)


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_threaded_user_ops_in_every_allreduce_algorithm(flavour, algorithm):
    r = run_program(flavour, {"MPIOPT_USER_OP_THREADS": "2", "MPIOPT_ALLREDUCE": algorithm})
    assert r.returncode == 0 and "user_op: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    commutative, ordered = other_thread_calls(r.stdout)
    assert commutative > 0      # the commutative ops really ran on a second thread
    assert ordered == 0         # the non-commutative one never did


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_user_op_threading_is_off_by_default(flavour):
    r = run_program(flavour, {"MPIOPT_USER_OP_THREADS": ""})
    assert r.returncode == 0 and "user_op: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    assert other_thread_calls(r.stdout) == (0, 0)


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_threaded_user_ops_without_preload_are_the_vendors(flavour):
    require_build(flavour)
    r = mpi.run(flavour, 2, [mpi.binary(flavour, "test-plain_user_op")],
                env=dict(os.environ, MPIOPT_USER_OP_THREADS="2"), timeout=240)
    assert r.returncode == 0 and "user_op: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    assert other_thread_calls(r.stdout) == (0, 0)


def build_example(flavour, tmp_path, name):
    return user_op_bench.build_example(flavour, tmp_path, name)


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
@pytest.mark.parametrize("name", ["user_op_reduce", "user_op_reduce_f"])
def test_reduce_examples_check_every_variant(flavour, name, tmp_path):
    require_build(flavour)
    exe = build_example(flavour, tmp_path, name)
    r = mpi.run(flavour, 2, [exe, "--count", "100003", "--reps", "2"], timeout=120, bind_none=True)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    rows = dict(line.split() for line in r.stdout.splitlines() if len(line.split()) == 2)
    assert set(rows) == {"mpi_sum", "serial", "vectorized", "threaded"}, r.stdout
    assert all(float(t) > 0 for t in rows.values())


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_reduce_example_local_checks_every_variant(flavour, tmp_path):
    """--local: the op alone through MPI_Reduce_local on one rank; the example checks each sum"""
    require_build(flavour)
    exe = build_example(flavour, tmp_path, "user_op_reduce")
    r = mpi.run(flavour, 1, [exe, "--local", "--count", "300007", "--reps", "2"], timeout=120,
                bind_none=True)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    rows = dict(line.split() for line in r.stdout.splitlines() if len(line.split()) == 2)
    assert set(rows) == {"mpi_sum", "serial", "vectorized", "threaded"}, r.stdout


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_overlap_example_reports_thread_level_and_times(flavour, tmp_path):
    require_build(flavour)
    exe = build_example(flavour, tmp_path, "user_op_overlap")
    r = mpi.run(flavour, 2, [exe, "--count", "100004", "--work", "20000", "--reps", "2"],
                env=dict(os.environ, OMP_NUM_THREADS="2"), timeout=120, bind_none=True)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    assert re.search(r"thread level (MULTIPLE|SERIALIZED)", r.stdout), r.stdout
    for key in ("reduce", "work", "sequential", "overlapped"):
        assert re.search(rf"^{key} \d+\.\d+$", r.stdout, re.M), r.stdout
    # the reduction's last element: 2 ranks x ((100004 - 1) % 7)
    assert re.search(r"^check 2\.0 ", r.stdout, re.M), r.stdout


def test_bench_user_op_json(mpiopt, tmp_path):
    r = mpiopt("bench", "user-op", "--count", "64K", "--reps", "1", "--json", "--results", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    import json
    data = json.loads(r.stdout)
    assert {row["flavour"] for row in data["rows"]} == set(mpi.built_flavours())
    assert all(set(row["reduce"]) == set(user_op_bench.VARIANTS) for row in data["rows"])
    assert all(set(row["local"]) == set(user_op_bench.VARIANTS) for row in data["rows"])
    assert any(c["what"].endswith("op alone: threaded vs serial") for c in data["bar"])
    assert (tmp_path / "user_op.png").stat().st_size > 0


def test_bench_user_op_bad_count(mpiopt, tmp_path):
    r = mpiopt("bench", "user-op", "--count", "4G", "--results", str(tmp_path))
    assert r.returncode == 2 and "--count" in r.stderr
    assert not any(tmp_path.iterdir())
