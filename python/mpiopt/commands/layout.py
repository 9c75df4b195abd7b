"""`mpiopt layout`: the hybrid MPI+OpenMP layouts of a 2-D stencil code on a node type (ranks a
node x threads a rank), each with its decomposition, grid_order cell, halo traffic, launch lines
and a modelled step time; with --run, the layouts that fit this machine run and are timed."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import asdict, fields
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .. import mpi
from ..benchmarks.scaling import DEFAULT_STEP_REGEX, executable, run_real, step_time, substitute
from ..errors import UsageError
from ..files import atomic_output
from ..placement import PlacementError, parse_int_list
from ..placement.layout import OMP_ENV, ModelParameters, candidates
from ..placement.topology import this_machine, topology

EXAMPLE = """examples:
  mpiopt layout --topology "numa:4 core:8" -g 1024,1024 --nodes 32
      the case study's node (4 NUMA regions of 8 cores) on 32 nodes: 32x1, 16x2, 8x4, 4x8 ranks x
      threads, each with its decomposition, grid_order cell, halo bytes and launch lines
  mpiopt layout --topology "numa:4 core:8" -g 32,32 --json
      -g without --nodes is the flat-MPI rank grid: 1024 cores, so 32 nodes of 32
  mpiopt layout --topology node.xml -g 2000,1000 --nodes 8 --png layout.png
      an hwloc XML file (lstopo --of xml > node.xml on the target node)
  mpiopt layout --run -g 512,512 -- examples/halo2d.c {d1} {d0} 50 {halo_bytes} 0 {local1} {local0}
      the layouts that fit this machine, run (a .c file is compiled with mpicc -fopenmp), timed
      beside the model (halo2d's rows are its first argument: the model's dimension 2)

