"""Waits that leave small helper functions (issue 65, item 3; tests/transform_cases/across.c and
across.cpp): a helper whose collective completes before it returns is split into a start and a
finish, and each call of it takes the wait (with the helper's statements after it) to where the
caller first needs what the helper leaves behind. Every soundness rule has a case here whose
assertion fails without it; the transformed programs print what the originals print with both
MPIs, and the output is a fixpoint."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpiopt import mpi
from mpiopt.transform import Options, transform_file

sys.path.insert(0, str(Path(__file__).parent))
import difftest  # noqa: E402

CASES = Path(__file__).resolve().parents[1] / "transform_cases"
C_CASE, CXX_CASE = CASES / "across.c", CASES / "across.cpp"
pytestmark = pytest.mark.skipif(not shutil.which("mpicc.openmpi"), reason="needs Open MPI's headers")


def marker(case: Path, tag: str) -> int:
    (line,) = [i for i, ln in enumerate(case.read_text().splitlines(), 1) if tag in ln]
    return line


def sites(case: Path) -> dict:
    return {s["line"]: s for s in transform_file(case, Options()).sites}


def helper_site(by_line: dict, helper: str) -> dict:
    (s,) = [s for s in by_line.values() if s["function"].split("(")[0] == helper and "split" in s.get("across", {})]
    return s


def assert_moved(case: Path, by_line: dict, name: str):
    """The call marked MOVED(name) moved its helper's wait to right before USE(name)."""
    s = by_line[marker(case, f"MOVED({name})")]
    assert s["action"] == "nonblocking" and "helper" in s["across"], s
    assert [w["line"] for w in s["waits"]] == [marker(case, f"USE({name})")], s
    assert "split" in s["reason"] and s["waits"][0]["moved_past"] >= 1, s


def assert_stays(case: Path, by_line: dict, name: str, why: str):
    s = by_line[marker(case, f"STAYS({name})")]
    assert s["action"] == "unchanged" and not s["waits"] and why in s["reason"], s


# --- C ---------------------------------------------------------------------------------------

def test_c_wrapper_and_dot_product_move_into_the_caller():
    by_line = sites(C_CASE)
    for name in ("sum", "dot", "receive", "global_read", "global_written"):
        assert_moved(C_CASE, by_line, name)
    # the helpers themselves say their waits moved, and into which calls
    dot = helper_site(by_line, "dot")
    assert dot["across"]["split"] and dot["across"]["calls"][0] == {
        "line": marker(C_CASE, "MOVED(dot)"), "function": "main", "moved": True}


def test_c_caller_reading_the_result_at_once_keeps_the_call():
    # the helper writes *result after its wait: without that in the call's accesses, the
    # finish would move past `w = r * 2.0`
    by_line = sites(C_CASE)
    assert_stays(C_CASE, by_line, "at_once", "reads `r`, which may alias the result the helper writes")


def test_c_caller_writing_the_helpers_send_buffer_keeps_the_call():
    # the collective's buffers are the caller's `a` and `c`: `a[0] = 100.0` must not run while
    # the allreduce is pending
    by_line = sites(C_CASE)
    assert_stays(C_CASE, by_line, "send_buffer", "writes `a[0]`, which may alias the send buffer `a`")


def test_c_globals_the_helper_uses_after_its_wait_stop_the_finish():
    by_line = sites(C_CASE)
    read = by_line[marker(C_CASE, "MOVED(global_read)")]
    assert "writes `g_scale`" in read["waits"][0]["blocked_by"], read
    written = by_line[marker(C_CASE, "MOVED(global_written)")]
    assert "reads `g_total`" in written["waits"][0]["blocked_by"], written


@pytest.mark.parametrize("name,helper,why", [
    ("output", "printing_sum", "side effects after the wait"),
    ("returns", "early_sum", "several return paths"),
    ("pointer", "pointer_sum", "use `s` through a pointer"),
    ("recursive", "recursive_sum", "recursive"),
    ("address", "taken_sum", "its address is taken"),
    ("alias", "alias_sum", "a pointer to `s` exists"),
    ("calls_mpi", "mean", "call count_ranks (line"),
])
def test_c_helpers_that_stay_say_why(name, helper, why):
    by_line = sites(C_CASE)
    h = helper_site(by_line, helper)
    assert not h["across"]["split"] and why in h["across"]["reason"], h
    from_main = [c for c in h["across"]["calls"] if c["function"] == "main"]
    assert from_main == [{"line": marker(C_CASE, f"STAYS({name})"), "function": "main", "moved": False}]
    assert marker(C_CASE, f"STAYS({name})") not in by_line      # the call is not a site of its own


