"""mpiopt-allreduce (the OSU-style C benchmark) and `mpiopt bench allreduce`: output formats,
options, validation of every algorithm on real MPI runs. No timing assertions."""
import json
import os
import re
import subprocess
import sys

import pytest

from mpiopt import algorithms, mpi
from conftest import BUILT_FLAVOURS, needs_build, run_mpiopt as mpiopt

FLAVOURS = BUILT_FLAVOURS
# every choice the registry lists, vendor first (the benchmark's column order for "all")
ALGORITHMS = algorithms.names() if FLAVOURS else []


# A run expected to fail: Open MPI 4.1's mpirun waits odls_base_sigkill_timeout (1 s, twice: 2.4 s
# a launch) after a rank exits non-zero before it exits itself; 0 ends it at once (0.4 s), the
# same exit code and messages
FAILING_RUN_ENV = {"OMPI_MCA_odls_base_sigkill_timeout": "0"}


def bench(flavour, np, *args, timeout=300, env=None):
    return mpi.run(flavour, np, [mpi.binary(flavour, "mpiopt-allreduce"), *args], timeout=timeout,
                   bind_none=True, env=env)


def failing_bench(flavour, np, *args):
    """bench() for a run that must fail (a bad option)."""
    return bench(flavour, np, *args, env=dict(os.environ, **FAILING_RUN_ENV))


def table_rows(stdout):
    return [line.split() for line in stdout.splitlines() if line and not line.startswith("#")]




