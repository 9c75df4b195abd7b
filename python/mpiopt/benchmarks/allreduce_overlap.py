"""`mpiopt bench allreduce --nonblocking`: MPI_Iallreduce overlap with computation, OSU's method,
through the C benchmark `mpiopt-iallreduce` (the sweep's options, flavours and launcher are
allreduce.py's)."""
from __future__ import annotations

import os

from .. import algorithms, mpi
from ..console import console as report_console
from ..units import size_label
from . import save_document
from .allreduce import NONBLOCKING_BINARY, by_size, oversubscribed, run_json


HEADLINE_BYTES, HEADLINE_RANKS = 1 << 20, 2


def doubling_runs(sizes: list[int]) -> list[tuple[int, int]]:
    """Sorted sizes -> (MIN, MAX) ranges of successive doublings, one C run each (`-m MIN:MAX`
    doubles from MIN): 1K:1M is one run, 8,1K,1M three."""
    runs: list[list[int]] = []
    for size in sizes:
        if runs and size == runs[-1][1] * 2:
            runs[-1][1] = size
        else:
            runs.append([size, size])
    return [(lo, hi) for lo, hi in runs]


def measure_nonblocking(flavour: str, np: int, sizes: list[int], columns: str, iterations: int,
                        warmup: int, timeout: float = 900) -> dict:
    """mpiopt-iallreduce --json over `sizes`: one document, its rows in "results"."""
    rows = []
    for lo, hi in doubling_runs(sizes):
        argv = [mpi.binary(flavour, NONBLOCKING_BINARY), "-m", f"{lo}:{hi}", "-i", iterations,
                "-w", warmup, "--algorithms", columns, "--json"]
        rows += run_json(flavour, np, argv, NONBLOCKING_BINARY, timeout)
    return {"benchmark": NONBLOCKING_BINARY, "operation": "iallreduce", "flavour": flavour, "ranks": np,
            "cores": os.cpu_count() or 1, "oversubscribed": oversubscribed(np),
            "algorithms": columns.split(","), "iterations": iterations, "warmup": warmup,
            "results": [r for r in rows if r["bytes"] in sizes]}


def nonblocking_headline(doc: dict) -> dict | None:
    """At 1 MiB, p = 2: the overlap of mpiopt's column (auto, else the first not the vendor) and the
    vendor's, and mpiopt's latency / the vendor's; None if this run has no such row."""
    rows = by_size(doc).get(HEADLINE_BYTES, {})
    mine = next((a for a in ["auto"] + doc["algorithms"] if a != "vendor" and a in rows), None)
    if doc["ranks"] != HEADLINE_RANKS or "vendor" not in rows or mine is None:
        return None
    ours, vendor = rows[mine], rows["vendor"]
    return {"flavour": doc["flavour"], "ranks": doc["ranks"], "bytes": HEADLINE_BYTES, "algorithm": mine,
            "oversubscribed": doc["oversubscribed"],
            "overlap_pct": ours["overlap_pct"], "vendor_overlap_pct": vendor["overlap_pct"],
            "overlap_median_pct": ours["overlap_median_pct"],
            "vendor_overlap_median_pct": vendor["overlap_median_pct"],
            "latency_ratio": ours["latency_ratio"], "latency_ratio_median": ours["latency_ratio_median"]}


def run_nonblocking(args, flavours: list[str], ranks: list[int], sizes: list[int]) -> int:
    """`mpiopt bench allreduce --nonblocking`: per flavour and process count, a table, a headline,
    and results/allreduce_nonblocking.json (the document --json prints)."""
    from rich.console import Console
    from rich.progress import Progress

    columns = ",".join(algorithms.names()) if args.algorithms == "all" else args.algorithms
    console = report_console(stderr=args.json)
    docs, failures = [], []
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("iallreduce overlap", total=len(flavours) * len(ranks))
        for flavour in flavours:
            for np in ranks:
                progress.update(task, description=f"iallreduce overlap: {flavour}, {np} ranks")
                try:
                    docs.append(measure_nonblocking(flavour, np, sizes, columns, args.iterations, args.warmup))
                except RuntimeError as e:
                    failures.append(str(e))  # the other runs still count: report them too
                    console.print(f"[red]error:[/red] {e}")
                progress.advance(task)
    if not docs:
        return 1
    headlines = [h for h in map(nonblocking_headline, docs) if h]
    path = save_document(args, "allreduce_nonblocking.json",
                         {"runs": docs, "headline": headlines, "errors": failures})
    if not args.json:
        for doc in docs:
            print_nonblocking_table(console, doc)
        for h in headlines:
            print_headline(console, h)
        if not headlines:
            console.print(f"no headline: it is the {size_label(HEADLINE_BYTES)} row at p = {HEADLINE_RANKS} "
                          "with the vendor and an mpiopt column, not measured in this run")
        console.print(f"files: {path}")
    return 1 if failures else 0


def print_nonblocking_table(console, doc: dict) -> None:
    from rich.table import Table
    short = algorithms.short_names(doc["flavour"])
    over = doc["oversubscribed"]
    note = f" [bold yellow]OVERSUBSCRIBED: {doc['ranks']} ranks on {doc['cores']} cores[/]" if over else ""
    table = Table(title=f"MPI_Iallreduce overlap, {doc['flavour']}, {doc['ranks']} ranks, double sum "
                  f"(OSU method, no MPI_Test during the compute; times: averages in us){note}",
                  title_justify="left")
    table.add_column("bytes", justify="right")
    mpiopt_columns = [a for a in doc["algorithms"] if a != "vendor"] if "vendor" in doc["algorithms"] else []
    for alg in doc["algorithms"]:
        name = short.get(alg, alg)
        for head in ("pure", "overall", "compute", "overlap % avg/med"):
            table.add_column(f"{name} {head}", justify="right")
    for alg in mpiopt_columns:
        table.add_column(f"{short.get(alg, alg)}/vendor latency" + (" (not a speed-up)" if over else ""),
                         justify="right")
    for size, rows in sorted(by_size(doc).items()):
        cells = [size_label(size)]
        for alg in doc["algorithms"]:
            r = rows.get(alg)
            cells += ["-"] * 4 if r is None else [
                f"{r['t_pure_us']:.1f}", f"{r['t_total_us']:.1f}", f"{r['t_compute_us']:.1f}",
                f"{r['overlap_pct']:.0f} / {r['overlap_median_pct']:.0f}"]
        for alg in mpiopt_columns:
            ratio = rows.get(alg, {}).get("latency_ratio")
            cells.append("-" if ratio is None else f"{ratio:.2f}x")
        table.add_row(*cells)
    console.print(table)
    if over:
        console.print(f"{doc['ranks']} ranks on {doc['cores']} cores: ranks wait for cores, so latencies and "
                      "their ratios measure scheduling, not the algorithms: not a speed-up (docs/benchmarks.md)\n")


def print_headline(console, h: dict) -> None:
    speed = " (oversubscribed: not a speed-up)" if h["oversubscribed"] else ""
    console.print(f"[bold]headline[/] {h['flavour']}, p = {h['ranks']}, {size_label(h['bytes'])}: overlap "
                  f"{h['algorithm']} {h['overlap_pct']:.0f}% vs vendor {h['vendor_overlap_pct']:.0f}% "
                  f"(from medians {h['overlap_median_pct']:.0f}% vs {h['vendor_overlap_median_pct']:.0f}%); "
                  f"latency {h['algorithm']}/vendor {h['latency_ratio']:.2f}x "
                  f"(medians {h['latency_ratio_median']:.2f}x; below 1: {h['algorithm']} faster){speed}")
