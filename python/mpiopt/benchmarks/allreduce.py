"""`mpiopt bench allreduce`: mpiopt's allreduce and reduce algorithms against the vendor's.

Runs the C benchmark `mpiopt-allreduce --algorithms all --json` (every algorithm and the vendor's
in the same run, interleaved call by call) for each built MPI flavour, operation (MPI_Allreduce,
MPI_Reduce) and process count, then prints a table per run (OSU's figure: every rank's mean time
averaged over the ranks, with a barrier before each call; and the slowest rank's), a headline table
over every vendor measured, writes a CSV table, a PNG plot and a JSON file per operation to the
results directory, checks the performance bar (vendor/auto >= 0.95 at every size, median >= 1.2)
on runs with a core per rank, and measures the drop-in's hand-off overhead (`mpiopt-allreduce
--overhead`). A run with more ranks than cores is labelled oversubscribed and counts towards no
bar. `--mpi PREFIX` adds any installed MPI (mpiopt is built for it). Also the measuring back end of
`mpiopt tune`.

With --nonblocking it runs the OSU-style overlap benchmark `mpiopt-iallreduce` instead
(allreduce_overlap.py)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from .. import algorithms, mpi
from ..errors import UsageError
from ..units import parse_names, parse_ranks, parse_sizes, size_label
from ..console import console as report_console

NAME = "allreduce"
HELP = "allreduce algorithms vs the vendor's MPI_Allreduce (latency, bandwidth, plot)"
IN_REPORT = True
# the report: the sweep, then the overlap of the nonblocking calls
REPORT_RUNS = [[], ["--nonblocking"]]
EXAMPLE = """examples:
  mpiopt bench allreduce                          p = 2 and 4, 8 B..16 MiB, every built MPI
  mpiopt bench allreduce -np 4 --flavour mpich --sizes 1K:1M
  mpiopt bench allreduce -np 2 --sizes 8:64K --iterations 200 --json
  mpiopt bench allreduce --nonblocking            MPI_Iallreduce overlap (OSU method), p = 2, 1K..1M
  mpiopt bench allreduce -np 2 --mpi build/mpis/impi --mpi /opt/openmpi-5   against installed MPIs
  mpiopt bench allreduce -np 2 --repeat 5        medians of 5 interleaved runs (a noisy machine)
  mpiopt bench allreduce -np 2 --fresh --sizes 64K:1M   inputs written before every call, as
                                                  applications do (OSU leaves them unchanged)
