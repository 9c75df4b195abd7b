"""`mpiopt place convert` (an order into launcher files) and `mpiopt place search` (the best
grid_order order for a stencil code)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.table import Table

from ..errors import UsageError
from ..placement import (FORMATS, PlacementError, convert, format_order, method_placement,
                         order_placement, read_hosts, read_order, search, stencil_grid)
from ..console import console as report_console
from .grid_arguments import add_grid_arguments

CONVERT_EXAMPLE = """examples:
  mpiopt place convert --order MPICH_RANK_ORDER --hosts n01,n02,n03,n04 --ppn 16 --format rankfile -o rankfile
  mpirun --rankfile rankfile -np 64 ./app            (Open MPI)
  mpiopt place convert --order MPICH_RANK_ORDER --hosts hosts.txt --ppn 16 --format machinefile -o machines
  mpirun.mpich -f machines -np 64 ./app              (MPICH Hydra)
  mpiopt place convert --method 2 --np 8 --hosts a,b --ppn 4 --format smpi
  mpiopt place convert --order MPICH_RANK_ORDER --hosts "$(scontrol show hostnames)" --ppn 16 --format slurm -o hf
  SLURM_HOSTFILE=hf srun -n 64 --distribution=arbitrary ./app      (Slurm)
"""

SEARCH_EXAMPLE = """examples:
  mpiopt place search -g 64,64 --stencil 5pt --ppn 16 -o MPICH_RANK_ORDER
      tries cell shapes and visiting orders, prints the best, writes the best order
  mpiopt place search --matrix mpiopt-profile.json --ppn 16 -o MPICH_RANK_ORDER
      partitions the measured communication matrix (mpiopt profile) into nodes of 16 ranks
  mpiopt halo-stats -g 64,64 --stencil 5pt --bytes 8192 --ppn 16 --order MPICH_RANK_ORDER --compare
