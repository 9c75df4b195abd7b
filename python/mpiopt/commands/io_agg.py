"""`mpiopt io-agg`: where the MPI-IO aggregators land under a rank placement, and the ROMIO hints
that put them on distinct nodes; with --lustre, the striping for a parallel write."""
from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.table import Table

from ..errors import UsageError
from ..files import write_atomically
from ..units import parse_size
from ..placement import PlacementError, generate, method_placement, order_placement, read_hosts, read_order
from ..placement import lustre
from ..placement.io_agg import (SELECTIONS, aggregator_table, fix_hints, host_names, rank_names,
                                romio_aggregators, romio_hints_text, stride_aggregators)
from .grid_arguments import add_curve_arguments, add_numbering_arguments
from .grid_order import options_from_args

EXAMPLE = """examples:
  mpiopt io-agg --ppn 16 -g 16,16 -c 2,8 --cb-nodes 16 -o romio_hints
      the case study: grid_order 2x8 cells (method 3), 16 aggregators chosen by rank stride ->
      8 on each of two nodes; prints the hints that give one per node and writes them
  ROMIO_HINTS=romio_hints mpirun.mpich -f machines -np 256 ./app
  mpiopt io-agg --ppn 4 --method 0 --nodes 4 --cb-nodes 4 --select romio --json
  mpiopt io-agg --lustre --np 4096 --osts 48 --pattern 'wrfout*' --dir run/
      Lustre striping for 4096 writers: 32 OSTs (the study's 1/2 sqrt(P), even), 1 MiB
      stripes, 32 aggregators; prints lfs setstripe, the ROMIO hints, MPICH_MPIIO_HINTS
  mpiopt io-agg --lustre --ppn 16 -g 16,16 -c 2,8
      the same for the placement's 256 ranks, with the cb_config_list that puts the 8
      aggregators on distinct nodes

Open MPI: cb_nodes / cb_config_list are ROMIO hints; Open MPI's default IO component OMPIO
ignores cb_config_list (it has its own aggregator selection, io_ompio_num_aggregators). Select
ROMIO with `mpirun --mca io romio321 …` (mpiopt run --mpi openmpi does this with --io-hints).
"""

OPENMPI_NOTE = ("Open MPI: these hints need the ROMIO component: mpirun --mca io romio321 "
                "(OMPIO, the default, ignores cb_config_list; it honours cb_nodes only as a "
                "hint to its own aggregator count)")


def register(sub) -> None:
    p = sub.add_parser("io-agg", help="MPI-IO aggregator placement under a rank order, and the fix",
                       description="Prints the AGG / Rank / node table (as Cray's "
                       "MPICH_MPIIO_AGGREGATOR_PLACEMENT_DISPLAY shows it) for a rank placement, "
                       "flags nodes holding more than one aggregator, and gives ROMIO hints "
                       "(cb_nodes, cb_config_list) that put the aggregators on distinct nodes.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ppn", type=int, metavar="K", help="ranks per node (needed with a placement)")
    p.add_argument("--cb-nodes", type=int, metavar="C",
                   help="number of aggregators (needed without --lustre; with it, default: one "
                   "per OST, the striping factor)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--method", type=int, choices=(0, 1, 2),
                       help="0 round-robin, 1 SMP, 2 folded (needs --nodes or --np)")
    where.add_argument("--order", metavar="FILE", help="MPICH_RANK_ORDER file (method 3)")
    where.add_argument("-g", dest="grid", metavar="N1,N2,…",
                       help="grid_order grid (method 3 from grid_order options -c/-C/-R/-Z/-P/-H)")
    p.add_argument("-c", dest="cell", metavar="n1,n2,…", help="grid_order cell (with -g)")
    add_numbering_arguments(p)
    add_curve_arguments(p)
    p.add_argument("--nodes", type=int, metavar="N", help="number of nodes (with --method)")
    p.add_argument("--np", type=int, help="number of ranks (with --method; default nodes*ppn)")
    p.add_argument("--hosts", metavar="H1,H2,…|HOSTFILE",
                   help="node names in order (default nid00000, nid00001, …)")
    p.add_argument("--select", choices=SELECTIONS, default="stride",
                   help="how the library picks aggregators: stride = rank i*(P/C), the rank-only "
                   "choice of the case study (default); romio = ROMIO's default cb_config_list *:1")
    p.add_argument("--mpi", choices=("mpich", "openmpi"), default="mpich",
                   help="whose notes to print (Open MPI: select the ROMIO component)")
    p.add_argument("-o", "--output", metavar="HINTS_FILE", help="write the ROMIO_HINTS file here")
    lus = p.add_argument_group("Lustre striping (--lustre)")
    lus.add_argument("--lustre", action="store_true",
                     help="print the striping for a parallel write: factor 1/2 sqrt(ranks) in "
                     "multiples of 2, at least 2, at most the OSTs")
    lus.add_argument("--osts", type=int, metavar="N",
                     help="OSTs of the file system (default: counted by `lfs df DIR` when lfs "
                     "is installed; else no cap)")
    lus.add_argument("--stripe-size", default="1M", metavar="SIZE",
                     help="bytes per OST before the next (multiple of 64K; default 1M)")
    lus.add_argument("--dir", default="OUTPUT_DIR", metavar="DIR",
                     help="the output directory for lfs setstripe (and lfs df)")
    lus.add_argument("--pattern", default="*", metavar="GLOB",
                     help="file pattern for MPICH_MPIIO_HINTS (e.g. 'wrfout*'; default *)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, dim_order=None, max_rank=None, ranks_per_line=None, start=0,
                   table=False)


