"""`mpiopt bench transform`: what `mpiopt transform` buys on the example programs.

Each example of examples/ (CG, the four-Allreduce kernel, game of life, six broadcasts, a 1-D
halo exchange with MPI_Sendrecv, a C++ heat solver with MPI_Isend/MPI_Irecv/MPI_Waitall and an
MPI_Allreduce) is transformed into a nonblocking and a persistent version, the three versions are built with the
chosen MPI and run with larger problem sizes than the tests use. The programs time their own
main loop with MPI_Wtime (rank 0 prints `time SECONDS` on stderr), so start-up and set-up are
not counted. Versions are run in turn, REPEATS rounds, and the best time of each is kept:
the machine may be shared, and the best of a few interleaved runs is the least disturbed.
A transformed version whose output differs from the blocking one is reported as wrong (exit 1).
With more ranks than cores a row is labelled oversubscribed: the ranks then take turns on the
cores, and a ratio says more about the scheduler than about overlap."""
from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import mpi
from .allreduce import oversubscribed
from ..console import console as report_console
from ..errors import UsageError

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
        # long rows, few per rank: the two rows sent each step are a good share of a step's work
        "halo1d": ["-n", "65536", "-m", "8", "-i", "400"],
        "heat_cpp": ["-n", "65536", "-m", "8", "-i", "400"],
    },
    "small": {
        "cg": ["-n", "128", "-i", "100"],
        "four_allreduce": ["-n", "1024", "-i", "10"],
        "game_of_life": ["-n", "64", "-i", "20"],
        "six_bcasts": ["-n", "500", "-i", "20"],
        "halo1d": ["-n", "512", "-m", "4", "-i", "20"],
        "heat_cpp": ["-n", "512", "-m", "4", "-i", "20"],
    },
}
# examples not written in C: their file's suffix
SUFFIX = {"heat_cpp": ".cpp"}
TIME_LINE = re.compile(r"^time ([0-9.eE+-]+)$", re.M)

# A nonblocking or persistent collective may add the ranks' floating contributions in another
# order than the blocking one, which changes the last bits of a sum (about 1e-16 relative per
# operation, a little more after tens of dependent iterations as in CG). The examples print 11
# significant digits; a wait placed too late reads stale or partly received data, which changes
# leading digits. Hence: integers and words exactly, floating numbers within RTOL (ATOL near 0).
RTOL = 1e-8
ATOL = 1e-12


def _number(token: str):
    """int for integer tokens, float for other numbers, None for words."""
    if re.fullmatch(r"[+-]?\d+", token):
        return int(token)
    try:
        return float(token)
    except ValueError:
        return None


