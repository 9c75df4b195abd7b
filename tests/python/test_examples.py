"""The example programs of examples/ (the Petal paper's CG, four-Allreduce kernel, game of life and
six broadcasts), transformed by `mpiopt transform` into nonblocking and persistent versions:
built with every MPI, run with 1-4 ranks, they must print what the originals print (integers
exactly, floating numbers within difftest.RTOL: see difftest.py for why)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import difftest
from mpiopt import mpi
from conftest import run_mpiopt

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"

# Tiny sizes (the benchmark uses large ones): each run takes milliseconds, the launcher dominates.
EXAMPLES = {
    "cg": ["-n", "48", "-i", "30"],
    "four_allreduce": ["-n", "64", "-i", "3"],
    "game_of_life": ["-n", "24", "-i", "12"],
    "six_bcasts": ["-n", "60", "-i", "3"],
}
# How many collectives of each example sit in a loop with loop-invariant arguments and fixed
# buffer addresses, i.e. must become persistent (the others stay nonblocking).
PERSISTENT_CALLS = {"cg": 4, "four_allreduce": 4, "game_of_life": 2, "six_bcasts": 6}
# ... except where the MPI's persistent collective is broken: MPICH 4.0.2's MPI_Allgather_init
# gives stale data from the second MPI_Start on (power-of-two sizes; pmodels/mpich#6423, fixed in
# 4.1), so CG's two gathers must stay nonblocking there.
PERSISTENT_EXCEPTIONS = {("cg", "mpich"): 2}



def persistent_calls(name: str, flavour: str) -> int:
    return PERSISTENT_CALLS[name] - PERSISTENT_EXCEPTIONS.get((name, flavour), 0)


# Programs that are only checked for unchanged output (and safe waits): examples/hazards.c holds the
# negative cases, where waits must stay close and some calls must stay blocking or nonblocking.
DIFFERENTIAL_ONLY = {"hazards": ["-i", "3"]}
PROGRAMS = {**EXAMPLES, **DIFFERENTIAL_ONLY}
BLOCKING_COLLECTIVE = re.compile(r"\bMPI_(Allreduce|Allgather|Bcast|Reduce|Neighbor_alltoallw)\s*\(")
NONBLOCKING_COLLECTIVE = re.compile(r"\bMPI_I(allreduce|allgather|bcast|reduce|neighbor_alltoallw)\s*\(")
PERSISTENT_INIT = re.compile(r"\bMPIX?_(Allreduce|Allgather|Bcast|Reduce|Neighbor_alltoallw)_init\s*\(")

FLAVOURS = mpi.available_flavours()


def _transform_available() -> bool:
    r = subprocess.run([sys.executable, "-m", "mpiopt.cli", "transform", "--help"],
                       capture_output=True, text=True)
    return r.returncode == 0


pytestmark = pytest.mark.skipif(not FLAVOURS, reason="no MPI installed (mpicc.openmpi / mpicc.mpich)")


@pytest.fixture(scope="session")
def versions(tmp_path_factory):
    """Every example × flavour built once: {(example, flavour): {version: Build | DiffTestError}},
    versions "original", "nonblocking", "persistent"; also the transformed files and reports."""
    if not _transform_available():
        pytest.fail("`mpiopt transform` is not available (python/mpiopt/transform, issue 5 part 1)")
    out = tmp_path_factory.mktemp("examples")
    built, transformed = {}, {}
    for name in PROGRAMS:
        source = EXAMPLES_DIR / f"{name}.c"
        for flavour in FLAVOURS:
            entry = built.setdefault((name, flavour), {})
            try:
                entry["original"] = difftest.build(source, flavour, out, f"{name}.original")
            except difftest.DiffTestError as e:
                entry["original"] = e
            for mode in difftest.MODES:
                try:
                    t = difftest.transform(source, mode, out, flavour)
                    transformed[(name, flavour, mode)] = t
                    entry[mode] = difftest.build(t.path, flavour, out)
                except difftest.DiffTestError as e:
                    entry[mode] = e
    return built, transformed


def _get(entry: dict, version: str) -> difftest.Build:
    b = entry[version]
    if isinstance(b, Exception):
        pytest.fail(f"{version}: {b}")
    return b


def _report(versions, name: str, mode: str, flavour: str | None = None) -> list[dict]:
    """The call sites of the transform report of one program (the first flavour by default)."""
    built, transformed = versions
    flavour = flavour or FLAVOURS[0]
    if (name, flavour, mode) not in transformed:
        pytest.fail(f"{name} was not transformed ({mode}, {flavour}): {built[(name, flavour)][mode]}")
    return difftest.call_sites(transformed[(name, flavour, mode)].report)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_transformed_examples_print_what_the_originals_print(versions, name, flavour):
    entry = versions[0][(name, flavour)]
    original = _get(entry, "original")
    builds = {mode: _get(entry, mode) for mode in difftest.MODES}
    failures = []
    for np in difftest.RANKS:
        expected = difftest.reference(original.executable, flavour, np, PROGRAMS[name])
        assert expected.strip(), f"{name} printed nothing with {np} ranks"
        for mode, b in builds.items():
            actual = difftest.run(b.executable, flavour, np, PROGRAMS[name])
            failures += [f"{mode} np={np}: {d}" for d in difftest.compare_outputs(expected, actual)]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples_are_transformed_and_compile_cleanly(versions, name, flavour):
    """Nothing blocking is left in the examples (all their collectives can be safely overlapped),
    the loops' collectives become persistent, and gcc -Wall -Wextra finds nothing that matters."""
    built, transformed = versions
    original_text = (EXAMPLES_DIR / f"{name}.c").read_text()
    n_calls = len(BLOCKING_COLLECTIVE.findall(original_text))
    for mode in difftest.MODES:
        b = _get(built[(name, flavour)], mode)
        assert not b.warnings, f"{mode}: " + "\n".join(b.warnings)
        text = transformed[(name, flavour, mode)].path.read_text()
        assert not BLOCKING_COLLECTIVE.findall(text), f"{mode}: a blocking collective is left"
        started = len(NONBLOCKING_COLLECTIVE.findall(text)) + len(PERSISTENT_INIT.findall(text))
        assert started == n_calls, f"{mode}: {started} of {n_calls} collectives transformed"
        if mode == "persistent":
            assert len(PERSISTENT_INIT.findall(text)) == persistent_calls(name, flavour)
            assert "MPI_Request_free" in text
        else:
            assert not PERSISTENT_INIT.findall(text)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_transform_report_lists_every_call_as_transformed(versions, name):
    n_calls = len(BLOCKING_COLLECTIVE.findall((EXAMPLES_DIR / f"{name}.c").read_text()))
    for mode in difftest.MODES:
        sites = _report(versions, name, mode)
        assert len(sites) == n_calls, f"{mode}: report lists {len(sites)} call sites, source has {n_calls}"
        left = [s for s in sites if s["action"] == "unchanged"]
        assert not left, f"{mode}: left alone: {left}"
        persistent = [s for s in sites if s["action"] == "persistent"]
        assert len(persistent) == (persistent_calls(name, FLAVOURS[0]) if mode == "persistent" else 0)


