"""The cross-core floor of a two-rank allreduce, beside `mpiopt bench allreduce`'s sweep
(allreduce.py runs the sweep and prints the tables; this measures the floor and gives the ratios).

Both cores copy, at once, n bytes the other has just written (bench/line_pingpong.c --bulk). Each
rank of an allreduce needs half the other's input and half the result the other computes: n bytes
that cross between the cores whatever the algorithm. The memcpy floor of allreduce.py moves
nothing between them."""
from __future__ import annotations

import json
import os
import subprocess

from .. import mpi
from ..units import size_label
from .allreduce import OSU_STAT, by_size   # allreduce.py imports this module inside its functions

CROSS_CORE = "xfer"
CROSS_CORE_BINARY = "mpiopt-line-pingpong"
CROSS_CORE_FROM_BYTES = 1024    # below, a call is its handovers' latency, not its bytes


STAGED = "stage"      # the staged floor's short name in the tables (auto/stage)


def measure_cross_core(flavour: str, sizes: list[int], iterations: int = 200,
                       field: str = "seconds") -> dict[str, float]:
    """{bytes (as text, JSON's keys): microseconds} of the cross-core floor at each size from
    CROSS_CORE_FROM_BYTES; empty on one core. Plain processes, no MPI. field "seconds": the read
    alone; "staged_turns_seconds": the copy into shared memory (with turns) and that read, the
    least an allreduce through shared memory pays (bench/line_pingpong.c); {field: figures} for
    a list of fields."""
    fields = [field] if isinstance(field, str) else list(field)
    sizes = sorted({s for s in sizes if s >= CROSS_CORE_FROM_BYTES})
    if not sizes or (os.cpu_count() or 1) < 2:
        return {} if isinstance(field, str) else {f: {} for f in fields}
    r = subprocess.run([str(mpi.binary(flavour, CROSS_CORE_BINARY)), "--bulk",
                        ",".join(map(str, sizes)), str(iterations)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{CROSS_CORE_BINARY} --bulk failed: {r.stderr.strip()}")
    rows = json.loads(r.stdout)["bulk"]
    out = {f: {str(x["bytes"]): x[f] * 1e6 for x in rows} for f in fields}
    return out[field] if isinstance(field, str) else out


def cross_core_ratios(doc: dict, algorithm: str, key: str = "cross_core_floor_us") -> dict[int, float]:
    """algorithm's time / the cross-core floor per size, on OSU's figure (2-rank allreduces that
    carry the floor's figures; key "staged_floor_us": over the staged floor)."""
    floor = doc.get(key) or {}
    return {size: rows[algorithm][OSU_STAT] / floor[str(size)]
            for size, rows in sorted(by_size(doc).items())
            if algorithm in rows and floor.get(str(size), 0) > 0}


def add_cross_core_floor(docs: list[dict], sizes: list[int]) -> list[str]:
    """Give the two-rank allreduces of a sweep the cross-core floor at their sizes, measured once
    (no MPI); the errors met, as text."""
    pairs = [d for d in docs if d["operation"] == "allreduce" and d["ranks"] == 2]
    if not pairs:
        return []
    built = [f for f in mpi.FLAVOURS if mpi.binary(f, CROSS_CORE_BINARY).exists()]
    errors = []
    fields = ("seconds", "staged_turns_seconds")
    try:
        floors = measure_cross_core(built[0], sizes, field=fields) if built else {}
    except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
        floors = {}
        errors.append(str(e))
    for d in pairs:
        d["cross_core_floor_us"] = floors.get("seconds", {})
        d["staged_floor_us"] = floors.get("staged_turns_seconds", {})
    return errors


def cross_core_legend(staged: bool = False) -> str:
    text = (f"{CROSS_CORE}: both cores copying at once n bytes the other has just written "
            f"({CROSS_CORE_BINARY} --bulk, from {size_label(CROSS_CORE_FROM_BYTES)}): what "
            "crosses between the cores in any 2-rank allreduce (half the peer's input, half "
            "its result); X/xfer = how many times that X takes (docs/benchmarks.md)")
    if staged:
        text += (f"\n{STAGED}: each core first copying its fresh n bytes into shared memory, then "
                 "the same read (both timed; the two taking turns with their slots): the least "
                 "an allreduce through shared memory pays, the copy in being part of its call")
    return text
