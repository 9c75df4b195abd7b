"""mpiopt-iallreduce (the OSU-style overlap benchmark of MPI_Iallreduce) and `mpiopt bench
allreduce --nonblocking`: output formats, options, errors, on real MPI runs. No timing
assertions: only that the figures are sane (positive times, overlap within 0..100)."""
import json
import os

import pytest

from mpiopt import mpi
from mpiopt.benchmarks.allreduce_overlap import doubling_runs
from conftest import BUILT_FLAVOURS, needs_build, run_mpiopt as mpiopt

FLAVOURS = BUILT_FLAVOURS
BINARY = "mpiopt-iallreduce"
FIELDS = {"bytes", "count", "algorithm", "ranks", "iterations", "t_pure_us", "t_total_us", "t_compute_us",
          "overlap_pct", "t_pure_median_us", "t_total_median_us", "t_compute_median_us",
          "overlap_median_pct", "latency_ratio", "latency_ratio_median"}


def bench(flavour, np, *args, timeout=300):
    return mpi.run(flavour, np, [mpi.binary(flavour, BINARY), *args], timeout=timeout, bind_none=True)


def check_rows(rows, sizes, columns, ranks):
    assert [(r["bytes"], r["algorithm"]) for r in rows] == [(s, c) for s in sizes for c in columns]
    for r in rows:
        assert set(r) == FIELDS
        assert r["count"] * 8 == r["bytes"] and r["ranks"] == ranks
        for key in ("t_pure_us", "t_total_us", "t_compute_us", "t_pure_median_us", "t_total_median_us",
                    "t_compute_median_us"):
            assert r[key] > 0, (key, r)
        assert 0 <= r["overlap_pct"] <= 100 and 0 <= r["overlap_median_pct"] <= 100
        if "vendor" in columns:
            assert r["latency_ratio"] > 0 and r["latency_ratio_median"] > 0
            if r["algorithm"] == "vendor":
                assert r["latency_ratio"] == pytest.approx(1) and r["latency_ratio_median"] == pytest.approx(1)
        else:
            assert r["latency_ratio"] is None


def test_sizes_are_split_into_doubling_runs():
    assert doubling_runs([1024, 2048, 4096]) == [(1024, 4096)]
    assert doubling_runs([8, 1024, 2048, 1 << 20]) == [(8, 8), (1024, 2048), (1 << 20, 1 << 20)]
    assert doubling_runs([24, 48, 64]) == [(24, 48), (64, 64)]


@needs_build
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_json_rows_at_two_ranks(flavour):
    r = bench(flavour, 2, "-m", "1024:4096", "-i", "5", "-w", "1", "--json")
    assert r.returncode == 0, r.stderr
    check_rows(json.loads(r.stdout), [1024, 2048, 4096], ["vendor", "auto"], 2)


@needs_build
def test_chosen_algorithms_and_sizes_below_one_element():
    # 4 B is below one double: skipped, as in OSU; no vendor column: no latency ratio
    r = bench(FLAVOURS[0], 2, "-m", "4:16", "-i", "3", "-w", "0", "--algorithms", "ring,auto", "--json")
    assert r.returncode == 0, r.stderr
    check_rows(json.loads(r.stdout), [8, 16], ["ring", "auto"], 2)


@needs_build
def test_table_and_help():
    r = bench(FLAVOURS[0], 2, "-m", "64:128", "-i", "3", "-w", "0")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("# mpiopt-iallreduce: MPI_Iallreduce overlap")
    assert lines[1].split()[1:] == ["Size", "Algorithm", "Pure(us)", "Overall(us)", "Compute(us)",
                                    "Overlap(%)", "Ovl-med(%)", "Lat/vendor"]
    rows = [line.split() for line in lines[2:]]
    assert [(int(row[0]), row[1]) for row in rows] == [(64, "vendor"), (64, "auto"), (128, "vendor"), (128, "auto")]
    r = bench(FLAVOURS[0], 1, "--help")
    assert r.returncode == 0 and "--algorithms" in r.stdout and "Example" in r.stdout


