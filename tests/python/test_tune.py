"""`mpiopt tune`: the tuning table it writes (format libmpiopt reads), the choice of rows, the
cost-model fit, and bad input. A real tuning run on a tiny size range; no timing assertions."""
import json
import math
import os
import subprocess
import sys

import pytest

from mpiopt import algorithms, mpi
from mpiopt.commands import tune
from conftest import BUILT_FLAVOURS, needs_build, run_mpiopt as mpiopt

FLAVOURS = BUILT_FLAVOURS
ALGORITHMS = set(algorithms.names(kinds=("vendor", "mpiopt"))) if FLAVOURS else set()




def doc(ranks, times, operation="allreduce"):
    """A benchmark document: times = {bytes: {algorithm: median microseconds}}."""
    return {"ranks": ranks, "operation": operation, "algorithms": sorted({a for t in times.values() for a in t}),
            "results": [{"algorithm": a, "bytes": b, "median_us": us} for b, t in times.items() for a, us in t.items()]}


def test_rows_merge_sizes_and_prefer_the_vendor_within_the_margin():
    d = doc(4, {8: {"vendor": 1.0, "ring": 0.99},     # within 3 %: vendor
                16: {"vendor": 1.0, "ring": 0.5},     # ring clearly faster
                32: {"vendor": 2.0, "ring": 1.0},
                64: {"vendor": 1.0, "ring": 3.0}})
    rows = tune.table_rows(d)
    assert [r["algorithm"] for r in rows] == ["vendor", "ring", "vendor"]
    assert rows[0]["max_bytes"] == 11 and rows[1]["max_bytes"] == 45   # geometric means 8|16, 32|64
    assert rows[-1]["max_bytes"] == tune.LAST_MAX_BYTES
    assert all(r["ranks"] == 4 and (r["min_ranks"], r["max_ranks"]) == (4, 4) for r in rows)
    assert all((r["min_ranks"], r["max_ranks"]) == (3, 4) for r in tune.table_rows(d, (3, 4)))


def test_rank_classes_are_powers_of_two_shared_between_the_counts_measured_in_one():
    assert [tune.power_of_two_class(p) for p in (1, 2, 3, 4, 5, 8, 9, 33, 64, 65)] == \
        [(1, 1), (2, 2), (3, 4), (3, 4), (5, 8), (5, 8), (9, 16), (33, 64), (33, 64), (65, 128)]
    assert tune.rank_classes([2, 4, 8, 16, 32, 64]) == \
        {2: (2, 2), 4: (3, 4), 8: (5, 8), 16: (9, 16), 32: (17, 32), 64: (33, 64)}
    assert tune.rank_classes([64]) == {64: (33, 64)}
    assert tune.rank_classes([64, 48]) == {48: (33, 48), 64: (49, 64)}
    assert tune.rank_classes([2, 3, 4]) == {2: (2, 2), 3: (3, 3), 4: (4, 4)}
    assert tune.rank_classes([5, 6, 7, 100]) == {5: (5, 5), 6: (6, 6), 7: (7, 8), 100: (65, 128)}


def test_a_lone_noisy_size_does_not_split_a_range():
    d = doc(2, {8: {"vendor": 1.0, "ring": 2.0}, 16: {"vendor": 1.07, "ring": 1.0},
                32: {"vendor": 1.0, "ring": 2.0}})
    assert [r["algorithm"] for r in tune.table_rows(d)] == ["vendor"]


@needs_build
def test_fit_recovers_the_parameters_of_the_cost_model():
    from mpiopt.model import CostModel
    model = CostModel(mpi.library(FLAVOURS[0]))
    alpha, beta, gamma = 3e-6, 2e-10, 5e-11
    docs = []
    for p in (2, 3, 4, 8):
        times = {n: {a: 1e6 * model.seconds(a, p, n, alpha, beta, gamma) for a in model.flat_algorithms}
                 for n in (8, 1024, 65536, 1 << 20, 1 << 24)}
        docs.append(doc(p, times))
    fit = tune.fit_model(docs, model)
    assert fit["alpha"] == pytest.approx(alpha, rel=1e-3)
    assert fit["beta"] == pytest.approx(beta, rel=1e-3)
    assert fit["gamma"] == pytest.approx(gamma, rel=1e-3)


