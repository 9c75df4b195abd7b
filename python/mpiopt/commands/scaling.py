"""`mpiopt scaling run` and `mpiopt scaling table`: strong- and weak-scaling tables."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .. import mpi
from ..benchmarks.scaling import DEFAULT_STEP_REGEX, plot, study, table
from ..errors import UsageError
from ..simulation import smpi
from ..units import parse_ranks

EXAMPLE = """examples:
  mpiopt scaling run --ranks 1,2,4 --strong --size 4096 -o strong.json -- \\
      examples/halo2d.c {d0} {d1} 20 {local_bytes}
      real runs (a .c file is compiled with the MPI's mpicc); halo bytes = 8 * 4096/d1
  mpiopt scaling run --ranks 16,64,256,1024 --weak --size 512 --simulate --platform torus \\
      --ppn 16 -o weak.json --png weak.png -- examples/halo2d.c {d0} {d1} 5 {local_bytes}
  mpiopt scaling table strong.json --png strong.png

Placeholders in the program's arguments: {p} ranks, {d0} {d1} the MPI_Dims_create
decomposition, {local} the local edge (strong: --size / last dimension; weak: --size),
{local_bytes} = 8*{local}. The time per step is group 1 of --step-regex in the output
(default time_per_step=…, what halo2d prints); --step-regex '' takes the wall time (simulated
time under SMPI).
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
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--strong", dest="weak", action="store_false", help="fixed total size (default)")
    mode.add_argument("--weak", dest="weak", action="store_true", help="fixed size per rank")
    r.add_argument("--size", type=int, help="global edge (strong) or local edge (weak) for {local}")
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


def _show(results: dict, args) -> int:
    rows = table(results)
    if args.png:
        plot(rows, results["mode"], args.png)
    if args.json:
        print(json.dumps({**results, "table": rows}))
        return 0
    where = (f"simulated, {results['platform']}" if results.get("simulated")
             else f"real, {results.get('mpi')}")
    t = Table(title=f"{results['mode']} scaling ({where}); efficiency against {rows[0]['ranks']} ranks")
    for col in ("ranks", "nodes", "decomposition", "time/step (s)", "speed-up", "efficiency"):
        t.add_column(col, justify="right")
    for r in rows:
        dec = "x".join(map(str, r["decomposition"])) if r.get("decomposition") else "-"
        t.add_row(str(r["ranks"]), str(r.get("nodes") or "-"), dec, f"{r['time_per_step']:.4g}",
                  f"{r['speedup']:.2f}", f"{r['efficiency']:.1%}")
    Console(file=sys.stdout).print(t)
    if args.png:
        print(f"wrote {args.png}")
    return 0


def run_study(args) -> int:
    app = args.app[1:] if args.app[:1] == ["--"] else args.app
    if not app:
        raise UsageError("give the program after --: mpiopt scaling run --ranks 1,2,4 -- ./app ARGS")
    ranks = parse_ranks(args.ranks)
    for out in (args.output, args.png):   # before hours of runs, not after
        if out and not Path(out).resolve().parent.is_dir():
            raise UsageError(f"cannot write {out}: no such directory")
    if args.ppn < 1 or args.ndims < 1:
        raise UsageError("--ppn and --ndims must be at least 1")
    if args.size is not None and args.size < 1:
        raise UsageError(f"--size must be at least 1, got {args.size}")
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
        results = study(app, ranks, args.weak, args.size, args.ppn, args.simulate, args.platform,
                        flavour, args.step_regex or None, args.ndims, args.timeout)
    except RuntimeError as e:
        raise UsageError(str(e)) from None
    if args.output:
        fd, tmp = tempfile.mkstemp(dir=Path(args.output).parent or ".", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, args.output)
    return _show(results, args)


def run_table(args) -> int:
    try:
        results = json.loads(Path(args.results).read_text())
    except OSError as e:
        raise UsageError(f"cannot read {args.results}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{args.results} is not JSON: {e}") from None
    if not isinstance(results, dict):
        raise UsageError(f"{args.results}: expected a JSON object with mode and runs")
    return _show(results, args)
