"""Fortran wrappers split into a start and a finish (issue 66, item 5; across.py's analysis,
fortran_across.py's text): a module FUNCTION and a module SUBROUTINE around MPI_ALLREDUCE
(tests/transform_cases/fortran_across.f90, `use mpi`; the same with `use mpi_f08`, made by the
test) and a CONTAINed FUNCTION of a fixed-form `mpif.h` program (fortran_across_fixed.f) have
their waits moved into the caller; the calls that must stay, stay with the reason. The markers
(OVERLAP, CONFLICT, UNCHANGED) say where each finish may go; the transformed programs must print
what the originals print with both MPIs."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from mpiopt import mpi
from mpiopt.transform import Options, report, transform_file

sys.path.insert(0, str(Path(__file__).parent))
import difftest  # noqa: E402
from case_lines import line_of, lines, markers  # noqa: E402

CASES = Path(__file__).resolve().parents[1] / "transform_cases"
FREE, FIXED = CASES / "fortran_across.f90", CASES / "fortran_across_fixed.f"
pytestmark = pytest.mark.skipif(not shutil.which("mpif90.openmpi") and not shutil.which("mpif90.mpich"),
                                reason="needs an MPI Fortran compiler")


def f08(tmp_path: Path) -> Path:
    src = tmp_path / "fortran_across_f08.f90"
    src.write_text(FREE.read_text().replace("  use mpi\n", "  use mpi_f08\n"))
    return src


@pytest.fixture(scope="module", params=[FREE, FIXED], ids=["use_mpi", "mpif_h"])
def case(request):
    return request.param, transform_file(request.param, Options())


def calls_of_helpers(r) -> list[dict]:
    return [s for s in r.sites if "helper" in s.get("across", {})]


def test_finishes_and_markers(case):
    path, r = case
    calls = sorted(calls_of_helpers(r), key=lambda s: s["line"])
    assert calls

    def call_before(line):
        return max((s for s in calls if s["line"] < line), key=lambda s: s["line"])

    for line in markers(path, "OVERLAP"):
        s = call_before(line)
        assert s["action"] == "nonblocking" and all(w["line"] > line for w in s["waits"]), (line, s)
    for line in markers(path, "CONFLICT"):
        s = call_before(line)
        assert s["action"] == "nonblocking" and all(w["line"] <= line for w in s["waits"]), (line, s)
    # a call left as it is: a site of its own, or (its helper not split) in its helper's list
    kept = {s["line"] for s in r.sites if s["action"] == "unchanged"}
    kept |= {c["line"] for s in r.sites for c in s.get("across", {}).get("calls", []) if not c["moved"]}
    for line in markers(path, "UNCHANGED"):
        assert line - 1 in kept, line
    moved = [s for s in calls if s["action"] == "nonblocking"]
    assert report.to_json([r], {})["summary"]["across_functions"] == len(moved) == (3 if path == FREE else 1)
    for s in moved:
        assert s["request"] is None and "split: its wait" in s["reason"]


def test_helpers_say_they_are_split(case):
    path, r = case
    helpers = [s for s in r.sites if "split" in s.get("across", {})]
    split = {s["function"] for s in helpers if s["across"]["split"]}
    assert split == ({"global_sum", "vec_sum", "local_max"} if path == FREE else {"gsum"})
    if path == FREE:
        external = next(s for s in helpers if s["function"] == "external_sum")
        assert not external["across"]["split"] and "external procedure" in external["across"]["reason"]


def test_text(case):
    path, r = case
    out = r.output.decode()
    if path == FREE:
        # the state's type in the module (before CONTAINS), start and finish after the helper
        module = out[:out.index("end module sums")]
        assert module.index("type mpiopt_split_global_sum") < module.index("contains")
        assert "function mpiopt_finish_global_sum(x, mpiopt_st) result(s)" in out
        assert "call mpiopt_start_global_sum(x, mpiopt_state_0)" in out
        assert "t = mpiopt_finish_global_sum(x, mpiopt_state_0)" in out
        assert "s = mpiopt_st%s" in out and "mpiopt_st%s = mpiopt_st%s * 0.5d0" in out
        # ASYNCHRONOUS: the state, the buffer dummies in start and finish, the caller's actuals
        assert "type(mpiopt_split_global_sum), asynchronous :: mpiopt_state_0" in out
        assert out.count("ASYNCHRONOUS :: a, b") == 2
        assert re.search(r"^  asynchronous a, b, m$", out, re.M)
        # the call in an IF branch: its finish after the IF, under its flag
        assert re.search(r"if \(mpiopt_flags\((\d)\) /= 0\) then\n\s+call mpiopt_finish_local_max\(", out)
        # the calls left as they are keep their text
        assert "u = global_sum(x)" in out and "call vec_sum(4, a + 1, b)" in out
    else:
        code = [ln for ln in out.splitlines() if ln and ln[0] not in "Cc*!"]
        assert all(len(ln) <= 72 for ln in code), [ln for ln in code if len(ln) > 72]
        assert "T = mpiopt_finish_gsum(X, mpiopt_state_0)" in out
        assert "RESULT(gsum)" in out and "DOUBLE PRECISION FUNCTION mpiopt_finish_gsum(" in out


def test_reasons_for_calls_left_as_they_are():
    r = transform_file(FREE, Options())
    by = {s["line"]: s for s in calls_of_helpers(r)}
    at_once = by[line_of(FREE, "u = global_sum(x)")]
    assert "needs what global_sum leaves at once" in at_once["reason"], at_once
    expression = by[line_of(FREE, "call vec_sum(4, a + 1, b)")]
    assert "argument `a + 1` is not a variable named whole" in expression["reason"], expression


def test_saved_locals_keep_the_helper(tmp_path):
    """A SAVEd local would be two variables in the start and the finish: the helper stays."""
    src = tmp_path / "saved.f90"
    src.write_text(FREE.read_text().replace("    double precision :: s, local\n",
                                            "    double precision :: s\n    double precision, save :: local\n"))
    r = transform_file(src, Options())
    gs = next(s for s in r.sites if s["function"] == "global_sum")
    assert not gs["across"]["split"] and "saved local variables" in gs["across"]["reason"]


def test_passed_as_argument_keeps_the_helper(tmp_path):
    src = tmp_path / "passed.f90"
    src.write_text(FREE.read_text().replace("  call external_sum(x, u)\n",
                                            "  call external_sum(x, u)\n  call apply(global_sum)\n"))
    r = transform_file(src, Options())
    gs = next(s for s in r.sites if s["function"] == "global_sum")
    assert not gs["across"]["split"] and "used other than in a call" in gs["across"]["reason"]


def test_use_only_keeps_the_call(tmp_path):
    src = tmp_path / "only.f90"
    src.write_text(FREE.read_text().replace("  use sums\n", "  use sums, only: global_sum, vec_sum\n"))
    r = transform_file(src, Options())
    calls = [s for s in calls_of_helpers(r) if s["across"]["helper"] != "local_max"]
    assert calls and all(s["action"] == "unchanged" and "without ONLY" in s["reason"] for s in calls)


def test_fixpoint(case, tmp_path):
    path, r = case
    again = tmp_path / path.name
    again.write_bytes(r.output)
    second = transform_file(again, Options())
    assert not second.changed


def test_mpi_f08(tmp_path):
    r = transform_file(f08(tmp_path), Options())
    out = r.output.decode()
    assert "type(MPI_Request) :: mpiopt_request" in out
    assert re.search(r"call MPI_WAIT\(mpiopt_st%mpiopt_request, MPI_STATUS_IGNORE\)", out)
    assert sum(s["action"] == "nonblocking" for s in calls_of_helpers(r)) == 3


@pytest.mark.parametrize("which", ["use_mpi", "mpif_h", "mpi_f08"])
def test_transformed_programs_print_the_same(which, tmp_path):
    path = {"use_mpi": FREE, "mpif_h": FIXED}.get(which) or f08(tmp_path)
    failures = difftest.check_transformed(path, tmp_path, modes=("nonblocking", "persistent"), ranks=(2, 3))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("old, new, why", [
    ("    double precision, intent(in) :: x\n    double precision :: s, local\n",
     "    double precision, intent(in), optional :: x\n    double precision :: s, local\n", "dummy `x` is OPTIONAL"),
    ("    s = s * 0.5d0\n", "    s = s * 0.5d0 + ierr\n", "its ierror `ierr` is read after"),
    ("    double precision :: s, local\n    integer :: ierr\n    local = x\n",
     "    double precision :: s, local, tmp(2)\n    integer :: ierr\n    local = x\n    tmp = x\n", None),
    ("    s = s * 0.5d0\n", "    s = s * 0.5d0\n    tmp = s\n", "is an array"),
    ("    double precision :: s, local\n    integer :: ierr\n    local = x\n"
     "    call MPI_Allreduce(local, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)\n"
     "    s = s * 0.5d0\n",
     "    double precision :: s, local\n    double precision, pointer :: p\n    integer :: ierr\n"
     "    local = x\n    allocate(p)\n    p = 0.5d0\n"
     "    call MPI_Allreduce(local, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)\n"
     "    s = s * p\n", "local pointer or target"),
    ("    s = s * 0.5d0\n  end function global_sum\n",
     "    s = half(s)\n  contains\n    double precision function half(v)\n      double precision :: v\n"
     "      half = v * 0.5d0\n    end function half\n  end function global_sum\n", "CONTAINs procedures"),
])
def test_helpers_fortran_keeps(old, new, why, tmp_path):
    """Fortran's limits on a helper (fortran_across.FortranAcross.why_not_written)."""
    text = FREE.read_text()
    if why == "is an array":         # a local array named after the call
        text = text.replace("    double precision :: s, local\n", "    double precision :: s, local, tmp(2)\n")
    src = tmp_path / "limits.f90"
    src.write_text(text.replace(old, new))
    r = transform_file(src, Options())
    gs = next(s for s in r.sites if s["function"] == "global_sum")
    if why is None:                  # an array the finish does not use: still split
        assert gs["across"]["split"], gs
    else:
        assert not gs["across"]["split"] and why in gs["across"]["reason"], gs
