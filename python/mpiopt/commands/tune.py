"""`mpiopt tune`: measure every allreduce/reduce algorithm here and write the tuning table that
libmpiopt's `auto` reads (MPIOPT_TUNING_FILE).

For each MPI flavour and process count it runs `mpiopt-allreduce --algorithms` (vendor and all of
mpiopt's algorithms interleaved in one run, median of the slowest rank per call) for MPI_Allreduce
and MPI_Reduce, names the fastest algorithm per size range, and fits the cost model's alpha, beta
and gamma to the measured times of mpiopt's algorithms (least squares on relative error, using the
cost model of libmpiopt itself, so the fitted parameters mean what `auto` means by them).

Each measured process count's rows are labelled with its rank-count class (rank_classes): the
communicator sizes libmpiopt gives them, powers of two (2, 3-4, 5-8, ..., 33-64), split between
the counts measured inside one class. A size in no class gets the cost model.

Where the run spans nodes (--ranks-per-node K: pretend nodes of K consecutive ranks, as libmpiopt's
MPIOPT_RANKS_PER_NODE; else the nodes MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds), it also
measures the two levels of the node-aware model with `mpiopt-exchange --levels`: intra-node
(ranks of one node in pairs, all at once) and inter-node (one rank a node). The file then holds the
inter-node level as the model's alpha and beta (gamma fitted with them fixed), the intra-node one
as intra_alpha and intra_beta, and ranks_per_node, so that `auto` prices `hierarchical`."""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
from pathlib import Path

from .. import algorithms, mpi
from ..benchmarks import allreduce as bench
from ..errors import UsageError
from ..files import write_atomically
from ..units import parse_ranks, parse_sizes
from ..console import console as report_console

EXAMPLE = """examples:
  mpiopt tune                            p = 2 and 4, every built MPI -> results/tuning-<flavour>.json
  mpiopt tune -np 2,3,4 --flavour mpich -o mpich.json
  mpiopt tune -np 2 --fresh              inputs written before every call, as applications do
  mpiopt tune -np 2,4,8,16,32,64 --flavour openmpi -o node.json
        a 64-core node: rows for every communicator size from 2 to 64 (classes 2, 3-4, ..., 33-64)
  MPIOPT_TUNING_FILE=results/tuning-openmpi.json mpiopt run -np 4 -- ./app
  mpiopt tune -np 4 --ranks-per-node 2 --flavour openmpi -o two-levels.json
        pretend nodes of 2 ranks (testing on one machine): both levels measured and written,
        then `mpiopt model --ranks 64 --tuning two-levels.json` prices hierarchical with them

The file: {"version": 2, "flavour": F, "model": {"alpha", "beta", "gamma"[, "ranks_per_node",
           "intra_alpha", "intra_beta"]}, "allreduce": [{"ranks", "min_ranks", "max_ranks",
           "max_bytes", "algorithm"}...], "reduce": [...]}
Rows measured at `ranks` apply to communicators of min_ranks..max_ranks ranks (the class):
powers of two, 1, 2, 3-4, 5-8, ... (2^(k-1), 2^k]; where one class holds several measured
counts, each covers the sizes from just above the next smaller one up to itself and the largest
up to the class's top (-np 48,64: 33-48 and 49-64). A size in no class: the cost model decides.
Rows for one process count are sorted by max_bytes; the first row with bytes <= max_bytes wins.
Two levels (ranks_per_node ...) where the largest -np spans nodes: with --ranks-per-node, or on
nodes MPI finds. alpha, beta: one rank a node sending to another node's; intra_alpha, intra_beta:
the ranks of a node in pairs. On one machine, pretend nodes measure the same shared memory twice.
"""

EXCHANGE_BINARY = "mpiopt-exchange"
# The last row of each process count covers every larger message.
LAST_MAX_BYTES = 1 << 40
# An mpiopt algorithm replaces the vendor (or the previous size's choice) only when it is at
# least this much faster: measurements on a shared machine are noisy, and a wrong switch costs more
# than a missed one.
MARGIN = 0.03


def choose(rows: dict[str, dict], previous: str | None) -> str:
    """The algorithm for one size: the fastest, unless the vendor or the previous size's choice
    is within MARGIN of it."""
    best = min(rows.values(), key=lambda r: r[bench.STAT])
    close = {a for a, r in rows.items() if r[bench.STAT] <= best[bench.STAT] * (1 + MARGIN)}
    for preferred in ("vendor", previous):
        if preferred in close:
            return preferred
    return best["algorithm"]