def test_c_split_text_and_fixpoint(tmp_path):
    r = transform_file(C_CASE, Options())
    out = r.output.decode()
    assert "t = mpiopt_finish_global_sum(&mpiopt_state_0);" in out
    assert "err = mpiopt_finish_dot(&mpiopt_state_1);" in out
    assert "mpiopt_start_dot(N, a, b, &r, &mpiopt_state_1);" in out
    # the statements after the wait moved with it, on the state's copies
    assert re.search(r"MPI_Wait\(&mpiopt_st->mpiopt_request, MPI_STATUS_IGNORE\);\n\s+\*mpiopt_st->result = "
                     r"mpiopt_st->global;\n\s+return 0;", out)
    # helpers that stay are not split
    assert "mpiopt_start_printing_sum" not in out and "mpiopt_start_early_sum" not in out
    again = tmp_path / C_CASE.name
    again.write_bytes(r.output)
    assert transform_file(again, Options()).output == r.output


# --- C++ -------------------------------------------------------------------------------------

def test_cxx_hpcg_style_dot_product_and_wrapper_move():
    by_line = sites(CXX_CASE)
    for name in ("sum", "dot", "time", "reference"):
        assert_moved(CXX_CASE, by_line, name)
    # the result through `double & result` is read at once: the call stays
    assert_stays(CXX_CASE, by_line, "at_once", "reads `normr`, which may alias the result the helper writes")
    # `in` is the allreduce's send buffer through `const double & in`
    assert_stays(CXX_CASE, by_line, "send_buffer", "writes `in`, which may alias the send buffer `in`")
    # a temporary bound to the reference parameter ends with the start's call
    assert_stays(CXX_CASE, by_line, "temporary", "a temporary bound to a reference")
    assert_stays(CXX_CASE, by_line, "initialiser", "initialises a declaration")
    thrower = helper_site(by_line, "checked_sum")
    assert not thrower["across"]["split"] and "throw" in thrower["across"]["reason"], thrower
    time = by_line[marker(CXX_CASE, "MOVED(time)")]
    assert "writes `t4`" in time["waits"][0]["blocked_by"], time


def test_cxx_fixpoint(tmp_path):
    r = transform_file(CXX_CASE, Options())
    out = r.output.decode()
    assert "(*mpiopt_st->result) = mpiopt_st->global_result;" in out
    assert "mpiopt_st->result = &result;" in out
    again = tmp_path / CXX_CASE.name
    again.write_bytes(r.output)
    assert transform_file(again, Options()).output == r.output


# --- the report --------------------------------------------------------------------------------

def test_report_and_json_say_which_waits_moved_across(tmp_path):
    env_cmd = [sys.executable, "-m", "mpiopt.cli", "transform", str(C_CASE)]
    import os
    wide = dict(os.environ, COLUMNS="400")          # one line a row: the notes unwrapped
    table = subprocess.run(env_cmd + ["--report"], capture_output=True, text=True, timeout=300, env=wide)
    assert table.returncode == 0, table.stderr
    assert "global_sum() -> Allreduce" in table.stdout
    assert "5 waits moved across a function boundary" in table.stdout
    assert "its wait stays in it: recursive" in table.stdout
    import json
    js = subprocess.run(env_cmd + ["--json"], capture_output=True, text=True, timeout=300)
    report = json.loads(js.stdout)
    assert report["summary"]["across_functions"] == 5
    moved = [s for s in difftest.call_sites(report) if "helper" in s.get("across", {})
             and s["action"] == "nonblocking"]
    assert sorted(s["across"]["helper_call"] for s in moved) == ["dot", "from_left", "global_sum",
                                                                 "total_scaled", "total_scaled"]


# --- outputs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("case", [C_CASE, CXX_CASE], ids=["c", "cpp"])
def test_transformed_prints_the_same_with_both_mpis(case, tmp_path):

    failures = difftest.check_transformed(case, tmp_path, modes=("nonblocking",), ranks=(2, 3))
    assert not failures, "\n".join(failures)


def test_a_call_before_the_helpers_definition_stays(tmp_path):
    # the split is written right after the helper: a caller above it (the helper declared
    # first) would not see it, and the output would not compile
    src = tmp_path / "before.c"
    src.write_text("""#include <mpi.h>
static double global_sum(double x);
static double twice(int rank)
{
    double t;
    t = global_sum(rank);
    double w = rank * 2.0;
    return t + w;
}
static double global_sum(double x)
{
    double s = 0.0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}
int main(int argc, char **argv)
{
    int rank;
    double t, w;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    t = twice(rank);
    t = global_sum(t);
    w = rank + 1.0;
    MPI_Finalize();
    return t + w > 0.0 ? 0 : 1;
}
""")
    r = transform_file(src, Options())
    by_line = {s["line"]: s for s in r.sites}
    assert by_line[6]["action"] == "unchanged" and "before the helper's definition" in by_line[6]["reason"]
    assert by_line[23]["action"] == "nonblocking" and by_line[23]["waits"][0]["line"] == 25
    out = tmp_path / "before.out.c"
    out.write_bytes(r.output)
    b = difftest.build(out, "openmpi", tmp_path)
    assert not b.warnings, b.warnings
