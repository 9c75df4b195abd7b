"""`mpiopt halo-stats`: on-node and off-node halo traffic of a Cartesian stencil code under a
placement (MPICH_RANK_REORDER_METHOD 0/1/2 or an order file)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.table import Table

from ..errors import UsageError
from ..placement import (HaloPattern, PlacementError, method_placement, order_placement,
                         read_order, stencil_grid)
from ..console import console as report_console
from .grid_arguments import add_grid_arguments

EXAMPLE = """examples:
  mpiopt halo-stats -g 64,64 --stencil 5pt --bytes 8192 --ppn 16 --method 1
      halo traffic of a 64x64 grid, 16 ranks a node filled in rank order (SMP)
  mpiopt grid-order -c 4,4 -g 64,64 > order.txt
  mpiopt halo-stats -g 64,64 --stencil 5pt --bytes 8192 --ppn 16 --order order.txt --compare
      SMP, round-robin, folded and the 4x4-block order side by side
"""

FIELDS = ("messages_total", "messages_on_node", "messages_off_node", "bytes_total",
          "bytes_on_node", "bytes_off_node", "max_node_off_node_bytes")


def register(sub) -> None:
    p = sub.add_parser(
        "halo-stats", help="on-node/off-node halo traffic of a stencil code under a placement",
        description="Every rank of a Cartesian grid sends one message of --bytes to each stencil "
        "neighbour; counts the messages and bytes that stay on a node and those that leave it.",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_grid_arguments(p)
    p.add_argument("--bytes", type=int, required=True, metavar="B", help="bytes per message")
    p.add_argument("--ppn", type=int, required=True, metavar="K", help="ranks per node")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--method", type=int, choices=(0, 1, 2),
                       help="0 round-robin, 1 SMP (fill a node, then the next), 2 folded")
    where.add_argument("--order", metavar="FILE", help="MPICH_RANK_ORDER file (method 3)")
    p.add_argument("--compare", action="store_true",
                   help="one row per placement: SMP, round-robin, folded (and --order)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def compute(args) -> list[dict]:
    if args.bytes < 0:
        raise PlacementError(f"--bytes must be at least 0, got {args.bytes}")
    if args.ppn < 1:
        raise PlacementError(f"--ppn must be at least 1, got {args.ppn}")
    grid = stencil_grid(args.grid, args.stencil, args.numbering)
    pattern = HaloPattern(grid, args.stencil, args.periodic)
    placements = []
    if args.compare:
        placements += [method_placement(m, grid.size, args.ppn) for m in (1, 0, 2)]
    elif args.method is not None:
        placements.append(method_placement(args.method, grid.size, args.ppn))
    if args.order:
        placements.append(order_placement(read_order(args.order, grid.size), args.ppn,
                                          name=f"order ({Path(args.order).name})"))
    if not placements:
        raise PlacementError("give a placement: --method 0|1|2 or --order FILE (or --compare)")
    return [pattern.stats(pl, args.bytes) for pl in placements]


def run(args) -> int:
    try:
        rows = compute(args)
    except PlacementError as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(json.dumps(rows if args.compare else rows[0], indent=1))
        return 0
    r0 = rows[0]
    title = (f"halo traffic: grid {args.grid} ({'-' + (args.numbering or 'C')}), {args.stencil}"
             f"{', periodic' if args.periodic else ''}, {args.bytes} B/message, "
             f"{r0['ranks_per_node']} ranks/node on {r0['nodes']} nodes")
    table = Table(title=title)
    for col in ("placement", "messages", "on-node", "off-node", "off-node bytes",
                "busiest node off-node bytes", "on-node share"):
        table.add_column(col, justify="left" if col == "placement" else "right",
                         no_wrap=col == "placement")
    for r in rows:
        table.add_row(r["placement"], f"{r['messages_total']:,}", f"{r['messages_on_node']:,}",
                      f"{r['messages_off_node']:,}", f"{r['bytes_off_node']:.3G}",
                      f"{r['max_node_off_node_bytes']:.3G}", f"{100 * r['on_node_share']:.1f} %")
    report_console().print(table)
    return 0