@needs_build
def test_tune_writes_a_table_libmpiopt_reads(tmp_path):
    """-np 2,3: rows for the classes 2 and 3-4; a program at 4 ranks, measured by nobody, takes
    the rows measured at 3, and one at 5 the cost model."""
    flavour = FLAVOURS[0]
    out = tmp_path / "tuning.json"
    r = mpiopt("tune", "-np", "2,3", "--flavour", flavour, "--sizes", "8:512", "--iterations", "3",
               "--warmup", "0", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    table = json.loads(out.read_text())
    assert json.loads(r.stdout)["tables"][flavour] == table
    assert table["version"] == 2 and table["flavour"] == flavour
    assert table["measured"]["send_buffer"] == "unchanged between calls (OSU's way)"
    assert set(table["model"]) == {"alpha", "beta", "gamma"}
    assert all(isinstance(v, float) and v >= 0 for v in table["model"].values())
    assert table["model"]["alpha"] > 0
    for op in ("allreduce", "reduce"):
        assert table[op] and all(set(row) == {"ranks", "min_ranks", "max_ranks", "max_bytes", "algorithm"}
                                 and row["algorithm"] in ALGORITHMS for row in table[op])
        assert {(row["ranks"], row["min_ranks"], row["max_ranks"]) for row in table[op]} == {(2, 2, 2), (3, 3, 4)}
        for ranks in (2, 3):
            sizes = [row["max_bytes"] for row in table[op] if row["ranks"] == ranks]
            assert sizes == sorted(sizes) and sizes[-1] == tune.LAST_MAX_BYTES
    # libmpiopt loads it: auto's choice for 8 bytes on 2 ranks is the table's first row
    env = dict(os.environ, MPIOPT_TUNING_FILE=str(out), MPIOPT_VERBOSE="1")
    run = mpi.run(flavour, 2, [mpi.binary(flavour, "mpiopt-allreduce"), "-m", "8:8", "-i", "1", "-x", "0"],
                  env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    chosen = [line for line in run.stderr.splitlines() if line.startswith("mpiopt: allreduce p=2 ")]
    assert chosen and chosen[0].split()[-1] == table["allreduce"][0]["algorithm"], run.stderr
    assert "mpiopt: tuning file: allreduce p=2: the rows of class 2-2 ranks, measured at 2" in run.stderr
    for p, said in ((4, "the rows of class 3-4 ranks, measured at 3"),
                    (5, "no row's class holds 5 ranks, the cost model decides")):
        run = mpi.run(flavour, p, [mpi.binary(flavour, "mpiopt-allreduce"), "-m", "8:8", "-i", "1", "-x", "0",
                                   "--algorithms", "auto"], env=env, timeout=120)
        assert run.returncode == 0, run.stderr
        assert f"mpiopt: tuning file: allreduce p={p}: {said}" in run.stderr, run.stderr


def test_tune_fresh_measures_with_inputs_written_before_every_call(tmp_path):
    """--fresh: the sweep writes the send buffer before every call (mpiopt-allreduce --fresh), as
    `mpiopt bench allreduce --fresh` does, and the file says so."""
    out = tmp_path / "fresh.json"
    r = mpiopt("tune", "-np", "2", "--flavour", FLAVOURS[0], "--sizes", "8:4K", "--iterations", "3",
               "--warmup", "0", "--no-reduce", "--fresh", "-o", str(out))
    assert r.returncode == 0, r.stderr
    table = json.loads(out.read_text())
    assert table["measured"]["send_buffer"] == "fresh each call" and table["allreduce"]


@pytest.mark.parametrize("args, message", [
    (["-np", "0"], "bad process counts"),
    (["--sizes", "1M:8"], "minimum is larger"),
    (["--flavour", "lam"], "unknown MPI flavour"),
    (["--iterations", "0"], "at least 1"),
])
def test_bad_input_writes_nothing(tmp_path, args, message):
    out = tmp_path / "t.json"
    r = mpiopt("tune", "-o", str(out), *args)
    assert r.returncode == 2 and message in r.stderr
    assert not out.exists()


@pytest.mark.skipif(len(FLAVOURS) < 2, reason="needs two MPI flavours")
def test_several_flavours_need_a_placeholder(tmp_path):
    r = mpiopt("tune", "-o", str(tmp_path / "t.json"))
    assert r.returncode == 2 and "{flavour}" in r.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_tune_with_pretend_nodes_writes_both_levels(tmp_path, flavour):
    """--ranks-per-node on one machine: mpiopt-exchange --levels measures the intra-node and the
    inter-node level (the same shared memory twice here), the file holds both, libmpiopt loads
    it, and `mpiopt model --tuning` prices hierarchical with them."""
    out = tmp_path / "two-levels.json"
    # 20 iterations: with 5, the levels' beta (a slope between two message sizes) came out 0 in
    # about 1 MPICH run of 10 under other jobs' load, which `tune` rightly refuses
    r = mpiopt("tune", "-np", "3", "--ranks-per-node", "2", "--flavour", flavour, "--sizes", "8:512",
               "--iterations", "20", "--warmup", "0", "--no-reduce", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    table = json.loads(out.read_text())
    assert json.loads(r.stdout)["tables"][flavour] == table
    m = table["model"]
    assert set(m) == {"alpha", "beta", "gamma", "ranks_per_node", "intra_alpha", "intra_beta"}
    assert m["ranks_per_node"] == 2
    for key in ("alpha", "beta", "intra_alpha", "intra_beta"):
        assert isinstance(m[key], float) and math.isfinite(m[key]) and m[key] > 0, (key, m)
    assert m["gamma"] >= 0
    levels = table["measured"]["levels"]
    assert (levels["ranks"], levels["nodes"], levels["node_layout"]) == (3, 2, "--ranks-per-node")
    assert (m["alpha"], m["beta"]) == (levels["inter"]["alpha"], levels["inter"]["beta"])
    assert (m["intra_alpha"], m["intra_beta"]) == (levels["intra"]["alpha"], levels["intra"]["beta"])

    # libmpiopt's reader takes the file (a bad one would be warned about and replaced by the
    # built-in defaults); with the rows left out auto prices from the two-level model, as
    # `mpiopt model --tuning` does
    model_only = tmp_path / "model-only.json"
    model_only.write_text(json.dumps({"version": 1, "model": m, "allreduce": [], "reduce": []}))
    predicted = mpiopt("model", "--ranks", "4", "--sizes", "8,1M", "--tuning", model_only, "--json")
    assert predicted.returncode == 0, predicted.stderr
    rows = json.loads(predicted.stdout)
    assert {r["algorithm"] for r in rows} >= {"hierarchical", "recursive_doubling"}
    assert all(r["seconds"] > 0 and math.isfinite(r["seconds"]) for r in rows)
    env = dict(os.environ, MPIOPT_TUNING_FILE=str(model_only), MPIOPT_VERBOSE="1")
    env.pop("MPIOPT_RANKS_PER_NODE", None)
    run = mpi.run(flavour, 4, [mpi.binary(flavour, "mpiopt-allreduce"), "-m", "8,1048576", "-i", "1",
                               "-x", "0", "--algorithms", "auto"], env=env, timeout=300, bind_none=True)
    assert run.returncode == 0, run.stderr
    assert "MPIOPT_TUNING_FILE" not in run.stderr, run.stderr
    chosen = {int(line.split("bytes<=")[1].split(":")[0]): line.split()[-1]
              for line in run.stderr.splitlines() if line.startswith("mpiopt: allreduce p=4")}
    for size, bound in ((8, 8), (1 << 20, 1 << 20)):
        fastest = {r["algorithm"] for r in rows if r["bytes"] == size and r["fastest"]}
        assert chosen.get(bound) in fastest, (size, chosen, fastest)

    # without its second level the same file prices no hierarchical: the levels came from it
    one_level = {k: m[k] for k in ("alpha", "beta", "gamma")}
    model_only.write_text(json.dumps({"version": 1, "model": one_level, "allreduce": [], "reduce": []}))
    predicted = mpiopt("model", "--ranks", "4", "--sizes", "8,1M", "--tuning", model_only, "--json")
    assert predicted.returncode == 0 and "hierarchical" not in {r["algorithm"] for r in json.loads(predicted.stdout)}


@needs_build
def test_tune_table_shows_both_levels(tmp_path):
    flavour = FLAVOURS[0]
    r = mpiopt("tune", "-np", "3", "--ranks-per-node", "2", "--flavour", flavour, "--sizes", "8:64",
               "--iterations", "3", "--warmup", "0", "--no-reduce", "-o", str(tmp_path / "t.json"))
    assert r.returncode == 0, r.stderr
    for text in ("intra-node", "inter-node", "intra_alpha, intra_beta", "2 pretend nodes",
                 "oversubscribed", "come out alike", "ranks_per_node = 2"):
        assert text in r.stdout, (text, r.stdout)


@pytest.mark.parametrize("args, message", [
    (["-np", "4", "--ranks-per-node", "1"], "at least 2 ranks a node"),
    (["-np", "4", "--ranks-per-node", "0"], "at least 2 ranks a node"),
    (["-np", "4", "--ranks-per-node", "two"], "not a whole number"),
    (["-np", "2,4", "--ranks-per-node", "4"], "must span two nodes"),
])
def test_bad_ranks_per_node_writes_nothing(tmp_path, args, message):
    out = tmp_path / "t.json"
    r = mpiopt("tune", "-o", str(out), *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert not out.exists()


@needs_build
def test_fit_keeps_measured_parameters_fixed():
    """With two levels the network's alpha and beta are measured; gamma alone is fitted."""
    from mpiopt.model import CostModel
    model = CostModel(mpi.library(FLAVOURS[0]))
    alpha, beta, gamma = 3e-6, 2e-10, 5e-11
    docs = [doc(p, {n: {a: 1e6 * model.seconds(a, p, n, alpha, beta, gamma) for a in model.flat_algorithms}
                    for n in (8, 1024, 65536, 1 << 20)}) for p in (2, 4)]
    fit = tune.fit_model(docs, model, fixed={"alpha": alpha, "beta": beta})
    assert (fit["alpha"], fit["beta"]) == (alpha, beta)
    assert fit["gamma"] == pytest.approx(gamma, rel=1e-3)


@needs_build
def test_nodes_from_the_environment_are_measured_without_the_option(tmp_path):
    """Without --ranks-per-node tune measures the levels on the nodes the run has, as libmpiopt
    sees them: here MPIOPT_RANKS_PER_NODE in the environment (on one machine without it, one
    node and one level: test_tune_writes_a_table_libmpiopt_reads)."""
    flavour = FLAVOURS[0]
    out = tmp_path / "t.json"
    r = mpiopt("tune", "-np", "3", "--flavour", flavour, "--sizes", "8:64", "--iterations", "3",
               "--warmup", "0", "--no-reduce", "-o", str(out),
               env=dict(os.environ, MPIOPT_RANKS_PER_NODE="2"))
    assert r.returncode == 0, r.stderr
    table = json.loads(out.read_text())
    assert table["model"]["ranks_per_node"] == 2
    assert table["measured"]["levels"]["node_layout"] == "MPIOPT_RANKS_PER_NODE"
