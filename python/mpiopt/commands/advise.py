"""`mpiopt advise`: one command that takes a program through profile -> drop-in -> placement ->
transformation and measures, on that program, what each step gains (mpiopt.advise)."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from .. import mpi
from ..advise import launches, output
from ..errors import UsageError
from ..launch import user_preloads
from . import run


EXAMPLE = """examples:
  mpiopt advise -np 4 -- ./cg -n 2000 -i 200
      baseline and profile, the drop-in, placement (4 ranks on 2 cores: nodes of 2), one report
  mpiopt advise -np 4 --source . --build "make CC=mpicc.mpich" --check "energy .*" -- ./app in.txt
      + the costly call sites rewritten in a copy of . , rebuilt, checked and measured
  mpiopt advise -np 8 --ppn 4 --repeat 5 -o advice --json -- python3 app.py
  mpiopt advise -np 4 --preload ./libtool.so -- ./app
      your own tool preloaded in every run: LD_PRELOAD=$PWD/libtool.so:.../libmpiopt-profile.so
      as it is, and :.../libmpiopt.so after it from the drop-in step on

{order}
Every variant runs with the profiler (so each run gives its MPI time); the variants run in turn,
--repeat rounds, and each step is compared with the one before it: median, the runs' range, and
"no measurable change" where the ranges overlap. Writes DIR/report.md, report.html, report.json,
the plots, the order file (placement) and transform.diff (never applied to your tree).
Exit status: 0, or 1 when a step changed the program's output (the report says where).
"""
EXAMPLE = EXAMPLE.format(order=run.preload_order_help(
    "libmpiopt-profile.so (every run), then libmpiopt.so (from the drop-in step on)",
    shown="--json and report.json give each step's LD_PRELOAD (ld_preload)."))


def _variant_rows(results: dict) -> list[list[str]]:
    rows = []
    for s in results["steps"]:
        wall, mpi_t, change = s.get("wall"), s.get("mpi"), s.get("change")
        rows.append([
            s["title"], str(s.get("runs", "-")),
            output.seconds(wall["median"]) if wall else "-",
            f"{wall['spread'] * 100:.0f} %" if wall else "-",
            output.seconds(mpi_t["median"]) if mpi_t else "-",
            f"{change['ratio']:.3f}" if change else "-",
            (f"time: {change['verdict']}; MPI time: {s['mpi_change']['verdict']}"
             if change and s.get("mpi_change") else change["verdict"] if change
             else s.get("status_line", "")),
            s["check"]["message"] if s.get("check") else "",
        ])
    return rows


def _sections(results: dict, plots: dict) -> list[output.Section]:
    S = output.Section
    prof = results["profile"]
    secs = [S("Steps", ["step", "runs", "Init..Finalize", "spread", "MPI time", "÷ previous",
                        "verdict", "output"], _variant_rows(results), results["labels"],
              plots.get("steps"))]
    lines = [f"{prof['ranks']} ranks, MPI {prof['mpi_share'] * 100:.1f} % of the time "
             f"({output.seconds(prof['mpi_time'])} of {output.seconds(prof['wall_time'])} a rank)",
             f"MPI time per rank: min {output.seconds(prof['imbalance']['min'])} (rank "
             f"{prof['imbalance']['min_pe']}), max {output.seconds(prof['imbalance']['max'])} (rank "
             f"{prof['imbalance']['max_pe']}), imbalance {prof['imbalance']['imbalance_pct']:.0f} %"]
    secs.append(S("Profile: reduction calls", ["call", "calls a rank", "average size", "time a rank",
                                                "share of MPI time"],
                  [[r["call"], f"{r['calls']:.0f}", output.nbytes(r["avg_bytes"]), output.seconds(r["time"]),
                    f"{r['share_of_mpi_time'] * 100:.1f} %"] for r in prof["reductions"]],
                  lines + ([] if prof["reductions"] else ["the program makes no reduction call"])))
    if prof["top_sites"]:
        secs.append(S("Profile: costliest call sites", ["call", "where", "function", "calls",
                                                        "time a rank", "share of MPI time"],
                      [[s["call"], s["where"], s["function"], f"{s['count']:.0f}",
                        output.seconds(s["time"]), f"{s['share_of_mpi_time'] * 100:.1f} %"]
                       for s in prof["top_sites"]]))
    secs.append(S("MPI time per call", [], [], [], plots.get("calls")))
    secs.append(S("MPI and compute time per rank", [], [], [], plots.get("ranks")))
    dropin = results.get("dropin_report")
    if dropin:
        secs.append(S("Drop-in: what mpiopt took (MPIOPT_REPORT)",
                      ["entry point", "calls", "by mpiopt", "by vendor", "algorithms | why the vendor's"],
                      [[r["entry"], str(r["calls"]), str(r["by_mpiopt"]), str(r["by_vendor"]), r["details"]]
                       for r in dropin["rows"]], dropin["notes"]))
    pl = results.get("placement")
    if pl:
        lines = [f"nodes of {pl['ppn']} ranks ({pl['why_ppn']}); point-to-point bytes measured: "
                 f"{output.nbytes(pl['total_bytes'])}",
                 f"off-node bytes: SMP order {output.nbytes(pl['smp_off_node_bytes'])}, the order found "
                 f"{output.nbytes(pl['off_node_bytes'])}; order file {pl['order_file']}",
                 f"launch: {pl['launch']}"]
        rows = [[r["placement"], output.nbytes(r["off_node_bytes"]), output.seconds(r["seconds"]),
                 f"{r['seconds'] / pl['simulated'][0]['seconds']:.3f}"] for r in pl.get("simulated", [])]
        secs.append(S(f"Placement ({pl['how']})", ["order", "off-node bytes", "simulated time",
                                                  "÷ SMP"] if rows else [], rows, lines + pl["notes"]))
    tr = results.get("transform")
    if tr:
        secs.append(S("Transformation", [], [], [f"{tr['sites_changed']} call site(s) rewritten in a "
                                                 f"copy ({tr['copy']}); diff: {tr['diff']}",
                                                 *tr["summary"].strip().splitlines()]))
    return secs


def _launcher_for(args, workdir: Path) -> launches.Launcher:
    launcher = launches.Launcher(args.np, args.flavour, workdir, tools=user_preloads(args.preload))
    if args.mpi:
        try:
            inst = mpi.installation(args.mpi)
        except ValueError as e:
            raise UsageError(f"--mpi {args.mpi}: {e}") from None
        if not mpi.in_checkout():
            raise UsageError("--mpi builds mpiopt for that MPI from a source tree; this mpiopt is an "
                             "installed package: use the mpiopt installed for that MPI instead")
        try:
            launcher.lib = mpi.ensure_built(inst, log=lambda line: print(f"  {line}", file=sys.stderr))
        except RuntimeError as e:
            raise UsageError(str(e)) from None
        launcher.profile_lib = launcher.lib.parent / "libmpiopt-profile.so"
        launcher.extra_env = {k: v for k, v in inst.environ({}).items() if k != "PATH"}
        launcher.extra_env["PATH"] = f"{inst.prefix / 'bin'}:{os.environ.get('PATH', '')}"
    return launcher


def _split(command: list[str]) -> list[str]:
    program = command[1:] if command[:1] == ["--"] else command
    if not program:
        raise UsageError("no program to advise on (mpiopt advise -np N -- ./app args)")
    return program


def advise(args) -> int:
    from ..advise.session import Session
    program = _split(args.command)
    user_preloads(args.preload)    # a bad --preload: an error before DIR is made or emptied
    if args.np < 1 or args.repeat < 1:
        raise UsageError("-np and --repeat must be at least 1")
    if bool(args.source) != bool(args.build):
        raise UsageError("--source DIR and --build CMD go together")
    if args.source and not Path(args.source).is_dir():
        raise UsageError(f"--source {args.source}: no such directory")
    if args.check is not None:
        import re
        try:
            re.compile(args.check)
        except re.error as e:
            raise UsageError(f"--check {args.check!r} is not a regular expression: {e}") from None
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {out}: {e.strerror}") from None
    runs = out / "runs"
    shutil.rmtree(runs, ignore_errors=True)   # an older advice's runs must not pass for this one's
    launcher = _launcher_for(args, runs)
    session = Session(args, program, out, launcher)
    results = session.run()
    results["ld_preload"] = launcher.ld_preload
    plots = {}
    if not args.no_plots:
        plots = session.plots()
    sections = _sections(results, plots)
    title = f"mpiopt advise: {' '.join(program)} ({args.np} ranks, {results['flavour']})"
    results["files"] = output.write_files(out, title, sections, results)
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    else:
        output.print_terminal(sections)
        print(f"report: {results['files']['markdown']}, {results['files']['html']}, "
              f"{results['files']['json']}")
    return 1 if any(s.get("check", {}).get("ok") is False for s in results["steps"]) else 0


def register(sub) -> None:
    p = sub.add_parser("advise", help="take a program through profile, drop-in, placement and "
                       "transformation, and measure what each step gains",
                       description="Runs an MPI program as it is and profiled, then under the "
                       "libmpiopt drop-in, with a rank order from its measured communication, and "
                       "rebuilt from transformed sources, each measured against the step before, "
                       "and writes one report.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-np", "-n", type=int, default=2, metavar="N", help="ranks (default 2)")
    p.add_argument("--flavour", choices=list(mpi.FLAVOURS),
                   help="the MPI when it cannot be detected from the program")
    p.add_argument("--mpi", metavar="PREFIX",
                   help="the program uses the MPI installed under PREFIX (pip, Spack, a module): "
                   "mpiopt is built for it")
    p.add_argument("--ppn", type=int, metavar="K",
                   help="ranks per node for the placement step (default: this node's cores when "
                   "-np is larger)")
    p.add_argument("--hosts", metavar="H1,H2",
                   help="nodes to run the placement step on for real (default: simulate it with SMPI)")
    p.add_argument("--source", metavar="DIR", help="the program's source tree, for the "
                   "transformation step (copied; never changed)")
    p.add_argument("--build", metavar="CMD", help="the command that builds the program in DIR "
                   "(run in the copy, e.g. \"make CC=mpicc\")")
    p.add_argument("--check", metavar="REGEX", help="compare only what this matches in stdout "
                   "(default: the whole stdout, floating numbers to a relative 1e-8)")
    p.add_argument("--preload", action="append", metavar="LIB", default=[],
                   help="also preload this shared library (your own tool) in every run, in front "
                   "of mpiopt's; repeat for more, in the order given (the order: see below)")
    p.add_argument("--repeat", type=int, default=3, metavar="R",
                   help="rounds of runs, every variant once a round (default 3)")
    p.add_argument("-o", "--output", default="mpiopt-advise", metavar="DIR",
                   help="directory for the report, plots, runs and diff (default mpiopt-advise)")
    p.add_argument("--no-plots", action="store_true", help="no PNGs (faster)")
    p.add_argument("--json", action="store_true", help="print the report's data as JSON")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS]",
                   help="the program and its arguments, after --")
    p.set_defaults(func=advise)
