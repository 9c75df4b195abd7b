"""`mpiopt run`: start an unmodified MPI program with libmpiopt preloaded, with the launcher of
the MPI it is linked with (mpiopt/launch.py finds both and plans the launch)."""
from __future__ import annotations

import argparse
import json
import tempfile
import textwrap
from pathlib import Path

from .. import jobs, mpi
from ..errors import UsageError
from ..launch import plan_launch

EXAMPLE = """examples:
  mpiopt run -np 4 -- ./cg 1000                 the MPI this binary links, libmpiopt preloaded
  mpiopt run -np 4 -- python3 app.py            an mpi4py program: the MPI of mpi4py
  MPIOPT_VERBOSE=1 mpiopt run -np 2 -- ./app    rank 0 names the algorithm auto picks
  mpiopt run --report -np 4 -- ./app            at the end: which calls mpiopt ran, which not, why
  mpiopt run -np 4 --bind-to core -- ./app      options mpiopt does not know go to the launcher
  mpiopt run --prefix ~/sw/mpiopt -np 4 -- ./app
                                                an app of an MPI installed elsewhere (module,
                                                Spack, pip): its own mpiexec, and the libmpiopt.so
                                                of the mpiopt installed for it
  mpiopt run -np 8 --rank-order MPICH_RANK_ORDER --hosts n1,n2 --ppn 4 -- ./app
  mpiopt run -np 4 --preload ./libtool.so --preload ./libtrace.so -- ./app
                                                your own tools preloaded too:
                                                LD_PRELOAD=$PWD/libtool.so:$PWD/libtrace.so:.../libmpiopt.so
  LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libasan.so.8 mpiopt run -np 4 --preload ./libtool.so -- ./app
                                                LD_PRELOAD=.../libasan.so.8:$PWD/libtool.so:.../libmpiopt.so

{order}
Options of the launcher (mpirun.openmpi / mpirun.mpich) come before `--`; the program and its
arguments after it. Launcher options that take a value must be written --opt=value or, if mpiopt
would mistake the value for the program, before the first option mpiopt knows.
"""

# The order of LD_PRELOAD (mpi.preload_order), told the same way by run, profile and advise.
def preload_order_help(mpiopt_libs: str, more: str = "",
                       shown: str = "-v and --json print the LD_PRELOAD used.") -> str:
    """The --help paragraph on LD_PRELOAD's order; `mpiopt_libs` names what mpiopt adds last,
    `shown` where the command tells the LD_PRELOAD it used."""
    return textwrap.fill(
        "LD_PRELOAD of the ranks, in this order: the LD_PRELOAD already set in the environment "
        f"(kept as it was), then each --preload LIB in the order given, then {mpiopt_libs}. Your "
        "tools come first because some must (ASan's runtime), and so that a tool wrapping MPI "
        "calls sees the program's calls first, as it would without mpiopt. A --preload file that "
        "is missing or not a shared library is an error (exit 2) and nothing is launched. "
        + shown + (" " + more if more else ""), 96) + "\n"


EXAMPLE = EXAMPLE.format(order=preload_order_help("libmpiopt.so (none with --no-preload)"))

def run(args) -> int:
    with tempfile.TemporaryDirectory(prefix="mpiopt-run-") as workdir:
        launch = plan_launch(args, Path(workdir))
        cmd, env = launch.cmd, launch.env
        if args.dry_run:   # what would run, with the files written for it
            files = {p.name: p.read_text() for p in Path(workdir).iterdir()}
            print(json.dumps({"flavour": launch.flavour, "command": cmd, "files": files,
                              "env": {k: env[k] for k in ("SLURM_HOSTFILE", "LD_PRELOAD") if k in env}}))
            return 0
        if args.verbose:
            pre = f"LD_PRELOAD={env['LD_PRELOAD']} " if env.get("LD_PRELOAD") else ""
            print(f"mpiopt run: {launch.flavour} ({launch.inspected}): {pre}{' '.join(cmd)}", flush=True)
        try:
            # the job inherits mpiopt's stdin, stdout and stderr (the terminal) but runs in a
            # session of its own, so that mpiopt can end it whole when it is stopped; ^C and a
            # hang-up reach the job through mpiopt, which forwards them (jobs.run says why
            # this rather than keeping the job in the terminal's foreground group)
            status = jobs.run(cmd, env=env).returncode
        except OSError as e:
            raise UsageError(f"cannot start {cmd[0]}: {e}")
    if args.json:
        # after the program's own output: what was launched, for scripts that check the drop-in
        print(json.dumps({"flavour": launch.flavour, "detected_from": launch.inspected, "command": cmd,
                          "ld_preload": launch.ld_preload,
                          "drop_in": str(launch.preload) if launch.preload else None,
                          "exit_status": status}))
    args.flavour_used, args.ld_preload_used = launch.flavour, launch.ld_preload
    return status


