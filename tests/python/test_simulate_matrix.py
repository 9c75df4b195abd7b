"""`mpiopt simulate matrix` and simulate_orders: a measured communication matrix replayed under
SimGrid SMPI (examples/matrix_replay.c) with SMP placement, an order file and the partitioned
order. Synthetic matrices of 8 ranks: each simulation takes well under a second."""
import json

import numpy as np
import pytest

from mpiopt.errors import UsageError
from mpiopt.placement import partition
from mpiopt.simulation import smpi
from mpiopt.simulation.matrix import simulate_orders
from conftest import run_mpiopt as mpiopt

pytestmark = pytest.mark.skipif(not smpi.available(), reason="SimGrid SMPI not installed")

PAIRS = [(0, 4), (1, 5), (2, 6), (3, 7)]
PAIR_BYTES = 4_000_000
PAIR_MESSAGES = 100


def paired_matrix(n=8):
    """Heavy traffic both ways between r and r + 4 only: SMP placement at 4 a node puts all of
    it off-node, an order keeping the pairs together none."""
    nbytes, nmsgs = np.zeros((n, n)), np.zeros((n, n))
    for a, b in PAIRS:
        nbytes[a, b] = nbytes[b, a] = PAIR_BYTES
        nmsgs[a, b] = nmsgs[b, a] = PAIR_MESSAGES
    return nbytes, nmsgs


def write_profile(directory, nbytes, nmsgs):
    """A profile as `mpiopt profile` writes it, with empty sections but the matrix."""
    n = nbytes.shape[0]
    entries = [[int(s), int(d), float(nbytes[s, d]), int(nmsgs[s, d])]
               for s, d in zip(*np.nonzero(nbytes))]
    path = directory / "mpiopt-profile.json"
    path.write_text(json.dumps({
        "format": "mpiopt-profile", "version": 1, "complete": True, "program": "synthetic",
        "ranks": n, "system": {}, "mpi": {}, "calls": {}, "regions": {}, "per_rank": {},
        "matrix": {"ranks": n, "columns": ["source", "destination", "bytes", "messages"],
                   "entries": entries}}))
    return path


def test_partitioned_order_beats_smp_and_runs_are_deterministic():
    nbytes, nmsgs = paired_matrix()
    found = partition(nbytes, 4)
    orders = {"SMP": list(range(8)), "partitioned": found.order}
    rows = simulate_orders(nbytes, nmsgs, 4, orders)
    assert [r["placement"] for r in rows] == ["SMP", "partitioned"]
    smp, best = rows
    assert smp["off_node_bytes"] == nbytes.sum() and best["off_node_bytes"] == 0
    # 8 MB leave each SMP node through its one link; the pairs' bytes stay on the node otherwise
    assert best["seconds"] < 0.5 * smp["seconds"]
    assert smp["seconds"] == pytest.approx(4 * PAIR_BYTES / smpi.Network().link_bandwidth, rel=0.1)
    assert best["ratio_to_first"] == pytest.approx(best["seconds"] / smp["seconds"])
    assert smp["ratio_to_first"] == 1.0
    # every measured byte crosses (100 messages a pair become 8 of an eighth of the total)
    assert smp["rounds"] == smp["max_messages_per_pair"] == 8 and smp["bytes_scale"] == 1.0
    assert smp["bytes_moved"] == best["bytes_moved"] == nbytes.sum()
    assert simulate_orders(nbytes, nmsgs, 4, orders) == rows


def test_huge_totals_are_scaled_alike_for_every_placement():
    nbytes, nmsgs = paired_matrix()
    rows = simulate_orders(nbytes * 1e6, nmsgs, 4, {"SMP": list(range(8)),
                                                      "pairs": [0, 4, 1, 5, 2, 6, 3, 7]},
                           platform="torus")
    assert 0 < rows[0]["bytes_scale"] == rows[1]["bytes_scale"] < 1e-3
    assert rows[1]["seconds"] < 0.5 * rows[0]["seconds"]


@pytest.mark.parametrize("nbytes, ppn, orders, message", [
    (np.zeros((8, 8)), 4, {"SMP": list(range(8))}, "matrix is empty"),
    (paired_matrix()[0], 3, {"SMP": list(range(8))}, "--ppn must divide"),
    (paired_matrix()[0], 4, {"bad": [0, 0, 1, 2, 3, 4, 5, 6]}, "repeats rank 0"),
    (paired_matrix()[0], 4, {"short": [0, 1, 2]}, "rank 3 is missing"),
])
def test_input_that_cannot_be_replayed_is_a_usage_error(nbytes, ppn, orders, message):
    with pytest.raises(UsageError, match=message) as e:
        simulate_orders(nbytes, paired_matrix()[1] * (nbytes > 0), ppn, orders)
    assert "\n" not in str(e.value)


def test_cli_table_json_and_order_file(tmp_path):
    write_profile(tmp_path, *paired_matrix())
    (tmp_path / "order.txt").write_text("0,4,1,5\n2,6,3,7\n")
    r = mpiopt("simulate", "matrix", "--profile", tmp_path, "--ppn", "4",
               "--order", tmp_path / "order.txt", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["placement"] for row in rows] == ["SMP", "order (order.txt)",
                                                  "partitioned (Kernighan-Lin)"]
    assert rows[1]["off_node_bytes"] == rows[2]["off_node_bytes"] == 0
    assert rows[1]["seconds"] == rows[2]["seconds"] < 0.5 * rows[0]["seconds"]
    table = mpiopt("simulate", "matrix", "--profile", tmp_path / "mpiopt-profile.json",
                   "--ppn", "4", "--platform", "fattree")
    assert table.returncode == 0, table.stderr
    assert "partitioned (Kernighan-Lin)" in table.stdout and "vs SMP" in table.stdout


def test_cli_bad_input_exits_2_with_one_line(tmp_path):
    write_profile(tmp_path, *paired_matrix())
    r = mpiopt("simulate", "matrix", "--profile", tmp_path, "--ppn", "3")
    assert r.returncode == 2 and "--ppn must divide" in r.stderr
    (tmp_path / "cut.json").write_text('{"format": "mpiopt-profile", "version": 1, "ranks": 2')
    r = mpiopt("simulate", "matrix", "--profile", tmp_path / "cut.json", "--ppn", "1")
    assert r.returncode == 2 and "not valid JSON" in r.stderr
    assert r.stderr.strip().count("\n") == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    write_profile(empty, np.zeros((4, 4)), np.zeros((4, 4)))
    r = mpiopt("simulate", "matrix", "--profile", empty, "--ppn", "2")
    assert r.returncode == 2 and "matrix is empty" in r.stderr
    assert "mpiopt profile" in mpiopt("simulate", "matrix", "--help").stdout