def power_of_two_class(ranks: int) -> tuple[int, int]:
    """The power-of-two class (2^(k-1), 2^k] holding `ranks`, as (smallest, largest) size:
    1 -> (1, 1), 2 -> (2, 2), 3 -> (3, 4), 6 -> (5, 8), 64 -> (33, 64)."""
    top = 1 << (ranks - 1).bit_length()
    return top // 2 + 1 if top > 1 else 1, top


def rank_classes(ranks: list[int]) -> dict[int, tuple[int, int]]:
    """{measured count: (min_ranks, max_ranks)}, the communicator sizes its rows apply to: its
    power-of-two class, shared between the counts measured inside one class (each from just
    above the next smaller one up to itself, the largest up to the class's top)."""
    classes = {}
    for m in sorted(set(ranks)):
        lo, hi = power_of_two_class(m)
        below = [c for c in classes if c >= lo]      # measured counts of the same class, smaller
        if below:
            prev = max(below)
            classes[prev] = (classes[prev][0], prev)
            lo = prev + 1
        classes[m] = (lo, hi)
    return classes


def table_rows(doc: dict, rank_class: tuple[int, int] | None = None) -> list[dict]:
    """Rows {"ranks", "min_ranks", "max_ranks", "max_bytes", "algorithm"} for one benchmark run
    (rank_class: the sizes they apply to, default the run's process count alone); a change of
    algorithm between two measured sizes is put at their geometric mean."""
    sizes = bench.by_size(doc)
    choices: list[tuple[int, str]] = []
    for size in sorted(sizes):
        choices.append((size, choose(sizes[size], choices[-1][1] if choices else None)))
    # a lone size between two of the same choice is noise if that choice is nearly as fast there
    for i in range(1, len(choices) - 1):
        (size, alg), neighbour = choices[i], choices[i - 1][1]
        rows = sizes[size]
        if neighbour == choices[i + 1][1] != alg and \
                rows[neighbour][bench.STAT] <= rows[alg][bench.STAT] * (1 + 3 * MARGIN):
            choices[i] = (size, neighbour)
    rows = []
    for i, (size, alg) in enumerate(choices):
        if i + 1 < len(choices) and choices[i + 1][1] == alg:
            continue
        max_bytes = int(math.sqrt(size * choices[i + 1][0])) if i + 1 < len(choices) else LAST_MAX_BYTES
        lo, hi = rank_class or (doc["ranks"], doc["ranks"])
        rows.append({"ranks": doc["ranks"], "min_ranks": lo, "max_ranks": hi, "max_bytes": max_bytes,
                     "algorithm": alg})
    return rows


PARAMETERS = ("alpha", "beta", "gamma")


def fit_model(docs: list[dict], cost_model, fixed: dict[str, float] | None = None) -> dict[str, float]:
    """alpha, beta, gamma >= 0 minimising the relative error of the cost model's predictions for
    mpiopt's algorithms; those in `fixed` (measured) are kept and the others fitted. The model is
    linear in the three, so each measurement gives one row (its coefficients = the model
    evaluated at unit parameters); negative solutions are avoided by trying every subset of the
    free parameters and keeping the best non-negative fit."""
    import numpy as np
    fixed = fixed or {}
    free = [i for i, name in enumerate(PARAMETERS) if name not in fixed]
    coeffs, times = [], []
    for doc in docs:
        is_reduce = doc["operation"] == "reduce"
        if doc["ranks"] < 2:
            continue
        for row in doc["results"]:
            if row["algorithm"] not in cost_model.algorithms or row[bench.STAT] <= 0:
                continue
            unit = [cost_model.seconds(row["algorithm"], doc["ranks"], row["bytes"], *e, reduce=is_reduce)
                    for e in ((1, 0, 0), (0, 1, 0), (0, 0, 1))]
            if None in unit:
                continue
            seconds = row[bench.STAT] * 1e-6
            # relative error: divide the row by the time; the fixed parameters' part is known
            coeffs.append([unit[i] / seconds for i in free])
            times.append(1.0 - sum(fixed[name] * unit[i] / seconds
                                   for i, name in enumerate(PARAMETERS) if name in fixed))
    if len(coeffs) < max(len(free), 3):
        raise UsageError("too few measurements to fit the cost model: measure more sizes or process counts")
    a, b = np.array(coeffs), np.array(times)
    best, best_residual = np.zeros(len(free)), math.inf
    for k in range(len(free), 0, -1):
        for subset in itertools.combinations(range(len(free)), k):
            x, *_ = np.linalg.lstsq(a[:, subset], b, rcond=None)
            if (x < 0).any():
                continue
            full = np.zeros(len(free))
            full[list(subset)] = x
            residual = float(np.sum((a @ full - b) ** 2))
            if residual < best_residual:
                best, best_residual = full, residual
    fitted = dict(zip((PARAMETERS[i] for i in free), (float(v) for v in best)))
    return {name: float(fixed[name]) if name in fixed else fitted[name] for name in PARAMETERS}


