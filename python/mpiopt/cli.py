"""The `mpiopt` command line: subcommands are the modules of mpiopt.commands."""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys

from . import __version__, commands
from .errors import UsageError
from .jobs import Terminated, exit_status, handle_signals
from .plugins import plugin_modules


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given the command line, of its command alone where its
    first word names one (each command's module imports what it needs, numpy and matplotlib
    among them: importing them all cost every run of a light command a quarter of a second)."""
    command = next((a for a in (argv or []) if not a.startswith("-")), None)
    module_name = command.replace("-", "_") if command else None
    if module_name in _command_module_names():
        parser, sub = _empty_parser()
        module = importlib.import_module(f"{commands.__name__}.{module_name}")
        if hasattr(module, "register"):
            module.register(sub)
            if command in sub.choices:
                return parser
    parser, sub = _empty_parser()
    for module in plugin_modules(commands, "register"):
        module.register(sub)
    return parser


def _command_module_names() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(commands.__path__)}


def _empty_parser():
    """(the top-level parser, its subparsers) with no command registered yet."""
    parser = argparse.ArgumentParser(
        prog="mpiopt",
        description="Fast MPI reductions and collectives: benchmarks, tuning, simulation, "
        "rank placement and source transformation.",
        epilog="Example: mpiopt bench          (the kernel and allreduce report against the vendor MPI)\n"
        "Run 'mpiopt COMMAND --help' for a command's options and an example.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mpiopt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser, sub


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        # SIGTERM and SIGHUP raise, as SIGINT does, so that the MPI and SMPI jobs a command
        # started end with it (jobs.run) rather than live on
        with handle_signals():
            rc = int(args.func(args) or 0)
            sys.stdout.flush()  # here, so that a closed pipe is caught below, not at exit
        return rc
    except UsageError as e:
        print(f"mpiopt: error: {e}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as e:
        return exit_status(e)       # 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP
    except BrokenPipeError:
        # the reader went away (`mpiopt layout | head`): stop quietly, as a Unix filter does on
        # SIGPIPE, and keep Python from complaining when it flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
