"""`mpiopt simulate allreduce`: the simulated time of every mpiopt allreduce algorithm, of `auto`,
and of SMPI's own allreduce (its selectors `mpich`, `ompi`, `mvapich2`, `impi`, `default`, or any
of its algorithms by name, such as the SMP-aware `smp_rsag` or `mvapich2_two_level`), on a
simulated cluster, torus or fat-tree.

It runs the benchmark (bench/allreduce.c, built with smpicc) under smpirun once per SMPI
allreduce asked for and process count: the first run, with SMPI's allreduce set to the first
vendor, measures every mpiopt algorithm and the vendor's PMPI_Allreduce in the same run; the
others measure the vendor only. A size's time is the median over iterations of the slowest rank's
time (the time until every rank has the result); simulated runs are deterministic, so one timed
iteration is enough (after one warm-up call at sizes up to 8 KiB, where the first calls set up
communicators)."""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from ..errors import UsageError
from ..units import parse_ranks, parse_sizes, size_label
from ..model import CostModel
from . import smpi
from ..console import console as report_console

NAME = "allreduce"
HELP = "simulated MPI_Allreduce time of every algorithm, auto, and SMPI's own allreduces"
EXAMPLE = """examples:
  mpiopt simulate allreduce --ranks 128 --sizes 8:8M --platform torus
  mpiopt simulate allreduce --ranks 16,64 --sizes 8,64K,1M --platform fattree --ppn 4 --json
  mpiopt simulate allreduce --ranks 1023 --sizes 8M --platform torus --algorithms rabenseifner,binomial
  mpiopt simulate allreduce --ranks 1024 --ppn 16 --platform fattree --sizes 8,64K,1M,8M \
      --algorithms hierarchical,rabenseifner --vendors mpich,ompi,mvapich2,impi,smp_rsag

--json prints a list of {"algorithm", "ranks", "bytes", "seconds"}; algorithm is an mpiopt
algorithm, "auto", or an SMPI allreduce (a selector such as "mpich", or an algorithm such as
"smp_rsag"). Tables, a JSON file and a plot
(time against size, a line per algorithm) are also written to --results.
"""

VENDORS = ("mpich", "ompi")     # the default --vendors
# SMPI's allreduce selectors (each picks an algorithm by size as that MPI does) and its individual
# algorithms (SimGrid 3.32's list; `automatic`, which runs every algorithm at every call, is left
# out). The SMP-aware ones work node by node: a reduce or reduce-scatter inside each host, the
# network between hosts, the result back.
SMPI_SELECTORS = ("mpich", "ompi", "mvapich2", "impi", "default")
SMPI_SMP_AWARE = ("smp_rsag", "smp_rsag_lr", "smp_rsag_rab", "smp_binomial",
                  "smp_binomial_pipeline", "smp_rdb", "mvapich2_two_level")
SMPI_ALGORITHMS = SMPI_SMP_AWARE + ("lr", "rab", "rab1", "rab2", "rab_rdb", "rdb", "redbcast",
                                    "mvapich2_rs", "ompi_ring_segmented")
SMPI_ALLREDUCES = SMPI_SELECTORS + SMPI_ALGORITHMS
MAX_RANKS = 16384       # SMPI runs everything in one process: beyond this, hours per size
BENCH = "mpiopt-allreduce"
DATATYPE = ("double", 8)
SMALL_BYTES = 8192      # the benchmark's (OSU's) limit between -x and --warmup-large
# From this many ranks the default algorithm set (no --algorithms) leaves out the algorithms the
# cost model prices at more than RULED_OUT_FACTOR times the best at every size asked. A simulated
# rank's messages cost host time: the ring sends 2(p-1) per rank, so at 4096 ranks its one run
# outlasts every other algorithm's together by far (it had not ended after 8 minutes), to show a
# time the model already puts at 100x the best.
PRUNE_FROM_RANKS = 2048
RULED_OUT_FACTOR = 4.0
# From PRUNE_FROM_RANKS ranks the default --vendors leaves these out too: SMPI's node-aware
# selections set up every communicator with Comm::init_smp, p^2 messages of host work (a first
# allreduce under `mpich` at 4096 ranks, 16 a node, had not returned after 16 minutes; docs/
# simulation.md, "4096 ranks, 16 a node"). `ompi`'s selection is flat.
SLOW_SETUP_VENDORS = ("mpich", "mvapich2", "impi") + SMPI_SMP_AWARE