"""

BENCH_BINARY = "mpiopt-allreduce"
NONBLOCKING_BINARY = "mpiopt-iallreduce"
# The bar (issue 23) on OSU's figure, vendor_time / auto_time: >= 0.95 at every size and a median
# over the sizes >= 1.2, for allreduce and reduce alike.
BAR_ANY = 0.95
BAR_MEDIAN = 1.2
# What the report compares: OSU's figure, every rank's mean time averaged over the ranks, with a
# barrier before each call (a rank held waiting counts), and beside it the slowest rank's mean.
OSU_STAT, SLOWEST_STAT = "avg_us", "max_us"
# `mpiopt tune` compares algorithms on the median over iterations of the slowest rank's time: on a
# shared machine one descheduled rank stretches single calls by milliseconds and would dominate a
# mean when the choice between two close rows is made.
STAT = "median_us"
MAX_SIZES = 64      # sizes the C benchmark takes in one list


# The benchmark's extra column: every rank copies its input to its output, all at once. An
# allreduce must at least read every input and write every output, so this is the machine's
# floor for it (bench/allreduce/allreduce_bench.h); not for a reduce, whose other ranks write none.
FLOOR = "memcpy"

# What the C benchmark measures (its --reduce, --scan, ... flags); the scans and reduce-scatters
# have their own algorithms (docs/collectives.md), not the allreduce list.
SCAN_OPERATIONS = ("scan", "exscan")
SCATTER_OPERATIONS = ("reduce_scatter_block", "reduce_scatter")
OPERATIONS = ["allreduce", "reduce", *SCAN_OPERATIONS, *SCATTER_OPERATIONS]


def parse_algorithms(text: str) -> str:
    """Checks a --algorithms value here, so a typo is a usage error before any MPI run."""
    if text != "all":
        parse_names(text, "--algorithms", [*algorithms.names(), FLOOR])
    return text


def sweep_columns(requested: str, operation: str) -> str:
    """The benchmark's --algorithms for a sweep: `all` is every algorithm, vendor first, and for
    an allreduce the floor too (what `make run` shows); a list as given."""
    if requested != "all":
        return requested
    if operation in SCAN_OPERATIONS + SCATTER_OPERATIONS:
        family = "scan" if operation in SCAN_OPERATIONS else "reduce_scatter"
        return ",".join(algorithms.names(family=family))
    names = algorithms.names()
    names = ["vendor"] + [a for a in names if a != "vendor"]
    return ",".join(names + ([FLOOR] if operation == "allreduce" else []))


def floor_ratios(doc: dict, algorithm: str) -> dict[int, float]:
    """algorithm's time / the floor's per size (>= 1; 1 = as fast as the memory allows), on OSU's
    figure; empty for a reduce or without the floor column."""
    if doc["operation"] != "allreduce":
        return {}
    return {size: rows[algorithm][OSU_STAT] / rows[FLOOR][OSU_STAT]
            for size, rows in sorted(by_size(doc).items())
            if algorithm in rows and FLOOR in rows and rows[FLOOR][OSU_STAT] > 0}


def choose_flavours(requested: str, binary: str = BENCH_BINARY) -> list[str]:
    """`all` -> every flavour whose libmpiopt and benchmark are built; `none` -> none; else that
    one, checked."""
    if requested == "none":
        return []
    if requested == "all":
        flavours = [f for f in mpi.built_flavours() if mpi.binary(f, binary).exists()]
        if not flavours:
            raise UsageError(f"no MPI flavour has {binary} built: run `make build` first")
        return flavours
    if requested not in mpi.FLAVOURS:
        raise UsageError(f"unknown MPI flavour {requested!r} (expected {', '.join(mpi.FLAVOURS)} or all)")
    if not mpi.binary(requested, binary).exists():
        raise UsageError(f"{mpi.binary(requested, binary)} is not built: run `make build` first")
    return [requested]


def measure(flavour: str, np: int, sizes: list[int], columns: str = "all",
            iterations: int = 200, warmup: int = 20, iterations_large: int = 30, warmup_large: int = 2,
            datatype: str = "double", op: str = "sum", operation: str = "allreduce",
            validate: bool = False, time_limit: float = 0, timeout: float = 900,
            env: dict | None = None, live_comms: int = 0, fresh: bool = False,
            bind: str = "launcher") -> dict:
    """Runs the C benchmark once and returns its JSON document (rows in "results"); `env`: the
    ranks' environment (default this process's)."""
    argv = [mpi.binary(flavour, BENCH_BINARY), "-m", ",".join(map(str, sorted(sizes))),
            "-i", iterations, "-x", warmup, "--iterations-large", iterations_large,
            "--warmup-large", warmup_large, "-T", datatype, "--op", op,
            "--algorithms", columns, "--json"]
    if time_limit > 0:
        argv += ["--time-limit", time_limit]
    if live_comms > 0:
        argv += ["--live-comms", live_comms]
    if operation != "allreduce":    # --reduce, --scan, --reduce-scatter-block, ...
        argv.append("--" + operation.replace("_", "-"))
    if validate:
        argv.append("-c")
    if fresh:
        argv.append("--fresh")
    # MPIOPT_VERBOSE=1: rank 0 says what auto's trials measured and kept (src/coll/select/measured.c)
    env = dict(os.environ if env is None else env, MPIOPT_VERBOSE="1")
    doc, stderr = run_json(flavour, np, argv, BENCH_BINARY, timeout, env, with_stderr=True,
                           bind=bind)
    doc["flavour"] = flavour
    doc["binding"] = bind
    doc["auto_measured"] = measured_choices(stderr)
    return doc


# rank 0's line for each size class auto measured (docs/collectives.md, "Measured choice")
MEASURED_LINE = re.compile(r"^mpiopt: allreduce p=\d+ bytes<=(\d+): measured .*, chose (\w+)$", re.M)
VERBOSE_LINE = re.compile(r"^mpiopt: (allreduce|reduce|iallreduce|ireduce) ")


def measured_choices(stderr: str) -> dict[str, list[str]]:
    """{size class (bytes, a power of two): [the algorithm auto kept]} from MPIOPT_VERBOSE's lines;
    a list, so that repetitions can add theirs (combine_repetitions)."""
    return {size: [chosen] for size, chosen in MEASURED_LINE.findall(stderr)}


def run_json(flavour: str, np: int, argv: list, binary: str, timeout: float, env: dict | None = None,
             with_stderr: bool = False, bind: str = "launcher"):
    """Runs a benchmark binary that prints JSON on np ranks; its parsed output (and its stderr, with
    with_stderr), or RuntimeError naming what failed. bind "launcher": the launcher's own binding
    while every rank has a core (what users get: Open MPI binds to cores, MPICH's Hydra does
    not), "none" or "core" as asked; always --bind-to none when oversubscribed, where a rank
    pinned to a shared core would starve."""
    what = f"{binary} ({flavour}, {np} ranks)"
    over = oversubscribed(np)
    try:
        proc = mpi.run(flavour, np, argv, timeout=timeout, bind_none=over or bind == "none", env=env,
                       launcher_args=[] if over else mpi.binding_args(flavour, bind))
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what} took more than {timeout:.0f} s")
    if proc.returncode != 0:
        lines = [l for l in (proc.stderr or proc.stdout).strip().splitlines() if not VERBOSE_LINE.match(l)]
        tail = "\n".join(lines[-5:])
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise RuntimeError(f"{what} printed no valid JSON: {e}")
    return (doc, proc.stderr) if with_stderr else doc


def by_size(doc: dict) -> dict[int, dict[str, dict]]:
    """{bytes: {algorithm: row}} from a benchmark document."""
    table: dict[int, dict[str, dict]] = {}
    for row in doc["results"]:
        table.setdefault(row["bytes"], {})[row["algorithm"]] = row
    return table


def auto_ratios(doc: dict, stat: str = OSU_STAT) -> dict[int, float]:
    """vendor_time / auto_time per size (> 1: auto is faster), on OSU's figure unless told. For a
    document combined from repetitions: the median of each run's own ratio (a ratio is measured
    within one run; a slow run slows both columns)."""
    runs = doc.get("run_ratios", {}).get(stat)
    if runs is not None:
        return {int(size): median(values) for size, values in sorted(runs.items(), key=lambda kv: int(kv[0]))}
    out = {}
    for size, rows in sorted(by_size(doc).items()):
        if "vendor" in rows and "auto" in rows and rows["auto"][stat] > 0:
            out[size] = rows["vendor"][stat] / rows["auto"][stat]
    return out


def median(values) -> float:
    v = sorted(values)
    return 0.5 * (v[(len(v) - 1) // 2] + v[len(v) // 2]) if v else float("nan")


def bar_holds(ratios: dict[int, float]) -> bool:
    return bool(ratios) and min(ratios.values()) >= BAR_ANY and median(ratios.values()) >= BAR_MEDIAN


MEDIAN_FIELDS = ("avg_us", "max_us", "min_us", "median_us", "bandwidth_mb_s")


# the small calls whose steadiness over runs the table reports (issue 68: bound and unbound)
SPREAD_MAX_BYTES = 16 << 10


def combine_repetitions(docs: list[dict]) -> dict:
    """One document from runs of the same benchmark (--repeat): every figure of a column at a size
    is its median over the runs, and `run_ratios` keeps each run's own vendor/auto per size, which
    auto_ratios takes the median of. One run: returned as it is."""
    if len(docs) == 1:
        return docs[0]
    out = dict(docs[0], repetitions=len(docs))
    rows: dict[tuple, list[dict]] = {}
    for doc in docs:
        for row in doc["results"]:
            rows.setdefault((row["bytes"], row["algorithm"]), []).append(row)
    out["results"] = []
    for row in docs[0]["results"]:
        group = rows[(row["bytes"], row["algorithm"])]
        out["results"].append(dict(row, **{k: median([g[k] for g in group]) for k in MEDIAN_FIELDS
                                           if all(k in g for g in group)}))
    out["auto_measured"] = {}
    for doc in docs:
        for size, chosen in doc.get("auto_measured", {}).items():
            out["auto_measured"].setdefault(size, []).extend(chosen)
    # each column's spread over the runs at a size: max / min of its figure (--bind: how steady)
    out["run_spread"] = {}
    for (size, alg), group in rows.items():
        values = [g[OSU_STAT] for g in group if g.get(OSU_STAT, 0) > 0]
        if len(values) == len(docs):
            out["run_spread"].setdefault(alg, {})[str(size)] = max(values) / min(values)
    out["run_ratios"] = {}
    for stat in (OSU_STAT, SLOWEST_STAT):
        per_size: dict[str, list[float]] = {}
        for doc in docs:
            for size, ratio in auto_ratios(doc, stat).items():
                per_size.setdefault(str(size), []).append(ratio)
        out["run_ratios"][stat] = per_size
    return out


# The defaults of the sweep and of --nonblocking (which has its own): -np, --sizes, --algorithms
# default to None, so that a value the user gave is told apart from a default.
DEFAULTS = {"np": "2,4", "sizes": "8:16M", "algorithms": "all"}
NONBLOCKING_DEFAULTS = {"np": "2", "sizes": "1K:1M", "algorithms": "vendor,auto"}


def add_arguments(p) -> None:
    p.add_argument("-np", metavar="LIST", help="process counts, comma-separated (default 2,4; 2 with --nonblocking)")
    p.add_argument("--flavour", help="openmpi, mpich, all built ones, or none (default all; none "
                   "when --mpi is given)")
    p.add_argument("--mpi", action="append", default=[], metavar="PREFIX",
                   help="also an MPI installed under PREFIX (PREFIX/bin/mpicc, bin/mpiexec; a module, a "
                   "Spack or pip prefix): mpiopt is built for it in build/NAME on first use; repeatable")
    p.add_argument("--sizes", metavar="LIST",
                   help="message sizes: bytes with K/M/G suffixes, MIN:MAX for every power of two "
                   "between, comma-separated (default 8:16M, 1K:1M with --nonblocking; docs/benchmarks.md)")
    p.add_argument("--algorithms",
                   help="comma-separated algorithms (`mpiopt-allreduce --list-algorithms`) or all "
                   "(default all; vendor,auto with --nonblocking)")
    p.add_argument("--nonblocking", action="store_true",
                   help="instead of the sweep: MPI_Iallreduce overlap with computation, OSU's method "
                   "(mpiopt-iallreduce; takes -np, --flavour, --sizes, --algorithms, and --iterations, "
                   "--warmup for every size; docs/benchmarks.md)")
    p.add_argument("--iterations", type=int, default=200, help="timed iterations up to 8 KiB (default 200)")
    p.add_argument("--iterations-large", type=int, default=30, help="timed iterations above 8 KiB (default 30)")
    p.add_argument("--warmup", type=int, default=50,
                   help="warm-up iterations up to 8 KiB (default 50: auto's first 48 calls of a size "
                   "from 2 KiB are its trials, docs/collectives.md)")
    p.add_argument("--warmup-large", type=int, default=24,
                   help="warm-up iterations above 8 KiB (default 24: auto's first 24 calls "
                   "of a size are its trials, docs/collectives.md)")
    p.add_argument("--type", default="double", help="element type: double (default), float, int, char, ...")
    p.add_argument("--op", default="sum", choices=["sum", "prod", "max", "min"], help="reduction op (default sum)")
    p.add_argument("--operations", default="allreduce,reduce", metavar="LIST",
                   help=f"some of {', '.join(OPERATIONS)} (reduce: to root 0; a reduce-scatter's "
                   "size is its whole send buffer, as OSU's; default allreduce,reduce)")
    p.add_argument("--reduce", action="store_true", help="MPI_Reduce only (= --operations reduce)")
    p.add_argument("--no-overhead", action="store_true",
                   help="skip the hand-off overhead measurement (mpiopt-allreduce --overhead)")
    p.add_argument("--validate", action="store_true", help="also check every result (-c)")
    p.add_argument("--fresh", action="store_true",
                   help="write the send buffer before every call (untimed), as an application "
                        "computes its inputs; default OSU's way, the buffer unchanged between calls")
    p.add_argument("--bind", choices=("launcher", "none", "core"), default="launcher",
                   help="ranks bound to cores as the launcher does by default (Open MPI binds, "
                        "MPICH's Hydra does not), to none, or each to a core; every table says "
                        "which (default launcher)")
    p.add_argument("--live-comms", type=int, default=0, metavar="N",
                   help="measure on a communicator made after N others are alive, each used by an "
                   "8-byte and a 64 KiB allreduce (what the node's budgets leave it; default 0: "
                   "MPI_COMM_WORLD)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run the whole sweep N times, interleaved (every MPI, operation and "
                        "process count once, then again); a size's figures are the medians over "
                        "the N runs, and its vendor/auto the median of the N runs' own ratios "
                        "(default 1; 5 on a machine whose runs vary)")
    p.add_argument("--time-limit", type=float, default=1.0, metavar="SECONDS",
                   help="cut a size's iterations after about this long, keeping at least 3 (default 1; "
                   "0 = never): oversubscribed MPICH takes milliseconds per call here")


def check_counts(args) -> None:
    """The iteration, warm-up and time-limit options (shared with `mpiopt tune`)."""
    for name in ("iterations", "iterations_large"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    for name in ("warmup", "warmup_large", "time_limit"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must not be negative")


def _check_args(args) -> tuple[list[str], list[int], list[int]]:
    for name, value in (NONBLOCKING_DEFAULTS if args.nonblocking else DEFAULTS).items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    check_counts(args)
    if getattr(args, "repeat", 1) < 1:
        raise UsageError("--repeat must be at least 1")
    if getattr(args, "live_comms", 0) < 0:
        raise UsageError("--live-comms must be 0 or more")
    ranks = parse_ranks(args.np)
    sizes = parse_sizes(args.sizes, minimum=1)
    if len(sizes) > MAX_SIZES:
        raise UsageError(f"--sizes {args.sizes!r} names {len(sizes)} sizes; at most {MAX_SIZES} in one run")
    parse_algorithms(args.algorithms)
    binary = NONBLOCKING_BINARY if args.nonblocking else BENCH_BINARY
    flavours = choose_flavours(args.flavour or ("none" if args.mpi else "all"), binary)
    return flavours + installed_mpis(args.mpi), ranks, sizes


def installed_mpis(prefixes: list[str]) -> list[str]:
    """--mpi PREFIX...: each installation registered (its name then stands for it as a flavour
    does) and mpiopt built for it if it is not yet."""
    names = []
    for prefix in prefixes:
        try:
            inst = mpi.installation(prefix)
        except ValueError as e:
            raise UsageError(f"--mpi {prefix}: {e}")
        packaged = mpi.packaged_build()
        if not mpi.in_checkout():
            # a package pip installed: no source tree to build from, only its own libmpiopt
            if not (packaged and packaged.built_for_prefix(inst.prefix)):
                built = f"built for {packaged.mpi} ({packaged.mpicc})" if packaged else "without libmpiopt"
                raise UsageError(f"--mpi {prefix}: this mpiopt package was {built}; install it "
                                 f"for this MPI with MPICC={inst.mpicc} pip install mpiopt "
                                 "(docs/install.md)")
            print(f"mpiopt for {inst.name} ({inst.prefix}): {packaged.prefix}", file=sys.stderr)
            names.append(inst.name)
            continue
        print(f"mpiopt for {inst.name} ({inst.prefix}): build/{inst.name}", file=sys.stderr)
        mpi.ensure_built(inst, log=lambda line: print(f"  {line}", file=sys.stderr))
        names.append(inst.name)
    return names


def oversubscribed(np: int) -> bool:
    """More ranks than this machine has cores: every wait then competes for a core."""
    return np > (os.cpu_count() or 1)


def summarize(doc: dict) -> dict:
    """vendor/auto per size on OSU's figure and on the slowest rank's, their minimum and median,
    and whether the bar holds; None for an oversubscribed run, whose ratios measure the scheduler
    more than the algorithms (docs/benchmarks.md)."""
    ratios, slowest = auto_ratios(doc), auto_ratios(doc, SLOWEST_STAT)
    counted = bool(ratios) and not doc.get("oversubscribed")
    return {"flavour": doc["flavour"], "ranks": doc["ranks"], "operation": doc["operation"],
            "datatype": doc.get("datatype"), "oversubscribed": bool(doc.get("oversubscribed")),
            "vendor_over_auto": {str(s): round(r, 4) for s, r in ratios.items()},
            "vendor_over_auto_slowest": {str(s): round(r, 4) for s, r in slowest.items()},
            "min": round(min(ratios.values()), 4) if ratios else None,
            "median": round(median(ratios.values()), 4) if ratios else None,
            "slowest_min": round(min(slowest.values()), 4) if slowest else None,
            "slowest_median": round(median(slowest.values()), 4) if slowest else None,
            "bar_holds": bar_holds(ratios) if counted else None}


def print_summary(console, summary: list[dict]) -> None:
    """The headline: one row per vendor, operation and process count."""
    from rich.table import Table
    table = Table(title=f"auto against every vendor measured: vendor time / auto time (> 1: mpiopt "
                  f"faster); OSU's figure (average over ranks) and the slowest rank's; bar: min >= "
                  f"{BAR_ANY}, median >= {BAR_MEDIAN} on OSU's", title_justify="left")
    for col in ("vendor", "operation", "ranks", "min", "median", "slowest min", "slowest median", "bar"):
        table.add_column(col, justify="left" if col in ("vendor", "operation", "bar") else "right")
    for row in summary:
        if row["min"] is None:
            continue
        if row["oversubscribed"]:
            verdict = "[yellow]oversubscribed: not a speed-up[/]"
        else:
            verdict = "[green]holds[/]" if row["bar_holds"] else "[red]does not hold[/]"
        table.add_row(row["flavour"], row["operation"], str(row["ranks"]), f"{row['min']:.2f}",
                      f"{row['median']:.2f}", f"{row['slowest_min']:.2f}", f"{row['slowest_median']:.2f}",
                      verdict)
    console.print(table)


def run(args) -> int:
    from rich.console import Console
    # they read this module's tables: imported once it is
    from . import allreduce_files, allreduce_floor, allreduce_overhead
    from rich.progress import Progress

    flavours, ranks, sizes = _check_args(args)
    if args.nonblocking:
        from .allreduce_overlap import run_nonblocking
        return run_nonblocking(args, flavours, ranks, sizes)
    operations = ["reduce"] if args.reduce else parse_names(args.operations, "--operations",
                                                             OPERATIONS)
    console = report_console(stderr=args.json)
    runs: dict[tuple, list[dict]] = {}     # (flavour, operation, np): one document a repetition
    overhead, failures = [], []
    repeat = getattr(args, "repeat", 1)
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("allreduce benchmark",
                                 total=len(flavours) * (repeat * len(ranks) * len(operations) + 1))
        for rep in range(repeat):
            for flavour in flavours:
                for operation in operations:
                    for np in ranks:
                        progress.update(task, description=f"{operation}: {flavour}, {np} ranks"
                                        + (f" (run {rep + 1} of {repeat})" if repeat > 1 else ""))
                        try:
                            doc = measure(flavour, np, sizes, sweep_columns(args.algorithms, operation),
                                          args.iterations, args.warmup,
                                          args.iterations_large, args.warmup_large, args.type, args.op,
                                          operation, args.validate, args.time_limit,
                                          live_comms=getattr(args, "live_comms", 0),
                                          fresh=getattr(args, "fresh", False),
                                          bind=getattr(args, "bind", "launcher"))
                            doc["oversubscribed"] = oversubscribed(np)
                            doc["cores"] = os.cpu_count() or 1
                            runs.setdefault((flavour, operation, np), []).append(doc)
                        except RuntimeError as e:
                            if "unknown data type" in str(e):  # the C program knows the types
                                raise UsageError(str(e).splitlines()[-1])
                            failures.append(str(e))  # the other runs still count: report them too
                            console.print(f"[red]error:[/red] {e}")
                        progress.advance(task)
        for flavour in flavours:
            if not args.no_overhead:
                progress.update(task, description=f"hand-off overhead: {flavour}")
                try:
                    overhead += allreduce_overhead.measure_overhead(flavour)
                except (RuntimeError, ValueError, KeyError) as e:
                    failures.append(str(e))
                    console.print(f"[red]error:[/red] {e}")
            progress.advance(task)
    docs = [combine_repetitions(group) for group in runs.values()]
    if not docs:
        return 1
    failures += allreduce_floor.add_cross_core_floor(docs, sizes)

    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    files = []
    for operation in operations:
        mine = [d for d in docs if d["operation"] == operation]
        if mine:
            files += [allreduce_files.write_csv(mine, results / f"{operation}.csv"),
                      allreduce_files.write_plot(mine, results / f"{operation}.png")]
            (results / f"{operation}.json").write_text(json.dumps(mine, indent=1) + "\n")
            files.append(results / f"{operation}.json")

    summary = [summarize(d) for d in docs]
    if args.json:
        print(json.dumps({"runs": docs, "summary": summary, "overhead": overhead,
                          "files": [str(f) for f in files], "errors": failures}, indent=1))
    else:
        for doc in docs:
            print_table(console, doc)
        print_summary(console, summary)
        allreduce_overhead.print_overhead(console, overhead)
        console.print("files: " + ", ".join(str(f) for f in files))
    return 1 if failures else 0


def print_table(console, doc: dict) -> None:
    from rich.table import Table
    columns = doc["algorithms"]
    short = algorithms.short_names(doc["flavour"])
    op = "MPI_" + doc["operation"].capitalize()     # MPI_Reduce_scatter_block, MPI_Exscan, …
    over = doc.get("oversubscribed")
    note = f" [bold yellow]OVERSUBSCRIBED: {doc['ranks']} ranks on {doc.get('cores', '?')} cores[/]" if over else ""
    if doc.get("repetitions"):
        note = (f"; medians of {doc['repetitions']} runs (vendor/auto: the median of each run's "
                f"own ratio)") + note
    if doc.get("live_comms"):
        note = f"; on a communicator made after {doc['live_comms']} others alive" + note
    inputs = ("a fresh send buffer each call (--fresh)" if doc.get("fresh")
              else "the send buffer unchanged between calls (OSU's way)")
    inputs += {"none": ", ranks not bound (--bind none)",
               "core": ", each rank bound to a core (--bind core)"}.get(doc.get("binding"), "")
    table = Table(title=f"{op}, {doc['flavour']}, {doc['ranks']} ranks, {doc['datatype']} {doc['op']}: "
                  f"latency (us), OSU's figure: every rank's mean averaged over the ranks, a barrier "
                  f"before each call, {inputs}{note}", title_justify="left")
    table.add_column("bytes", justify="right")
    for alg in columns:
        table.add_column(short.get(alg, alg), justify="right")
    ratios, slowest = auto_ratios(doc), auto_ratios(doc, SLOWEST_STAT)
    if ratios:
        suffix = " (not a speed-up)" if over else ""
        table.add_column(f"vendor/auto{suffix}", justify="right")
        table.add_column(f"slowest rank: vendor/auto{suffix}", justify="right")
    above_floor = {a: floor_ratios(doc, a) for a in ("vendor", "auto") if a in columns}
    above_floor = {f"{a}/floor": r for a, r in above_floor.items() if r}
    from .allreduce_floor import CROSS_CORE, STAGED, cross_core_legend, cross_core_ratios
    above_floor.update({f"{a}/{CROSS_CORE}": cross_core_ratios(doc, a)
                        for a in ("vendor", "auto") if a in columns and cross_core_ratios(doc, a)})
    if "auto" in columns and cross_core_ratios(doc, "auto", "staged_floor_us"):
        above_floor[f"auto/{STAGED}"] = cross_core_ratios(doc, "auto", "staged_floor_us")
    for name in above_floor:
        table.add_column(name, justify="right")
    took = auto_took(doc, short)
    if took:
        table.add_column("auto took", justify="left")
    for size, rows in sorted(by_size(doc).items()):
        algs = [r for r in rows.values() if r["algorithm"] != FLOOR]
        fastest = min(algs, key=lambda r: r[OSU_STAT])["algorithm"] if algs else None
        cells = [size_label(size)]
        for alg in columns:
            text = f"{rows[alg][OSU_STAT]:.1f}" if alg in rows else "-"
            cells.append(f"[bold green]{text}[/]" if alg == fastest else text)
        if ratios:
            for values in (ratios, slowest):
                r = values.get(size)
                colour = "default" if over or values is slowest else "green" if r and r >= BAR_ANY else "red"
                cells.append("-" if r is None else f"[{colour}]{r:.2f}x[/]")
        for values in above_floor.values():
            r = values.get(size)
            cells.append("-" if r is None else f"{r:.2f}x")
        if took:
            cells.append(took.get(size, ""))
        table.add_row(*cells)
    console.print(table)
    if took:
        console.print("auto took: what auto's trials kept for the size's class, each run's own "
                      "(MPIOPT_VERBOSE; docs/collectives.md, \"Measured choice\")")
    spread = doc.get("run_spread", {})
    small = [str(size) for size in by_size(doc) if size <= SPREAD_MAX_BYTES]
    if doc.get("repetitions") and small and all(a in spread for a in ("vendor", "auto")):
        def worst(alg):
            return max(spread[alg].get(size, 1.0) for size in small)
        console.print(f"spread over the {doc['repetitions']} runs up to {SPREAD_MAX_BYTES // 1024} "
                      f"KiB (the largest max/min of a size's figure): vendor {worst('vendor'):.2f}x, "
                      f"auto {worst('auto'):.2f}x")
    if ratios and over:
        console.print(f"{doc['ranks']} ranks on {doc.get('cores', '?')} cores: ranks wait for cores, so these ratios "
                      "measure scheduling (a vendor that polls while mpiopt yields), not the algorithms; "
                      "they count towards no bar (docs/benchmarks.md)\n")
    if any(name.endswith("/floor") for name in above_floor):
        console.print(f"floor: {FLOOR}, every rank copying its input to its output at once, the "
                      "memory traffic an allreduce cannot avoid; X/floor = how many times that X takes")
    if any(name.endswith(f"/{CROSS_CORE}") for name in above_floor):
        console.print(cross_core_legend(staged=f"auto/{STAGED}" in above_floor))
    if ratios and not over:
        verdict = "holds" if bar_holds(ratios) else "does NOT hold"
        console.print(f"bar (vendor/auto on OSU's figure >= {BAR_ANY}x at every size, median >= "
                      f"{BAR_MEDIAN}x): [bold]{verdict}[/] for {doc['flavour']}, {doc['ranks']} ranks "
                      f"(min {min(ratios.values()):.2f}x, median {median(ratios.values()):.2f}x; "
                      f"fastest per size in green)\n")


def auto_took(doc: dict, short: dict) -> dict[int, str]:
    """{size: what auto kept for its size class in each run, by short name, "/" between runs that
    differ} for the sizes auto measured."""
    out = {}
    for size in by_size(doc):
        size_class = 1 << max(size - 1, 0).bit_length()
        chosen = doc.get("auto_measured", {}).get(str(size_class))
        if chosen:
            out[size] = "/".join(short.get(a, a) for a in dict.fromkeys(chosen))
    return out