def measure_levels(flavour: str, np: int, ranks_per_node: int | None, iterations: int) -> dict:
    """`mpiopt-exchange --levels` on np ranks: the node layout it found (or was given) and, where
    there are two levels, the intra_node and inter_node patterns' alpha and beta."""
    argv = [mpi.binary(flavour, EXCHANGE_BINARY), "--levels", "--json", "-i", max(iterations, 5)]
    if ranks_per_node:
        argv += ["--ranks-per-node", ranks_per_node]
    return bench.run_json(flavour, np, argv, EXCHANGE_BINARY, timeout=600)


def levels_of(doc: dict) -> dict | None:
    """The two levels from mpiopt-exchange --levels' document: {"ranks", "nodes", "ranks_per_node",
    "node_layout", "intra": {...}, "inter": {...}}, or None on one node (no second level). Each
    level's alpha and beta must be positive and finite: 0 would mean "the other level's" to
    libmpiopt."""
    patterns = {pat["pattern"]: pat for pat in doc.get("patterns", [])}
    if doc.get("nodes", 1) < 2 or doc.get("ranks_per_node", 1) < 2 or \
            not {"intra_node", "inter_node"} <= set(patterns):
        return None
    out = {key: doc[key] for key in ("ranks", "nodes", "ranks_per_node", "node_layout")}
    for level in ("intra", "inter"):
        pat = patterns[f"{level}_node"]
        out[level] = {k: float(pat[k]) for k in ("alpha", "beta", "small_seconds", "large_seconds")}
        for k in ("alpha", "beta"):
            if not (math.isfinite(out[level][k]) and out[level][k] > 0):
                raise RuntimeError(f"the {level}-node {k} came out as {out[level][k]} (a noisy run: "
                                   "try more --iterations)")
    out["small_bytes"], out["large_bytes"] = doc["small_bytes"], doc["large_bytes"]
    out["oversubscribed"] = bench.oversubscribed(doc["ranks"])
    return out


def tuning_table(flavour: str, allreduce_docs: list[dict], reduce_docs: list[dict], cost_model,
                 sizes: list[int], levels: dict | None = None) -> dict:
    docs = allreduce_docs + reduce_docs
    model = fit_model(docs, cost_model)
    measured_levels = {}
    if levels:
        # the network between nodes is the model's alpha, beta; gamma is fitted to them
        flat = model
        model = fit_model(docs, cost_model, fixed={k: levels["inter"][k] for k in ("alpha", "beta")})
        model.update(ranks_per_node=int(levels["ranks_per_node"]), intra_alpha=levels["intra"]["alpha"],
                     intra_beta=levels["intra"]["beta"])
        measured_levels = {"levels": levels, "one_level_fit": flat}
    classes = rank_classes([d["ranks"] for d in docs])
    fresh = bool(docs) and all(d.get("fresh") for d in docs)    # what the benchmark says it did
    return {
        "version": 2,
        "flavour": flavour,
        "model": model,
        "allreduce": [row for doc in allreduce_docs for row in table_rows(doc, classes[doc["ranks"]])],
        "reduce": [row for doc in reduce_docs for row in table_rows(doc, classes[doc["ranks"]])],
        # extra keys are skipped by libmpiopt's reader; they say where the numbers come from
        "measured": {"by": "mpiopt tune", "ranks": sorted({d["ranks"] for d in allreduce_docs}),
                     "min_bytes": min(sizes), "max_bytes": max(sizes), "statistic": "median of the slowest rank",
                     "send_buffer": "fresh each call" if fresh else "unchanged between calls (OSU's way)",
                     "mpi_library": allreduce_docs[0].get("mpi_library", "") if allreduce_docs else "",
                     **measured_levels},
    }


def to_json(table: dict) -> str:
    """The table with one row per line: readable, and diffs well."""
    parts = []
    for key, value in table.items():
        if isinstance(value, list):
            rows = ",\n  ".join(json.dumps(r) for r in value)
            parts.append(f' "{key}": [\n  {rows}\n ]' if value else f' "{key}": []')
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _output_paths(args, flavours: list[str]) -> dict[str, Path]:
    if args.output is None:
        return {f: Path(args.results) / f"tuning-{f}.json" for f in flavours}
    if len(flavours) > 1 and "{flavour}" not in args.output:
        raise UsageError("with several flavours, -o needs {flavour} in the name "
                         "(e.g. -o tuning-{flavour}.json), or choose one with --flavour")
    return {f: Path(args.output.replace("{flavour}", f)) for f in flavours}