@needs_build
@pytest.mark.parametrize("args, message", [
    (["-m", "0"], "bad message size"),
    (["-m", "64:8"], "larger than the maximum"),
    (["-m", "8:lots"], "bad message size"),
    (["-i", "0"], "bad iteration count"),
    (["-w"], "needs a value"),
    (["--algorithms", "vendor,fastest"], "unknown algorithm 'fastest'"),
    (["--algorithms", "auto,auto"], "repeated"),
    (["--no-such-option"], "unknown option"),
    (["stray"], "unexpected argument"),
])
def test_bad_options_exit_2_with_a_message(args, message):
    r = bench(FLAVOURS[0], 2, *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "mpiopt-iallreduce: error: " in r.stderr and message in r.stderr
    assert r.stdout.strip() == ""


@needs_build
def test_mpiopt_bench_allreduce_nonblocking_writes_json(tmp_path):
    res = tmp_path / "res"
    r = mpiopt("bench", "allreduce", "--nonblocking", "--sizes", "1K:4K", "--iterations", "3", "--warmup", "1",
               "--results", str(res), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out == json.loads((res / "allreduce_nonblocking.json").read_text())
    assert out["errors"] == [] and out["files"] == [str(res / "allreduce_nonblocking.json")]
    assert [(run["flavour"], run["ranks"]) for run in out["runs"]] == [(f, 2) for f in FLAVOURS]
    for run in out["runs"]:
        assert run["algorithms"] == ["vendor", "auto"] and run["oversubscribed"] is (2 > os.cpu_count())
        check_rows(run["results"], [1024, 2048, 4096], ["vendor", "auto"], 2)
    assert out["headline"] == []  # the headline is the 1 MiB row


@needs_build
def test_mpiopt_bench_allreduce_nonblocking_table_and_headline(tmp_path):
    r = mpiopt("bench", "allreduce", "--nonblocking", "--flavour", FLAVOURS[0], "--sizes", "8K,1M",
               "--iterations", "2", "--warmup", "0", "--results", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "MPI_Iallreduce overlap" in r.stdout and "auto/vendor latency" in r.stdout
    assert f"headline {FLAVOURS[0]}, p = 2, 1M: overlap auto" in r.stdout
    assert "…" not in r.stdout  # piped: whole cells
    doc = json.loads((tmp_path / "allreduce_nonblocking.json").read_text())
    assert [row["bytes"] for row in doc["runs"][0]["results"]] == [8192, 8192, 1 << 20, 1 << 20]
    (headline,) = doc["headline"]
    assert headline["algorithm"] == "auto" and headline["bytes"] == 1 << 20
    assert 0 <= headline["overlap_pct"] <= 100 and headline["latency_ratio"] > 0


@needs_build
def test_oversubscribed_runs_are_labelled(tmp_path):
    np = (os.cpu_count() or 1) + 1
    r = mpiopt("bench", "allreduce", "--nonblocking", "-np", np, "--flavour", FLAVOURS[0], "--sizes", "1K",
               "--iterations", "2", "--warmup", "0", "--results", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "OVERSUBSCRIBED" in r.stdout and "not a speed-up" in r.stdout
    (run,) = json.loads((tmp_path / "allreduce_nonblocking.json").read_text())["runs"]
    assert run["oversubscribed"] is True and run["ranks"] == np


@needs_build  # the algorithm names come from the build
@pytest.mark.parametrize("args, message", [
    (["--sizes", "64:8"], "minimum is larger"),
    (["-np", "two"], "bad process counts"),
    (["--algorithms", "vendor,fastest"], "bad --algorithms"),
    (["--flavour", "lam"], "unknown MPI flavour"),
    (["--iterations", "0"], "at least 1"),
])
def test_mpiopt_bench_allreduce_nonblocking_bad_input(tmp_path, args, message):
    r = mpiopt("bench", "allreduce", "--nonblocking", "--results", str(tmp_path / "res"), *args)
    assert r.returncode == 2
    assert message in r.stderr
    assert not (tmp_path / "res").exists()


def test_mpiopt_bench_allreduce_nonblocking_unknown_option():
    r = mpiopt("bench", "allreduce", "--nonblocking", "--no-such-option")
    assert r.returncode == 2 and "unrecognized arguments: --no-such-option" in r.stderr