def compare_outputs(expected: str, actual: str, rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """The differences between two program outputs (empty when they agree), line by line and
    token by token: integers and words exactly, floating numbers within rtol/atol."""
    diffs = []
    exp_lines, act_lines = expected.splitlines(), actual.splitlines()
    if len(exp_lines) != len(act_lines):
        diffs.append(f"{len(exp_lines)} lines expected, {len(act_lines)} printed")
    for n, (e_line, a_line) in enumerate(zip(exp_lines, act_lines), 1):
        e_tok, a_tok = e_line.split(), a_line.split()
        if len(e_tok) != len(a_tok):
            diffs.append(f"line {n}: expected {e_line!r}, got {a_line!r}")
            continue
        for e, a in zip(e_tok, a_tok):
            ev, av = _number(e), _number(a)
            if isinstance(ev, float) or isinstance(av, float):
                if ev is None or av is None or not math.isclose(float(ev), float(av), rel_tol=rtol, abs_tol=atol):
                    diffs.append(f"line {n}: expected {e} got {a} (floating, rtol {rtol:g})")
            elif e != a:
                diffs.append(f"line {n}: expected {e} got {a}")
    return diffs


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


def _transform(source: Path, mode: str, flavour: str, out: Path) -> dict:
    """Runs `mpiopt transform`; returns its report's summary (how many call sites became what)."""
    cmd = [sys.executable, "-m", "mpiopt", "transform", str(source), "-o", str(out),
           "--mode", mode, "--mpi", flavour, "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout).get("summary", {})


def _compile(source: Path, flavour: str, exe: Path) -> None:
    compiler = "mpicxx" if source.suffix == ".cpp" else "mpicc"
    cmd = [f"{compiler}.{flavour}", "-O2", "-o", str(exe), str(source), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.strip()}")


def _run_timed(flavour: str, np: int, exe: Path, argv: list[str]) -> tuple[float, str]:
    """(main-loop seconds, stdout) of one run."""
    r = mpi.run(flavour, np, [exe, *argv], timeout=600, bind_none=oversubscribed(np))
    m = TIME_LINE.search(r.stderr)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"{exe.name} {' '.join(argv)} with {np} ranks exited {r.returncode}: "
                           f"{r.stderr.strip()[-1500:]}")
    return float(m.group(1)), r.stdout


def measure(flavour: str, np: int, names: list[str], size: str, repeats: int, progress=None) -> list[dict]:
    """Builds the three versions of each example and times them; one dict per example."""
    results = []
    with tempfile.TemporaryDirectory(prefix="mpiopt-bench-transform-") as tmp:
        tmp = Path(tmp)
        for name in names:
            suffix = SUFFIX.get(name, ".c")
            source = examples_dir() / f"{name}{suffix}"
            exes, call_sites = {}, {}
            for version in VERSIONS:
                src = source
                if version != "blocking":
                    src = tmp / f"{name}.{version}{suffix}"
                    call_sites[version] = _transform(source, version, flavour, src)
                exes[version] = tmp / f"{name}.{version}.{flavour}"
                _compile(src, flavour, exes[version])
            times = {v: [] for v in VERSIONS}
            outputs = {}
            for _ in range(repeats):
                for version in VERSIONS:  # interleaved, so a busy moment hurts all versions alike
                    if progress:
                        progress(f"{flavour} {name} {version}")
                    seconds, outputs[version] = _run_timed(flavour, np, exes[version], SIZES[size][name])
                    times[version].append(seconds)
            best = {v: min(t) for v, t in times.items()}
            # how much the same binary's time varies between runs: the trust to put in a speedup
            spread = max(max(t) / min(t) for t in times.values())
            # a version that computes something else is not faster, it is wrong: say so
            differs = {v: compare_outputs(outputs["blocking"], outputs[v]) for v in VERSIONS[1:]}
            results.append({
                "example": name, "args": SIZES[size][name], "flavour": flavour, "np": np,
                "oversubscribed": oversubscribed(np),
                "call_sites": call_sites, "best_seconds": best, "all_seconds": times,
                "median_seconds": {v: statistics.median(t) for v, t in times.items()},
                "spread": spread,
                "output_matches": {v: not d for v, d in differs.items()},
                "output_differences": {v: d[:5] for v, d in differs.items() if d},
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

    wrong = [f"{r['flavour']} {r['example']} {v}: {'; '.join(d)}"
             for r in results for v, d in r["output_differences"].items()]
    if args.json:
        print(json.dumps({"benchmark": NAME, "np": args.np, "repeats": args.repeats, "size": args.size,
                          "results": results}, indent=2))
    else:
        _print_table(results, args)
    for w in wrong:
        print(f"mpiopt bench transform: output differs from the blocking version: {w}", file=sys.stderr)
    return 1 if wrong else 0


def _print_table(results: list[dict], args) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"mpiopt transform: main-loop seconds, best of {args.repeats}, {args.np} ranks "
                        f"({args.size} sizes)")
    for col in ("MPI", "example", "blocking", "nonblocking", "persistent", "nb speedup",
                "pers speedup", "spread"):
        table.add_column(col, justify="left" if col in ("MPI", "example") else "right")
    for r in results:
        b = r["best_seconds"]
        ok = r["output_matches"]
        speedup = {v: f"{r['speedup_' + v]:.2f}x" if ok[v] else "[red]wrong output[/]" for v in ok}
        over = " [yellow](oversubscribed)[/]" if r.get("oversubscribed") else ""
        table.add_row(r["flavour"], r["example"] + over, f"{b['blocking']:.4f}",
                      f"{b['nonblocking']:.4f}", f"{b['persistent']:.4f}",
                      speedup["nonblocking"], speedup["persistent"],
                      f"[{'yellow' if r['spread'] > 1.5 else 'default'}]{r['spread']:.1f}x[/]")
    console = report_console()
    console.print(table)
    sizes = {r["example"]: " ".join(r["args"]) for r in results}
    console.print("Sizes: " + "; ".join(f"{name} {a}" for name, a in sizes.items()))
    if any(r.get("oversubscribed") for r in results):
        console.print(f"Oversubscribed: {args.np} ranks on {os.cpu_count() or 1} cores; the ranks take turns "
                      "on the cores, so these ratios are not speed-ups.")
    console.print("Speedup = original (blocking) time / transformed version's time (best runs). Spread = slowest / fastest run "
                  "of the same binary: above 1.5x the machine is busy with other work and the "
                  "speedups are noise.")
