"""`mpiopt bench user-op`: the KNL study's figure — time per MPI_Reduce of COUNT floats on 2 ranks
for MPI_SUM, a serial user sum, a vectorized user sum and the vectorized sum threaded by
mpiopt_op_create_threaded, under each MPI — and its overlap sketch (the reduction as a priority
task beside a taskloop of independent work), from examples/user_op_reduce.c and
examples/user_op_overlap.c. Ranks run unbound so each can use THREADS cores."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .. import mpi
from ..errors import UsageError
from ..units import parse_size

NAME = "user-op"
HELP = "user-defined MPI_Reduce ops: MPI_SUM vs serial, vectorized, threaded; overlap with work"
EXAMPLE = """examples:
  mpiopt bench user-op                       2^26 floats (64M), 2 ranks, 2 threads
  mpiopt bench user-op --count 1G --json     the study's 2^30 floats, JSON for scripts
"""
VARIANTS = ["mpi_sum", "serial", "vectorized", "threaded"]
# issue 11: vectorized >= 1.0x MPI_SUM, threaded >= 1.5x serial, overlapped <= 0.8x sequential
BAR = [("vectorized vs MPI_SUM", "mpi_sum", "vectorized", 1.0),
       ("threaded vs serial", "serial", "threaded", 1.5)]
# issue 23: the op alone (MPI_Reduce_local on one rank, default chunking) threaded >= 1.5x serial
LOCAL_BAR = [("op alone: threaded vs serial", "serial", "threaded", 1.5)]
OVERLAP_BAR = 0.8


def add_arguments(p) -> None:
    p.add_argument("--count", default="64M", help="floats per rank, K/M/G = 2^10/2^20/2^30 (default 64M = 2^26)")
    p.add_argument("--threads", type=int, default=2, help="threads of the threaded op and the overlap program (default 2)")
    p.add_argument("--reps", type=int, default=10, help="MPI_Reduce calls averaged per variant (default 10)")


def build_example(flavour: str, out_dir: Path, name: str) -> Path:
    """examples/NAME.c (or NAME.f90, with the mpiopt module) built against FLAVOUR's libmpiopt."""
    root, lib = mpi.repo_root(), mpi.library(flavour).parent
    src = root / "examples" / name
    exe = out_dir / f"{name}.{flavour}"
    if src.with_suffix(".c").exists():
        cmd = [f"mpicc.{flavour}", "-O3", "-march=native", "-fopenmp", f"-I{root / 'include'}",
               str(src.with_suffix(".c"))]
    else:
        cmd = [f"mpifort.{flavour}", "-O3", "-march=native", "-fopenmp", f"-I{lib}",
               str(src.with_suffix(".f90")), "-lmpiopt_fortran"]
    cmd += [f"-L{lib}", f"-Wl,-rpath,{lib}", "-lmpiopt", "-lm", "-o", str(exe)]
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd, check=True)
    return exe


