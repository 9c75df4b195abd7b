"""`mpiopt transform` on Fortran (issue 66): the fparser2 front end and the Fortran writer on two
programs of tests/transform_cases/ — free form (`use mpi`, a module on `use mpi_f08`, a module
variable, a COMMON block, an array section, a wrapper subroutine, a CONTAINed procedure) and
fixed form (`include 'mpif.h'`, labelled DO loops, a GO TO, an expression and a vector subscript
as buffers). What each call becomes and why; the fixed-form columns; a fixpoint; a bad file;
and the differential test: the transformed programs print what the originals print, with both
MPIs at 2 ranks (built with mpif90)."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from conftest import run_mpiopt

from mpiopt import mpi
from mpiopt.transform import Options, transform_file

sys.path.insert(0, str(Path(__file__).parent))
import difftest  # noqa: E402

CASES = Path(__file__).resolve().parents[1] / "transform_cases"
FREE, FIXED = CASES / "fortran_free.f90", CASES / "fortran_fixed.f"
pytestmark = pytest.mark.skipif(not shutil.which("mpif90.openmpi") and not shutil.which("mpif90.mpich"),
                                reason="needs an MPI Fortran compiler")


def line_of(path: Path, text: str) -> int:
    """The 1-based line of the source holding `text` (the tests name calls by their code)."""
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


@pytest.fixture(scope="module")
def free():
    return transform_file(FREE, Options())


@pytest.fixture(scope="module")
def fixed():
    return transform_file(FIXED, Options())


def site(result, path, text):
    line = line_of(path, text)
    return next(s for s in result.sites if s["line"] == line)


def test_free_form_sites_and_waits(free):
    out = free.output.decode()
    # (the calls of the wrappers are sites too, fortran_across.py: test_transform_fortran_across.py)
    assert len([s for s in free.sites if "helper" not in s.get("across", {})]) == 8
    # independent work: the wait follows the loop that does not touch b, stops at the read of b
    first = site(free, FREE, "call MPI_ALLREDUCE(a, b, n")
    assert first["action"] == "nonblocking"
    assert first["waits"][0]["line"] == line_of(FREE, "c = b + work")
    assert "reads `b`" in first["waits"][0]["blocked_by"]
    # a module variable: the external procedure `scale` reads it, so the wait comes before the call
    module_var = site(free, FREE, "MPI_IN_PLACE, field")
    assert module_var["waits"][0]["line"] == line_of(FREE, "call scale(t)")
    assert "calls scale" in module_var["waits"][0]["blocked_by"]
    # a COMMON block in an IF branch: the wait leaves the branch, guarded by a flag
    common = site(free, FREE, "MPI_IN_PLACE, stats")
    assert common["waits"][0]["flag"] and common["waits"][0]["line"] > line_of(FREE, "end if")
    assert "mpiopt_flags = 0" in out and "IF (MPIOPT_FLAGS(3) /= 0) THEN" in out.upper()
    # the array section stays blocking, and the report says why
    section = site(free, FREE, "a(1:n:2)")
    assert section["action"] == "unchanged" and "array section" in section["reason"]
    assert "call MPI_ALLREDUCE(a(1:n:2)" in out
    # the wrapper subroutine and the CONTAINed procedure are transformed in place
    assert site(free, FREE, "call MPI_ALLREDUCE(v, res")["action"] == "nonblocking"
    assert site(free, FREE, "call MPI_ALLREDUCE(mine, res")["action"] == "nonblocking"
    # buffers of pending calls are ASYNCHRONOUS in their procedure
    assert "asynchronous a, b, field, stats, counts" in out.lower()


def test_free_form_bindings(free):
    out = free.output.decode()
    f08 = out[out.index("subroutine f08_sum"):out.index("end subroutine f08_sum")]
    # mpi_f08: TYPE(MPI_Request), no ierror added where the call had none
    assert "(MPI_Request) mpiopt_reqs(1)" in f08
    assert "MPI_Iallreduce(local, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, &" in f08
    assert "MPI_WAIT(mpiopt_reqs(1), MPI_STATUS_IGNORE)" in f08 and "mpiopt_ierr" not in f08
    # use mpi: integer requests, the program's ierror kept, the waits' own status variable
    main = out[out.index("program fortran_free"):]
    assert "integer mpiopt_reqs(4)" in main.lower() and "integer mpiopt_ierr" in main.lower()
    assert "MPI_IBCAST(counts, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, mpiopt_reqs(4), ierr)" in main


def test_fixed_form_columns_and_reasons(fixed):
    out = fixed.output.decode().splitlines()
    code = [ln for ln in out if ln and ln[0] not in "Cc*!"]
    assert all(len(ln) <= 72 for ln in code), [ln for ln in code if len(ln) > 72]
    assert any(ln.startswith("     &") and "mpiopt_reqs(1), IERR)" in ln for ln in out)
    # statements from column 7, continuation marks in column 6, labels in columns 1-5
    assert all(len(ln) > 6 and (ln[:5].strip() == "" or ln[:5].strip().isdigit()) for ln in code)
    actions = {s["line"]: s for s in fixed.sites}
    assert sum(s["action"] == "nonblocking" for s in fixed.sites) == 4
    assert "is an expression" in actions[line_of(FIXED, "X(1) * 2.0D0")]["reason"]
    assert "vector subscript" in actions[line_of(FIXED, "X(IDX)")]["reason"]
    # an external procedure's dummy arguments cannot be ASYNCHRONOUS without changing its
    # interface under its callers: the wrapper's call stays blocking
    wrapper = actions[line_of(FIXED, "CALL MPI_ALLREDUCE(V, RES, M")]
    assert wrapper["action"] == "unchanged" and "dummy argument of an external procedure" in wrapper["reason"]
    # the wait after the Reduce stops at the GO TO; the first one passes a labelled DO loop
    assert actions[line_of(FIXED, "MPI_REDUCE(X, Z")]["waits"][0]["blocked_by"].startswith("goto")
    assert actions[line_of(FIXED, "MPI_ALLREDUCE(X, Y, N")]["waits"][0]["moved_past"] == 2


def test_persistent_in_a_loop_with_open_mpi_only():
    r = transform_file(FIXED, Options(mode="persistent", flavour="openmpi"))
    loop = site(r, FIXED, "CALL MPI_ALLREDUCE(S, U(1)")
    assert loop["action"] == "persistent"
    out = r.output.decode().splitlines()
    init = next(i for i, ln in enumerate(out) if "MPIX_ALLREDUCE_INIT(S, U(1), 1," in ln)
    start = next(i for i, ln in enumerate(out) if "MPI_START(mpiopt_reqs(" in ln)
    free = next(i for i, ln in enumerate(out) if "MPI_REQUEST_FREE(mpiopt_reqs(" in ln)
    do, end = out.index("      DO 60 K = 1, 3"), out.index("   60 CONTINUE")
    assert init < do < start < end < free
    # calls outside loops stay nonblocking, with the reason
    first = site(r, FIXED, "MPI_ALLREDUCE(X, Y, N")
    assert first["action"] == "nonblocking" and "not directly in a loop body" in first["reason"]
    if shutil.which("mpif90.mpich"):
        # MPICH 4.0.2's Fortran persistent allreduce gave wrong sums: not written for it
        m = transform_file(FIXED, Options(mode="persistent", flavour="mpich"))
        assert site(m, FIXED, "CALL MPI_ALLREDUCE(S, U(1)")["action"] == "nonblocking"


def test_fixpoint_bad_file_and_cli(free, fixed, tmp_path):
    for r in (free, fixed):
        again = tmp_path / r.path.name
        again.write_bytes(r.output)
        second = transform_file(again, Options())
        assert not second.changed
        assert all(s["action"] == "unchanged" for s in second.sites)
    # the command line: JSON report; a file fparser rejects: exit 2, a clear error, nothing written
    cli = run_mpiopt("transform", FREE, "--json", "-o", tmp_path / "out.f90", timeout=300)
    assert cli.returncode == 0, cli.stderr
    assert '"nonblocking": 7' in cli.stdout and (tmp_path / "out.f90").exists()
    bad = tmp_path / "bad.f90"
    bad.write_text("program p\n  integer :: x\n  x = = 1\nend program p\n")
    r = run_mpiopt("transform", bad, "-o", tmp_path / "bad_out.f90", timeout=300)
    assert r.returncode == 2 and r.stderr.startswith("mpiopt: error: ") and "bad.f90" in r.stderr
    assert not (tmp_path / "bad_out.f90").exists()


@pytest.mark.parametrize("case", [FREE, FIXED], ids=["free", "fixed"])
def test_transformed_programs_print_the_same(case, tmp_path):
    failures = difftest.check_transformed(case, tmp_path, modes=("nonblocking", "persistent"), ranks=(2,))
    assert not failures, "\n".join(failures)


PREPROCESSED = """#define NV 4
program pre
  use mpi
  implicit none