def add_arguments(p) -> None:
    p.add_argument("--ranks", required=True, metavar="P[,P2…]", help="simulated process counts")
    p.add_argument("--sizes", default="8:8M", metavar="LIST",
                   help="message sizes in bytes (multiples of 8: doubles), a list and MIN:MAX "
                   "ranges of powers of two (default 8:8M)")
    p.add_argument("--platform", choices=smpi.PLATFORMS, default="cluster",
                   help="cluster (crossbar), torus (3-D) or fattree (2 levels, full bisection); "
                   "default cluster")
    p.add_argument("--ppn", type=int, default=1, metavar="K", help="ranks per node (default 1)")
    p.add_argument("--algorithms", default=None, metavar="LIST",
                   help="mpiopt algorithms to simulate besides auto: a list, all, or none "
                   "(SMPI's --vendors alone, without auto, one smpirun each). Default: all; from "
                   f"{PRUNE_FROM_RANKS} ranks, all but those the cost model prices at more than "
                   f"{RULED_OUT_FACTOR:g}x the best at every size asked (it says which)")
    p.add_argument("--vendors", default=None, metavar="LIST",
                   help="SMPI allreduces to compare with: selectors (" + ", ".join(SMPI_SELECTORS)
                   + ") or algorithms (" + ", ".join(SMPI_ALGORITHMS) + "); 'smp' stands for "
                   "all SMP-aware ones (default mpich,ompi; from " f"{PRUNE_FROM_RANKS} ranks ompi alone: "
                   "the others' setup takes p^2 messages of host work, it says so)")
    p.add_argument("--iterations", type=int, default=1, metavar="N",
                   help="timed iterations per size (default 1: runs are deterministic)")
    p.add_argument("--tuning", metavar="FILE",
                   help="MPIOPT_TUNING_FILE for the simulated ranks (default: one whose cost "
                   "model has the platform's latency and bandwidth, and no table rows)")
    p.add_argument("--results", default="results", metavar="DIR",
                   help="where the JSON and plot go (default results)")


def _size_argument(sizes: list[int]) -> str:
    """The benchmark's -m for these sizes: MIN:MAX when they double, else the list. One run for
    all of them: a simulated job of a thousand ranks takes minutes just to start."""
    doubling = all(b == 2 * a for a, b in zip(sizes, sizes[1:]))
    return f"{sizes[0]}:{sizes[-1]}" if doubling else ",".join(map(str, sizes))


def _algorithm_names() -> list[str]:
    """mpiopt's algorithms as libmpiopt names them (the cost model's list)."""
    return CostModel().algorithms


