"""`mpiopt bench [NAME]`: benchmarks against the vendor MPI (modules of mpiopt.benchmarks)."""
from __future__ import annotations

import argparse

from .. import benchmarks
from ..plugins import plugin_modules

EXAMPLE = """examples:
  mpiopt bench                     the main report: every benchmark marked for it, default settings
  mpiopt bench kernels --json      one benchmark, JSON for scripts
"""


def _modules():
    return plugin_modules(benchmarks, "NAME", "run")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--results", default="results", help="directory for tables and plots (default: results)")


def register(sub) -> None:
    p = sub.add_parser("bench", help="benchmarks against the vendor MPI",
                       description="Benchmarks against the vendor MPI. Without a NAME, runs the main "
                       "report (what `make run` shows).",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(p)
    bsub = p.add_subparsers(dest="bench_name", metavar="NAME")
    parsers = {}
    for mod in _modules():
        bp = bsub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP,
                             formatter_class=argparse.RawDescriptionHelpFormatter,
                             epilog=getattr(mod, "EXAMPLE", None))
        _common(bp)
        mod.add_arguments(bp)
        bp.set_defaults(func=mod.run)
        parsers[mod.NAME] = bp

    def run_report(args) -> int:
        status = 0
        for mod in _modules():
            if not getattr(mod, "IN_REPORT", False):
                continue
            # a module may ask for several runs in the report (REPORT_RUNS: argument lists)
            for argv in getattr(mod, "REPORT_RUNS", [[]]):
                sub_args = parsers[mod.NAME].parse_args(argv)
                sub_args.json, sub_args.results = args.json, args.results
                status = max(status, int(mod.run(sub_args) or 0))
        return status

    p.set_defaults(func=run_report)