def _ranks_per_node(text: str | None, ranks: list[int]) -> int | None:
    """--ranks-per-node K: at least 2 (a node of one rank has no intra-node level) and below the
    largest process count (the levels are measured there, and need two nodes)."""
    if text is None:
        return None
    try:
        k = int(text)
    except ValueError:
        raise UsageError(f"--ranks-per-node {text!r} is not a whole number")
    if k < 2:
        raise UsageError(f"--ranks-per-node {k}: need at least 2 ranks a node "
                         "(with one rank a node there is no intra-node level to measure)")
    if k >= max(ranks):
        raise UsageError(f"--ranks-per-node {k} with -np {max(ranks)} makes one node: the levels are "
                         f"measured at the largest -np, which must span two nodes (more than {k} ranks)")
    return k


def run(args) -> int:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table
    from ..model import CostModel

    bench.check_counts(args)
    ranks = parse_ranks(args.np)
    sizes = parse_sizes(args.sizes, minimum=1)
    ranks_per_node = _ranks_per_node(args.ranks_per_node, ranks)
    flavours = bench.choose_flavours(args.flavour)
    outputs = _output_paths(args, flavours)
    # pretend nodes reach libmpiopt (hierarchical in the benchmark) through its testing knob
    env = dict(os.environ, MPIOPT_RANKS_PER_NODE=str(ranks_per_node)) if ranks_per_node else None
    operations = ["allreduce"] + ([] if args.no_reduce else ["reduce"])
    console = report_console(stderr=args.json)

    tables = {}
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("tuning", total=len(flavours) * (len(ranks) * len(operations) + 1))
        for flavour in flavours:
            tuned = algorithms.names(flavour, kinds=("vendor", "mpiopt"))
            docs = {op: [] for op in ("allreduce", "reduce")}
            progress.update(task, description=f"tune: {flavour}, {max(ranks)} ranks, node levels")
            try:
                levels = levels_of(measure_levels(flavour, max(ranks), ranks_per_node, args.iterations))
            except RuntimeError as e:
                console.print(f"[red]error:[/red] {e}\nnothing written")
                return 1
            if ranks_per_node and not levels:
                console.print(f"[red]error:[/red] mpiopt-exchange found no second level with "
                              f"--ranks-per-node {ranks_per_node}\nnothing written")
                return 1
            progress.advance(task)
            for np in ranks:
                for op in operations:
                    progress.update(task, description=f"tune: {flavour}, {np} ranks, {op}")
                    try:
                        docs[op].append(bench.measure(
                            flavour, np, sizes, ",".join(tuned), args.iterations, args.warmup,
                            args.iterations_large, args.warmup_large, operation=op,
                            time_limit=args.time_limit, env=env, fresh=args.fresh))
                    except RuntimeError as e:
                        console.print(f"[red]error:[/red] {e}\nnothing written")
                        return 1
                    progress.advance(task)
            tables[flavour] = tuning_table(flavour, docs["allreduce"], docs["reduce"],
                                           CostModel(mpi.library(flavour)), sizes, levels)

    # every measurement succeeded: only now write the files
    for flavour, table in tables.items():
        outputs[flavour].parent.mkdir(parents=True, exist_ok=True)
        write_atomically(outputs[flavour], to_json(table))
    if args.json:
        print(json.dumps({"files": {f: str(p) for f, p in outputs.items()}, "tables": tables}, indent=1))
        return 0
    for flavour, table in tables.items():
        m = table["model"]
        t = Table(title=f"{flavour}: fastest algorithm per size (written to {outputs[flavour]})",
                  title_justify="left")
        for col in ("operation", "measured at p", "used for p", "up to bytes", "algorithm"):
            t.add_column(col, justify="left" if col in ("operation", "algorithm") else "right")
        for op in ("allreduce", "reduce"):
            for row in table[op]:
                upto = "any larger" if row["max_bytes"] == LAST_MAX_BYTES else str(row["max_bytes"])
                lo, hi = row["min_ranks"], row["max_ranks"]
                t.add_row(op, str(row["ranks"]), str(lo) if lo == hi else f"{lo}-{hi}", upto,
                          row["algorithm"])
        console.print(t)
        console.print("a communicator of p ranks takes the rows whose 'used for p' holds p; "
                      "where none does, the cost model decides")
        levels = table["measured"].get("levels")
        if levels:
            print_levels(console, levels)
            console.print(f"model: alpha, beta = the inter-node level; gamma = {m['gamma']:.3g} s/B "
                          f"fitted to them; ranks_per_node = {m['ranks_per_node']}\n")
        else:
            console.print(f"model fit: alpha = {m['alpha']:.3g} s, beta = {m['beta']:.3g} s/B "
                          f"({1e-6 / m['beta'] if m['beta'] else float('inf'):.0f} MB/s), "
                          f"gamma = {m['gamma']:.3g} s/B (one level: one node)\n")
    return 0