def _parse(args) -> dict:
    ranks = parse_ranks(args.ranks, MAX_RANKS)
    sizes = parse_sizes(args.sizes)
    bad = [s for s in sizes if s < DATATYPE[1] or s % DATATYPE[1]]
    if bad:
        raise UsageError(f"sizes must be multiples of {DATATYPE[1]} bytes (the benchmark reduces "
                         f"{DATATYPE[0]}s): {', '.join(map(str, bad))}")
    if args.ppn < 1:
        raise UsageError("--ppn must be at least 1")
    if args.iterations < 1:
        raise UsageError("--iterations must be at least 1")
    known = _algorithm_names()
    if args.algorithms == "none":   # SMPI's allreduces alone: no auto, no mpiopt column
        algorithms = None
    elif args.algorithms is None:   # all, less what the model rules out at each large p (run)
        algorithms = []
    else:
        algorithms = known if args.algorithms == "all" else [a for a in args.algorithms.split(",")
                                                             if a]
    unknown = [a for a in algorithms or [] if a not in known]
    if unknown:
        raise UsageError(f"unknown algorithm {unknown[0]!r} (expected all or a list of "
                         f"{', '.join(known)})")
    vendors = []
    for v in (v for v in (",".join(VENDORS) if args.vendors is None else args.vendors).split(",") if v):
        for name in (SMPI_SMP_AWARE if v == "smp" else [v]):
            if name not in SMPI_ALLREDUCES:
                raise UsageError(f"--vendors: {name!r} is not an SMPI allreduce (expected a list of "
                                 f"{', '.join(SMPI_ALLREDUCES)}, or smp)")
            if name not in vendors:
                vendors.append(name)
    if algorithms is None and not vendors:
        raise UsageError("--algorithms none needs --vendors")
    if args.tuning and not Path(args.tuning).is_file():
        raise UsageError(f"tuning file {args.tuning} does not exist")
    return {"ranks": ranks, "sizes": sizes, "algorithms": algorithms, "vendors": vendors,
            "default_algorithms": args.algorithms is None, "default_vendors": args.vendors is None}


def ruled_out(ranks: int, sizes: list[int], net: smpi.Network = smpi.Network()) -> dict[str, float]:
    """{algorithm: the least, over `sizes`, of its modelled time ÷ the best algorithm's} for the
    algorithms the cost model prices at more than RULED_OUT_FACTOR times the best at every size,
    on `ranks` ranks of a network with `net`'s links: α = two links and the two overheads of a
    message, β = a link's time per byte (what `mpiopt model` assumes for a simulated cluster).
    Empty below PRUNE_FROM_RANKS ranks. The algorithms priced with ranks sharing nodes
    (`hierarchical`) are never left out: one level does not price them."""
    if ranks < PRUNE_FROM_RANKS:
        return {}
    model = CostModel()
    alpha = 2 * net.link_latency + net.send_overhead + net.recv_overhead
    beta = 1.0 / net.link_bandwidth
    ratios: dict[str, float] = {}
    for n in sizes:
        times = {a: model.seconds(a, ranks, n, alpha, beta, 0.0) for a in model.flat_algorithms}
        times = {a: t for a, t in times.items() if t is not None}
        if not times:
            return {}
        best = min(times.values())
        for a, t in times.items():
            ratios[a] = min(ratios.get(a, float("inf")), t / best if best > 0 else 1.0)
    return {a: r for a, r in ratios.items() if r > RULED_OUT_FACTOR}


def default_algorithms(ranks: int, sizes: list[int]) -> tuple[list[str], dict[str, float]]:
    """(the algorithms a run without --algorithms simulates at `ranks`, those it leaves out with
    their least modelled ratio to the best)."""
    out = ruled_out(ranks, sizes)
    return [a for a in _algorithm_names() if a not in out], out