def _placement(args):
    if args.grid:
        args.ranks_per_node = args.ppn
        go = generate(options_from_args(args))
        return order_placement(go.order, args.ppn, name="custom order (grid_order)")
    if args.cell or args.numbering or args.curve:
        raise UsageError("-c/-C/-R/-Z/-P/-H are grid_order options: they need -g")
    if args.order:
        return order_placement(read_order(args.order), args.ppn, name=f"custom order ({args.order})")
    if args.np is None and args.nodes is None:
        raise UsageError("--method needs --nodes N (or --np P)")
    np_ = args.np if args.np is not None else args.nodes * args.ppn
    return method_placement(args.method, np_, args.ppn)


def print_hints(hints: dict[str, str]) -> None:
    """The hints as a ROMIO_HINTS file and as MPI_Info_set calls (plain print: never wrapped)."""
    print("ROMIO_HINTS file:\n" + romio_hints_text(hints), end="")
    print("MPI_Info:\n" + "".join(f'  MPI_Info_set(info, "{k}", "{v}");\n'
                                  for k, v in hints.items()), end="")


def _has_placement(args) -> bool:
    return any(v is not None for v in (args.method, args.order, args.grid))


def run(args) -> int:
    if args.lustre:
        return run_lustre(args)
    if args.ppn is None or args.cb_nodes is None or not _has_placement(args):
        raise UsageError("io-agg needs --ppn, --cb-nodes and a placement (--method, --order or "
                         "-g), or --lustre")
    return run_aggregators(args)


def run_lustre(args) -> int:
    """The striping plan; with a placement also the cb_config_list that spreads its aggregators."""
    try:
        stripe_size = parse_size(args.stripe_size, 1)
        placement = None
        if _has_placement(args):
            if args.ppn is None or args.ppn < 1:
                raise UsageError("a placement needs --ppn K (at least 1)")
            placement = _placement(args)
            if args.np is not None and args.np != placement.nranks:
                raise UsageError(f"--np {args.np} disagrees with the placement's "
                                 f"{placement.nranks} ranks")
            nranks = placement.nranks
        elif args.np is None:
            raise UsageError("--lustre needs the number of ranks: --np P (or a placement)")
        else:
            nranks = args.np
        osts, osts_from = args.osts, "--osts"
        if osts is None:
            osts, osts_from = lustre.ost_count(args.dir), "lfs df"
        plan = lustre.plan(nranks, osts, args.cb_nodes, stripe_size)
        hints = plan.romio_hints()
        if placement is not None:
            hosts = host_names(placement.nnodes, read_hosts(args.hosts) if args.hosts else None)
            hints.update(fix_hints(placement, plan.cb_nodes, hosts))
        mpich_line = plan.mpich_mpiio_hints(args.pattern, hints)
    except PlacementError as e:
        raise UsageError(str(e)) from None
    if args.output:
        try:
            write_atomically(args.output, romio_hints_text(hints))
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror}") from None
    setstripe = plan.setstripe(args.dir)
    ompio = (f"mpirun --mca fs_lustre_stripe_width {plan.factor} "
             f"--mca fs_lustre_stripe_size {plan.stripe_size}")
    if args.json:
        print(json.dumps({"ranks": nranks, "striping_factor": plan.factor,
                          "stripe_size": plan.stripe_size, "cb_nodes": plan.cb_nodes,
                          "osts": osts, "osts_from": osts_from if osts is not None else None,
                          "setstripe": setstripe, "hints": hints,
                          "mpich_mpiio_hints": mpich_line, "ompio": ompio,
                          "placement": placement.name if placement else None}))
        return 0
    cap = (f"{osts} OSTs ({osts_from})" if osts is not None
           else "OSTs unknown (no --osts, no lfs): not capped")
    print(f"{nranks} ranks: striping factor {plan.factor} (1/2 sqrt({nranks}) = "
          f"{nranks ** 0.5 / 2:.1f}, even, >= 2; {cap}), stripe size "
          f"{plan.stripe_size} B, cb_nodes {plan.cb_nodes}")
    # plain print: a command or hint must not be wrapped by a console
    print("Lustre (before the files are created; new files in the directory inherit it):\n  "
          + setstripe)
    print_hints(hints)
    print("Cray MPICH:\n  " + mpich_line)
    if args.mpi == "openmpi":
        print(OPENMPI_NOTE)
        print("Open MPI's OMPIO instead (its fs_lustre names):\n  " + ompio)
    if args.output:
        print(f"wrote {args.output}")
    return 0