def print_levels(console, levels: dict) -> None:
    from rich.table import Table
    pretend = levels["node_layout"] != "MPI_Comm_split_type"
    t = Table(title=f"the two levels, measured by mpiopt-exchange --levels on {levels['ranks']} ranks: "
              f"{levels['nodes']} {'pretend ' if pretend else ''}nodes of up to {levels['ranks_per_node']} "
              f"ranks ({levels['node_layout']}"
              f"{'; oversubscribed: more ranks than cores' if levels.get('oversubscribed') else ''})",
              title_justify="left")
    for col in ("level", "between", f"{levels['small_bytes']} B (µs)", f"{levels['large_bytes']} B (µs)",
                "α (µs)", "β (ps/B)", "MB/s", "written as"):
        t.add_column(col, justify="left" if col in ("level", "between", "written as") else "right")
    for level, between, keys in (("intra-node", "the ranks of a node, in pairs", "intra_alpha, intra_beta"),
                                 ("inter-node", "one rank a node", "alpha, beta")):
        v = levels[level.split("-")[0]]
        t.add_row(level, between, f"{v['small_seconds'] * 1e6:.2f}", f"{v['large_seconds'] * 1e6:.2f}",
                  f"{v['alpha'] * 1e6:.3f}", f"{v['beta'] * 1e12:.1f}", f"{1e-6 / v['beta']:.0f}", keys)
    console.print(t)
    if pretend:
        console.print("pretend nodes on one machine: both levels are the same shared memory, so they "
                      "come out alike" + ("; oversubscribed, the intra-node pattern (every rank busy) "
                                          "shares the cores more than the inter-node one (one rank a "
                                          "node) and may come out slower" if levels.get("oversubscribed")
                                          else ""))


def register(sub) -> None:
    p = sub.add_parser("tune", help="measure the algorithms here and write a tuning table for auto",
                       description="Run the allreduce benchmark (every algorithm and the vendor's) "
                       "and write the JSON tuning table libmpiopt's auto selection reads "
                       "(MPIOPT_TUNING_FILE), with fitted cost-model parameters.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-np", default="2,4", metavar="LIST", help="process counts, comma-separated (default 2,4)")
    p.add_argument("--flavour", default="all", help="openmpi, mpich or all built ones (default all)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="tuning file to write (default RESULTS/tuning-<flavour>.json; "
                   "{flavour} in the name is replaced)")
    p.add_argument("--results", default="results", help="directory for the default output (default results)")
    p.add_argument("--sizes", default="8:16M", metavar="LIST",
                   help="message sizes as in `mpiopt bench allreduce` (default 8:16M: every power of two)")
    p.add_argument("--iterations", type=int, default=30, help="timed iterations up to 8 KiB (default 30)")
    p.add_argument("--iterations-large", type=int, default=8, help="timed iterations above 8 KiB (default 8)")
    p.add_argument("--warmup", type=int, default=3, help="warm-up iterations up to 8 KiB (default 3)")
    p.add_argument("--warmup-large", type=int, default=1, help="warm-up iterations above 8 KiB (default 1)")
    p.add_argument("--time-limit", type=float, default=1.0, metavar="SECONDS",
                   help="cut a size's iterations after about this long, keeping at least 3 (default 1)")
    p.add_argument("--no-reduce", action="store_true", help="tune MPI_Allreduce only (no reduce rows)")
    p.add_argument("--fresh", action="store_true",
                   help="write the send buffer before every timed call (untimed), as an application "
                        "computes its inputs; default OSU's unchanged buffer (the file's "
                        "measured.send_buffer says which)")
    p.add_argument("--ranks-per-node", metavar="K",
                   help="pretend nodes of K consecutive ranks (MPIOPT_RANKS_PER_NODE, for testing on one "
                   "machine) and measure both levels, intra-node and inter-node, at the largest -np; "
                   "without it both are measured where MPI finds the run on several nodes")
    p.add_argument("--json", action="store_true", help="print the tables as JSON")
    p.set_defaults(func=run)
