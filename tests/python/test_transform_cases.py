"""The transformer on whole programs (tests/transform_cases/): the paper's figures come out as in
the paper (or with a later wait), the negative cases stay safe, the output is a fixpoint, and the
transformed programs print what the originals print with both MPIs and 1-4 ranks."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from mpiopt import mpi
from mpiopt.transform import Options, transform_file

sys.path.insert(0, str(Path(__file__).parent))
import difftest  # noqa: E402

CASES = Path(__file__).resolve().parents[1] / "transform_cases"
pytestmark = pytest.mark.skipif(not shutil.which("mpicc.openmpi"), reason="needs Open MPI's headers")


def run(name, mode="nonblocking", flavour="openmpi"):
    return transform_file(CASES / name, Options(mode=mode, flavour=flavour))


def sites_by_line(result):
    return {s["line"]: s for s in result.sites}


def lines(text: bytes) -> list[str]:
    return [ln.strip() for ln in text.decode().splitlines()]


def follows(out: list[str], first: str, then: str) -> bool:
    """`then` is the statement right after the line containing `first`."""
    i = next(i for i, ln in enumerate(out) if first in ln)
    return then in out[i + 1]


# --- the paper's figures ------------------------------------------------------------------------

def test_figure_5_to_6_cg_nonblocking():
    r = run("fig05_cg.c")
    out = lines(r.output)
    assert all(s["action"] == "nonblocking" for s in r.sites)
    allgather, allreduce = sorted(r.sites, key=lambda s: s["line"])
    # Allgather: the wait goes to the end of the loop body, after the direction update
    assert allgather["waits"][0]["blocked_by"] == "end of the loop body"
    assert follows(out, "Bloc_Direction_Vector[i] = -Bloc_HVector[i]", "}")
    i = out.index("MPI_Wait(&mpiopt_reqs[0], &mpiopt_stats[0]);")
    assert out[i + 1].startswith("} while (Delta0 > EPSILON")
    # Allreduce: Delta1 is read right away
    assert follows(out, "MPI_Iallreduce(&Bloc_Delta1, &Delta1", "MPI_Wait(&mpiopt_reqs[1], &mpiopt_stats[1]);")
    assert "reads `Delta1`" in allreduce["waits"][0]["blocked_by"]


def test_figure_5_to_11_cg_persistent():
    r = run("fig05_cg.c", mode="persistent")
    text = r.output.decode()
    assert [s["action"] for s in r.sites] == ["persistent", "persistent"]
    init_a = text.index("MPIX_Allgather_init(Bloc_Vector_X")
    init_b = text.index("MPIX_Allreduce_init(&Bloc_Delta1")
    loop = text.index("    do {")
    assert init_a < init_b < loop
    assert "#include <mpi-ext.h>" in text
    body = text[loop:text.index("} while")]
    assert body.count("MPI_Start(&mpiopt_reqs[") == 2
    after = text[text.index("} while"):]
    assert after.index("MPI_Request_free(&mpiopt_reqs[0]);") < after.index("MPI_Request_free(&mpiopt_reqs[1]);") \
        < after.index("if (MyRank == 0)")
    mpich = run("fig05_cg.c", mode="persistent", flavour="mpich").output.decode() \
        if shutil.which("mpicc.mpich") else ""
    if mpich:
        # MPI-4 names; MPICH 4.0's persistent Allgather is broken, so that call stays nonblocking
        assert "MPI_Allreduce_init(" in mpich and "mpi-ext.h" not in mpich
        assert "MPI_Allgather_init(" not in mpich and "MPI_Iallgather(" in mpich


def test_figure_7_to_8_scatter_rank_guarded_waits():
    r = run("fig07_scatter.c")
    out = lines(r.output)
    scatter = next(s for s in r.sites if s["call"] == "MPI_Scatter")
    assert [w["guard"] for w in scatter["waits"]] == ["root", "nonroot"]
    assert follows(out, "MPI_Iscatter(nums", "if (mpiopt_root[0]) { MPI_Wait(&mpiopt_reqs[0]")
    assert follows(out, "float t = do_computation(nums", "if (!mpiopt_root[0]) { MPI_Wait(&mpiopt_reqs[0]")
    assert "mpiopt_root[0] = mpiopt_is_root(MPI_COMM_WORLD, root);" in out


def test_figure_9_to_10_consecutive_broadcasts_overlap():
    r = run("fig09_bcasts.c")
    out = lines(r.output)
    bcasts = [s for s in r.sites if s["call"] == "MPI_Bcast"]
    assert len(bcasts) == 3 and all(s["action"] == "nonblocking" for s in bcasts)
    i = out.index("MPI_Ibcast(&mass, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &mpiopt_reqs[0]);")
    assert out[i + 1].startswith("MPI_Ibcast(&nrho") and out[i + 2].startswith("MPI_Ibcast(&drho")
    assert out[i + 3] == "MPI_Waitall(3, &mpiopt_reqs[0], &mpiopt_stats[0]);"
    assert out[i + 4].startswith("/*")          # the comment stays with its statement


def test_figure_12_to_13_four_allreduces():
    r = run("fig12_four_allreduce.c")
    out = lines(r.output)
    assert all(s["action"] == "nonblocking" for s in r.sites)
    assert follows(out, "MPI_Iallreduce(sub_arr1, sumA1temp", "MPI_Wait(&mpiopt_reqs[0]")
    assert follows(out, "MPI_Iallreduce(sub_arr2, minA2temp", "MPI_Iallreduce(sub_arr2, maxA2temp")
    # the min/max reductions overlap the update of the third array (figure 13, lines 9-12)
    assert follows(out, "MPI_Iallreduce(sub_arr2, maxA2temp", "sub_arr3 = scalarAdd(sub_arr3")
    assert follows(out, "sub_arr3 = scalarAdd(sub_arr3", "MPI_Wait(&mpiopt_reqs[1]")
    assert follows(out, "minA2 = min(minA2temp", "MPI_Wait(&mpiopt_reqs[2]")
    assert follows(out, "MPI_Iallreduce(sub_arr3, sumA3temp", "MPI_Wait(&mpiopt_reqs[3]")


# --- negative cases -----------------------------------------------------------------------------

def _markers(path: Path, marker: str) -> list[int]:
    return [i for i, ln in enumerate(path.read_text().splitlines(), 1) if f"/* {marker} */" in ln]


def _function_ranges(result):
    """(first line, last line, name) of each function, from the source text."""
    text = result.original.decode().splitlines()
    starts = [(i, m.group(1)) for i, ln in enumerate(text, 1)
              if (m := re.match(r"^(?:static )?\w[\w\s\*]*?\b(\w+)\(.*\)\s*$", ln))]
    return [(s, (starts[k + 1][0] - 1) if k + 1 < len(starts) else len(text), name)
            for k, (s, name) in enumerate(starts)]


@pytest.mark.parametrize("mode", ["nonblocking", "persistent"])
def test_negative_cases_stay_safe(mode):
    path = CASES / "negatives.c"
    r = run("negatives.c", mode=mode)
    conflicts = _markers(path, "CONFLICT")
    assert len(conflicts) >= 15
    checked = 0
    for first, last, name in _function_ranges(r):
        marks = [c for c in conflicts if first <= c <= last and c > first + 1]
        if not marks:
            continue
        for s in r.sites:
            if first <= s["line"] <= last and s["line"] < marks[0] and s["action"] != "unchanged":
                for w in s["waits"]:
                    assert w["line"] <= marks[0], f"{name}: wait at line {w['line']} after the " \
                        f"conflicting statement at line {marks[0]}: {w}"
                checked += 1
    assert checked >= 15
    for line in _markers(path, "UNCHANGED"):
        assert sites_by_line(r)[line]["action"] == "unchanged"
    for line in _markers(path, "NOT_PERSISTENT"):
        assert sites_by_line(r)[line]["action"] != "persistent"


def test_negative_reasons_name_the_blocking_statement():
    r = run("negatives.c")
    by_fn = {s["function"]: s for s in r.sites}
    expect = {
        "write_through_alias": "writes `alias[0]`",
        "pointer_arithmetic": "reads `*(p + 1)`",
        "global_pointer_escapes": "calls touch_global (`touch_global()`), which writes the receive buffer `out`",
        "unknown_function_gets_alias": "passes an alias of `out` to qsort",
        "global_buffer_and_unknown_call": "calls getenv (body not known), which may reach `g_recv` through a global",
        "goto_path": "goto",
        "return_path": "return",
        "buffer_freed": "calls free (`free(t)`), which writes the send buffer `t`",
        "buffer_out_of_scope": "end of the scope of `tmp`",
        "wtime_stops": "calls MPI_Wtime",
        "function_pointer": "(function pointer)",
    }
    for fn, text in expect.items():
        assert text in by_fn[fn]["waits"][0]["blocked_by"], (fn, by_fn[fn]["waits"])
    assert "result is used" in by_fn["result_used"]["reason"] or \
        any("result is used" in s["reason"] for s in r.sites if s["function"] == "result_used")


# --- idempotence --------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["nonblocking", "persistent"])
def test_transforming_the_output_again_changes_nothing(tmp_path, mode):
    for case in sorted(CASES.glob("*.c")):
        first = transform_file(case, Options(mode=mode))
        once = tmp_path / case.name
        once.write_bytes(first.output)
        second = transform_file(once, Options(mode=mode))
        assert second.output == first.output, case.name
        assert first.changed, case.name


# --- differential runs ----------------------------------------------------------------------------

FIGURES = ["fig05_cg.c", "fig07_scatter.c", "fig09_bcasts.c", "fig12_four_allreduce.c"]


def _check(name, modes, ranks, tmp_path):
    flavours = [f for f in mpi.available_flavours()]
    if not flavours:
        pytest.skip("no MPI installed")
    failures = difftest.check(CASES / name, tmp_path, modes=modes, flavours=flavours, ranks=ranks,
                              transformer=difftest.transform_in_process)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", FIGURES)
def test_figures_print_the_same_as_the_originals(name, tmp_path):
    # persistent only where there is a loop; ranks 1-4 where the case depends on the rank count
    modes = ("nonblocking", "persistent") if name == "fig05_cg.c" else ("nonblocking",)
    _check(name, modes, (1, 2, 3, 4), tmp_path)


def test_negative_cases_print_the_same_as_the_originals(tmp_path):
    _check("negatives.c", ("nonblocking", "persistent"), (1, 2, 4), tmp_path)


def test_branch_cases_use_flags_shared_requests_and_persistent_neighbourhoods():
    r = run("branches.c", mode="persistent")
    text = r.output.decode()
    by_fn = {}
    for s in r.sites:
        by_fn.setdefault(s["function"], []).append(s)
    # three exclusive branches share one request; the waits after the if are flag-guarded
    assert [s["request"] for s in by_fn["branches"]] == [0, 0, 0]
    assert all(w["flag"] for s in by_fn["branches"] for w in s["waits"])
    assert "int mpiopt_flags[1] = {0};" in text
    assert text.count("mpiopt_flags[0] = 1;") == 3
    # calls right under a case label: the wait stops at a conflict or the next case label
    first, second = by_fn["switched"]
    assert first["action"] == second["action"] == "nonblocking"
    assert "writes `v`" in first["waits"][0]["blocked_by"]
    assert second["waits"][0]["blocked_by"] == "case label"
    assert [s["action"] for s in by_fn["neighbours"]] == ["persistent"]
    assert [s["action"] for s in by_fn["vectors_and_scans"]] == ["persistent"] * 5
    (rooted,) = by_fn["rooted_in_loop"]
    assert rooted["action"] == "persistent" and [w["guard"] for w in rooted["waits"]] == ["root", "nonroot"]


def test_branch_cases_print_the_same_as_the_originals(tmp_path):
    _check("branches.c", ("nonblocking", "persistent"), (1, 2, 3, 4), tmp_path)
