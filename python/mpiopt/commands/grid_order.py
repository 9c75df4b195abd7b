"""`mpiopt grid-order`: Cray grid_order's rank-order generator for any MPI."""
from __future__ import annotations

import argparse
import json

from ..errors import UsageError
from ..placement import GridOrderOptions, PlacementError, format_order, generate, parse_int_list
from .grid_arguments import add_curve_arguments, add_numbering_arguments

EXAMPLE = """examples:
  mpiopt grid-order -C -c 2,8 -g 32,32 > MPICH_RANK_ORDER
      ranks of a 32x32 grid (first dimension fastest), one 2x8 block per 16-rank node
  mpiopt grid-order -R -H -g 64,64 -N 16 -T
      ranks along a Hilbert curve, 16 a node, then the grid drawn as node numbers

The output is an MPICH_RANK_ORDER file (ranks filled into node slots in the order listed):
use it with `mpiopt run --rank-order FILE --hosts … --ppn K` or `mpiopt place convert`.
"""


def register(sub) -> None:
    p = sub.add_parser(
        "grid-order", help="rank order that keeps neighbouring grid partitions on one node",
        description="Prints a rank order (MPICH_RANK_ORDER format, compatible with Cray's "
        "grid_order) listing the ranks of each cell of a Cartesian grid together, so that a "
        "node holds a compact block of the grid instead of a strip.",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_numbering_arguments(p)
    add_curve_arguments(p)
    p.add_argument("-g", dest="grid", required=True, metavar="N1,N2,…", help="grid dimensions")
    p.add_argument("-c", dest="cell", metavar="n1,n2,…",
                   help="cell dimensions: one node's block of the grid")
    p.add_argument("-o", dest="dim_order", metavar="d1,d2,…",
                   help="dimension order for visiting cells and ranks in a cell, fastest first "
                   "(default: 1,2,… with -C, …,2,1 with -R)")
    p.add_argument("-m", dest="max_rank", type=int, metavar="MAX", help="largest rank listed")
    p.add_argument("-n", dest="ranks_per_line", type=int, metavar="RANKS_PER_LINE",
                   help="ranks per output line (default: -N, else the cell size)")
    p.add_argument("-N", dest="ranks_per_node", type=int, metavar="RANKS_PER_NODE",
                   help="ranks per node, for -T and line length (default: the cell size)")
    p.add_argument("-s", dest="start", type=int, default=0, metavar="STARTING_RANK",
                   help="added to every rank listed (default 0)")
    p.add_argument("-T", dest="table", action="store_true",
                   help="also print the grid as a table of node numbers (as # comments)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the order text")
    p.set_defaults(func=run)


def options_from_args(args) -> GridOrderOptions:
    grid = parse_int_list(args.grid, "-g")
    cell = parse_int_list(args.cell, "-c") if args.cell else None
    dim_order = parse_int_list(args.dim_order, "-o") if args.dim_order else None
    return GridOrderOptions(grid=tuple(grid), cell=tuple(cell) if cell else None,
                            numbering=args.numbering or "C", curve=args.curve or "Z",
                            dim_order=tuple(dim_order) if dim_order else None,
                            max_rank=args.max_rank, ranks_per_node=args.ranks_per_node,
                            ranks_per_line=args.ranks_per_line, start=args.start, table=args.table)


def run(args) -> int:
    try:
        go = generate(options_from_args(args))
        text = format_order(go)
    except PlacementError as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(json.dumps({
            "command": go.options.command(),
            "ranks_per_node": go.options.node_size(),
            "regions": [{"origin": list(r.origin), "first": r.first, "last": r.last,
                         "ranks": r.ranks.tolist()} for r in go.regions],
            "order": go.order.tolist(),
        }))
    else:
        print(text, end="")
    return 0
