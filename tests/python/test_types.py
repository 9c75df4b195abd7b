"""Every predefined datatype mpiopt reduces, with every op it allows, through every algorithm of
mpiopt_allreduce and mpiopt_reduce (auto included), on both MPIs: OSU-style `-c` validation
against a reference each rank computes itself (tests/c/type_check.c). The inputs make 8- and
16-bit sums overflow, where Open MPI's avx component saturates, and put unsigned values on both
sides of the signed range, where MPICH compares them as signed, and reduce Fortran REAL(16) /
COMPLEX(16) as IEEE binary128, which both vendors get wrong: the same checker pointed at the
vendor's own reduction fails there, which shows it can."""
import re

import pytest

from mpiopt import mpi


def run_type_check(flavour, p, *options):
    if flavour not in mpi.built_flavours():
        pytest.skip(f"{flavour} not built")
    exe = mpi.binary(flavour, "test-type_check")
    if not exe.exists():
        pytest.skip(f"{exe} not built (make build)")
    r = mpi.run(flavour, p, [exe, *options], timeout=300)
    m = re.search(r"^type_check: (\d+) checks, (\d+) failed$", r.stdout, re.M)
    assert m, r.stdout[-2000:] + r.stderr[-2000:]
    return r, int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("p", [2, 3, 4])
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_every_type_and_op_is_right_through_every_algorithm(flavour, p):
    r, checks, failed = run_type_check(flavour, p)
    assert failed == 0 and r.returncode == 0, r.stderr[-3000:]
    # 48 types, 2-10 ops each, 6 algorithms, 5 counts, allreduce and reduce, on every rank
    assert checks > 5000 * p


# what each vendor gets wrong, by the checker's own failure lines (design.md, docs/kernels.md)
VENDOR_WRONG = {
    "openmpi": ["MPI_CHAR SUM", "MPI_SIGNED_CHAR SUM", "MPI_SHORT SUM", "MPI_UNSIGNED_LONG MAX",
                "MPI_OFFSET MIN", "MPI_REAL16 SUM", "MPI_COMPLEX32 PROD"],
    "mpich": ["MPI_UNSIGNED MAX", "MPI_UNSIGNED_CHAR MIN", "MPI_REAL16 SUM", "MPI_COMPLEX32 SUM"],
}


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_the_check_catches_the_vendors_known_wrong_results(flavour):
    r, checks, failed = run_type_check(flavour, 2, "--algorithms", "vendor", "--counts", "67,4096")
    assert failed > 0 and r.returncode != 0
    for case in VENDOR_WRONG[flavour]:
        assert f"vendor {case} " in r.stderr, (case, r.stderr[-3000:])