def run_aggregators(args) -> int:
    try:
        if args.ppn < 1:
            raise UsageError(f"--ppn must be at least 1, got {args.ppn}")
        placement = _placement(args)
        if args.nodes is not None and args.nodes < placement.nnodes:
            raise UsageError(f"--nodes {args.nodes} is too few: the placement needs {placement.nnodes}")
        hosts = host_names(placement.nnodes, read_hosts(args.hosts) if args.hosts else None)
        names = rank_names(placement, hosts)
        if args.select == "stride":
            aggs = stride_aggregators(placement.nranks, args.cb_nodes)
        else:
            aggs = romio_aggregators(names, "*:1", args.cb_nodes)
        before = aggregator_table(placement, aggs, hosts)
        hints = fix_hints(placement, args.cb_nodes, hosts)
        after = aggregator_table(placement, romio_aggregators(names, hints["cb_config_list"],
                                                              args.cb_nodes), hosts)
    except PlacementError as e:
        raise UsageError(str(e)) from None
    if args.output:
        try:
            write_atomically(args.output, romio_hints_text(hints))
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror}") from None
    if args.json:
        print(json.dumps({"placement": placement.name, "ranks": placement.nranks,
                          "nodes": placement.nnodes, "ppn": placement.ppn,
                          "cb_nodes": args.cb_nodes, "select": args.select,
                          "aggregators": before.rows(), "crowded": before.crowded(),
                          "hints": hints, "fixed": after.rows(), "fixed_crowded": after.crowded(),
                          "openmpi_io_component": "romio321" if args.mpi == "openmpi" else None}))
        return 0
    console = Console(file=sys.stdout)
    print(f"{placement.name}: {placement.nranks} ranks, {placement.nnodes} nodes x "
          f"{placement.ppn}, cb_nodes={args.cb_nodes}, selection {args.select}")
    for title, table in (("as placed", before), ("with the hints", after)):
        crowded = table.crowded()
        t = Table(title=f"aggregators {title}")
        for col in ("AGG", "Rank", "node", ""):
            t.add_column(col, justify="right" if col in ("AGG", "Rank") else "left")
        for row in table.rows():
            flag = "shared" if row["node"] in crowded else ""
            t.add_row(str(row["agg"]), str(row["rank"]), row["node"], flag)
        console.print(t)
        if crowded and table is after:
            console.print(f"cb_nodes {args.cb_nodes} > {placement.nnodes} nodes: sharing is "
                          "unavoidable; the hints spread the aggregators evenly")
        elif crowded:
            console.print("nodes with more than one aggregator: " + "; ".join(
                f"{h} ({len(a)})" for h, a in crowded.items()))
        else:
            console.print("every aggregator on its own node")
    # plain print: a hint value must not be wrapped by the console
    print_hints(hints)
    if args.mpi == "openmpi":
        print(OPENMPI_NOTE)
    if args.output:
        print(f"wrote {args.output}")
    return 0