#include "pre_decls.h"
  integer :: ierr
  double precision :: a(NV), b(NV)
  call MPI_Init(ierr)
  a = 1
  call MPI_Allreduce(a, b, size(a), MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  extra = 2
  print *, b(1), extra
  call MPI_Allreduce(a, b, NV, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  print *, b(1)
#ifdef USE_MAX
  call MPI_Allreduce(a, b, size(a), MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
#endif
  print *, b(2)
  call MPI_Finalize(ierr)
end program pre
"""


def test_preprocessed_source_maps_back_to_its_lines(tmp_path):
    src = tmp_path / "pre.F90"
    src.write_text(PREPROCESSED)
    (tmp_path / "pre_decls.h").write_text("  integer :: extra\n")
    r = transform_file(src, Options(extra_args=["-DUSE_MAX"]))
    by_line = {s["line"]: s for s in r.sites}
    plain = by_line[line_of(src, "size(a), MPI_DOUBLE_PRECISION, MPI_SUM")]
    assert plain["action"] == "nonblocking"
    # the wait moved past `extra = 2` (a variable from the #included file) to the read of b
    assert plain["waits"][0]["line"] == line_of(src, "print *, b(1), extra")
    macro = by_line[line_of(src, "b, NV, MPI_DOUBLE")]
    assert macro["action"] == "unchanged" and "macro" in macro["reason"]
    conditional = by_line[line_of(src, "MPI_MAX")]
    assert conditional["action"] == "unchanged" and "preprocessor line" in conditional["reason"]
    out = r.output.decode()
    # the file itself is edited: directives kept, nothing expanded
    assert out.count("#define NV 4") == 1 and '#include "pre_decls.h"' in out and "#ifdef USE_MAX" in out
    assert "call MPI_Iallreduce(a, b, SIZE(a)" in out and "b, NV, MPI_DOUBLE" in out


UNMODELLED = """subroutine unmodelled(n)
  use mpi
  implicit none
  integer, intent(in) :: n
  real :: y(10), x(10)
  integer :: ierr, i
  y = 1
  call MPI_ALLREDUCE(y, x, 10, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  where (x > 0) x = 0
  associate (q => y(1))
    call MPI_ALLREDUCE(y, x, 10, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  end associate
  do concurrent (i = 1:n)
    y(i) = 0
  end do
end subroutine unmodelled
"""


def test_statements_not_modelled_stop_waits_and_keep_their_calls(tmp_path):
    src = tmp_path / "unmodelled.f90"
    src.write_text(UNMODELLED)
    r = transform_file(src, Options())
    first, inner = sorted(r.sites, key=lambda s: s["line"])
    # WHERE writes x in a way the front end does not model: the wait stays before it
    assert first["action"] == "nonblocking" and first["waits"][0]["line"] == line_of(src, "where (x > 0)")
    assert "not modelled" in first["waits"][0]["blocked_by"]
    # a collective inside ASSOCIATE is still a site, reported and left blocking
    assert inner["action"] == "unchanged" and "ASSOCIATE" in inner["reason"]
