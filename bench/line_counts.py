#!/usr/bin/env python3
"""Counted cache lines of the shared-memory small allreduce: the flat path against the tree; for
large messages, the bytes the stages and the point-to-point algorithms move between cores.

Builds the counting build (CMake -DMPIOPT_COUNT_LINES=ON, src/coll/node/line_count.h) in
build/count-lines, runs tests/c/plain_line_counts.c through it as the drop-in at each rank count
and size, with MPIOPT_ALLREDUCE=shared_memory and MPIOPT_SHM_TREE=0 (flat) or 1 (tree), on the
described node HWLOC_SYNTHETIC="package:2 numa:2 l3:1 core:C pu:1" (2 sockets, 4 NUMA nodes,
C = max(64, p) cores; rank r on core r), and prints per rank count and size:

  read/rank mean, max   lines of other ranks' slots a rank reads in a call (mean, most of a rank)
  flags/rank            flag lines a rank writes (publishes) in a call, mean over the ranks
  NUMA/call, socket/call  lines read across a NUMA node / a package in a call, summed over ranks

With --algorithms (large messages, issue 68), one run per algorithm forced with
MPIOPT_ALLREDUCE (MPIOPT_REDUCE with --reduce): shared_memory (single copy off,
MPIOPT_SHM_SINGLE_COPY=0, and a node budget that affords the stages, MPIOPT_SHM_NODE_BYTES =
max(64 MiB, p x 2 MiB): so that a large call goes through the stages, staged.c; the default
64 MiB leaves no stages from p = 64, and the calls then go through the slots' 8 KiB buffers,
whose lines count once a call: the table marks such a row "(slots)"; --default-budget), ring,
rabenseifner, recursive_doubling; default ranks 16,64,128 and sizes 64 KiB, 256 KiB, 1 MiB. Per
rank count, size and algorithm:

  read/rank mean, max   bytes a rank reads from other cores in a call: for shared_memory the
                        lines of other ranks' stages and slots it reads (data and flags, each
                        line 64 bytes, every read of a stage), for the others the bytes of the
                        messages it receives
  NUMA/call, socket/call  of those, the bytes from another NUMA node / package, summed over ranks
  window lines read/rank  shared_memory's lines a rank reads that are not stage data: the
                        stages' flags it waits for (every read), and the slots' lines
  flags written/rank    shared_memory's flag lines a rank writes (posts)

Each figure is per call after the first (the first builds the window and the tree). Counted at
the source, not timed: on Open MPI oversubscribed (waits yield), so it runs on any machine,
slowly at 128 ranks; keep --calls small (a cell of 128 ranks at 1 MiB with --calls 3 took
77 s for shared_memory through the stages and 279 s for ring on 2 cores, another job running). docs/shared_memory_lines.md has the tables. --node full describes a
node the ranks fill (p / 4 cores a NUMA node) instead of the 64-core default, on which up to 32
ranks share one package.

Example:
  .venv/bin/python bench/line_counts.py --ranks 8,16,32,64,128 --sizes 8,512,4096 --calls 20
  .venv/bin/python bench/line_counts.py --ranks 8 --sizes 8 --paths flat --json
  .venv/bin/python bench/line_counts.py --calls 3 \\
      --algorithms shared_memory,ring,rabenseifner,recursive_doubling   # 16,64,128 x 64K-1M
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from mpiopt import jobs, mpi  # noqa: E402

PROGRAM = "test-plain_line_counts"
PATHS = {"flat": "0", "tree": "1"}
ALGORITHMS = ("shared_memory", "shared_memory_flat", "ring", "rabenseifner", "recursive_doubling")
# shared_memory_flat: shared_memory with the flat stages (MPIOPT_SHM_GROUPS=0), every rank
# reading every other's share, against the stages by the node's groups (staged_groups.c)
FORCED = {"shared_memory_flat": ("shared_memory", {"MPIOPT_SHM_GROUPS": "0"})}


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


def topology(p: int, node: str = "default") -> str:
    """The described node for p ranks: 2 packages of 2 NUMA nodes, max(64, p) cores; node
    "full": as many cores as ranks (at least 4), so that p ranks span both packages; anything
    else: that HWLOC_SYNTHETIC string."""
    if node == "default":
        return f"package:2 numa:2 l3:1 core:{max(64, p) // 4} pu:1"
    if node == "full":
        return f"package:2 numa:2 l3:1 core:{max(4, p) // 4} pu:1"
    return node


def run(p: int, nbytes: int, path: str, calls: int = 20, flavour: str = "openmpi",
        reduce: bool = False, out: Path | None = None, timeout: float = 1200,
        env: dict | None = None, stderr: list | None = None,
        algorithm: str = "shared_memory") -> list[dict]:
    """One run of the program at p ranks (path "flat", "tree", or "default": MPIOPT_SHM_TREE
    unset, the library's own choice) with `algorithm` forced: every rank's counts
    (line_count.c's JSON lines), sorted by rank. Raises where the run or a result failed.
    `stderr`, a list, gets the run's standard error (MPIOPT_VERBOSE's lines, in env)."""
    out = out or build_dir(flavour)
    with tempfile.TemporaryDirectory(prefix="mpiopt-lines-") as tmp:
        counts = Path(tmp) / "counts.jsonl"
        extra = {"MPIOPT_ALLREDUCE": algorithm, "MPIOPT_REDUCE": algorithm,
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


def large_summary(ranks: list[dict], kind: str = "allreduce") -> dict:
    """The large-message table's figures of one run, per call after the first: bytes a rank reads
    from other cores (lines of stages and slots x 64, and message bytes: a run has one or the
    other), and of them those crossing NUMA nodes and packages summed over the ranks."""
    per = [r[kind] for r in ranks if kind in r]
    def read(k, lines, stage, message):
        return 64 * (steady(k, lines) + steady(k, stage)) + steady(k, message)
    total = [read(k, "lines_read", "stage_lines", "message_bytes") for k in per]
    return {"ranks": len(ranks), "calls": per[0]["calls"] if per else 0,
            "read_mean": sum(total) / len(total), "read_max": max(total),
            "numa_per_call": sum(read(k, "numa_lines", "stage_numa_lines", "message_numa_bytes")
                                 for k in per),
            "socket_per_call": sum(read(k, "socket_lines", "stage_socket_lines",
                                        "message_socket_bytes") for k in per),
            "stage_lines_mean": sum(steady(k, "stage_lines") for k in per) / len(per),
            "message_bytes_mean": sum(steady(k, "message_bytes") for k in per) / len(per),
            "window_lines_mean": sum(steady(k, "lines_read") for k in per) / len(per),
            "flags_mean": sum(steady(k, "flag_lines_written") for k in per) / len(per)}


def stage_budget(p: int) -> str:
    """MPIOPT_SHM_NODE_BYTES that gives p ranks their stages: each rank's share of the node's
    budget is budget / p, and its stages (at least 4 of 96 KiB, node_window.c's MIN_STAGES, with
    a window's pages around them) may take half of it; the library's 64 MiB where that is more
    (it affords them up to 64 ranks)."""
    return str(max(64 << 20, p * (2 << 20)))


def through(row: dict) -> str:
    """What a shared_memory row's calls went through: the stages, or the slots' buffers"""
    return "stages" if row["stage_lines_mean"] > 0 else "slots"


def bytes_name(v: float) -> str:
    """A byte figure for the table: B, KiB or MiB, three significant digits or whole bytes."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.0f} B"


def large_table(rows: list[dict]) -> str:
    """A Markdown table: per p, size and algorithm, a row of the large-message figures."""
    head = ["p", "size", "algorithm", "read/rank mean", "read/rank max", "NUMA bytes/call",
            "socket bytes/call", "window lines read/rank", "flag lines written/rank"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    fmt = lambda v: f"{v:.0f}" if abs(v - round(v)) < 0.05 else f"{v:.1f}"
    order = {a: i for i, a in enumerate(ALGORITHMS)}
    for r in sorted(rows, key=lambda r: (r["p"], r["bytes"], order.get(r["algorithm"], 99))):
        lines.append("| " + " | ".join(
            [str(r["p"]), size_name(r["bytes"]),
             r["algorithm"] + (" (slots)" if r.get("through") == "slots" else "")] +
            [bytes_name(r[k]) for k in ("read_mean", "read_max", "numa_per_call",
                                        "socket_per_call")] +
            [fmt(r["window_lines_mean"]), fmt(r["flags_mean"])]) + " |")
    return "\n".join(lines)


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
    ap.add_argument("--ranks", type=ints, default=None,
                    help="rank counts (8,16,32,64,128; with --algorithms 16,64,128)")
    ap.add_argument("--sizes", type=ints, default=None,
                    help="bytes a call (8,512,4096; with --algorithms 65536,262144,1048576)")
    ap.add_argument("--paths", default="flat,tree", help="flat, tree or both (default)")
    ap.add_argument("--algorithms", default=None,
                    help="large messages: the algorithms to force and compare, of "
                         f"{','.join(ALGORITHMS)} (then --paths is not used)")
    ap.add_argument("--node", default="default",
                    help="the described node: default (2 packages, 4 NUMA nodes, max(64, p) "
                         "cores), full (p cores) or a HWLOC_SYNTHETIC string")
    ap.add_argument("--default-budget", action="store_true",
                    help="--algorithms: keep the library's node budget (no stages from p = 64)")
    ap.add_argument("--calls", type=int, default=20, help="calls a run (default 20)")
    ap.add_argument("--reduce", action="store_true", help="reduces to rank 0, not allreduces")
    ap.add_argument("--flavour", default="openmpi", help="the MPI (default openmpi)")
    ap.add_argument("--no-build", action="store_true", help="use the counting build as it is")
    ap.add_argument("--json", action="store_true", help="the figures as JSON, not the table")
    a = ap.parse_args(argv)
    paths = [x for x in a.paths.split(",") if x]
    if any(x not in PATHS for x in paths):
        ap.error(f"--paths: flat and/or tree, not {a.paths}")
    algorithms = [x for x in (a.algorithms or "").split(",") if x]
    if any(x not in ALGORITHMS for x in algorithms):
        ap.error(f"--algorithms: of {','.join(ALGORITHMS)}, not {a.algorithms}")
    if a.calls < 2:
        ap.error("--calls: at least 2 (the figures are those after the first call)")
    large = bool(algorithms)
    ranks_list = a.ranks or ([16, 64, 128] if large else [8, 16, 32, 64, 128])
    sizes = a.sizes or ([65536, 262144, 1 << 20] if large else [8, 512, 4096])
    if any(n < 1 or n > 1 << 30 for n in sizes):
        ap.error("--sizes: 1 byte to 1 GiB")
    out = build_dir(a.flavour) if a.no_build else build(a.flavour)
    rows = []
    kind = "reduce" if a.reduce else "allreduce"
    for p in ranks_list:
        node = topology(p, a.node)
        for nbytes in sizes:
            if large:
                for alg in algorithms:
                    # single copy off: the stages are what shared_memory's large calls are
                    # counted through (single_copy.c's reads are system calls, uncounted)
                    forced, extra = FORCED.get(alg, (alg, {}))
                    env = {"HWLOC_SYNTHETIC": node, **extra}
                    if forced == "shared_memory":
                        env["MPIOPT_SHM_SINGLE_COPY"] = "0"
                        if not a.default_budget:
                            env["MPIOPT_SHM_NODE_BYTES"] = stage_budget(p)
                    start = time.monotonic()
                    ranks = run(p, nbytes, "default", a.calls, a.flavour, a.reduce, out,
                                env=env, algorithm=forced)
                    seconds = time.monotonic() - start
                    row = {"p": p, "bytes": nbytes, "algorithm": alg, "topology": node,
                           "seconds": round(seconds, 1), **large_summary(ranks, kind)}
                    if forced == "shared_memory":
                        row["through"] = through(row)
                    rows.append(row)
                    if not a.json:
                        print(f"  p={p} {size_name(nbytes)} {alg}: {seconds:.0f} s",
                              file=sys.stderr)
                continue
            for path in paths:
                ranks = run(p, nbytes, path, a.calls, a.flavour, a.reduce, out,
                            env={"HWLOC_SYNTHETIC": node})
                rows.append({"p": p, "bytes": nbytes, "path": path, "topology": node,
                             **summary(ranks, kind)})
                if not a.json:
                    print(f"  p={p} {size_name(nbytes)} {path}: done", file=sys.stderr)
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        print(large_table(rows) if large else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