@needs_build
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_osu_format_single_algorithm(flavour):
    r = bench(flavour, 2, "-m", "8:64", "-i", "3", "-x", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("# OSU MPI Allreduce Latency Test")
    assert "# Datatype: MPI_DOUBLE." in lines
    header = next(line for line in lines if line.startswith("# Size"))
    # osu_allreduce's columns first (size left in 10, then 18-wide), ours after them
    assert re.match(r"# Size\s+Avg Latency\(us\)\s+Bandwidth\(MB/s\)$", header)
    assert header.index("Avg Latency(us)") + len("Avg Latency(us)") == 28
    rows = table_rows(r.stdout)
    assert [int(row[0]) for row in rows] == [8, 16, 32, 64]
    for row in rows:
        size, avg, bw = int(row[0]), float(row[1]), float(row[2])
        assert avg > 0
        assert bw == pytest.approx(size / avg, rel=0.05, abs=0.01)


@needs_build
@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("operation", ["scan", "exscan"])
def test_scans_are_measured_against_the_vendor(flavour, operation):
    r = bench(flavour, 2, f"--{operation}", "-m", "8:1024", "-i", "5", "-x", "1",
              "--algorithms", "vendor,auto", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["operation"] == operation and doc["algorithms"] == ["vendor", "auto"]
    sizes = {(x["algorithm"], x["bytes"]) for x in doc["results"] if x["avg_us"] > 0}
    assert sizes == {(a, b) for a in ("vendor", "auto") for b in (8, 16, 32, 64, 128, 256, 512, 1024)}


@needs_build
@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("operation", ["reduce-scatter-block", "reduce-scatter"])
def test_reduce_scatters_are_measured_against_the_vendor(flavour, operation):
    columns = ["vendor", "auto", "shared_memory", "rabenseifner", "ring", "binomial"]
    r = bench(flavour, 2, f"--{operation}", "-m", "16:256", "-i", "3", "-x", "1",
              "--algorithms", ",".join(columns), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["operation"] == operation.replace("-", "_") and doc["algorithms"] == columns
    sizes = {(x["algorithm"], x["bytes"]) for x in doc["results"] if x["avg_us"] > 0}
    assert sizes == {(a, b) for a in columns for b in (16, 32, 64, 128, 256)}


@needs_build
def test_a_list_of_sizes_measures_exactly_those():
    flavour = FLAVOURS[0]
    r = bench(flavour, 2, "-m", "8,24,4096", "-i", "2", "-x", "1", "-c")
    assert r.returncode == 0, r.stderr
    assert [int(row[0]) for row in table_rows(r.stdout)] == [8, 24, 4096]
    for bad in ("8,8", "64,8", "8,,16", "8,x"):
        r = failing_bench(flavour, 1, "-m", bad)
        assert r.returncode != 0 and "bad message size" in r.stderr, (bad, r.stderr)


@needs_build
def test_full_statistics_and_char_type():
    flavour = FLAVOURS[0]
    r = bench(flavour, 2, "-m", "1:4", "-i", "4", "-x", "0", "-f", "-T", "mpi_char")
    assert r.returncode == 0, r.stderr
    assert "# Datatype: MPI_CHAR." in r.stdout
    header = next(line for line in r.stdout.splitlines() if line.startswith("# Size"))
    assert re.match(r"# Size\s+Avg Latency\(us\)\s+Min Latency\(us\)\s+Max Latency\(us\)\s+Iterations", header)
    rows = table_rows(r.stdout)
    assert [int(row[0]) for row in rows] == [1, 2, 4]
    for row in rows:
        avg, lo, hi, iters = float(row[1]), float(row[2]), float(row[3]), int(row[4])
        assert lo <= avg <= hi and iters == 4


@needs_build
def test_all_algorithms_one_column_each():
    r = bench(FLAVOURS[0], 2, "-m", "8:16", "-i", "2", "-x", "0", "--algorithms", "all")
    assert r.returncode == 0, r.stderr
    header = next(line for line in r.stdout.splitlines() if line.startswith("# Size")).split()[2:]
    assert header == [f"{a}(us)" for a in ALGORITHMS] + [f"{a}(MB/s)" for a in ALGORITHMS]
    n = len(ALGORITHMS)
    for row in table_rows(r.stdout):
        assert len(row) == 1 + 2 * n
        size = int(row[0])
        for us_text, mb_s_text in zip(row[1:1 + n], row[1 + n:]):
            us, mb_s = float(us_text), float(mb_s_text)
            assert us > 0
            # bandwidth = bytes / average latency (bytes per us = MB/s), both printed with 2
            # decimals: the tolerance is what that rounding allows
            slack = size / max(us - 0.005, 1e-9) - size / (us + 0.005) + 0.01
            assert abs(mb_s - size / us) <= slack, (row, us, mb_s)


@needs_build
def test_json_schema():
    r = bench(FLAVOURS[0], 2, "-m", "8:32", "-i", "3", "-x", "1", "-a", "vendor,ring,auto", "--json", "-c")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["benchmark"] == "mpiopt-allreduce" and doc["operation"] == "allreduce"
    assert doc["ranks"] == 2 and doc["datatype"] == "MPI_DOUBLE" and doc["op"] == "MPI_SUM"
    assert doc["algorithms"] == ["vendor", "ring", "auto"]
    assert doc["mpi_library"]
    assert len(doc["results"]) == 3 * 3
    for row in doc["results"]:
        assert set(row) >= {"algorithm", "bytes", "count", "iterations", "avg_us", "min_us", "max_us",
                            "median_us", "bandwidth_mb_s", "valid", "errors"}
        assert row["count"] * 8 == row["bytes"] and row["iterations"] == 3
        assert row["min_us"] <= row["avg_us"] <= row["max_us"] and row["median_us"] > 0
        assert row["valid"] is True and row["errors"] == 0


@needs_build
@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("extra", [["-T", "int"], ["-T", "double", "--op", "max", "--reduce"],
                                   ["-T", "float", "--op", "prod"]])
def test_validation_passes_for_every_algorithm(flavour, extra):
    # 3 ranks: not a power of two; sizes from 4 B give counts 1 and 2 (< p) and counts not divisible by 3
    r = bench(flavour, 3, "-m", "4:65536", "-i", "1", "-x", "0", "-a", "all", "-c", *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = table_rows(r.stdout)
    assert len(rows) == (15 if "double" not in extra else 14)  # sizes below one element are skipped
    assert all(row[-1] == "Pass" for row in rows)


@needs_build
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_on_a_communicator_made_after_many_live_ones(flavour):
    """--live-comms 40: every algorithm still exact on the communicator made after 40 others that
    hold windows and stages (the node's budgets spent: the fallbacks run), and the document says
    which communicator it measured."""
    r = bench(flavour, 3, "-m", "8:1048576", "-i", "2", "-x", "0", "-a", "all", "-c", "--json",
              "--live-comms", "40")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["live_comms"] == 40
    assert doc["results"] and all(row["valid"] is True and row["errors"] == 0 for row in doc["results"])


@needs_build
@pytest.mark.parametrize("args, message", [
    (["-m", "0"], "bad message size"),
    (["-m", "64:8"], "larger than the maximum"),
    (["-i", "x"], "bad iteration count"),
    (["-i"], "needs a value"),
    (["-T", "quaternion"], "unknown data type"),
    (["--algorithms", "ring,fastest"], "unknown algorithm 'fastest'"),
    (["--algorithms", "ring,ring"], "repeated"),
    (["--op", "xor"], "unknown op"),
    (["--no-such-option"], "unknown option"),
    (["--live-comms", "-1"], "bad --live-comms"),
    (["--scan", "--algorithms", "vendor,ring"], "a scan has no algorithm 'ring'"),
    (["--exscan", "-c"], "--validation checks allreduce and reduce results only"),
    (["--reduce-scatter", "--algorithms", "vendor,hierarchical"],
     "a reduce-scatter has no algorithm 'hierarchical'"),
    (["stray"], "unexpected argument"),
])
def test_bad_options_fail_with_a_message(args, message):
    r = failing_bench(FLAVOURS[0], 1, *args)
    assert r.returncode != 0
    assert message in r.stderr
    assert "# Size" not in r.stdout


@needs_build
def test_help():
    r = bench(FLAVOURS[0], 1, "--help")
    assert r.returncode == 0 and "--algorithms" in r.stdout and "Example" in r.stdout


@needs_build
def test_mpiopt_bench_allreduce_writes_table_plot_json(tmp_path):
    r = mpiopt("bench", "allreduce", "-np", "2", "--flavour", FLAVOURS[0], "--sizes", "8:128",
               "--iterations", "3", "--warmup", "0", "--results", str(tmp_path / "res"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [(run["operation"], run["ranks"], run["flavour"]) for run in out["runs"]] == \
        [("allreduce", 2, FLAVOURS[0]), ("reduce", 2, FLAVOURS[0])]
    for run in out["runs"]:     # the allreduce's with the floor (memcpy), the reduce's without
        floor = {"memcpy"} if run["operation"] == "allreduce" else set()
        assert {row["algorithm"] for row in run["results"]} == set(ALGORITHMS) | floor
    for summary in out["summary"]:
        assert set(summary["vendor_over_auto"]) == {"8", "16", "32", "64", "128"}
        assert summary["oversubscribed"] is (2 > os.cpu_count())
        assert isinstance(summary["bar_holds"], bool) or summary["oversubscribed"]
        ratios = summary["vendor_over_auto"].values()
        assert summary["min"] == pytest.approx(min(ratios), abs=1e-3)
        assert set(summary["vendor_over_auto_slowest"]) == set(summary["vendor_over_auto"])
    # the hand-off overhead: both operations on MPI_COMM_SELF and MPI_COMM_WORLD
    overhead = out["overhead"]
    assert {(o["operation"], o["comm"]) for o in overhead} == \
        {(op, comm) for op in ("allreduce", "reduce") for comm in ("self", "world")}
    for o in overhead:
        assert o["vendor_ns"] > 0 and o["interposed_ns"] > 0
        assert o["added_ns"] == pytest.approx(o["interposed_ns"] - o["vendor_ns"], abs=0.02)
    res = tmp_path / "res"
    for operation in ("allreduce", "reduce"):
        assert (res / f"{operation}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        csv_lines = (res / f"{operation}.csv").read_text().splitlines()
        assert csv_lines[0].startswith("flavour,ranks,operation")
        assert len(csv_lines) == 1 + 5 * (len(ALGORITHMS) + (operation == "allreduce"))
        assert all(line.split(",")[2] == operation for line in csv_lines[1:])
        assert json.loads((res / f"{operation}.json").read_text())[0]["ranks"] == 2


@needs_build
def test_mpiopt_bench_allreduce_table_for_people(tmp_path):
    r = mpiopt("bench", "allreduce", "-np", "2", "--flavour", FLAVOURS[0], "--sizes", "8:16",
               "--iterations", "2", "--warmup", "0", "--results", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "MPI_Allreduce" in r.stdout and "MPI_Reduce," in r.stdout
    assert "vendor/auto" in r.stdout and "bar (vendor/auto on OSU's figure >= 0.95x" in r.stdout
    assert "OSU's figure" in r.stdout and "slowest rank: vendor/auto" in r.stdout
    # the headline: one row per vendor and operation
    assert "auto against every vendor measured" in r.stdout
    assert re.search(rf"{FLAVOURS[0]}\s.*allreduce\s.*\b2\b", r.stdout)
    assert "hand-off overhead" in r.stdout
    # piped (as here), a table keeps whole cells: no "…" from squeezing it to 80 columns
    assert "…" not in r.stdout


@needs_build
def test_the_memcpy_floor_is_a_column_and_a_ratio_for_allreduce_only(tmp_path):
    """--algorithms ...,memcpy: every rank copies input to output at once (the floor); the table
    shows auto/floor and vendor/floor for the allreduce, the JSON has the floor's rows, and a
    validated run checks every column but the floor."""
    r = mpiopt("bench", "allreduce", "-np", "2", "--flavour", FLAVOURS[0], "--sizes", "1K,64K",
               "--algorithms", "vendor,auto,memcpy", "--iterations", "3", "--iterations-large", "3",
               "--warmup", "0", "--no-overhead", "--validate", "--results", str(tmp_path))
    assert r.returncode == 0, r.stderr
    allreduce, reduce = r.stdout.split("MPI_Reduce,")
    assert "auto/floor" in allreduce and "vendor/floor" in allreduce
    assert "/floor" not in reduce
    assert "floor: memcpy, every rank copying its input to its output at once" in r.stdout
    doc = json.loads((tmp_path / "allreduce.json").read_text())
    runs = doc if isinstance(doc, list) else [doc]
    for run in runs:
        rows = [x for x in run["results"] if x["algorithm"] == "memcpy"]
        assert [x["bytes"] for x in rows] == [1024, 65536]
        assert all(x["avg_us"] > 0 for x in rows)
        assert all(x["errors"] == 0 for x in run["results"])


@needs_build
def test_oversubscribed_runs_are_labelled_and_count_towards_no_bar(tmp_path):
    np = (os.cpu_count() or 1) + 1
    r = mpiopt("bench", "allreduce", "-np", np, "--flavour", FLAVOURS[0], "--sizes", "8",
               "--operations", "allreduce", "--no-overhead", "--iterations", "2", "--warmup", "0",
               "--results", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    (summary,) = json.loads(r.stdout)["summary"]
    assert summary["oversubscribed"] is True and summary["bar_holds"] is None
    r = mpiopt("bench", "allreduce", "-np", np, "--flavour", FLAVOURS[0], "--sizes", "8",
               "--operations", "allreduce", "--no-overhead", "--iterations", "2", "--warmup", "0",
               "--results", str(tmp_path))
    assert "OVERSUBSCRIBED" in r.stdout and "not a speed-up" in r.stdout
    assert "bar (vendor/auto" not in r.stdout
    assert "oversubscribed: not a speed-up" in r.stdout   # the headline row too


@pytest.mark.parametrize("args, message", [
    (["--sizes", "64:8"], "minimum is larger"),
    (["--sizes", "8:lots"], "bad size"),
    (["-np", "two"], "bad process counts"),
    (["--algorithms", "fastest"], "bad --algorithms"),
    (["--flavour", "lam"], "unknown MPI flavour"),
    (["--iterations", "0"], "at least 1"),
    (["--operations", "allgather"], "bad --operations"),
    (["--mpi", "/nonexistent/mpi"], "is not an MPI installation: no bin/mpicc"),
    (["--repeat", "0"], "--repeat must be at least 1"),
])
def test_mpiopt_bench_allreduce_bad_input_writes_nothing(tmp_path, args, message):
    r = mpiopt("bench", "allreduce", "--results", str(tmp_path / "res"), *args)
    assert r.returncode == 2
    assert message in r.stderr
    assert not (tmp_path / "res").exists()


def test_mpi_header_names_the_installation():
    assert mpi.describe_mpi_header('#define MPICH_VERSION "3.4a2"\n#define I_MPI_VERSION "2021.15.0"\n') \
        == ("mpich", "intel-mpi-2021.15.0")
    assert mpi.describe_mpi_header("#define OMPI_MAJOR_VERSION 5\n#define OMPI_MINOR_VERSION 0\n"
                                   "#define OMPI_RELEASE_VERSION 11\n") == ("openmpi", "openmpi-5.0.11")
    assert mpi.describe_mpi_header('#define MPICH_VERSION "5.0.2"\n') == ("mpich", "mpich-5.0.2")
    assert mpi.describe_mpi_header("int x;\n") is None


PYPI_MPICH = mpi.repo_root() / "build" / "mpis" / "mpich"


@needs_build
@pytest.mark.skipif(not (PYPI_MPICH / "bin" / "mpicc").exists(),
                    reason="no MPI in build/mpis/mpich (make test-mpis installs MPICH 5 from PyPI)")
def test_bench_against_an_installed_mpi(tmp_path):
    """--mpi PREFIX: mpiopt built for that MPI in build/NAME, run with its own mpiexec, and the
    runs and headline named after it (no Debian MPI without --flavour)."""
    r = mpiopt("bench", "allreduce", "-np", "2", "--mpi", str(PYPI_MPICH), "--sizes", "8,64K",
               "--algorithms", "vendor,auto", "--operations", "allreduce", "--no-overhead",
               "--iterations", "3", "--warmup", "0", "--validate", "--results", str(tmp_path),
               "--json", timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    (run,) = out["runs"]
    assert run["flavour"].startswith("mpich-5") and "MPICH" in run["mpi_library"]
    assert all(row["errors"] == 0 for row in run["results"])
    (summary,) = out["summary"]
    assert summary["flavour"] == run["flavour"] and set(summary["vendor_over_auto"]) == {"8", "65536"}
    assert (mpi.repo_root() / "build" / run["flavour"] / "lib" / "libmpiopt.so").exists()


def test_repetitions_combine_into_medians_and_per_run_ratios():
    """--repeat: a column's figures at a size are their medians over the runs, and vendor/auto is
    the median of each run's own ratio, not the ratio of the medians (a run that is slow
    throughout slows both columns). Three made-up runs at one size: vendor 10, 30, 20 µs and auto
    5, 10, 40 µs give times 20 and 10 (ratio of medians 2.0) but run ratios 2.0, 3.0, 0.5: 2.0;
    a second size's run ratios 1, 4, 2 give 2 where the medians (2, 1) would also say 2, so the
    third size (vendor 1, 9, 4; auto 1, 1, 4: ratios 1, 9, 1 -> 1; medians 4 / 1 = 4) tells them
    apart."""
    from mpiopt.benchmarks.allreduce import combine_repetitions, auto_ratios, summarize

    def run(columns):
        rows = [{"algorithm": alg, "bytes": size, "avg_us": t, "max_us": t, "min_us": t,
                 "median_us": t} for size, times in columns.items() for alg, t in times.items()]
        return {"flavour": "x", "ranks": 2, "operation": "allreduce", "results": rows}

    runs = [run({8: {"vendor": 10, "auto": 5}, 16: {"vendor": 1, "auto": 1}, 32: {"vendor": 1, "auto": 1}}),
            run({8: {"vendor": 30, "auto": 10}, 16: {"vendor": 4, "auto": 1}, 32: {"vendor": 9, "auto": 1}}),
            run({8: {"vendor": 20, "auto": 40}, 16: {"vendor": 2, "auto": 1}, 32: {"vendor": 4, "auto": 4}})]
    doc = combine_repetitions(runs)
    assert doc["repetitions"] == 3
    times = {(r["bytes"], r["algorithm"]): r["avg_us"] for r in doc["results"]}
    assert times[(8, "vendor")] == 20 and times[(8, "auto")] == 10
    assert times[(32, "vendor")] == 4 and times[(32, "auto")] == 1
    assert auto_ratios(doc) == {8: 2.0, 16: 2.0, 32: 1.0}
    assert summarize(doc)["vendor_over_auto"] == {"8": 2.0, "16": 2.0, "32": 1.0}
    json.dumps(doc)     # what --json prints and results/*.json hold
    assert combine_repetitions(runs[:1]) is runs[0]


@needs_build
def test_mpiopt_bench_allreduce_repeat(tmp_path):
    r = mpiopt("bench", "allreduce", "-np", "2", "--flavour", FLAVOURS[0], "--sizes", "8,1K",
               "--algorithms", "vendor,auto", "--operations", "allreduce", "--iterations", "3",
               "--warmup", "0", "--repeat", "3", "--no-overhead", "--results", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    [run] = out["runs"]
    assert run["repetitions"] == 3
    for stat, per_size in run["run_ratios"].items():
        assert set(per_size) == {"8", "1024"} and all(len(v) == 3 for v in per_size.values())
    [summary] = out["summary"]
    for size, values in run["run_ratios"]["avg_us"].items():
        assert summary["vendor_over_auto"][size] == pytest.approx(sorted(values)[1], abs=1e-4)
    people = mpiopt("bench", "allreduce", "-np", "2", "--flavour", FLAVOURS[0], "--sizes", "8",
                    "--algorithms", "vendor,auto", "--operations", "allreduce", "--iterations", "2",
                    "--warmup", "0", "--repeat", "2", "--no-overhead", "--results", str(tmp_path))
    assert people.returncode == 0 and "medians of 2 runs" in people.stdout


@needs_build
def test_the_table_says_what_autos_trials_kept(tmp_path):
    """auto times four algorithms on its first calls of a size class above 1 KiB (docs/
    collectives.md, "Measured choice"): the document keeps what it chose per class from each run,
    and the table shows it beside the sizes it covers (none at 1 KiB)."""
    args = ["bench", "allreduce", "-np", "2", "--flavour", FLAVOURS[0], "--sizes", "1K,5K,8K",
            "--algorithms", "vendor,auto", "--operations", "allreduce", "--iterations", "3",
            "--warmup", "30", "--no-overhead", "--repeat", "2", "--results", str(tmp_path)]
    r = mpiopt(*args, "--json")
    assert r.returncode == 0, r.stderr
    [run] = json.loads(r.stdout)["runs"]
    measured = run["auto_measured"]
    assert set(measured) == {"8192"}, measured      # 5K and 8K share one class, 1K is below
    assert len(measured["8192"]) == 2 and set(measured["8192"]) <= {
        "shared_memory", "recursive_doubling", "rabenseifner", "vendor"}
    people = mpiopt(*args)
    assert people.returncode == 0, people.stderr
    assert "auto took" in people.stdout
    rows = {line.split()[1]: line for line in people.stdout.splitlines() if re.match(r"^│\s+\d+K", line)}
    short = algorithms.short_names(FLAVOURS[0])
    names = {short.get(a, a) for a in ("shared_memory", "recursive_doubling", "rabenseifner", "vendor")}
    assert any(n in rows["5K"] for n in names) and any(n in rows["8K"] for n in names), rows
    assert not any(n in rows["1K"].split("│")[-2] for n in names), rows["1K"]


@needs_build
def test_fresh_inputs_before_every_call_and_every_table_says_which(tmp_path):
    """--fresh writes the send buffer before every call, untimed (new values each iteration: the
    validated results are checked against them), as an application computes its inputs; the OSU
    table's header, the JSON and the people's table name the mode, and OSU's stays the default."""
    r = bench(FLAVOURS[0], 2, "-m", "64,65536", "-i", "3", "-x", "1", "--fresh", "-c",
              "-a", "vendor,auto")
    assert r.returncode == 0, r.stderr
    assert "# Send buffer: written before every call (--fresh, as applications)." in r.stdout
    assert [row[-1] for row in table_rows(r.stdout)] == ["Pass", "Pass"], r.stdout
    r = bench(FLAVOURS[0], 2, "-m", "64", "-i", "2", "-x", "0")
    assert "# Send buffer: unchanged between calls (OSU's way)." in r.stdout
    r = mpiopt("bench", "allreduce", "-np", "2", "--flavour", FLAVOURS[0], "--sizes", "64,64K",
               "--fresh", "--iterations", "3", "--iterations-large", "3", "--warmup", "0",
               "--no-overhead", "--operations", "allreduce", "--results", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "a fresh send buffer each call (--fresh)" in r.stdout
    doc = json.loads((tmp_path / "allreduce.json").read_text())
    assert all(run["fresh"] is True for run in (doc if isinstance(doc, list) else [doc]))


@needs_build
@pytest.mark.parametrize("bind, said", [("none", "ranks not bound (--bind none)"),
                                        ("core", "each rank bound to a core (--bind core)")])
def test_binding_is_asked_for_and_the_spread_over_runs_shown(tmp_path, bind, said):
    """--bind none|core launches the ranks so (issue 68: small calls as steady unbound as bound);
    with --repeat the table gives each column's spread over the runs at the small sizes, and the
    JSON each size's max/min (run_spread)."""
    args = ["bench", "allreduce", "-np", "2", "--flavour", FLAVOURS[0], "--sizes", "8,1K",
            "--algorithms", "vendor,auto", "--operations", "allreduce", "--iterations", "3",
            "--warmup", "0", "--repeat", "2", "--no-overhead", "--bind", bind,
            "--results", str(tmp_path)]
    r = mpiopt(*args)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())      # rich wraps the title at the terminal's width
    assert said in text and "spread over the 2 runs up to 16 KiB" in text, r.stdout
    [run] = json.loads(mpiopt(*args, "--json").stdout)["runs"]
    assert run["binding"] == bind
    assert set(run["run_spread"]["auto"]) == {"8", "1024"} and \
        all(v >= 1.0 for v in run["run_spread"]["auto"].values())


@needs_build
def test_the_cross_core_floor_is_measured_for_two_rank_allreduces(tmp_path):
    """mpiopt-line-pingpong --bulk: both cores copy at once n bytes the other just wrote (the
    slower copy's median); `mpiopt bench allreduce -np 2` puts it beside each allreduce as X/xfer,
    from 1 KiB, and in the JSON; a bad size list is refused with a message."""
    exe = mpi.binary(FLAVOURS[0], "mpiopt-line-pingpong")
    r = subprocess.run([str(exe), "--bulk", "4096,65536", "5"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["bulk"]
    assert [x["bytes"] for x in rows] == [4096, 65536]
    assert all(0 < x["min_seconds"] <= x["seconds"] for x in rows)
    # the staged floor adds the timed copy into shared memory: it cannot be below the read alone
    assert all(x["staged_seconds"] > x["min_seconds"] and x["staged_turns_seconds"] > x["min_seconds"]
               for x in rows)
    bad = subprocess.run([str(exe), "--bulk", "4096,x"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "bad --bulk size list" in bad.stderr and not bad.stdout
    r = mpiopt("bench", "allreduce", "-np", "2", "--flavour", FLAVOURS[0], "--sizes", "8,4K",
               "--algorithms", "vendor,auto", "--iterations", "3", "--warmup", "0",
               "--no-overhead", "--operations", "allreduce", "--results", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "auto/xfer" in r.stdout and "xfer: both cores copying at once" in r.stdout
    assert "auto/stage" in r.stdout and "stage: each core first copying" in r.stdout
    doc = json.loads((tmp_path / "allreduce.json").read_text())
    floor, staged = doc[0]["cross_core_floor_us"], doc[0]["staged_floor_us"]
    assert list(floor) == ["4096"] and floor["4096"] > 0    # 8 B: below 1 KiB, none
    assert list(staged) == ["4096"] and staged["4096"] > 0
