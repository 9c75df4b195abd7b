"""`mpiopt bench kernels`: MPI_Reduce_local of mpiopt against the vendors, in GB/s.

Runs `mpiopt-reduce-local --compare` (one process; vendor, mpiopt one thread, mpiopt threaded
and a stream-add timed side by side, so ratios come from one run) under each vendor setting:
Open MPI with its AVX op component (its default), Open MPI without it (`--mca op ^avx`, its
generic C loops), and MPICH. Ranks are not bound (`--bind-to none`) so the threaded columns can
use both cores."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError
from .. import mpi
from ..console import console as report_console

NAME = "kernels"
HELP = "MPI_Reduce_local: mpiopt vs Open MPI (avx, base) and MPICH, L1 and DRAM sizes"
IN_REPORT = True
EXAMPLE = """examples:
  mpiopt bench kernels                          SUM/MAX/PROD of doubles, 1000 and 16M elements
  mpiopt bench kernels --ops sum --counts 1000,1048576 --json
  mpiopt bench kernels --type c --ops sum,max --char-ops ""   MPI_CHAR only
"""

# (label, flavour, extra launcher arguments)
VENDORS = [
    ("Open MPI avx", "openmpi", []),
    ("Open MPI base", "openmpi", ["--mca", "op", "^avx"]),
    ("MPICH", "mpich", []),
]

# The bar, checked on the default run: (vendor label, count, min ratio of mpiopt 1t / vendor)
BAR_SMALL = {"Open MPI avx": 1.0, "Open MPI base": 3.0, "MPICH": 5.0}
BAR_STREAM, BAR_THREADS, SMALL, LARGE = 0.95, 1.7, 1000, 16 * 1024 * 1024


def add_arguments(p) -> None:
    p.add_argument("--ops", default="sum,max,prod", help="ops, comma separated (default sum,max,prod)")
    p.add_argument("--type", default="d", choices=list("iufdc"),
                   help="element type letter: i, u (64-bit integers), f, d, c (MPI_CHAR); default d")
    p.add_argument("--char-ops", default="sum",
                   help="ops also measured on MPI_CHAR, OSU's default type (default sum; \"\" for none)")
    p.add_argument("--counts", default=f"{SMALL},{LARGE}", help=f"element counts (default {SMALL},{LARGE})")
    p.add_argument("--repeats", type=int, default=7, help="timing rounds per variant; the best counts (default 7)")


def measure(label: str, flavour: str, extra: list[str], args) -> list[dict]:
    exe = mpi.binary(flavour, "mpiopt-reduce-local")
    if not exe.exists():
        raise UsageError(f"{exe} is missing: run `make build`")
    rows = []
    runs = [(args.type, args.ops)]
    if args.char_ops and args.type != "c":
        runs.append(("c", args.char_ops))
    for type_letter, ops in runs:
        for count in [int(c) for c in args.counts.split(",")]:
            argv = [exe, "--compare", "--json", "-o", ops, "-t", type_letter, "-l", count, "-u", count,
                    "-r", max(3, args.repeats if count < 1_000_000 else 3)]
            r = mpi.run(flavour, 1, argv, launcher_args=extra, bind_none=True, timeout=900)
            if r.returncode != 0:
                raise UsageError(f"{label}: mpiopt-reduce-local failed:\n{r.stderr[-2000:]}")
            for rec in json.loads(r.stdout):
                rec["vendor"] = label
                rows.append(rec)
    return rows


def bar_checks(rows: list[dict]) -> list[tuple[str, float, float, bool]]:
    """(what, measured, required, ok) for each line of the issue's bar that these rows cover."""
    out = []
    for rec in rows:
        if rec["type"] == "MPI_CHAR":   # the bar is set on doubles; MPI_CHAR rows are for reading
            continue
        v1t, ven = rec["mpiopt_1t_gbs"], rec["vendor_gbs"]
        if rec["count"] == SMALL and rec["vendor"] in BAR_SMALL:
            need = BAR_SMALL[rec["vendor"]]
            out.append((f"{rec['op']} {rec['count']} vs {rec['vendor']}", v1t / ven, need, v1t / ven >= need))
        if rec["count"] == LARGE and rec["vendor"] == "Open MPI avx":
            s = v1t / rec["stream_add_1t_gbs"]
            out.append((f"{rec['op']} {LARGE} 1 thread vs stream-add", s, BAR_STREAM, s >= BAR_STREAM))
            if rec["threads"] >= 2:
                t = rec["mpiopt_mt_gbs"] / v1t
                out.append((f"{rec['op']} {LARGE} {rec['threads']} threads vs 1", t, BAR_THREADS, t >= BAR_THREADS))
    return out


def run(args) -> int:
    built = set(mpi.built_flavours())
    if not built:
        raise UsageError("no mpiopt build found: run `make build`")
    from rich.progress import Progress
    console = report_console(stderr=args.json)
    rows = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("reduce_local", total=len(VENDORS))
        for label, flavour, extra in VENDORS:
            progress.update(task, description=f"reduce_local under {label}")
            if flavour in built:
                rows += measure(label, flavour, extra, args)
            progress.advance(task)
    checks = bar_checks(rows)
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    (results / "kernels.json").write_text(json.dumps({"rows": rows, "bar": checks}, indent=1))
    if args.json:
        print(json.dumps({"rows": rows, "bar": [dict(zip(("what", "measured", "required", "ok"), c)) for c in checks]}, indent=1))
        return 0
    from rich.table import Table
    table = Table(title=f"MPI_Reduce_local, GB/s (3 × bytes / time), ISA {rows[0]['isa'] if rows else '?'}")
    for col in ("vendor", "op", "type", "count", "vendor GB/s", "mpiopt 1t", "mpiopt/vendor",
                "mpiopt threads", "threads/1t", "stream-add 1t", "1t/stream"):
        table.add_column(col, justify="left" if col in ("vendor", "op", "type") else "right")
    for r in rows:
        table.add_row(r["vendor"], r["op"], r["type"], str(r["count"]), f"{r['vendor_gbs']:.1f}", f"{r['mpiopt_1t_gbs']:.1f}",
                      f"{r['mpiopt_1t_gbs'] / r['vendor_gbs']:.2f}×", f"{r['mpiopt_mt_gbs']:.1f} ({r['threads']})",
                      f"{r['mpiopt_mt_gbs'] / r['mpiopt_1t_gbs']:.2f}×", f"{r['stream_add_1t_gbs']:.1f}",
                      f"{r['mpiopt_1t_gbs'] / r['stream_add_1t_gbs']:.2f}")
    console.print(table)
    if checks:
        bar = Table(title="Bar (issue 2)")
        for col in ("check", "measured", "required", ""):
            bar.add_column(col)
        for what, got, need, ok in checks:
            bar.add_row(what, f"{got:.2f}×", f"≥ {need}×", "[green]ok[/]" if ok else "[red]below[/]")
        console.print(bar)
    console.print(f"written: {results / 'kernels.json'}")
    return 0