# Where the paper puts each wait (figures 6, 8, 10, 13, 16), as (a piece of the collective call,
# a piece of the statement the wait may not come before). The transformer may do better (later).
PAPER_WAITS = {
    "cg": [("MPI_Allgather(Bloc_Vector_X", "} while (Delta0 >"),              # figure 6: end of loop
           ("MPI_Allreduce(&Bloc_Delta1", "Beta = Delta1 / Delta0;")],
    "four_allreduce": [("MPI_Allreduce(sub_arr1", "sumA1 = sum(sumA1temp"),    # figure 13
                       ("MPI_Allreduce(sub_arr2, minA2temp", "minA2 = min(minA2temp"),
                       ("MPI_Allreduce(sub_arr2, maxA2temp", "maxA2 = max(maxA2temp"),
                       ("MPI_Allreduce(sub_arr3", "finalsum = sum(sumA3temp")],
    "game_of_life": [("MPI_Neighbor_alltoallw(", "flag += compute_boundary("),  # figure 16
                     ("MPI_Allreduce(&flag", "for (int i = 1; i <= myM; i++)\n            memcpy")],
    "six_bcasts": [(f"MPI_Bcast(&{v},", "place_atoms(x, natoms")                # figure 10
                   for v in ("mass", "nrho", "drho", "nr", "dr", "cut")],
}


def _line_of(text: str, piece: str) -> int:
    at = text.find(piece)
    assert at >= 0 and text.find(piece, at + 1) < 0, f"{piece!r} must occur once"
    return text.count("\n", 0, at) + 1


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_waits_are_at_least_as_late_as_in_the_paper(versions, name):
    text = (EXAMPLES_DIR / f"{name}.c").read_text()
    sites = {s["line"]: s for s in _report(versions, name, "nonblocking")}
    early = []
    for call, not_before in PAPER_WAITS[name]:
        site = sites[_line_of(text, call)]
        limit = _line_of(text, not_before)
        early += [f"{call}…: wait before line {w['line']} ({w['blocked_by']}), the paper's is at line {limit}"
                  for w in site["waits"] if w["line"] < limit]
    assert not early, "\n".join(early)


