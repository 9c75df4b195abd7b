"""`mpiopt simulate allreduce` on SimGrid SMPI: deterministic runs, the JSON schema, platform
files smpirun accepts for every topology, and clear errors for bad input."""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from mpiopt import mpi
from mpiopt.model import CostModel
from mpiopt.simulation import smpi
from conftest import needs_build, run_mpiopt as mpiopt

pytestmark = [
    pytest.mark.skipif(not smpi.available(), reason="SimGrid SMPI not installed"),
    needs_build,
]


def simulate_json(tmp_path, *args):
    r = mpiopt("simulate", "allreduce", "--json", "--results", str(tmp_path / "results"), *args)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def test_same_command_same_numbers_and_the_json_schema(tmp_path):
    args = ["--ranks", "16", "--sizes", "32K,64K", "--platform", "torus"]
    first = simulate_json(tmp_path, *args)
    second = simulate_json(tmp_path, *args)
    assert first == second
    expected = {"mpich", "ompi", "auto", *CostModel().algorithms}
    for n in (32 * 1024, 64 * 1024):
        rows = [r for r in first if r["bytes"] == n]
        assert sorted(r["algorithm"] for r in rows) == sorted(expected)
        for r in rows:
            assert set(r) == {"algorithm", "ranks", "bytes", "seconds"}
            assert r["ranks"] == 16 and isinstance(r["seconds"], float)
            assert 1e-7 < r["seconds"] < 1.0
    # files for people and scripts
    assert json.loads((tmp_path / "results" / "simulate-allreduce-torus-16.json").read_text()) == first
    assert (tmp_path / "results" / "simulate-allreduce-torus-16.png").stat().st_size > 1000


def test_simulated_time_follows_the_platform(tmp_path):
    """Twice the message: more time; the bandwidth-bound size on a crossbar costs about what
    the link's bandwidth says (ring: 2(p-1)/p·n bytes through each node's link)."""
    rows = simulate_json(tmp_path, "--ranks", "8", "--sizes", "1M,2M", "--platform", "cluster",
                         "--algorithms", "ring", "--vendors", "")
    t = {(r["algorithm"], r["bytes"]): r["seconds"] for r in rows}
    assert t[("ring", 2 << 20)] > 1.8 * t[("ring", 1 << 20)]
    ideal = 2 * 7 / 8 * (2 << 20) / smpi.Network().link_bandwidth
    assert ideal < t[("ring", 2 << 20)] < 1.5 * ideal


def test_ranks_start_together_and_the_model_prices_what_runs(tmp_path):
    """64 ranks, 16 a node, on the fat-tree. Every rank starts a timed call at the same simulated
    instant, so a column's time is its messages': after SMPI's barrier the ranks left 17 µs apart
    and recursive doubling took 27.1 µs at 8 B against the 9.9 its measured steps add up to. And
    the cost model, with both levels taken from the patterns measured on the platform, prices
    what runs within 10 % (the platform's formulas priced hierarchical 35 % high at 8 B)."""
    from mpiopt.simulation.allreduce import platform_tuning
    algorithms = ["recursive_doubling", "rabenseifner", "hierarchical"]
    rows = simulate_json(tmp_path, "--ranks", "64", "--ppn", "16", "--platform", "fattree",
                         "--sizes", "8,64K", "--algorithms", ",".join(algorithms), "--vendors", "")
    simulated = {(r["algorithm"], r["bytes"]): r["seconds"] for r in rows}
    m = platform_tuning("fattree", 64, 16)["model"]
    model = CostModel()
    for alg in algorithms:
        for n in (8, 64 * 1024):
            priced = model.seconds(alg, 64, n, m["alpha"], m["beta"], m["gamma"],
                                   exchange=m["exchange"], ranks_per_node=m["ranks_per_node"],
                                   intra_alpha=m["intra_alpha"], intra_beta=m["intra_beta"])
            assert priced == pytest.approx(simulated[(alg, n)], rel=0.10), (alg, n)


@pytest.mark.parametrize("platform", smpi.PLATFORMS)
def test_every_platform_runs_with_several_ranks_per_node(tmp_path, platform):
    # 17 ranks, 2 per node: 9 nodes, the last one half full; a non-power-of-two count
    rows = simulate_json(tmp_path, "--ranks", "17", "--sizes", "1K", "--platform", platform,
                         "--ppn", "2", "--algorithms", "rabenseifner", "--vendors", "mpich")
    assert sorted(r["algorithm"] for r in rows) == ["auto", "mpich", "rabenseifner"]
    assert all(r["seconds"] > 0 for r in rows)


