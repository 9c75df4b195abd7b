"""`mpiopt tune`: measure every allreduce/reduce algorithm here and write the tuning table that
libmpiopt's `auto` reads (MPIOPT_TUNING_FILE).

For each MPI flavour and process count it runs `mpiopt-allreduce --algorithms` (vendor and all of
mpiopt's algorithms interleaved in one run, median of the slowest rank per call) for MPI_Allreduce
and MPI_Reduce, names the fastest algorithm per size range, and fits the cost model's alpha, beta
and gamma to the measured times of mpiopt's algorithms (least squares on relative error, using the
cost model of libmpiopt itself, so the fitted parameters mean what `auto` means by them)."""
from __future__ import annotations

import argparse
import itertools
import json
import math
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
  MPIOPT_TUNING_FILE=results/tuning-openmpi.json mpiopt run -np 4 -- ./app

The file: {"version": 1, "flavour": F, "model": {"alpha", "beta", "gamma"},
           "allreduce": [{"ranks", "max_bytes", "algorithm"}...], "reduce": [...]}
Rows for one process count are sorted by max_bytes; the first row with bytes <= max_bytes wins.
"""

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


def table_rows(doc: dict) -> list[dict]:
    """Rows {"ranks", "max_bytes", "algorithm"} for one benchmark run; a change of algorithm
    between two measured sizes is put at their geometric mean."""
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
        rows.append({"ranks": doc["ranks"], "max_bytes": max_bytes, "algorithm": alg})
    return rows


def fit_model(docs: list[dict], cost_model) -> dict[str, float]:
    """alpha, beta, gamma >= 0 minimising the relative error of the cost model's predictions for
    mpiopt's algorithms. The model is linear in the three, so each measurement gives one row
    (its coefficients = the model evaluated at unit parameters); negative solutions are avoided by
    trying every subset of parameters and keeping the best non-negative fit."""
    import numpy as np
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
            coeffs.append([u / seconds for u in unit])  # relative error: divide the row by the time
            times.append(1.0)
    if len(coeffs) < 3:
        raise UsageError("too few measurements to fit the cost model: measure more sizes or process counts")
    a, b = np.array(coeffs), np.array(times)
    best, best_residual = np.zeros(3), math.inf
    for k in (3, 2, 1):
        for subset in itertools.combinations(range(3), k):
            x, *_ = np.linalg.lstsq(a[:, subset], b, rcond=None)
            if (x < 0).any():
                continue
            full = np.zeros(3)
            full[list(subset)] = x
            residual = float(np.sum((a @ full - b) ** 2))
            if residual < best_residual:
                best, best_residual = full, residual
    return {"alpha": float(best[0]), "beta": float(best[1]), "gamma": float(best[2])}


def tuning_table(flavour: str, allreduce_docs: list[dict], reduce_docs: list[dict], cost_model,
                 sizes: list[int]) -> dict:
    return {
        "version": 1,
        "flavour": flavour,
        "model": fit_model(allreduce_docs + reduce_docs, cost_model),
        "allreduce": [row for doc in allreduce_docs for row in table_rows(doc)],
        "reduce": [row for doc in reduce_docs for row in table_rows(doc)],
        # extra keys are skipped by libmpiopt's reader; they say where the numbers come from
        "measured": {"by": "mpiopt tune", "ranks": sorted({d["ranks"] for d in allreduce_docs}),
                     "min_bytes": min(sizes), "max_bytes": max(sizes), "statistic": "median of the slowest rank",
                     "mpi_library": allreduce_docs[0].get("mpi_library", "") if allreduce_docs else ""},
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


def run(args) -> int:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table
    from ..model import CostModel

    bench.check_counts(args)
    ranks = parse_ranks(args.np)
    sizes = parse_sizes(args.sizes, minimum=1)
    flavours = bench.choose_flavours(args.flavour)
    outputs = _output_paths(args, flavours)
    operations = ["allreduce"] + ([] if args.no_reduce else ["reduce"])
    console = report_console(stderr=args.json)

    tables = {}
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("tuning", total=len(flavours) * len(ranks) * len(operations))
        for flavour in flavours:
            tuned = algorithms.names(flavour, kinds=("vendor", "mpiopt"))
            docs = {op: [] for op in ("allreduce", "reduce")}
            for np in ranks:
                for op in operations:
                    progress.update(task, description=f"tune: {flavour}, {np} ranks, {op}")
                    try:
                        docs[op].append(bench.measure(
                            flavour, np, sizes, ",".join(tuned), args.iterations, args.warmup,
                            args.iterations_large, args.warmup_large, reduce=op == "reduce",
                            time_limit=args.time_limit))
                    except RuntimeError as e:
                        console.print(f"[red]error:[/red] {e}\nnothing written")
                        return 1
                    progress.advance(task)
            tables[flavour] = tuning_table(flavour, docs["allreduce"], docs["reduce"],
                                           CostModel(mpi.library(flavour)), sizes)

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
        for col in ("operation", "ranks", "up to bytes", "algorithm"):
            t.add_column(col, justify="right" if col in ("ranks", "up to bytes") else "left")
        for op in ("allreduce", "reduce"):
            for row in table[op]:
                upto = "any larger" if row["max_bytes"] == LAST_MAX_BYTES else str(row["max_bytes"])
                t.add_row(op, str(row["ranks"]), upto, row["algorithm"])
        console.print(t)
        console.print(f"model fit: alpha = {m['alpha']:.3g} s, beta = {m['beta']:.3g} s/B "
                      f"({1e-6 / m['beta'] if m['beta'] else float('inf'):.0f} MB/s), "
                      f"gamma = {m['gamma']:.3g} s/B\n")
    return 0


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
    p.add_argument("--json", action="store_true", help="print the tables as JSON")
    p.set_defaults(func=run)
