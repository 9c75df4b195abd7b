"""mpiopt io-agg: aggregator tables against hand-counted placements, the fix, bad input."""
import json

import pytest


def agg(mpiopt, *args):
    r = mpiopt("io-agg", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_study_shape_duplicates_then_distinct(mpiopt):
    # grid 8x4, 2x4 cells, 8 ranks a node: node 0 holds columns 0-1 of rows 0-3, i.e. ranks
    # 0,1,8,9,16,17,24,25; stride 32/16 = 2 picks 0,2,4,...,30 -> nodes 0,1,2,3,0,1,... (the study)
    d = agg(mpiopt, "--ppn", "8", "-g", "8,4", "-c", "2,4", "--cb-nodes", "16")
    assert [a["rank"] for a in d["aggregators"]] == list(range(0, 32, 2))
    assert [a["node"] for a in d["aggregators"]][:5] == ["nid00000", "nid00001", "nid00002",
                                                         "nid00003", "nid00000"]
    assert sorted(d["crowded"]) == ["nid00000", "nid00001", "nid00002", "nid00003"]


def test_sixteen_per_node_method3_cb16(mpiopt, tmp_path):
    # 16x16 grid, 2x8 cells, 16 a node: stride 16 picks ranks 0,16,...,240 = column 0, which
    # lies on node 0 (rows 0-7) and node 8 (rows 8-15): 8 aggregators on each
    out = tmp_path / "hints"
    d = agg(mpiopt, "--ppn", "16", "-g", "16,16", "-c", "2,8", "--cb-nodes", "16", "-o", str(out))
    assert {h: len(a) for h, a in d["crowded"].items()} == {"nid00000": 8, "nid00008": 8}
    assert d["fixed_crowded"] == {}
    assert len({a["node"] for a in d["fixed"]}) == 16
    assert d["hints"]["cb_nodes"] == "16"
    assert d["hints"]["cb_config_list"].split(",")[0] == "nid00000:1"
    text = out.read_text()
    assert "cb_config_list nid00000:1,nid00001:1," in text and "cb_nodes 16\n" in text


def test_smp_method_romio_default_is_distinct(mpiopt):
    # method 1 (SMP), 4 nodes x 4: ROMIO's *:1 takes ranks 0,4,8,12
    d = agg(mpiopt, "--ppn", "4", "--method", "1", "--nodes", "4", "--cb-nodes", "4",
            "--select", "romio")
    assert [a["rank"] for a in d["aggregators"]] == [0, 4, 8, 12]
    assert d["crowded"] == {}


def test_round_robin_stride(mpiopt):
    # method 0, 2 nodes x 4: rank r on node r % 2; stride 8/4 = 2 picks 0,2,4,6 -> all node 0
    d = agg(mpiopt, "--ppn", "4", "--method", "0", "--nodes", "2", "--cb-nodes", "4")
    assert [a["node"] for a in d["aggregators"]] == ["nid00000"] * 4
    # fix: *:2 takes the two lowest ranks of node 0 (0, 2), then of node 1 (1, 3)
    assert [a["rank"] for a in d["fixed"]] == [0, 2, 1, 3]
    assert d["hints"]["cb_config_list"] == "*:2"


def test_order_file_and_hosts(mpiopt, tmp_path):
    order = tmp_path / "order"
    order.write_text("0,2,1,3\n")
    d = agg(mpiopt, "--ppn", "2", "--order", str(order), "--cb-nodes", "2", "--hosts", "a,b")
    assert [a["node"] for a in d["aggregators"]] == ["a", "a"]     # ranks 0 and 1, both on a
    assert [a["rank"] for a in d["fixed"]] == [0, 1] and d["hints"]["cb_config_list"] == "a:1,b:1"
    assert [a["node"] for a in d["fixed"]] == ["a", "b"]


@pytest.mark.parametrize("args,needle", [
    (["--ppn", "0", "--method", "1", "--nodes", "2", "--cb-nodes", "2"], "--ppn"),
    (["--ppn", "4", "--method", "1", "--nodes", "2", "--cb-nodes", "9"], "cb_nodes"),
    (["--ppn", "4", "--method", "1", "--nodes", "2", "--cb-nodes", "0"], "cb_nodes"),
    (["--ppn", "4", "--method", "1", "--cb-nodes", "2"], "--nodes"),
    (["--ppn", "4", "-c", "2,2", "--method", "1", "--nodes", "2", "--cb-nodes", "2"], "-g"),
    (["--ppn", "4", "--order", "/nonexistent/order", "--cb-nodes", "2"], "order"),
    (["--ppn", "4", "--method", "1", "--nodes", "3", "--hosts", "a,b", "--cb-nodes", "2"], "host"),
])
def test_bad_input(mpiopt, tmp_path, args, needle):
    out = tmp_path / "hints"
    r = mpiopt("io-agg", *args, "-o", str(out))
    assert r.returncode == 2 and needle in r.stderr
    assert not out.exists()


def test_romio_config_list_semantics():
    # as ROMIO's cb_config_list.c: a named entry retires its host, `*` skips retired hosts,
    # `*:*` is ranks 0..cb_nodes-1
    from mpiopt.placement.io_agg import romio_aggregators
    names = ["a", "b", "a", "b", "c", "c"]
    assert romio_aggregators(names, "b:1,*:2", 6).tolist() == [1, 0, 2, 4, 5]
    assert romio_aggregators(names, "*:1", 2).tolist() == [0, 1]
    assert romio_aggregators(names, "c:*", 6).tolist() == [4, 5]
    assert romio_aggregators(names, "*:*", 3).tolist() == [0, 1, 2]


def test_unwritable_output(mpiopt, tmp_path):
    r = mpiopt("io-agg", "--ppn", "2", "--method", "1", "--nodes", "2", "--cb-nodes", "2",
               "-o", tmp_path / "missing" / "hints")
    assert r.returncode == 2 and "cannot write" in r.stderr