# examples/hazards.c: (a piece of the call, the ranks a wait is for, a piece of the statement the
# wait must come before). "root"/"nonroot" entries accept a wait for all ranks too.
HAZARD_WAITS = [
    ("MPI_Scatter(nums", "root", "for (int i = 0; i < len * p; i++)\n        nums[i] = -i"),  # figure 8
    ("MPI_Scatter(nums", "nonroot", "for (int i = 0; i < len; i++)\n        s += sub_nums"),
    ("MPI_Allreduce(send, recv", "all", "alias[3] = 7;"),
    ("MPI_Bcast(buf, N", "all", "*q += w;"),
    ("MPI_Allreduce(in, out, N, MPI_LONG, MPI_MAX", "all", "r[0] = 99;"),
    ("MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);\n    bump_escaped", "all",
     "bump_escaped();\n    return"),
    ("MPI_Allreduce(in, out, N, MPI_LONG, MPI_MIN", "all", "qsort(out"),
    ("MPI_Allreduce(&local, &global, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);\n    if (round", "all",
     "return busy_work(round) % 5;"),
    ("MPI_Allreduce(&local, &global, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);\n        if (k == iters)", "all",
     "break;"),
    ("MPI_Bcast(&v, 1", "all", "goto skip;"),
    ("MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);\n    long s = checksum(in", "all",
     "free(out);"),
    ("MPI_Bcast(inner", "all", "s += checksum(inner, N);"),
    ("MPI_Allreduce(cur, next", "all", "next[i] %= 1000003;"),
    ("MPI_Reduce(results, totals", "root", "printf(\"%s %ld\\n\""),
    ("MPI_Reduce(results, totals", "nonroot", "MPI_Finalize();\n    return 0;"),
]


@pytest.mark.parametrize("mode", difftest.MODES)
def test_hazard_waits_come_before_the_conflict(versions, mode):
    """Reading the report: every transformed call of hazards.c waits no later than the first
    statement that conflicts with it (what the differential run cannot prove when MPI happens to
    finish early), and the swapped buffers do not become persistent."""
    text = (EXAMPLES_DIR / "hazards.c").read_text()
    sites = {s["line"]: s for s in _report(versions, "hazards", mode)}
    late = []
    for call, ranks, before in HAZARD_WAITS:
        site = sites[_line_of(text, call)]
        if site["action"] == "unchanged":
            continue
        limit = _line_of(text, before)
        waits = [w for w in site["waits"] if w["guard"] in ("all", ranks)]
        if not waits:
            late.append(f"{call}…: no wait for {ranks} ranks")
        late += [f"{call}…: {ranks} wait before line {w['line']}, must be at most {limit} ({before!r})"
                 for w in waits if w["line"] > limit]
    assert not late, "\n".join(late)
    assert sites[_line_of(text, "MPI_Allreduce(cur, next")]["action"] != "persistent"


def test_transforming_twice_changes_nothing(versions, tmp_path):
    _, transformed = versions
    for (name, flavour, mode), t in transformed.items():
        if flavour != FLAVOURS[0]:
            continue
        again = difftest.transform(t.path, mode, tmp_path, flavour)
        assert again.path.read_text() == t.path.read_text(), f"{name} {mode}"


@pytest.mark.parametrize("name", ["cg", "game_of_life"])
def test_examples_agree_with_themselves_over_rank_counts(name, tmp_path):
    """The examples themselves are right: the game of life's result does not depend on how the
    grid is split (integers, exact); CG's solution does not either (within the tolerance), when
    the size divides evenly; only its iteration count may, as the block-Jacobi preconditioner's
    blocks follow the rank boundaries."""
    flavour = FLAVOURS[0]
    b = difftest.build(EXAMPLES_DIR / f"{name}.c", flavour, tmp_path)
    assert not b.warnings
    outputs = {np: difftest.reference(b.executable, flavour, np, EXAMPLES[name]) for np in difftest.RANKS}

    def strip_header(text):  # the first line names the rank count
        return "\n".join(line for line in text.splitlines()[1:] if not line.startswith("iterations"))
    for np in difftest.RANKS[1:]:
        assert not difftest.compare_outputs(strip_header(outputs[1]), strip_header(outputs[np])), np


