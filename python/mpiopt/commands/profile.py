"""`mpiopt profile`: run an MPI program with libmpiopt-profile preloaded (in front of the
drop-in) and show where its MPI time went. The profile itself is written by rank 0 at
MPI_Finalize; this command launches through `mpiopt run` and then reads it."""
from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from ..errors import UsageError
from ..launch import user_preloads
from ..profile import PROFILE_NAME, load, node_split, site_rows
from . import report, run

TRACE_DIR = "mpiopt-trace"   # the OTF2 archive's directory beside the profile (src/profile/trace.c)
MAX_STACK = 8     # frames above the caller a site keeps (PROF_SITE_FRAMES - 1 in src/profile)

EXAMPLE = """examples:
  mpiopt profile -np 8 -- ./cg 1000              profile + libmpiopt drop-in, report printed
  mpiopt profile -np 8 --no-preload -- ./cg 1000  profile of the vendor's collectives alone
  MPIOPT_PROFILE_SYNC=1 mpiopt profile -np 8 -- ./app   time a barrier before each collective
  mpiopt profile -np 4 -o runs/slow -- python3 app.py   mpi4py; files in runs/slow/
  mpiopt report runs/fast/mpiopt-profile.json runs/slow/mpiopt-profile.json
  mpiopt profile -np 4 --sites -- ./app          + top call sites (file:line of each MPI call)
  mpiopt profile -np 4 --sites --stack 2 -- ./app   sites told apart by the 2 callers above
  mpiopt profile -np 4 --trace -- ./app          + timeline: DIR/mpiopt-trace/traces.otf2 (OTF2)
  mpiopt report mpiopt-profile.json --chrome-trace timeline.json   for ui.perfetto.dev
  mpiopt profile -np 4 --preload ./libtool.so -- ./app
      your own tool preloaded too: LD_PRELOAD=$PWD/libtool.so:.../libmpiopt-profile.so:.../libmpiopt.so

{order}
Writes DIR/mpiopt-profile.json (for `mpiopt report`, `mpiopt place search --matrix`) and
DIR/mpiopt-profile.txt (the Cray-style text report). Launcher options as for `mpiopt run`.
"""
EXAMPLE = EXAMPLE.format(order=run.preload_order_help(
    "libmpiopt-profile.so, then libmpiopt.so (not with --no-preload)",
    "A tool in front that makes MPI calls, or wraps the program's and forwards them to MPI_*, is "
    "profiled with the program (those calls' sites are in the tool); one that forwards to PMPI_* "
    "hides the program's calls from the profiler."))


def profile(args) -> int:
    user_preloads(args.preload)    # a bad --preload: an error before DIR is made or emptied
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the output directory {out}: {e.strerror}")
    # an older profile in DIR must not pass for this run's if this one dies before MPI_Finalize
    if args.trace_events is not None and args.trace_events < 1:
        raise UsageError(f"--trace-events must be at least 1, got {args.trace_events}")
    for stale in [out / PROFILE_NAME, out / "mpiopt-profile.txt", *out.glob(".mpiopt-profile.*.tmp.*")]:
        stale.unlink(missing_ok=True)
    # OTF2 does not write over an archive: an older trace goes (only what the profiler writes)
    trace_dir = out / TRACE_DIR
    if trace_dir.is_dir() and (trace_dir / "traces.otf2").exists():
        shutil.rmtree(trace_dir)
    if args.stack is not None and not 0 <= args.stack <= MAX_STACK:
        raise UsageError(f"--stack must be 0..{MAX_STACK}, got {args.stack}")
    want_json, args.json = args.json, False
    args.profile_dir = out.resolve()
    args.profile_env = {}
    if args.sites or args.stack:
        args.profile_env["MPIOPT_PROFILE_SITES"] = "1"
        args.profile_env["MPIOPT_PROFILE_STACK"] = str(args.stack or 0)
    if args.trace or args.trace_events:
        args.profile_env["MPIOPT_PROFILE_TRACE"] = "1"
        if args.trace_events:
            args.profile_env["MPIOPT_PROFILE_TRACE_EVENTS"] = str(args.trace_events)
    status = run.run(args)
    path = out / PROFILE_NAME
    if not path.exists():
        for partial in out.glob(".mpiopt-profile.*.tmp.*"):
            partial.unlink(missing_ok=True)
        raise UsageError(f"no profile written in {out}: the program exited with status {status} "
                         "before rank 0 finished MPI_Finalize (aborted, killed, or it never "
                         "called MPI_Finalize)")
    prof = load(path)
    if want_json:
        print(json.dumps({"profile": str(path), "text_report": str(out / "mpiopt-profile.txt"),
                          "flavour": getattr(args, "flavour_used", None), "exit_status": status,
                          "ld_preload": getattr(args, "ld_preload_used", None),
                          "ranks": prof.ranks, "mpi": prof.data["mpi"], "hosts": prof.hosts,
                          "node_split": node_split(prof),
                          **({"sites": site_rows(prof)} if args.sites or args.stack else {}),
                          **({"trace": prof.data.get("trace")} if args.trace or args.trace_events else {})},
                         indent=1))
    else:
        report.print_profile(prof, top=args.top)
        if args.sites or args.stack:
            report.print_sites(prof, args.top or report.SITES_SHOWN, report.report_console())
        if args.trace or args.trace_events:
            report.print_trace_note(prof)
        print(f"profile: {path} (text report: {out / 'mpiopt-profile.txt'})")
    return status


def register(sub) -> None:
    p = sub.add_parser("profile", help="profile an MPI program (load imbalance, MPI time, matrix)",
                       description="Run an unmodified MPI program (C, Fortran, mpi4py) like "
                       "`mpiopt run`, with libmpiopt-profile.so preloaded in front of libmpiopt.so, "
                       "and print the min/max/avg (minPE/maxPE) report of its MPI time.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_launch_arguments(p, json_help="print a JSON summary (paths, exit status, LD_PRELOAD, "
                             "MPI totals) instead of the tables")
    p.add_argument("-o", "--output", default=os.curdir, metavar="DIR",
                   help="directory for mpiopt-profile.json and .txt (default: the current one)")
    p.add_argument("--top", type=int, default=0, metavar="N",
                   help="also list the N calls and ranks that dominate")
    p.add_argument("--sites", action="store_true",
                   help="count every call by call site (the caller's file:line and function, "
                   "resolved at MPI_Finalize) and print the top call sites")
    p.add_argument("--stack", type=int, metavar="N",
                   help=f"with --sites: tell sites apart by the N callers above too (0..{MAX_STACK})")
    p.add_argument("--trace", action="store_true",
                   help="also record a timeline (each call's enter and leave, bytes, peer, "
                   "communicator; MPI_Pcontrol regions) as an OTF2 archive DIR/mpiopt-trace")
    p.add_argument("--trace-events", type=int, metavar="N",
                   help="events a thread's trace buffer holds (default 262144); later ones are "
                   "dropped and counted")
    p.set_defaults(func=profile)