def test_smpi_selectors_and_smp_aware_algorithms_side_by_side(tmp_path):
    """Every SMPI selector and SMP-aware allreduce runs on a machine of 4 nodes of 4 cores,
    next to mpiopt's node-aware and flat algorithms and auto, and the table names them all."""
    vendors = ["mvapich2", "impi", "default", "smp_rsag", "smp_binomial", "mvapich2_two_level"]
    rows = simulate_json(tmp_path, "--ranks", "16", "--ppn", "4", "--sizes", "8,64K",
                         "--platform", "fattree", "--algorithms", "hierarchical,rabenseifner",
                         "--vendors", ",".join(vendors))
    expected = {"auto", "hierarchical", "rabenseifner", *vendors}
    for n in (8, 65536):
        assert {r["algorithm"] for r in rows if r["bytes"] == n} == expected
    assert all(r["seconds"] > 0 for r in rows)


def test_vendors_alone(tmp_path):
    """--algorithms none: SMPI's allreduces only, without auto (the large runs split this way)."""
    rows = simulate_json(tmp_path, "--ranks", "8", "--ppn", "4", "--sizes", "8",
                         "--platform", "fattree", "--algorithms", "none", "--vendors", "ompi,smp_rdb")
    assert sorted(r["algorithm"] for r in rows) == ["ompi", "smp_rdb"]


@pytest.mark.parametrize("platform, nodes", [("cluster", 9), ("torus", 27), ("torus", 1023),
                                             ("fattree", 128), ("fattree", 1023)])
def test_platform_xml_has_the_nodes_and_topology(platform, nodes):
    xml, have = smpi.platform_xml(platform, nodes)
    cluster = ET.fromstring(xml.split("\n", 2)[2]).find("zone/cluster")
    first, last = cluster.get("radical").split("-")
    assert (int(first), int(last) + 1) == (0, have) and have >= nodes
    assert have < 1.5 * nodes
    if platform == "torus":
        dims = [int(d) for d in cluster.get("topo_parameters").split(",")]
        assert cluster.get("topology") == "TORUS" and all(d > 1 for d in dims)
    if platform == "fattree":
        levels, down, up, links = cluster.get("topo_parameters").split(";")
        d1, d2 = map(int, down.split(","))
        assert levels == "2" and d1 * d2 == have and up == f"1,{d1}"   # full bisection
    assert smpi.hostfile(5, 2).split() == ["node-0", "node-0", "node-1", "node-1", "node-2"]
    # --ppn K: K cores a node, whose ranks talk through the node's own (loopback) link
    cluster = ET.fromstring(smpi.platform_xml(platform, nodes, cores=16)[0].split("\n", 2)[2]).find(
        "zone/cluster")
    assert cluster.get("core") == "16" and cluster.get("loopback_bw") != cluster.get("bw")