def platform_tuning(kind: str, ranks: int, ppn: int, net: smpi.Network = smpi.Network()) -> dict:
    """A tuning file for the simulated machine: the message patterns of the algorithms measured
    there by mpiopt-exchange (the cost model prices each step with them), and for other process
    counts α = the mean latency of the messages the log p algorithms send there, β = the link's
    time per byte; γ = 0 (the simulation charges no computation). No table rows: `auto` picks
    from the cost model alone, as it would on a machine nobody has benchmarked yet."""
    model = {"alpha": smpi.exchange_latency(kind, ranks, ppn, net),
             "beta": 1.0 / net.link_bandwidth, "gamma": 0.0}
    if ppn > 1:
        # two levels: α, β are the network's (the log p patterns between the nodes), and the
        # ranks of a node reach each other through its loopback (`hierarchical`'s intra-node steps)
        nodes = -(-ranks // ppn)
        model.update(alpha=smpi.exchange_latency(kind, nodes, 1, net), ranks_per_node=ppn,
                     intra_alpha=net.loopback_latency + net.send_overhead + net.recv_overhead,
                     intra_beta=1.0 / net.loopback_bandwidth)
    if ranks > 1:
        model["exchange"] = smpi.measure_exchange(kind, ranks, ppn, net)
        if ppn > 1:
            model.update(_measured_levels(model["exchange"], ppn))
    return {"version": 1, "flavour": smpi.FLAVOUR, "model": model, "allreduce": [], "reduce": []}


def _measured_levels(exchange: dict, ppn: int) -> dict:
    """The two levels of `hierarchical`'s pricing from the step patterns just measured, where the
    platform's figures would be wrong: a step to a partner 2^k ranks away is inside the node when
    2^k < ppn, across the network otherwise. Inside: the mean of those steps' α and β. Between
    nodes: the mean of the others' α, and their β ÷ ppn, because every rank of a node sent at once
    in the measurement and libmpiopt multiplies the network's β by the node's ranks itself. Under
    SMPI the per-message overheads fall partly in the link's latency: the platform's formula put
    the intra-node step at 1.2 µs where it measures 0.7, and priced `hierarchical` 35 % above what
    it simulated at 64 ranks, so `auto` passed it over. Nothing here (the platform's figures stay)
    where a level has no measured step."""
    steps = [p for p in exchange.get("patterns", []) if p.get("pattern") == "step"]
    inside = [p for p in steps if p["distance"] < ppn]
    across = [p for p in steps if p["distance"] >= ppn]
    if not inside or not across:
        return {}

    def mean(pats, key):
        return sum(float(p[key]) for p in pats) / len(pats)

    return {"intra_alpha": mean(inside, "alpha"), "intra_beta": mean(inside, "beta"),
            "alpha": mean(across, "alpha"), "beta": mean(across, "beta") / ppn}


def simulate(kind: str, ranks: int, sizes: list[int], ppn: int = 1,
             algorithms: list[str] | None = None, vendors: list[str] = list(VENDORS),
             iterations: int = 1, tuning: str | None = None, progress=None,
             mpiopt: bool = True, phases: list | None = None) -> list[dict]:
    """Simulated seconds of auto, `algorithms` and SMPI's `vendors` selections at each size:
    a list of {"algorithm", "ranks", "bytes", "seconds"}. `progress(text)` is told what runs.
    mpiopt=False: the vendors alone (no auto, no algorithms). `phases`, if given, gets one
    {"ranks", "phase", "host_seconds"} per phase: the host's time, which is what limits how
    large a simulation can be."""
    def timed(phase: str, start: float) -> None:
        if phases is not None:
            phases.append({"ranks": ranks, "phase": phase,
                           "host_seconds": round(time.monotonic() - start, 1)})

    bindir = smpi.build([BENCH])
    algorithms = list(algorithms if algorithms is not None else _algorithm_names())
    records: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="mpiopt-simulate-") as tmp:
        work = Path(tmp)
        platform, hosts = smpi.write_machine(work, kind, ranks, ppn)
        if tuning is None:
            start = time.monotonic()
            if progress:
                progress(f"p={ranks} {kind}: measuring the message patterns (mpiopt-exchange)")
            tuning = str(work / "tuning.json")
            Path(tuning).write_text(json.dumps(platform_tuning(kind, ranks, ppn)))
            timed("message patterns (mpiopt-exchange, cached in build/smpi/exchange)", start)
        env = dict(os.environ, MPIOPT_TUNING_FILE=str(Path(tuning).resolve()))
        for var in ("MPIOPT_ALLREDUCE", "MPIOPT_VERBOSE"):   # auto must choose for itself
            env.pop(var, None)
        # the first vendor's run also measures mpiopt's algorithms; a run without vendors
        # measures them with SMPI's default collectives as the (unreported) vendor column
        runs = [(v, ["vendor"] + (["auto"] + algorithms if i == 0 and mpiopt else []))
                for i, v in enumerate(vendors)] or [(None, ["auto"] + algorithms)]
        for vendor, columns in runs:
            config = [f"--cfg=smpi/allreduce:{vendor}"] if vendor else []
            lo, hi = sizes[0], sizes[-1]
            if progress:
                progress(f"p={ranks} {kind}: {'SMPI ' + vendor if vendor else 'mpiopt'}"
                         f"{' + mpiopt' if len(columns) > 1 and vendor else ''}, "
                         f"{lo}..{hi} bytes")
            # one warm-up call at the small sizes, where the first call of each column sets
            # things up (mpiopt's private communicator, SMPI's node-aware communicators); none
            # above 8 KiB, where calls are the costly part of a run, unless the run starts there
            argv = ["-m", _size_argument(sizes), "-i", str(iterations), "-x", "1",
                    "--warmup-large", "0" if lo <= SMALL_BYTES else "1", "-T", DATATYPE[0],
                    "-a", ",".join(columns), "--json"]
            start = time.monotonic()
            doc = smpi.smpirun_json(bindir / BENCH, argv, ranks, platform, hosts,
                                    config=config, env=env, cwd=work)
            timed("smpirun: " + ", ".join(vendor if c == "vendor" else c for c in columns
                                          if c != "vendor" or vendor), start)
            for row in doc["results"]:    # exactly the sizes asked for (-m MIN:MAX or a list)
                name = vendor if row["algorithm"] == "vendor" else row["algorithm"]
                if name is None:
                    continue
                records.append({"algorithm": name, "ranks": ranks, "bytes": row["bytes"],
                                "seconds": row["median_us"] * 1e-6})
    return records


