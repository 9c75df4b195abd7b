"""`mpiopt place search --matrix PROFILE.json`: the printing side of placement by a measured
communication matrix (the partitioning is mpiopt.placement.matrix_partition)."""
from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from ..errors import UsageError
from ..placement import PlacementError, partition
from ..placement.orders import format_order as format_rank_order
from ..profile import load
from ..console import console as report_console


def run_matrix_search(args) -> int:
    prof = load(args.matrix)
    try:
        found = partition(prof.matrix()[0], args.ppn)
    except PlacementError as e:
        raise UsageError(str(e)) from None
    if args.output != "-":
        Path(args.output).write_text(format_rank_order(
            found.order, args.ppn, header=f"mpiopt place search --matrix {args.matrix} --ppn {args.ppn}"))
    ratio = found.off_node_bytes / found.smp_off_node_bytes if found.smp_off_node_bytes else 1.0
    if args.json:
        print(json.dumps({"profile": args.matrix, "ranks": prof.ranks, "ranks_per_node": args.ppn,
                          "total_bytes": found.total_bytes,
                          "smp": {"off_node_bytes": found.smp_off_node_bytes,
                                  "max_node_off_node_bytes": found.smp_max_node_off_node_bytes},
                          "best": {"off_node_bytes": found.off_node_bytes,
                                   "max_node_off_node_bytes": found.max_node_off_node_bytes,
                                   "ratio_to_smp": ratio, "order": found.order.tolist()},
                          "output": None if args.output == "-" else args.output}, indent=1))
        return 0
    table = Table(title=f"placement from the measured matrix of {args.matrix}: {prof.ranks} ranks, "
                  f"{args.ppn} ranks/node, {found.total_bytes:.3G} bytes point-to-point")
    for col in ("placement", "off-node bytes", "busiest node", "vs SMP"):
        table.add_column(col, justify="left" if col == "placement" else "right")
    table.add_row("SMP placement (method 1)", f"{found.smp_off_node_bytes:.3G}",
                  f"{found.smp_max_node_off_node_bytes:.3G}", "1.00x")
    table.add_row("partitioned (Kernighan-Lin)", f"{found.off_node_bytes:.3G}",
                  f"{found.max_node_off_node_bytes:.3G}", f"{ratio:.2f}x")
    report_console().print(table)
    if args.output != "-":
        print(f"order written to {args.output}")
    return 0
