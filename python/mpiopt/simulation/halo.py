"""`mpiopt simulate halo`: the 2-D halo exchange of examples/halo2d.c under SimGrid SMPI, with
ranks placed on the simulated nodes by a placement method or a rank-order file, next to SMP
placement. Shows what placement does to the time of a step, not only to the byte counts."""
from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

from rich.table import Table

from .. import mpi
from ..errors import UsageError
from ..placement import (Grid, HaloPattern, PlacementError, convert, method_placement,
                         order_placement, parse_int_list, read_order)
from . import smpi
from ..console import console as report_console

NAME = "halo"
HELP = "2-D halo exchange (examples/halo2d.c) under a rank placement, next to SMP placement"
EXAMPLE = """examples:
  mpiopt place search -R -g 64,64 --stencil 5pt --ppn 16 -o order.txt
  mpiopt simulate halo --grid 64,64 --ppn 16 --platform torus --order order.txt --steps 2
      the searched order against SMP placement on a simulated 3-D torus (4096 ranks: minutes)
  mpiopt simulate halo --grid 16,16 --ppn 4 --platform fattree --method 0 --json

halo2d numbers its ranks as MPI_Cart_create does (last dimension fastest): make orders with -R.
"""

_RESULT = re.compile(r"time_per_step=(\S+) checksum=(\S+)")


def add_arguments(p) -> None:
    p.add_argument("--grid", required=True, metavar="X,Y", help="the 2-D grid of ranks")
    p.add_argument("--ppn", type=int, required=True, metavar="K", help="ranks per node")
    p.add_argument("--platform", choices=("torus", "fattree", "cluster"), default="torus",
                   help="simulated machine (default torus; see `mpiopt simulate --help`)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--order", metavar="FILE", help="MPICH_RANK_ORDER file (-R numbering)")
    where.add_argument("--method", type=int, choices=(0, 1, 2),
                       help="0 round-robin, 1 SMP, 2 folded")
    p.add_argument("--steps", type=int, default=5, help="halo-exchange steps (default 5)")
    p.add_argument("--bytes", type=int, default=8192, metavar="B",
                   help="bytes per halo message (default 8192)")
    p.add_argument("--periodic", action="store_true", help="the grid wraps around")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per simulation (default 3600)")


def simulate(exe: Path, placement, grid: Grid, args, workdir: Path) -> dict:
    """One smpirun of halo2d with `placement` turned into the SMPI hostfile."""
    nodes = placement.nnodes
    xml, _ = smpi.platform_xml(args.platform, nodes)
    platform = workdir / f"{args.platform}-{nodes}.xml"
    platform.write_text(xml)
    tag = re.sub(r"\W+", "-", placement.name).strip("-")
    hostfile = workdir / f"hostfile-{tag}"
    hostfile.write_text(convert(placement, [f"node-{i}" for i in range(nodes)], "smpi"))
    # halo2d has no global state to privatize; without it SMPI does not map a copy of the
    # program per rank, which takes minutes at thousands of ranks
    r = smpi.smpirun(exe, [*grid.dims, args.steps, args.bytes, int(args.periodic)], grid.size,
                     platform, hostfile, config=["--cfg=smpi/privatization:no"],
                     timeout=args.timeout, cwd=workdir)
    m = _RESULT.search(r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"smpirun of halo2d failed (exit {r.returncode}):\n"
                           f"{(r.stdout + r.stderr)[-2000:]}")
    return {"placement": placement.name, "time_per_step": float(m.group(1)),
            "checksum": float(m.group(2))}


def simulate_all(grid: Grid, placements, args) -> list[dict]:
    # it needs nothing of libmpiopt, so it is not part of the CMake build
    exe = smpi.build_program(mpi.repo_root() / "examples" / "halo2d.c")
    # a directory per run: several simulations may run at once, and smpirun leaves files behind
    workdir = Path(tempfile.mkdtemp(prefix=f"halo-{grid.dims[0]}x{grid.dims[1]}-{args.ppn}-",
                                    dir=exe.parent))
    pattern = HaloPattern(grid, "5pt", args.periodic)
    rows = []
    for pl in placements:
        row = simulate(exe, pl, grid, args, workdir)
        row.update({k: v for k, v in pattern.stats(pl, args.bytes).items()
                    if k in ("nodes", "messages_off_node", "bytes_off_node", "max_node_off_node_bytes")})
        rows.append(row)
    shutil.rmtree(workdir, ignore_errors=True)
    smp = rows[-1]
    for row in rows:
        row["ratio_to_smp"] = row["time_per_step"] / smp["time_per_step"]
    if len({row["checksum"] for row in rows}) != 1:
        # the same program on the same grid computes the same result wherever its ranks run
        raise RuntimeError(f"halo2d checksums differ between placements: {rows}")
    return rows


def run(args) -> int:
    try:
        dims = parse_int_list(args.grid, "--grid")
        if len(dims) != 2:
            raise PlacementError(f"--grid must be X,Y (halo2d is 2-D), got {args.grid}")
        if args.ppn < 1 or args.steps < 1 or args.bytes < 0:
            raise PlacementError("--ppn and --steps must be at least 1, --bytes at least 0")
        grid = Grid(tuple(dims), "R")
        if args.order:
            chosen = order_placement(read_order(args.order, grid.size), args.ppn,
                                     name=f"order ({Path(args.order).name})")
        else:
            chosen = method_placement(args.method, grid.size, args.ppn)
    except PlacementError as e:
        raise UsageError(str(e)) from None
    placements = [chosen] if args.method == 1 else [chosen, method_placement(1, grid.size, args.ppn)]
    try:
        rows = simulate_all(grid, placements, args)
    except RuntimeError as e:
        print(f"mpiopt: error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"grid": list(grid.dims), "ranks": grid.size, "ranks_per_node": args.ppn,
                          "platform": args.platform, "steps": args.steps, "bytes": args.bytes,
                          "periodic": args.periodic, "results": rows}, indent=1))
        return 0
    table = Table(title=f"simulated halo exchange: {grid.dims[0]}x{grid.dims[1]} ranks, "
                  f"{args.ppn}/node on a {args.platform} of {rows[0]['nodes']} nodes, "
                  f"{args.bytes} B messages, {args.steps} steps")
    for col in ("placement", "off-node messages", "off-node bytes", "time per step", "vs SMP"):
        table.add_column(col, justify="left" if col == "placement" else "right",
                         no_wrap=col == "placement")
    for row in rows:
        table.add_row(row["placement"], f"{row['messages_off_node']:,}", f"{row['bytes_off_node']:.3G}",
                      f"{row['time_per_step'] * 1e6:.2f} µs", f"{row['ratio_to_smp']:.2f}x")
    report_console().print(table)
    return 0