"""


def register(sub) -> None:
    p = sub.add_parser("place", help="rank placement: launcher files, placement search",
                       description="Rank placement for Cartesian codes.",
                       epilog=CONVERT_EXAMPLE + "\n" + SEARCH_EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    psub = p.add_subparsers(dest="place_command", metavar="SUBCOMMAND")

    c = psub.add_parser("convert", help="an order + hosts + ranks per node -> launcher file",
                        description="Turns a rank order (MPICH_RANK_ORDER file, method 3) or a "
                        "placement method (0 round-robin, 1 SMP, 2 folded) into an Open MPI "
                        "rankfile, a Hydra machinefile or an SMPI hostfile.",
                        epilog=CONVERT_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = c.add_mutually_exclusive_group(required=True)
    where.add_argument("--order", metavar="FILE", help="MPICH_RANK_ORDER file")
    where.add_argument("--method", type=int, choices=(0, 1, 2),
                       help="0 round-robin, 1 SMP, 2 folded (needs --np)")
    c.add_argument("--np", type=int, help="number of ranks (with --method)")
    c.add_argument("--hosts", required=True, metavar="H1,H2,…|HOSTFILE",
                   help="node names in order, comma-separated, or a hostfile")
    c.add_argument("--ppn", type=int, required=True, metavar="K", help="ranks per node")
    c.add_argument("--format", required=True, choices=FORMATS,
                   help="rankfile (Open MPI), machinefile (Hydra/MPICH), smpi (SMPI hostfile), slurm (SLURM_HOSTFILE for srun --distribution=arbitrary)")
    c.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    c.add_argument("--json", action="store_true", help="print JSON (the file text included)")
    c.set_defaults(func=run_convert)

    s = psub.add_parser("search", help="best grid_order order for a stencil code",
                        description="Tries cell shapes, visiting curves (-Z/-P/-H) and dimension "
                        "orders; ranks them by off-node halo bytes (ties: the busiest node's "
                        "off-node bytes) and writes the best as an MPICH_RANK_ORDER file.",
                        epilog=SEARCH_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_grid_arguments(s)
    for action in s._actions:   # a stencil code's grid, unless the matrix is measured
        if action.dest in ("grid", "stencil"):
            action.required = False
    s.add_argument("--matrix", metavar="PROFILE.json",
                   help="place by the communication matrix of a profile (mpiopt profile) instead "
                   "of a stencil: graph partitioning into nodes of exactly --ppn ranks")
    s.add_argument("--ppn", type=int, required=True, metavar="K", help="ranks per node")
    s.add_argument("--bytes", type=int, default=8, metavar="B",
                   help="bytes per halo message (scales the byte figures; default 8)")
    s.add_argument("--top", type=int, default=5, help="how many orders to show (default 5)")
    s.add_argument("-o", "--output", default="MPICH_RANK_ORDER", metavar="FILE",
                   help="where to write the best order (default MPICH_RANK_ORDER; '-' for none)")
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.set_defaults(func=run_search)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def run_convert(args) -> int:
    try:
        if args.ppn < 1:
            raise PlacementError(f"--ppn must be at least 1, got {args.ppn}")
        if args.order:
            if args.np is not None:
                raise PlacementError("--np goes with --method; an order file gives the rank count")
            placement = order_placement(read_order(args.order), args.ppn)
        else:
            if args.np is None:
                raise PlacementError("--method needs --np (the number of ranks)")
            placement = method_placement(args.method, args.np, args.ppn)
        hosts = read_hosts(args.hosts)
        text = convert(placement, hosts, args.format)
    except PlacementError as e:
        raise UsageError(str(e)) from None
    if args.output:
        Path(args.output).write_text(text)
    if args.json:
        print(json.dumps({"format": args.format, "ranks": placement.nranks, "ranks_per_node": args.ppn,
                          "nodes": placement.nnodes, "hosts": hosts[:placement.nnodes],
                          "output": args.output, "text": text}, indent=1))
    elif not args.output:
        sys.stdout.write(text)
    else:
        print(f"wrote {args.output}: {placement.nranks} ranks on {placement.nnodes} nodes "
              f"({args.format})", file=sys.stderr)
    return 0


def run_search(args) -> int:
    if args.matrix:
        if args.grid or args.stencil:
            raise UsageError("--matrix replaces -g and --stencil: give one or the other")
        from .place_matrix import run_matrix_search
        return run_matrix_search(args)
    if not args.grid or not args.stencil:
        raise UsageError("place search needs -g and --stencil (a stencil code) or --matrix PROFILE.json")
    try:
        if args.ppn < 1:
            raise PlacementError(f"--ppn must be at least 1, got {args.ppn}")
        if args.top < 1 or args.bytes < 0:
            raise PlacementError("--top must be at least 1 and --bytes at least 0")
        grid = stencil_grid(args.grid, args.stencil, args.numbering)
        start = time.perf_counter()
        found, smp = search(grid, args.stencil, args.ppn, args.periodic)
        seconds = time.perf_counter() - start
    except PlacementError as e:
        raise UsageError(str(e)) from None
    best = found[0]
    if args.output != "-":
        Path(args.output).write_text(format_order(best.order))
    b = args.bytes
    smp_off = smp["off_node_messages"]
    rows = [{"command": c.command, "off_node_bytes": c.off_node_messages * b,
             "max_node_off_node_bytes": c.max_node_off_node_messages * b,
             "ratio_to_smp": c.off_node_messages / smp_off if smp_off else 0.0}
            for c in found[:args.top]]
    if args.json:
        print(json.dumps({"ranks": grid.size, "ranks_per_node": args.ppn, "stencil": args.stencil,
                          "periodic": args.periodic, "bytes": b, "candidates": len(found),
                          "seconds": seconds, "output": None if args.output == "-" else args.output,
                          "smp": {"off_node_bytes": smp_off * b,
                                  "max_node_off_node_bytes": smp["max_node_off_node_messages"] * b},
                          "best": rows}, indent=1))
        return 0
    table = Table(title=f"placement search: grid {args.grid}, {args.stencil}"
                  f"{', periodic' if args.periodic else ''}, {args.ppn} ranks/node, {b} B/message "
                  f"({len(found)} orders in {seconds:.1f} s)")
    for col in ("#", "order (grid_order options)", "off-node bytes", "busiest node", "vs SMP"):
        table.add_column(col, justify="left" if col.startswith("order") else "right",
                         no_wrap=col.startswith("order"))
    for i, r in enumerate(rows, 1):
        table.add_row(str(i), r["command"], f"{r['off_node_bytes']:.3G}",
                      f"{r['max_node_off_node_bytes']:.3G}", f"{r['ratio_to_smp']:.2f}x")
    table.add_row("", "SMP placement (method 1)", f"{smp_off * b:.3G}",
                  f"{smp['max_node_off_node_messages'] * b:.3G}", "1.00x")
    report_console().print(table)
    if args.output != "-":
        print(f"best order written to {args.output}")
    return 0