# ---- reporting ----

def summary(records: list[dict]) -> list[dict]:
    """Per (ranks, bytes): auto's time against the best vendor selection and the best mpiopt
    algorithm, and which algorithm auto's time equals (runs are deterministic, so auto's time
    is exactly that of the algorithm it chose)."""
    out = []
    keys = sorted({(r["ranks"], r["bytes"]) for r in records})
    for p, n in keys:
        t = {r["algorithm"]: r["seconds"] for r in records if r["ranks"] == p and r["bytes"] == n}
        auto = t.get("auto")
        vendors = [t[v] for v in SMPI_ALLREDUCES if v in t]
        mine = {a: s for a, s in t.items() if a not in SMPI_ALLREDUCES and a != "auto"}
        best = min(mine, key=mine.get) if mine else None
        same = [a for a, s in mine.items() if auto is not None and s == auto]
        out.append({"ranks": p, "bytes": n,
                    "auto_vs_vendor": auto / min(vendors) if auto and vendors else None,
                    "auto_vs_best": auto / mine[best] if auto and best else None,
                    "best": best, "auto_chose": same[0] if len(same) == 1 else None})
    return out


def _print_tables(console, records: list[dict], kind: str, ppn: int) -> None:
    from rich.table import Table

    order = list(SMPI_ALLREDUCES) + ["auto"] + [a for a in _algorithm_names()]
    rows = summary(records)
    for p in sorted({r["ranks"] for r in records}):
        present = [a for a in order if any(r["algorithm"] == a and r["ranks"] == p for r in records)]
        table = Table(title=f"Simulated MPI_Allreduce, {p} ranks, {kind}, {ppn} per node "
                      "(µs; best mpiopt algorithm in bold)")
        table.add_column("bytes", justify="right")
        for a in present:
            table.add_column(a.replace("_", "\n"), justify="right")
        table.add_column("auto ÷\nbest SMPI", justify="right")
        table.add_column("auto ÷\nbest mpiopt", justify="right")
        for s in (s for s in rows if s["ranks"] == p):
            t = {r["algorithm"]: r["seconds"] for r in records
                 if r["ranks"] == p and r["bytes"] == s["bytes"]}
            cells = []
            for a in present:
                text = f"{t[a] * 1e6:.1f}" if a in t else "–"
                cells.append(f"[bold]{text}[/bold]" if a == s["best"] else text)
            ratio = lambda v: "–" if v is None else f"{v:.3f}"
            table.add_row(size_label(s["bytes"]), *cells, ratio(s["auto_vs_vendor"]),
                          ratio(s["auto_vs_best"]))
        console.print(table)


