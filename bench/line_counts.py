#!/usr/bin/env python3
"""Counted cache lines of the shared-memory small allreduce: the flat path against the tree.

Builds the counting build (CMake -DMPIOPT_COUNT_LINES=ON, src/coll/node/line_count.h) in
build/count-lines, runs tests/c/plain_line_counts.c through it as the drop-in at each rank count
and size, with MPIOPT_ALLREDUCE=shared_memory and MPIOPT_SHM_TREE=0 (flat) or 1 (tree), on the
described node HWLOC_SYNTHETIC="package:2 numa:2 l3:1 core:C pu:1" (2 sockets, 4 NUMA nodes,
C = max(64, p) cores; rank r on core r), and prints per rank count and size:

  read/rank mean, max   lines of other ranks' slots a rank reads in a call (mean, most of a rank)
  flags/rank            flag lines a rank writes (publishes) in a call, mean over the ranks
  NUMA/call, socket/call  lines read across a NUMA node / a package in a call, summed over ranks

Each figure is per call after the first (the first builds the window and the tree). Counted at
the source, not timed: on Open MPI oversubscribed (waits yield), so it runs on any machine,
slowly at 128 ranks; keep --calls small. docs/shared_memory_lines.md has the table.

Example:
  .venv/bin/python bench/line_counts.py --ranks 8,16,32,64,128 --sizes 8,512,4096 --calls 20
  .venv/bin/python bench/line_counts.py --ranks 8 --sizes 8 --paths flat --json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from mpiopt import jobs, mpi  # noqa: E402

PROGRAM = "test-plain_line_counts"
PATHS = {"flat": "0", "tree": "1"}


def build_dir(flavour: str = "openmpi") -> Path:
    return ROOT / "build" / ("count-lines" if flavour == "openmpi" else f"count-lines-{flavour}")


def build(flavour: str = "openmpi", log=sys.stderr) -> Path:
    """Configures and builds the counting build of `flavour` (only the library and the program);
    its directory. flock keeps two runs from building one tree at once."""
    out = build_dir(flavour)
    out.parent.mkdir(parents=True, exist_ok=True)
    configure = ["cmake", "-S", str(ROOT), "-B", str(out), f"-DMPI_FLAVOUR={flavour}",
                 "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_C_COMPILER=mpicc.{flavour}",
                 "-DMPIOPT_COUNT_LINES=ON", "-DMPIOPT_FORTRAN=OFF", "-DMPIOPT_PROFILER=OFF"]
    make = ["cmake", "--build", str(out), "-j2", "--target", "mpiopt", PROGRAM]
    script = " && ".join(" ".join(f"'{a}'" for a in cmd) for cmd in (configure, make))
    r = subprocess.run(["flock", str(out.parent / f".lock-{out.name}"), "sh", "-c", script],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"the counting build failed:\n{(r.stdout + r.stderr)[-4000:]}")
    if log:
        print(f"built {out}/lib/libmpiopt.so (counting build)", file=log)
    return out


def topology(p: int) -> str:
    """The described node for p ranks: 2 packages of 2 NUMA nodes, max(64, p) cores."""
    return f"package:2 numa:2 l3:1 core:{max(64, p) // 4} pu:1"


def run(p: int, nbytes: int, path: str, calls: int = 20, flavour: str = "openmpi",
        reduce: bool = False, out: Path | None = None, timeout: float = 1200,
        env: dict | None = None, stderr: list | None = None) -> list[dict]:
    """One run of the program at p ranks (path "flat", "tree", or "default": MPIOPT_SHM_TREE
    unset, the library's own choice): every rank's counts (line_count.c's JSON lines),
    sorted by rank. Raises where the run or a result failed. `stderr`, a list, gets the run's
    standard error (MPIOPT_VERBOSE's lines, in env)."""
    out = out or build_dir(flavour)
    with tempfile.TemporaryDirectory(prefix="mpiopt-lines-") as tmp:
        counts = Path(tmp) / "counts.jsonl"
        extra = {"MPIOPT_ALLREDUCE": "shared_memory", "MPIOPT_REDUCE": "shared_memory",
                 "MPIOPT_COUNT_LINES_FILE": str(counts), "HWLOC_SYNTHETIC": topology(p),
                 **({"MPIOPT_SHM_TREE": PATHS[path]} if path in PATHS else {}), **(env or {})}
        base = {k: v for k, v in os.environ.items() if k != "MPIOPT_SHM_TREE"}
        launch_env = mpi.launch_env(flavour, preload=True, lib=out / "lib" / "libmpiopt.so",
                                    env={**base, **extra})
        argv = mpi.launcher(flavour, p) + [str(out / "bin" / PROGRAM), str(nbytes), str(calls)]
        if reduce:
            argv.append("reduce")
        r = jobs.run(argv, capture_output=True, text=True, timeout=timeout, env=launch_env)
        if stderr is not None:
            stderr.append(r.stderr)
        if r.returncode != 0 or "plain_line_counts: ok" not in r.stdout:
            raise RuntimeError(f"p={p} {nbytes} B {path}: exit {r.returncode}\n"
                               f"{r.stdout[-2000:]}{r.stderr[-3000:]}")
        ranks = [json.loads(line) for line in counts.read_text().splitlines() if line.strip()]
    ranks.sort(key=lambda x: x["rank"])
    if len(ranks) != p:
        raise RuntimeError(f"p={p} {nbytes} B {path}: {len(ranks)} ranks' counts, not {p}")
    return ranks


def steady(kind: dict, field: str) -> float:
    """A rank's `field` per call after the first."""
    if kind["calls"] < 2:
        return float(kind[field])
    return (kind[field] - kind["first"][field]) / (kind["calls"] - 1)


def summary(ranks: list[dict], kind: str = "allreduce") -> dict:
    """The table's figures of one run (per call after the first)."""
    per = [r[kind] for r in ranks if kind in r]
    read = [steady(k, "lines_read") for k in per]
    return {"ranks": len(ranks), "calls": per[0]["calls"] if per else 0,
            "read_mean": sum(read) / len(read), "read_max": max(read),
            "flags_mean": sum(steady(k, "flag_lines_written") for k in per) / len(per),
            "numa_per_call": sum(steady(k, "numa_lines") for k in per),
            "socket_per_call": sum(steady(k, "socket_lines") for k in per)}


def size_name(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def table(rows: list[dict]) -> str:
    """A Markdown table: per p and size, flat | tree for each figure."""
    by = {(r["p"], r["bytes"], r["path"]): r for r in rows}
    paths = [x for x in PATHS if any(r["path"] == x for r in rows)]
    figures = [("read/rank mean", "read_mean"), ("read/rank max", "read_max"),
               ("flags/rank", "flags_mean"), ("NUMA lines/call", "numa_per_call"),
               ("socket lines/call", "socket_per_call")]
    head = ["p", "size"] + [f"{name} ({' / '.join(paths)})" for name, _ in figures]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    fmt = lambda v: f"{v:.0f}" if abs(v - round(v)) < 0.05 else f"{v:.1f}"
    for p, nbytes in sorted({(r["p"], r["bytes"]) for r in rows}):
        cells = [str(p), size_name(nbytes)]
        for _, key in figures:
            cells.append(" / ".join(fmt(by[(p, nbytes, x)][key]) if (p, nbytes, x) in by else "-"
                                    for x in paths))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__[__doc__.index("Example:"):],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ints = lambda s: [int(x) for x in s.split(",") if x]
    ap.add_argument("--ranks", type=ints, default=[8, 16, 32, 64, 128], help="rank counts (8,16,...)")
    ap.add_argument("--sizes", type=ints, default=[8, 512, 4096], help="bytes a call (8,512,4096)")
    ap.add_argument("--paths", default="flat,tree", help="flat, tree or both (default)")
    ap.add_argument("--calls", type=int, default=20, help="calls a run (default 20)")
    ap.add_argument("--reduce", action="store_true", help="reduces to rank 0, not allreduces")
    ap.add_argument("--flavour", default="openmpi", help="the MPI (default openmpi)")
    ap.add_argument("--no-build", action="store_true", help="use the counting build as it is")
    ap.add_argument("--json", action="store_true", help="the figures as JSON, not the table")
    a = ap.parse_args(argv)
    paths = [x for x in a.paths.split(",") if x]
    if any(x not in PATHS for x in paths):
        ap.error(f"--paths: flat and/or tree, not {a.paths}")
    if a.calls < 2:
        ap.error("--calls: at least 2 (the figures are those after the first call)")
    out = build_dir(a.flavour) if a.no_build else build(a.flavour)
    rows = []
    kind = "reduce" if a.reduce else "allreduce"
    for p in a.ranks:
        for nbytes in a.sizes:
            for path in paths:
                ranks = run(p, nbytes, path, a.calls, a.flavour, a.reduce, out)
                rows.append({"p": p, "bytes": nbytes, "path": path, "topology": topology(p),
                             **summary(ranks, kind)})
                if not a.json:
                    print(f"  p={p} {size_name(nbytes)} {path}: done", file=sys.stderr)
    print(json.dumps(rows, indent=1) if a.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