def _pairs(stdout: str) -> dict[str, float]:
    rows = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                rows[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return rows


def measure(flavour: str, out_dir: Path, count: int, threads: int, reps: int) -> dict:
    env = dict(os.environ, MPIOPT_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               OMP_MAX_TASK_PRIORITY="1")
    exe = build_example(flavour, out_dir, "user_op_reduce")
    r = mpi.run(flavour, 2, [exe, "--count", str(count), "--reps", str(reps)], env=env, bind_none=True)
    if r.returncode != 0:
        raise RuntimeError(f"user_op_reduce under {flavour} failed: {r.stderr[-1000:]}")
    reduce_times = _pairs(r.stdout)
    # the op alone, as MPI_Reduce_local on one rank: what the threads give without messages
    r = mpi.run(flavour, 1, [exe, "--local", "--count", str(count), "--reps", str(reps)], env=env,
                bind_none=True)
    if r.returncode != 0:
        raise RuntimeError(f"user_op_reduce --local under {flavour} failed: {r.stderr[-1000:]}")
    local_times = _pairs(r.stdout)
    exe = build_example(flavour, out_dir, "user_op_overlap")
    r = mpi.run(flavour, 2, [exe, "--count", str(count), "--reps", str(max(1, reps // 2))], env=env,
                bind_none=True)
    if r.returncode != 0:
        raise RuntimeError(f"user_op_overlap under {flavour} failed: {r.stderr[-1000:]}")
    level = next((l.split()[2] for l in r.stdout.splitlines() if l.startswith("thread level")), "?")
    return {"flavour": flavour, "count": count, "threads": threads, "reduce": reduce_times,
            "local": local_times, "overlap": {**_pairs(r.stdout), "thread_level": level}}


def bar_checks(rows: list[dict]) -> list[dict]:
    checks = []
    for row in rows:
        for times, bar in ((row["reduce"], BAR), (row["local"], LOCAL_BAR)):
            for what, base, new, need in bar:
                got = times[base] / times[new]
                checks.append({"what": f"{row['flavour']}: {what}", "measured": got,
                               "required": f"≥ {need}×", "ok": got >= need})
        o = row["overlap"]
        got = o["overlapped"] / o["sequential"]
        checks.append({"what": f"{row['flavour']}: overlapped / reduce-then-work", "measured": got,
                       "required": f"≤ {OVERLAP_BAR}×", "ok": got <= OVERLAP_BAR})
    return checks


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(1, len(rows))
    for k, row in enumerate(rows):
        xs = [i + k * width for i in range(len(VARIANTS))]
        ax.bar(xs, [row["reduce"][v] * 1e3 for v in VARIANTS], width, label=row["flavour"])
    ax.set_xticks([i + width * (len(rows) - 1) / 2 for i in range(len(VARIANTS))], VARIANTS)
    ax.set_ylabel("ms per MPI_Reduce")
    ax.set_title(f"MPI_Reduce of {rows[0]['count']} floats, 2 ranks, {rows[0]['threads']} threads")
    ax.legend()
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)


def times_table(Table, title: str, rows: list[dict], key: str, ratios: list[tuple[str, str]]):
    """ms per call of every variant in row[key], and the speed-ups base/new named in ratios."""
    table = Table(title=title)
    for col in ["MPI"] + VARIANTS + [f"{new}/{base}" for base, new in ratios]:
        table.add_column(col, justify="left" if col == "MPI" else "right")
    for row in rows:
        t = row[key]
        table.add_row(row["flavour"], *[f"{t[v] * 1e3:.1f}" for v in VARIANTS],
                      *[f"{t[base] / t[new]:.2f}×" for base, new in ratios])
    return table


def run(args) -> int:
    count = parse_size(args.count, minimum=1)
    if count >= 2**31:
        raise UsageError(f"--count {args.count}: at most 2^31-1 floats (MPI_Reduce takes an int count)")
    if args.threads < 1 or args.reps < 1:
        raise UsageError("--threads and --reps must be at least 1")
    built = mpi.built_flavours()
    if not built:
        raise UsageError("no mpiopt build found: run `make build`")
    from rich.console import Console
    from rich.table import Table
    console = Console(stderr=args.json)
    results = Path(args.results)
    rows = [measure(f, results / "user_op_build", count, args.threads, args.reps) for f in built]
    checks = bar_checks(rows)
    results.mkdir(parents=True, exist_ok=True)
    tmp = results / "user_op.json.tmp"
    tmp.write_text(json.dumps({"rows": rows, "bar": checks}, indent=1))
    tmp.replace(results / "user_op.json")
    plot(rows, results / "user_op.png")
    if args.json:
        print(json.dumps({"rows": rows, "bar": checks}, indent=1))
        return 0
    for key, title, ratios in (
            ("reduce", f"MPI_Reduce of {count} floats, 2 ranks unbound: ms per call",
             [("mpi_sum", "vectorized"), ("serial", "threaded")]),
            ("local", f"The op alone: MPI_Reduce_local of {count} floats, 1 rank unbound: ms per call",
             [("vectorized", "threaded"), ("serial", "threaded")])):
        console.print(times_table(Table, title, rows, key, ratios))
    overlap = Table(title="Reduction as a priority task beside a taskloop: seconds")
    for col in ("MPI", "thread level", "reduce", "work", "reduce then work", "overlapped", "ratio"):
        overlap.add_column(col, justify="left" if col in ("MPI", "thread level") else "right")
    for row in rows:
        o = row["overlap"]
        overlap.add_row(row["flavour"], o["thread_level"], f"{o['reduce']:.3f}", f"{o['work']:.3f}",
                        f"{o['sequential']:.3f}", f"{o['overlapped']:.3f}",
                        f"{o['overlapped'] / o['sequential']:.2f}×")
    console.print(overlap)
    bar = Table(title="Bar (issues 11 and 23)")
    for col in ("check", "measured", "required", ""):
        bar.add_column(col)
    for c in checks:
        bar.add_row(c["what"], f"{c['measured']:.2f}×", c["required"], "[green]ok[/]" if c["ok"] else "[red]below[/]")
    console.print(bar)
    console.print(f"written: {results / 'user_op.json'}, {results / 'user_op.png'}")
    return 0
