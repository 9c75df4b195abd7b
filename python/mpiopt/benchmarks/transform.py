"""`mpiopt bench transform`: what `mpiopt transform` buys on the example programs.

Each example of examples/ (CG, the four-Allreduce kernel, game of life, six broadcasts) is
transformed into a nonblocking and a persistent version, the three versions are built with the
chosen MPI and run with larger problem sizes than the tests use. The programs time their own
main loop with MPI_Wtime (rank 0 prints `time SECONDS` on stderr), so start-up and set-up are
not counted. Versions are run in turn, REPEATS rounds, and the best time of each is kept:
the machine may be shared, and the best of a few interleaved runs is the least disturbed."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import mpi
from ..cli import UsageError

NAME = "transform"
HELP = "blocking vs nonblocking vs persistent versions of the example programs (mpiopt transform)"
IN_REPORT = False
EXAMPLE = """examples:
  mpiopt bench transform                       every example, 2 ranks, every installed MPI
  mpiopt bench transform -np 4 --flavour mpich --repeats 5 --json
  mpiopt bench transform --examples cg,six_bcasts --size small
"""

VERSIONS = ("blocking", "nonblocking", "persistent")
# Problem sizes: "large" keeps each run around a second on a 2-core machine, "small" is for a
# quick look (and the test of this benchmark).
SIZES = {
    "large": {
        "cg": ["-n", "1024", "-i", "1000"],
        "four_allreduce": ["-n", "65536", "-i", "20"],
        "game_of_life": ["-n", "512", "-i", "60"],
        "six_bcasts": ["-n", "5000", "-i", "300"],
    },
    "small": {
        "cg": ["-n", "128", "-i", "100"],
        "four_allreduce": ["-n", "1024", "-i", "10"],
        "game_of_life": ["-n", "64", "-i", "20"],
        "six_bcasts": ["-n", "500", "-i", "20"],
    },
}
TIME_LINE = re.compile(r"^time ([0-9.eE+-]+)$", re.M)


def examples_dir() -> Path:
    return mpi.repo_root() / "examples"


def add_arguments(p) -> None:
    p.add_argument("-np", type=int, default=2, help="ranks per run (default: 2, the cores here)")
    p.add_argument("--flavour", choices=mpi.FLAVOURS, action="append",
                   help="MPI to use (repeatable; default: every installed one)")
    p.add_argument("--repeats", type=int, default=3, help="rounds of runs; the best time counts (default: 3)")
    p.add_argument("--size", choices=sorted(SIZES), default="large", help="problem sizes (default: large)")
    p.add_argument("--examples", help=f"comma-separated subset of: {', '.join(SIZES['large'])}")


def _check_args(args) -> tuple[list[str], list[str]]:
    if args.np < 1:
        raise UsageError(f"-np must be at least 1 (got {args.np})")
    if args.repeats < 1:
        raise UsageError(f"--repeats must be at least 1 (got {args.repeats})")
    installed = mpi.available_flavours()
    flavours = args.flavour or installed
    missing = [f for f in flavours if f not in installed]
    if missing or not flavours:
        raise UsageError(f"MPI not installed: {', '.join(missing) or 'none found'} "
                         f"(installed: {', '.join(installed) or 'none'})")
    names = list(SIZES[args.size])
    if args.examples:
        wanted = [n.strip() for n in args.examples.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if unknown or not wanted:
            raise UsageError(f"unknown example(s): {', '.join(unknown) or '(none given)'} "
                             f"(known: {', '.join(names)})")
        names = wanted
    return flavours, names


def _transform(source: Path, mode: str, flavour: str, out: Path) -> None:
    cmd = [sys.executable, "-m", "mpiopt.cli", "transform", str(source), "-o", str(out),
           "--mode", mode, "--mpi", flavour]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}): {r.stderr.strip()}")


def _compile(source: Path, flavour: str, exe: Path) -> None:
    cmd = [f"mpicc.{flavour}", "-O2", "-o", str(exe), str(source), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.strip()}")


def _loop_seconds(flavour: str, np: int, exe: Path, argv: list[str]) -> float:
    r = mpi.run(flavour, np, [exe, *argv], timeout=600)
    m = TIME_LINE.search(r.stderr)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"{exe.name} {' '.join(argv)} with {np} ranks exited {r.returncode}: "
                           f"{r.stderr.strip()[-1500:]}")
    return float(m.group(1))


def measure(flavour: str, np: int, names: list[str], size: str, repeats: int, progress=None) -> list[dict]:
    """Builds the three versions of each example and times them; one dict per example."""
    results = []
    with tempfile.TemporaryDirectory(prefix="mpiopt-bench-transform-") as tmp:
        tmp = Path(tmp)
        for name in names:
            source = examples_dir() / f"{name}.c"
            exes = {}
            for version in VERSIONS:
                src = source
                if version != "blocking":
                    src = tmp / f"{name}.{version}.c"
                    _transform(source, version, flavour, src)
                exes[version] = tmp / f"{name}.{version}.{flavour}"
                _compile(src, flavour, exes[version])
            times = {v: [] for v in VERSIONS}
            for _ in range(repeats):
                for version in VERSIONS:  # interleaved, so a busy moment hurts all versions alike
                    if progress:
                        progress(f"{flavour} {name} {version}")
                    times[version].append(_loop_seconds(flavour, np, exes[version], SIZES[size][name]))
            best = {v: min(t) for v, t in times.items()}
            results.append({
                "example": name, "args": SIZES[size][name], "flavour": flavour, "np": np,
                "best_seconds": best, "all_seconds": times,
                "speedup_nonblocking": best["blocking"] / best["nonblocking"],
                "speedup_persistent": best["blocking"] / best["persistent"],
            })
    return results


def run(args) -> int:
    flavours, names = _check_args(args)
    results = []
    try:
        if args.json:
            for flavour in flavours:
                results += measure(flavour, args.np, names, args.size, args.repeats)
        else:
            from rich.console import Console
            console = Console(stderr=True)
            with console.status("building") as status:
                for flavour in flavours:
                    results += measure(flavour, args.np, names, args.size, args.repeats,
                                       progress=lambda text: status.update(f"running {text}"))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"mpiopt bench transform: {e}", file=sys.stderr)
        return 1

    if args.json:
        print(json.dumps({"benchmark": NAME, "np": args.np, "repeats": args.repeats, "size": args.size,
                          "results": results}, indent=2))
        return 0
    _print_table(results, args)
    return 0


def _print_table(results: list[dict], args) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"mpiopt transform: main-loop time, best of {args.repeats}, {args.np} ranks "
                        f"({args.size} sizes)")
    for col in ("MPI", "example", "blocking s", "nonblocking s", "persistent s",
                "nonblocking speedup", "persistent speedup"):
        table.add_column(col, justify="left" if col in ("MPI", "example") else "right")
    for r in results:
        b = r["best_seconds"]
        table.add_row(r["flavour"], r["example"], f"{b['blocking']:.4f}",
                      f"{b['nonblocking']:.4f}", f"{b['persistent']:.4f}",
                      f"{r['speedup_nonblocking']:.2f}x", f"{r['speedup_persistent']:.2f}x")
    console = Console()
    console.print(table)
    sizes = {r["example"]: " ".join(r["args"]) for r in results}
    console.print("Sizes: " + "; ".join(f"{name} {a}" for name, a in sizes.items()))
    console.print("Speedup = blocking time / version time. The machine may be shared with other "
                  "work: compare versions within one run, not across runs.")
