"""`mpiopt scaling run` and `mpiopt scaling table`: strong- and weak-scaling tables."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.table import Table

from .. import mpi
from ..benchmarks.scaling import DEFAULT_STEP_REGEX, MODES, plot, studies, study_list, table
from ..errors import UsageError
from ..files import write_atomically
from ..simulation import smpi
from ..units import parse_ranks
from ..console import console as report_console

EXAMPLE = """examples:
  mpiopt scaling run --ranks 16,64,256,1024 --strong --weak --size 256 --simulate \\
      --platform torus --ppn 16 -o halo.json --png halo.png -- \\
      examples/halo2d.c {d0} {d1} 5 {local_bytes} 0 {local0} {local1}
      both studies in one command, simulated: weak with a 256x256 block a rank; strong with the
      1024x1024 grid of the 16-rank run (256 x 4, its decomposition being 4x4) shared out
  mpiopt scaling run --ranks 1,2,4 --strong --size 4096 -o strong.json -- \\
      examples/halo2d.c {d0} {d1} 20 {local_bytes}
      real runs (a .c file is compiled with the MPI's mpicc); halo bytes = 8 * 4096/d1
  mpiopt scaling table halo.json --png halo.png

--size: with --strong (the default) the global edge, with --weak the local edge; with both, the
weak study's local edge, and the strong study's global edge is --size times the last dimension
of the smallest run's decomposition, so both studies start from the same block a rank.

Placeholders in the program's arguments: {p} ranks, {d0} {d1} the MPI_Dims_create
decomposition, {local0} {local1} the local edge along each dimension (strong: the global edge
split over it; weak: --size), {local} = the last of them, {local_bytes} = 8*{local}. halo2d's
arguments: X Y STEPS HALO_BYTES PERIODIC [LOCAL_X [LOCAL_Y]], a Jacobi sweep over a
LOCAL_X x LOCAL_Y block a step when given. The time per step is group 1 of --step-regex in the
output (default time_per_step=…, what halo2d prints); --step-regex '' takes the wall time
(simulated time under SMPI).
"""


def register(sub) -> None:
    p = sub.add_parser("scaling", help="strong- and weak-scaling tables (real MPI or SMPI)",
                       description="Runs a program at several rank counts and tabulates time per "
                       "step, speed-up and parallel efficiency against the smallest run.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    ssub = p.add_subparsers(dest="scaling_command", metavar="SUBCOMMAND")
    r = ssub.add_parser("run", help="run the study and print its table", epilog=EXAMPLE,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--ranks", required=True, help="rank counts, e.g. 1,2,4")
    r.add_argument("--strong", action="store_true",
                   help="fixed total size (the default; with --weak, both studies)")
    r.add_argument("--weak", action="store_true", help="fixed size per rank")
    r.add_argument("--size", type=int, help="global edge (strong), local edge (weak); with both: "
                   "the weak local edge, see below")
    r.add_argument("--ndims", type=int, default=2, help="dimensions of the decomposition (default 2)")
    r.add_argument("--ppn", type=int, default=1, help="ranks per node (nodes column; SMPI hostfile)")
    r.add_argument("--simulate", action="store_true", help="run under SimGrid SMPI")
    r.add_argument("--platform", default="torus", choices=smpi.PLATFORMS,
                   help="simulated platform (default torus)")
    r.add_argument("--mpi", choices=mpi.FLAVOURS, help="MPI for real runs (default: first built)")
    r.add_argument("--step-regex", default=DEFAULT_STEP_REGEX,
                   help=f"regex whose group 1 is the time per step (default {DEFAULT_STEP_REGEX!r})")
    r.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    r.add_argument("-o", "--output", metavar="RESULTS.json", help="write the results here")
    r.add_argument("--png", metavar="FILE", help="plot time per step and efficiency")
    r.add_argument("--json", action="store_true", help="print JSON")
    r.add_argument("app", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS…")
    r.set_defaults(func=run_study)
    t = ssub.add_parser("table", help="the table of a results file", epilog=EXAMPLE,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("results", metavar="RESULTS.json")
    t.add_argument("--png", metavar="FILE", help="plot time per step and efficiency")
    t.add_argument("--json", action="store_true", help="print JSON")
    t.set_defaults(func=run_table)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _show(results: list[dict], args) -> int:
    """Prints (or --json) the table of each study in `results`; --png plots them all."""
    tables = [(s.get("mode"), table(s)) for s in results]
    if args.png:
        plot(tables, args.png)
    if args.json:
        shown = [{**s, "table": rows} for s, (_, rows) in zip(results, tables)]
        print(json.dumps(shown[0] if len(shown) == 1 else {"studies": shown}))
        return 0
    console = report_console()
    for number, (study, (mode, rows)) in enumerate(zip(results, tables)):
        if number:
            console.print()
        where = (f"simulated, {study['platform']}" if study.get("simulated")
                 else f"real, {study.get('mpi')}")
        edge = "global" if mode == "strong" else "local"
        size = f", {edge} edge {study['size']}" if study.get("size") else ""
        t = Table(title=f"{mode} scaling ({where}{size})",
                  caption=f"speed-up and efficiency against the {rows[0]['ranks']}-rank run")
        for col in ("ranks", "nodes", "decomposition", "time/step (s)", "speed-up", "efficiency"):
            t.add_column(col, justify="right")
        for r in rows:
            dec = "x".join(map(str, r["decomposition"])) if r.get("decomposition") else "-"
            t.add_row(str(r["ranks"]), str(r.get("nodes") or "-"), dec, f"{r['time_per_step']:.4g}",
                      f"{r['speedup']:.2f}", f"{r['efficiency']:.1%}")
        console.print(t)
    if args.png:
        print(f"wrote {args.png}")
    return 0


def run_study(args) -> int:
    app = args.app[1:] if args.app[:1] == ["--"] else args.app
    if not app:
        raise UsageError("give the program after --: mpiopt scaling run --ranks 1,2,4 -- ./app ARGS")
    ranks = parse_ranks(args.ranks)
    modes = [mode for mode, wanted in zip(MODES, (args.strong, args.weak)) if wanted] or ["strong"]
    for out in (args.output, args.png):   # before hours of runs, not after
        if out and not Path(out).resolve().parent.is_dir():
            raise UsageError(f"cannot write {out}: no such directory")
    if args.ppn < 1 or args.ndims < 1:
        raise UsageError("--ppn and --ndims must be at least 1")
    if args.size is not None and args.size < 1:
        raise UsageError(f"--size must be at least 1, got {args.size}")
    if len(modes) > 1 and args.size is None:
        raise UsageError("--strong --weak needs --size: without it both studies would make the "
                         "same runs")
    flavour = None
    if not args.simulate:
        flavours = mpi.available_flavours()
        flavour = args.mpi or (flavours[0] if flavours else None)
        if flavour not in flavours:
            raise UsageError(f"MPI {flavour} is not installed")
    else:
        if not smpi.available():
            raise UsageError("SimGrid SMPI is not installed (smpicc, smpirun)")
    try:
        results = studies(app, ranks, modes, args.size, args.ppn, args.simulate, args.platform,
                          flavour, args.step_regex or None, args.ndims, args.timeout)
    except RuntimeError as e:
        raise UsageError(str(e)) from None
    if args.output:
        # one study: the shape `scaling table` has always read; both: {"studies": [strong, weak]}
        document = results[0] if len(results) == 1 else {"studies": results}
        write_atomically(args.output, json.dumps(document, indent=1) + "\n")
    return _show(results, args)


def run_table(args) -> int:
    try:
        results = json.loads(Path(args.results).read_text())
    except OSError as e:
        raise UsageError(f"cannot read {args.results}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{args.results} is not JSON: {e}") from None
    return _show(study_list(results), args)
