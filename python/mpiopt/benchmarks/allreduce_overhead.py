"""The hand-off overhead beside `mpiopt bench allreduce`'s sweep (allreduce.py runs the sweep): the
nanoseconds per call that the drop-in's MPI_Allreduce / MPI_Reduce add where `auto` hands the call
to the vendor (`mpiopt-allreduce --overhead`)."""
from __future__ import annotations

import json
import os

from .. import mpi
from .allreduce import BENCH_BINARY   # allreduce.py imports this module inside its functions


def measure_overhead(flavour: str) -> list[dict]:
    """`mpiopt-allreduce --overhead` on as many ranks as cores (at most 2): ns per call that the
    interposed MPI_Allreduce / MPI_Reduce add where auto hands the call to the vendor."""
    np = min(2, os.cpu_count() or 1)
    proc = mpi.run(flavour, np, [mpi.binary(flavour, BENCH_BINARY), "--overhead", "--json"], timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{BENCH_BINARY} --overhead ({flavour}) failed: {proc.stderr.strip()[-300:]}")
    rows = json.loads(proc.stdout)["overhead"]
    return [dict(row, flavour=flavour) for row in rows]


def print_overhead(console, rows: list[dict]) -> None:
    for flavour in dict.fromkeys(r["flavour"] for r in rows):
        parts = [f"{r['operation']} on {r['comm']} ({r['ranks']} rank{'s' * (r['ranks'] > 1)}) "
                 f"{r['added_ns']:+.1f} ns ({r['vendor_ns']:.1f} -> {r['interposed_ns']:.1f})"
                 for r in rows if r["flavour"] == flavour]
        console.print(f"hand-off overhead, {flavour}, 8 B, ns per call added to the vendor's: " + "; ".join(parts))