def test_examples_reject_bad_options(tmp_path):
    flavour = FLAVOURS[0]
    for name in EXAMPLES:
        b = difftest.build(EXAMPLES_DIR / f"{name}.c", flavour, tmp_path)
        # Open MPI 4.1's mpirun waits 2.4 s after a rank exits non-zero unless told not to
        r = mpi.run(flavour, 1, [b.executable, "-n", "0"], timeout=60,
                    env=dict(os.environ, OMPI_MCA_odls_base_sigkill_timeout="0"))
        assert r.returncode == 2 and "usage" in r.stderr, name


def test_difftest_catches_a_result_used_before_it_arrives(tmp_path):
    """The harness is not blind: four_allreduce with the MIN reduction's result used before the
    reduction writes it (what a wrong transformation's late wait amounts to when the message is
    late) prints something else, and compare_outputs says so. The reduction is moved past the
    use rather than made nonblocking with a late wait: whether an MPI_Iallreduce has already
    completed at the use is a race the MPI library usually wins, so that version is right by luck
    in most runs and cannot show the harness sees anything."""
    source = (EXAMPLES_DIR / "four_allreduce.c").read_text()
    blocking = "MPI_Allreduce(sub_arr2, minA2temp, num_elements, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);"
    assert blocking in source
    wrong = source.replace(blocking, "").replace("        total += finalsum;",
                                                 f"        {blocking}\n        total += finalsum;")
    assert wrong.count(blocking) == 1 and wrong.index(blocking) > wrong.index("minA2 = min(")
    (tmp_path / "wrong.c").write_text(wrong)
    args = EXAMPLES["four_allreduce"]
    for flavour in FLAVOURS:
        original = difftest.build(EXAMPLES_DIR / "four_allreduce.c", flavour, tmp_path, "original")
        broken = difftest.build(tmp_path / "wrong.c", flavour, tmp_path)
        for np in (1, 2):
            expected = difftest.reference(original.executable, flavour, np, args)
            assert difftest.compare_outputs(expected, difftest.run(broken.executable, flavour, np, args)), \
                (flavour, np, "a stale result went unnoticed")


def test_compare_outputs_tolerates_rounding_only():
    same = "cg size 48 ranks 2\niterations 7\nsum_x 9.6163721490e+00\n"
    assert difftest.compare_outputs(same, same) == []
    # last-digit noise from another summation order: accepted
    assert difftest.compare_outputs(same, same.replace("9.6163721490e+00", "9.6163721491e+00")) == []
    # a wrong digit, an integer off by one, a missing line: rejected
    assert difftest.compare_outputs(same, same.replace("9.6163721490e+00", "9.6163821490e+00"))
    assert difftest.compare_outputs(same, same.replace("iterations 7", "iterations 8"))
    assert difftest.compare_outputs(same, same.replace("sum_x 9.6163721490e+00\n", ""))
    assert difftest.compare_outputs("x 1.0\n", "x nan\n")


def test_bench_transform_times_the_three_versions():
    flavour = FLAVOURS[0]
    r = run_mpiopt("bench", "transform", "--size", "small", "--repeats", "1", "--examples",
                   "six_bcasts", "--flavour", flavour, "--json")
    assert r.returncode == 0, r.stderr
    import json
    report = json.loads(r.stdout)
    [result] = report["results"]
    assert result["example"] == "six_bcasts" and result["flavour"] == flavour
    assert set(result["best_seconds"]) == {"blocking", "nonblocking", "persistent"}
    assert all(t > 0 for t in result["best_seconds"].values())
    assert result["output_matches"] == {"nonblocking": True, "persistent": True}
    assert result["call_sites"]["persistent"]["persistent"] == PERSISTENT_CALLS["six_bcasts"]
    assert result["call_sites"]["nonblocking"]["nonblocking"] == 8
    assert result["speedup_nonblocking"] == pytest.approx(
        result["best_seconds"]["blocking"] / result["best_seconds"]["nonblocking"])


@pytest.mark.parametrize("bad", [["-np", "0"], ["--examples", "no_such_example"], ["--repeats", "0"]])
def test_bench_transform_rejects_bad_input(bad):
    r = run_mpiopt("bench", "transform", *bad, "--json")
    assert r.returncode == 2 and "mpiopt: error:" in r.stderr and not r.stdout


def test_bench_transform_help_has_an_example():
    r = run_mpiopt("bench", "transform", "--help")
    assert r.returncode == 0 and "mpiopt bench transform" in r.stdout and "--json" in r.stdout