def _plot(records: list[dict], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks = sorted({r["ranks"] for r in records})
    fig, axes = plt.subplots(1, len(ranks), figsize=(6.5 * len(ranks), 4.8), squeeze=False)
    for ax, p in zip(axes[0], ranks):
        for a in dict.fromkeys(r["algorithm"] for r in records):
            pts = sorted((r["bytes"], r["seconds"]) for r in records
                         if r["ranks"] == p and r["algorithm"] == a)
            if pts:
                style = "--" if a in SMPI_ALLREDUCES else ("-o" if a == "auto" else "-")
                ax.plot([x for x, _ in pts], [y * 1e6 for _, y in pts], style, label=a,
                        markersize=3)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("simulated time (µs)")
        ax.set_title(f"{title}, p = {p}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(args) -> int:
    spec = _parse(args)
    if not smpi.available():
        raise UsageError("SimGrid SMPI is not installed (smpicc, smpirun): `make deps` installs "
                         "libsimgrid-dev")
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    records: list[dict] = []
    phases: list[dict] = []
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("building with smpicc", total=None)
        for p in spec["ranks"]:
            algorithms, vendors = spec["algorithms"] or [], spec["vendors"]
            if spec["default_vendors"] and p >= PRUNE_FROM_RANKS:
                slow = [v for v in vendors if v in SLOW_SETUP_VENDORS]
                vendors = [v for v in vendors if v not in SLOW_SETUP_VENDORS]
                if slow:
                    err.print(f"mpiopt simulate allreduce: p={p}: leaving out SMPI's "
                              f"{', '.join(slow)} (its node-aware setup takes p^2 messages of host "
                              f"work: over 16 minutes at 4096 ranks); --vendors "
                              f"{','.join(VENDORS)} runs it", markup=False, highlight=False)
            if spec["default_algorithms"]:
                algorithms, left_out = default_algorithms(p, spec["sizes"])
                if left_out:
                    err.print(f"mpiopt simulate allreduce: p={p}: leaving out "
                              + ", ".join(f"{a} (the cost model prices it at {r:.0f}x the best or "
                                          "more at every size asked)" for a, r in left_out.items())
                              + "; --algorithms all runs it", markup=False, highlight=False)
            try:
                records += simulate(args.platform, p, spec["sizes"], args.ppn,
                                    algorithms, vendors, args.iterations,
                                    args.tuning,
                                    progress=lambda text: bar.update(task, description=text),
                                    mpiopt=spec["algorithms"] is not None, phases=phases)
            except RuntimeError as e:      # the SMPI build or a simulation failed: say which
                err.print(f"mpiopt simulate allreduce: {e}", markup=False, highlight=False)
                return 1
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    stem = f"simulate-allreduce-{args.platform}-{'_'.join(map(str, spec['ranks']))}"
    if args.ppn != 1:
        stem += f"-ppn{args.ppn}"
    (results / f"{stem}.json").write_text(json.dumps(records, indent=1) + "\n")
    _plot(records, results / f"{stem}.png", f"Simulated MPI_Allreduce, {args.platform}")
    if args.json:
        print(json.dumps(records, indent=1))
        return 0
    console = report_console()
    console.width = max(console.width, 130)
    _print_tables(console, records, args.platform, args.ppn)
    for ph in phases:
        console.print(f"host time, {ph['ranks']} ranks, {ph['phase']}: {ph['host_seconds']:.1f} s",
                      highlight=False)
    console.print(f"written: {results / (stem + '.json')}, {results / (stem + '.png')}")
    return 0