Placeholders in the program's arguments: {p} ranks, {t} threads a rank, {d0} {d1} the
decomposition, {local0} {local1} a rank's block, {halo_bytes} its largest halo message. The time
per step is group 1 of --step-regex in the output (default time_per_step=…, what halo2d prints).
The model and its parameters: docs/layout.md.
"""

MODEL_OPTIONS = {   # option -> (ModelParameters field, help)
    "--point-ns": ("point_ns", "ns a grid point takes on one core"),
    "--row-ns": ("row_ns", "ns of start-up an inner loop (row)"),
    "--serial": ("serial", "share of a rank's work that does not thread (0..1)"),
    "--omp-us": ("omp_us", "µs of OpenMP fork/join a step"),
    "--latency-us": ("latency_us", "µs latency a message"),
    "--nic-gbs": ("nic_gbs", "GB/s of a node's network card"),
    "--nic-msg-us": ("nic_msg_us", "µs the network card spends a message"),
    "--shm-gbs": ("shm_gbs", "GB/s a rank copies halo data at"),
    "--halo-width": ("width", "halo width in grid points"),
    "--point-bytes": ("point_bytes", "halo bytes a grid point (fields x 8)"),
}


def register(sub) -> None:
    p = sub.add_parser("layout", help="hybrid MPI+OpenMP layouts: ranks x threads, cells, launch lines",
                       description="Lists the ranks-a-node x threads-a-rank layouts of a 2-D stencil "
                       "code (threads within one NUMA region unless --cross-numa), each with its "
                       "decomposition, grid_order cell, halo traffic under it, a modelled step "
                       "time and the launch lines for Open MPI, MPICH, Slurm and OpenMP.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-g", dest="grid", required=True, metavar="NX,NY",
                   help="global grid, points (without --nodes: the flat-MPI rank grid)")
    p.add_argument("--stencil", choices=("5pt", "9pt"), default="5pt", help="halo neighbours (default 5pt)")
    p.add_argument("--periodic", action="store_true", help="the grid wraps around")
    p.add_argument("--nodes", type=int, metavar="N",
                   help="nodes (default: points of -g / cores a node, i.e. -g is the flat-MPI "
                   "rank grid; with --run 1)")
    p.add_argument("--topology", metavar="'numa:4 core:8'|XML",
                   help="the node: hwloc synthetic levels or an hwloc XML file (default: this "
                   "machine, by lstopo)")
    p.add_argument("--cross-numa", action="store_true",
                   help="also layouts whose threads span NUMA regions")
    model = p.add_argument_group("model parameters (docs/layout.md)")
    defaults = ModelParameters()
    for option, (name, text) in MODEL_OPTIONS.items():
        kind = type(getattr(defaults, name))
        model.add_argument(option, dest=name, type=kind, default=getattr(defaults, name),
                           help=f"{text} (default {getattr(defaults, name)})")
    p.add_argument("--run", action="store_true",
                   help="run the layouts that fit this machine (the program after --) and time them")
    p.add_argument("--mpi", choices=mpi.FLAVOURS, help="MPI for --run (default: the first installed)")
    p.add_argument("--step-regex", default=DEFAULT_STEP_REGEX,
                   help="regex whose group 1 is the time per step in the output ('' = wall time)")
    p.add_argument("--timeout", type=float, default=300, help="seconds a run may take (default 300)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--png", metavar="FILE", help="plot the model (and the measured times) here")
    p.add_argument("app", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS… (with --run)")
    p.set_defaults(func=run)


def _parameters(args) -> ModelParameters:
    params = ModelParameters(**{f.name: getattr(args, f.name) for f in fields(ModelParameters)})
    for name in ("point_ns", "row_ns", "omp_us", "latency_us", "nic_msg_us"):
        if getattr(params, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must not be negative")
    for name in ("nic_gbs", "shm_gbs"):
        if getattr(params, name) <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive")
    if not 0 <= params.serial <= 1:
        raise UsageError(f"--serial must be between 0 and 1, got {params.serial}")
    if params.width < 1 or params.point_bytes < 1:
        raise UsageError("--halo-width and --point-bytes must be at least 1")
    return params


def run(args) -> int:
    app = args.app[1:] if args.app[:1] == ["--"] else args.app
    if app and not args.run:
        raise UsageError("a program after -- is for --run")
    if args.run and not app:
        raise UsageError("--run needs the program after --: mpiopt layout --run -g 512,512 -- ./app …")
    if args.png and not Path(args.png).resolve().parent.is_dir():
        raise UsageError(f"cannot write {args.png}: no such directory")
    try:
        grid = tuple(parse_int_list(args.grid, "-g"))
        if len(grid) != 2 or min(grid) < 1:
            raise UsageError(f"-g needs two positive extents NX,NY, got {args.grid}")
        params = _parameters(args)
        if args.run:
            if args.topology or (args.nodes not in (None, 1)):
                raise UsageError("--run runs on this machine: no --topology, --nodes 1")
            topo, nodes = this_machine(), 1
        else:
            topo = topology(args.topology)
            nodes = args.nodes if args.nodes is not None else _nodes_from_grid(grid, topo.cores)
        layouts = candidates(grid, args.stencil, nodes, topo, params, args.cross_numa,
                             args.periodic)
    except PlacementError as e:
        raise UsageError(str(e)) from None
    rows = [layout.as_dict() for layout in layouts]
    if args.run:
        _measure(rows, app, args)
    if args.png:
        plot(rows, args.png, f"{grid[0]}x{grid[1]} {args.stencil}, {nodes} node(s) of {topo.describe()}")
    if args.json:
        print(json.dumps({"grid": list(grid), "stencil": args.stencil, "nodes": nodes,
                          "topology": {"numa_regions": topo.numa_regions,
                                       "cores_per_numa": topo.cores_per_numa,
                                       "source": topo.source},
                          "parameters": asdict(params),
                          "layouts": rows}))
        return 0
    _print(rows, grid, nodes, topo, args)
    return 0


def _nodes_from_grid(grid, cores: int) -> int:
    points = grid[0] * grid[1]
    if points % cores:
        raise PlacementError(f"-g {grid[0]},{grid[1]} has {points} points, not a multiple of the "
                             f"node's {cores} cores: give --nodes")
    return points // cores


def _measure(rows: list[dict], app: list[str], args) -> None:
    """Each layout run once on this machine with its threads and binding; time per step added."""
    flavours = mpi.available_flavours()
    flavour = args.mpi or (flavours[0] if flavours else None)
    if flavour not in flavours:
        raise UsageError(f"MPI {flavour} is not installed")
    with tempfile.TemporaryDirectory(prefix="mpiopt-layout-") as work:
        exe = executable(Path(app[0]), False, flavour, Path(work), ("-fopenmp",))
        for row in rows:
            r, t = row["ranks_per_node"], row["threads"]
            values = {"p": row["ranks"], "t": t, "d0": row["decomposition"][0],
                      "d1": row["decomposition"][1], "local0": row["block"][0],
                      "local1": row["block"][1],
                      "halo_bytes": max(row["block"]) * args.width * args.point_bytes}
            argv = substitute(app[1:], values)
            env = dict(os.environ)
            env.update(dict(kv.split("=") for kv in OMP_ENV.format(t=t).split()))
            binding = (["--map-by", f"ppr:{r}:node:pe={t}", "--bind-to", "core",
                        "-x", "OMP_NUM_THREADS", "-x", "OMP_PLACES", "-x", "OMP_PROC_BIND"]
                       if flavour == "openmpi" else ["-ppn", str(r), "-bind-to", f"core:{t}"])
            try:
                out, wall = run_real(flavour, exe, argv, row["ranks"], args.timeout, env, binding)
                row["measured_us"] = step_time(out, args.step_regex or None, wall) * 1e6
            except RuntimeError as e:
                raise UsageError(str(e)) from None
            row["run"] = {"mpi": flavour, "argv": argv, "launcher": binding,
                          "env": OMP_ENV.format(t=t), "output": out.strip()[-500:]}


def _print(rows, grid, nodes, topo, args) -> None:
    console = Console(file=sys.stdout, width=110)   # piped: no colour codes; 9 columns
    measured = any("measured_us" in r for r in rows)
    t = Table(title=f"layouts: grid {grid[0]}x{grid[1]} {args.stencil}, {nodes} node(s) of "
              f"{topo.describe()}", caption="best model time first; docs/layout.md")
    cols = ["R x T", "ranks", "decomp.", "block", "cell", "halo B/rank",
            "off-node B/node", "model µs"] + (["measured µs"] if measured else [])
    for c in cols:
        t.add_column(c, justify="right")
    x = lambda v: "x".join(map(str, v))
    for r in rows:
        cells = [f"{r['ranks_per_node']} x {r['threads']}", str(r["ranks"]), x(r["decomposition"]),
                 x(r["block"]), x(r["cell"]), f"{r['halo_bytes_rank']:,}",
                 f"{r['node_off_node_bytes']:,}", f"{r['model_us']:.3g}"]
        if measured:
            cells.append(f"{r['measured_us']:.4g}")
        t.add_row(*cells)
    console.print(t)
    # plain print: launch lines must not be wrapped
    for r in rows:
        print(f"{r['ranks_per_node']} x {r['threads']}:")
        print(f"  rank order:  {r['grid_order']}")
        for name in ("openmpi", "mpich", "slurm"):
            print(f"  {name + ':':12} {r['launch'][name]}")
    if args.png:
        print(f"wrote {args.png}")


def plot(rows: list[dict], path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r['ranks_per_node']}x{r['threads']}" for r in rows]
    compute = [r["compute_us"] for r in rows]
    halo = [r["halo_us"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    pos = range(len(rows))
    ax.bar(pos, compute, 0.4, label="model: compute")
    ax.bar(pos, halo, 0.4, bottom=compute, label="model: halo")
    if any("measured_us" in r for r in rows):
        ax.bar([i + 0.4 for i in pos], [r.get("measured_us", 0) for r in rows], 0.4,
               label="measured")
    ax.set_xticks([i + (0.2 if any("measured_us" in r for r in rows) else 0) for i in pos], labels)
    ax.set_xlabel("ranks a node x threads a rank"), ax.set_ylabel("time per step (µs)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    with atomic_output(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