class _LauncherOptionsParser(argparse.ArgumentParser):
    """Keeps the options mpiopt does not know (they are the launcher's) instead of failing, so
    `mpiopt run -np 4 --bind-to core -- ./app` works."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extra = super().parse_known_args(args, namespace)
        namespace.launcher_extra = list(extra)
        return namespace, []


def add_launch_arguments(p: argparse.ArgumentParser, json_help: str = "after the program's output, "
                         "print one JSON line: flavour, command, LD_PRELOAD, the drop-in, exit status") -> None:
    """The options of `mpiopt run`, shared with `mpiopt profile`; the parser then keeps the
    launcher's own options (see _LauncherOptionsParser)."""
    p.__class__ = _LauncherOptionsParser
    p.add_argument("-np", "-n", type=int, default=1, metavar="N", help="number of processes (default 1)")
    p.add_argument("--flavour", choices=list(mpi.FLAVOURS),
                   help="the MPI to use when it cannot be detected (default: the one the program links)")
    p.add_argument("--no-preload", action="store_true", help="launch without libmpiopt (the vendor alone)")
    p.add_argument("--preload", action="append", metavar="LIB", default=[],
                   help="also preload this shared library (your own tool), in front of mpiopt's; "
                   "repeat for more, in the order given (the order: see below)")
    p.add_argument("--lib", metavar="PATH",
                   help="the libmpiopt.so to preload (default: PREFIX/lib of --prefix, else this "
                        "source tree's build for the program's MPI, else the one pip built into "
                        "the package for it)")
    p.add_argument("--prefix", metavar="PREFIX",
                   help="an mpiopt installation (cmake --install) to take libmpiopt.so from "
                        "(default: $MPIOPT_PREFIX)")
    p.add_argument("--rank-order", metavar="FILE",
                   help="place ranks by this order (grid_order / MPICH_RANK_ORDER format); needs --ppn and hosts")
    p.add_argument("--hosts", metavar="H1,H2", help="hosts for --rank-order, comma-separated")
    p.add_argument("--hostfile", metavar="FILE", help="hosts for --rank-order, one per line")
    p.add_argument("--ppn", type=int, metavar="K", help="ranks per node for --rank-order")
    p.add_argument("--no-srun", action="store_true",
                   help="inside a Slurm allocation (SLURM_JOB_ID set), use mpirun instead of srun")
    p.add_argument("--dry-run", action="store_true",
                   help="print the launch command, environment and placement files as JSON; run nothing")
    p.add_argument("--report", action="store_true",
                   help="at MPI_Finalize, print which reduction calls mpiopt ran and why the others "
                        "went to the vendor (MPIOPT_REPORT=1)")
    p.add_argument("-v", "--verbose", action="store_true", help="print the launch command first")
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS]",
                   help="the program and its arguments, after --")


def register(sub) -> None:
    p = sub.add_parser("run", help="run an MPI program with libmpiopt preloaded (drop-in)",
                       description="Run an unmodified MPI program (C, Fortran, mpi4py) with the "
                       "launcher of the MPI it is linked with and LD_PRELOAD of that MPI's libmpiopt.so.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_launch_arguments(p)
    p.set_defaults(func=run)
