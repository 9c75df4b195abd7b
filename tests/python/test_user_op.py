"""Threaded user-defined ops: the MPIOPT_USER_OP_THREADS drop-in in an unmodified C program
(tests/c/plain_user_op.c) through every allreduce algorithm, both MPIs, exact against a
rank-order reference; non-commutative ops keep rank order and are never threaded. The C API's
exactness is tests/c/unit_user_op.c (ctest); the Fortran binding is tests/fortran/user_op.f90."""
import os
import re

import pytest

from mpiopt import mpi

ALGORITHMS = ["binomial", "recursive_doubling", "ring", "rabenseifner", "binary_blocks", "auto"]


def other_thread_calls(stdout):
    m = re.search(r"other-thread calls: commutative (\d+), non-commutative (\d+)", stdout)
    assert m, stdout
    return int(m.group(1)), int(m.group(2))


def run_program(flavour, env, ranks=3):
    if flavour not in mpi.built_flavours():
        pytest.skip(f"{flavour} not built")
    return mpi.run(flavour, ranks, [mpi.binary(flavour, "test-plain_user_op")], preload=True,
                   env=dict(os.environ, **env), timeout=240, bind_none=True)


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
    if flavour not in mpi.built_flavours():
        pytest.skip(f"{flavour} not built")
    r = mpi.run(flavour, 2, [mpi.binary(flavour, "test-plain_user_op")],
                env=dict(os.environ, MPIOPT_USER_OP_THREADS="2"), timeout=240)
    assert r.returncode == 0 and "user_op: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    assert other_thread_calls(r.stdout) == (0, 0)