@pytest.mark.parametrize("args, message", [
    (["--ranks", "16", "--sizes", "12"], "multiples of 8"),
    (["--ranks", "0"], "bad process counts '0'"),
    (["--ranks", "16", "--ppn", "0"], "--ppn"),
    (["--ranks", "16", "--algorithms", "bubble"], "unknown algorithm"),
    (["--ranks", "16", "--vendors", "intel"], "--vendors"),
    (["--ranks", "16", "--vendors", "mpich,automatic"], "not an SMPI allreduce"),
    (["--ranks", "16", "--tuning", "/nonexistent.json"], "does not exist"),
    (["--ranks", "16", "--algorithms", "none", "--vendors", ""], "needs --vendors"),
])
def test_bad_input_is_a_usage_error_and_writes_nothing(tmp_path, args, message):
    r = mpiopt("simulate", "allreduce", "--results", str(tmp_path / "out"), *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_help_has_examples():
    r = mpiopt("simulate", "allreduce", "--help")
    assert r.returncode == 0 and "examples" in r.stdout and "--platform" in r.stdout
    r = mpiopt("simulate", "--help")
    assert r.returncode == 0 and "allreduce" in r.stdout


def test_256_ranks_simulate(tmp_path):
    """SMPI loads one copy of libmpiopt per simulated rank: a thread-local at the initial-exec
    TLS model took static TLS in every copy and dlopen failed from the 64th rank on ("cannot
    allocate memory in static TLS block"), which no test of 64 ranks or fewer could see. 256
    ranks, one size, three algorithms and a vendor: the results are there and ordered as the
    algorithms' step counts say (recursive doubling's 8 steps beat binomial's 16 at 8 B)."""
    rows = simulate_json(tmp_path, "--ranks", "256", "--sizes", "8", "--platform", "torus",
                         "--algorithms", "recursive_doubling,rabenseifner,binomial",
                         "--vendors", "ompi")
    t = {r["algorithm"]: r["seconds"] for r in rows}
    assert set(t) == {"auto", "ompi", "recursive_doubling", "rabenseifner", "binomial"}
    assert all(r["ranks"] == 256 and r["bytes"] == 8 for r in rows)
    assert t["recursive_doubling"] < t["binomial"]
    assert t["auto"] <= min(t["recursive_doubling"], t["rabenseifner"], t["binomial"]) * 1.0001


def _readme_simulate_commands() -> list[str]:
    """Every `mpiopt simulate …` line of the README's examples, as written (comments cut)."""
    readme = (mpi.repo_root() / "README.md").read_text()
    return [line.split("#")[0].strip() for line in readme.splitlines()
            if line.strip().startswith("mpiopt simulate ")]


def test_readme_lists_a_simulate_example():
    assert _readme_simulate_commands(), "the README shows no `mpiopt simulate` example"


def _readme_simulate_params() -> list:
    """The README's simulate examples; those of 1000 ranks or more (4-20 minutes each on two
    cores) in the full tier (`make test-full`), as the README says beside them."""
    out = []
    for command in _readme_simulate_commands():
        ranks = max(int(r) for r in command.split("--ranks")[1].split()[0].split(","))
        out.append(pytest.param(command, marks=[pytest.mark.full] if ranks >= 1000 else []))
    return out


@pytest.mark.parametrize("command", _readme_simulate_params())
def test_readme_simulate_examples_run_as_written(tmp_path, command):
    """The README's simulate examples, word for word, from a fresh directory: the 1023-rank
    torus one is what failed for users when the TLS model broke SMPI."""
    import os
    import shlex
    argv = shlex.split(command)[1:]
    ranks = int(argv[argv.index("--ranks") + 1])
    try:
        smpi.check_map_count(ranks)
    except RuntimeError as e:       # the one step docs/simulation.md has root take first
        if os.geteuid() != 0:
            pytest.fail(f"{e} (the README's comment points there)")
        subprocess.run(["sysctl", "-w", f"vm.max_map_count={max(262144, ranks * 64)}"],
                       check=True, capture_output=True)
    r = mpiopt(*argv, cwd=tmp_path, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    written = list((tmp_path / "results").glob("simulate-allreduce-*.json"))
    assert len(written) == 1
    rows = json.loads(written[0].read_text())
    assert {r["ranks"] for r in rows} == {ranks}
    assert "auto" in {r["algorithm"] for r in rows}
    assert all(r["seconds"] > 0 for r in rows)


def test_too_few_memory_mappings_is_said_before_the_run(tmp_path, monkeypatch):
    """SMPI maps copies of the program and of libmpiopt per rank: 4096 ranks died mid-run under
    Linux's default vm.max_map_count (65530). The check says so first, with the fix."""
    fake = tmp_path / "max_map_count"
    fake.write_text("65530\n")
    monkeypatch.setattr(smpi, "MAP_COUNT", fake)
    smpi.check_map_count(1023)        # the README's example fits the default
    with pytest.raises(RuntimeError, match=r"sysctl -w vm.max_map_count=\d+"):
        smpi.check_map_count(4096)


def test_large_runs_leave_out_what_the_model_rules_out(tmp_path, monkeypatch):
    """From 2048 ranks a run without --algorithms leaves out the algorithms the cost model prices
    at more than 4x the best at every size (the ring at 4096 ranks: its simulation alone outlasts
    the others' by far), and without --vendors SMPI's node-aware selections (mpich: p^2 messages
    of setup), says so, and `--algorithms all` / `--vendors` insist; below that, all run. The
    simulations themselves are replaced here (what each would be asked to run is recorded): a
    4096-rank run takes longer than any tier allows on 2 cores (docs/simulation.md)."""
    from conftest import run_mpiopt_in_process
    from mpiopt.simulation import allreduce as sim
    asked, vendors_asked = [], []

    def fake_simulate(kind, ranks, sizes, ppn, algorithms, vendors, *args, **kwargs):
        asked.append((ranks, list(algorithms)))
        vendors_asked.append(list(vendors))
        return [{"algorithm": a, "ranks": ranks, "bytes": n, "seconds": 1e-5}
                for a in ["auto", "mpich", *algorithms] for n in sizes]

    monkeypatch.setattr(sim, "simulate", fake_simulate)
    monkeypatch.setattr(smpi, "available", lambda: True)
    every = CostModel().algorithms
    base = ["simulate", "allreduce", "--sizes", "8,65536,1048576", "--platform", "fattree", "--ppn", "16",
            "--results", tmp_path / "results"]
    r = run_mpiopt_in_process(*base, "--ranks", "4096")
    assert r.returncode == 0, r.stderr
    assert asked[-1] == (4096, [a for a in every if a != "ring"])
    assert "p=4096: leaving out ring (the cost model prices it at" in r.stderr
    assert "--algorithms all runs it" in r.stderr
    # and SMPI's mpich selection, whose node-aware setup is p^2 messages of host work
    assert vendors_asked[-1] == ["ompi"] and "leaving out SMPI's mpich" in r.stderr
    r = run_mpiopt_in_process(*base, "--ranks", "4096", "--algorithms", "all", "--vendors", "mpich,ompi")
    assert r.returncode == 0 and asked[-1] == (4096, every) and "leaving out" not in r.stderr
    assert vendors_asked[-1] == ["mpich", "ompi"]
    r = run_mpiopt_in_process(*base, "--ranks", "1023")
    assert r.returncode == 0 and asked[-1] == (1023, every) and "leaving out" not in r.stderr
    assert vendors_asked[-1] == ["mpich", "ompi"]
    # one message per large p; the small sizes alone rule out more (binomial, recursive doubling
    # grow with log p at 8 MiB, the ring with p)
    r = run_mpiopt_in_process(*base[:2], "--sizes", "8M", "--ranks", "16384", "--results", tmp_path / "r2")
    assert r.returncode == 0 and "ring" not in asked[-1][1] and "rabenseifner" in asked[-1][1]


def test_step_tiers_follow_the_machine():
    """Runs of distances whose messages all take one kind of path: inside a node, one leaf
    switch, the fat-tree's core; each distance alone where that cannot be known (the torus, a
    rank count or ranks per node not a power of two)."""
    assert smpi.step_tiers("fattree", 4096, 16) == [[1, 2, 4, 8], [16, 32, 64, 128],
                                                   [256, 512, 1024, 2048]]
    assert smpi.step_tiers("cluster", 64, 4) == [[1, 2], [4, 8, 16, 32]]
    for kind, ranks, ppn in [("torus", 1024, 16), ("fattree", 1000, 16), ("fattree", 1024, 12)]:
        tiers = smpi.step_tiers(kind, ranks, ppn)
        assert all(len(t) == 1 for t in tiers) and len(tiers) == 9 + (ranks == 1024)
    assert smpi.step_tiers("fattree", 1, 1) == []


def test_exchange_measured_at_the_tiers_ends_equals_every_step_measured(tmp_path, monkeypatch):
    """mpiopt-exchange under SMPI measures each tier's first and last step and gives the steps
    between their figures where the two agree: the result must be what measuring every step
    gives, figure for figure (256 ranks, 4 a node: 64 nodes in leaves of 8, tiers 1-2, 4-16,
    32-128)."""
    program = smpi.build([smpi.EXCHANGE_BENCH]) / smpi.EXCHANGE_BENCH
    platform, hosts = smpi.write_machine(tmp_path / "machine", "fattree", 256, 4)
    every = smpi.smpirun_json(program, ["-i", "1", "--warmup", "0", "--json"], 256, platform, hosts)
    # the same build (and library), another cache directory: no result of an earlier run
    lib = smpi.build_dir() / "lib"
    cache = tmp_path / "smpi"
    (cache / "lib").parent.mkdir(parents=True)
    (cache / "lib").symlink_to(lib)
    monkeypatch.setattr(smpi, "build_dir", lambda: cache)
    monkeypatch.setattr(smpi, "build", lambda targets: program.parent)
    tiered = smpi.measure_exchange("fattree", 256, 4)
    figures = ("alpha", "beta", "small_seconds", "large_seconds")
    key = lambda p: (p["pattern"], p["distance"])
    want = {key(p): [p[f] for f in figures] for p in every["patterns"]}
    got = {key(p): [p[f] for f in figures] for p in tiered["patterns"]}
    assert got == want
    borrowed = sorted(p["distance"] for p in tiered["patterns"] if "from_distance" in p)
    assert borrowed == [8, 64], borrowed          # the steps between each tier's ends
    # and a warm-up changes nothing in a deterministic simulation
    warmed = smpi.smpirun_json(program, ["-i", "1", "--json", "--distances", "1,32"], 256,
                               platform, hosts)
    assert [[p[f] for f in figures] for p in warmed["patterns"] if p["pattern"] == "step"] == \
        [want[("step", 1)], want[("step", 32)]]
