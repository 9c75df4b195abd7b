"""`mpiopt transform FILE.c|FILE.cpp…`: blocking MPI collectives -> nonblocking / persistent ones."""
from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from ..errors import UsageError

EXAMPLE = """examples:
  mpiopt transform cg.c                          transformed source on stdout
  mpiopt transform cg.c --diff                   what would change, as a unified diff
  mpiopt transform cg.c --mode persistent -o cg_p.c --report
  mpiopt transform src/*.c --in-place --json     rewrite files, JSON report for scripts
  mpiopt transform cg.c --mpi mpich -- -DN=1000 -Iinclude   (clang flags after --)
  mpiopt transform src/ComputeDotProduct_ref.cpp -- -Isrc   C++ (.cpp/.cc/.cxx/.C): parsed as C++
  mpiopt profile -np 8 --sites -- ./cg              (cg built with -g) then:
  mpiopt transform cg.c --profile mpiopt-profile.json --report    only calls >= 5 % of MPI time
  mpiopt transform cg.c --profile mpiopt-profile.json --top 2 -o cg_nb.c   the 2 costliest

Each call site is reported: transformed or not, where its wait went and which statement stopped it.
Where the analysis is not sure, the call stays blocking and the report says why.
With --profile, only the call sites the profile found costly change; every other one is listed
with why it was skipped (below threshold, not in top N, not in profile), and so is every profile
site that matched no call in the files given."""


def _add_options(p: argparse.ArgumentParser) -> None:
    out = p.add_mutually_exclusive_group()
    out.add_argument("-o", "--output", metavar="OUT",
                     help="write the result to OUT (a directory when several files are given)")
    out.add_argument("--in-place", action="store_true", help="overwrite the input files")
    out.add_argument("--diff", action="store_true", help="print a unified diff instead of the source")
    p.add_argument("--mode", choices=("nonblocking", "persistent"), default="nonblocking",
                   help="persistent: calls in loops with loop-invariant arguments become "
                   "<Coll>_init + MPI_Start (default: nonblocking)")
    p.add_argument("--report", action="store_true", help="print the per-call-site report (table)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--mpi", choices=("openmpi", "mpich"), default="openmpi",
                   help="MPI whose headers (mpicc.FLAVOUR -show) are used; also the target whose "
                   "persistent names are detected (default: openmpi)")
    p.add_argument("--mpi-version", type=int, choices=(3, 4), default=None,
                   help="target MPI version: 4 uses MPI_<Coll>_init; 3 uses MPIX_<Coll>_init "
                   "(Open MPI) when available, else stays nonblocking (default: detect)")
    p.add_argument("--profile", metavar="mpiopt-profile.json", type=Path,
                   help="rewrite only the call sites this profile (from `mpiopt profile --sites`; "
                   "a profile directory works too) found costly; the rest stay as they are")
    p.add_argument("--top", type=int, metavar="N",
                   help="with --profile: only the N costliest collective call sites of the profile "
                   "(time summed over ranks); alone it sets no percentage threshold")
    p.add_argument("--min-percent", type=float, metavar="P",
                   help="with --profile: only sites with at least P %% of MPI time (summed over "
                   "ranks; default 5 unless --top is given)")
    p.add_argument("-p", "--compile-commands", metavar="compile_commands.json", type=Path,
                   help="compilation database for include paths and macros (default: one in the "
                   "file's directory or a parent)")


def register(sub) -> None:
    p = sub.add_parser("transform", help="rewrite blocking MPI collectives into nonblocking or "
                       "persistent ones (C and C++ sources)",
                       description="Rewrites blocking MPI collectives in C and C++ files into nonblocking ones "
                       "with the wait as late as the data allow, or (in loops, --mode persistent) into "
                       "persistent collectives. Parses with libclang using the chosen MPI's headers (the "
                       "language from the file's suffix: .cpp/.cc/.cxx/.C/.hpp are C++).",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_options(p)
    # Everything from the first file on (options, files, `--` and compiler flags) is parsed again
    # in run(): argparse cannot mix positionals, options and a trailing `-- FLAGS` itself.
    p.add_argument("files", nargs=argparse.REMAINDER, metavar="FILE.c|FILE.cpp ... [-- CLANG_FLAGS]",
                   help="C or C++ sources; after `--`, extra compiler flags for libclang")
    p.set_defaults(func=run)


def _reparse(args) -> tuple[list[str], list[str]]:
    """Files and compiler flags from args.files, with options given after the first file merged
    into `args`."""

    rest, flags = list(args.files), []
    if "--" in rest:
        i = rest.index("--")
        rest, flags = rest[:i], rest[i + 1:]
    again = argparse.ArgumentParser(prog="mpiopt transform", add_help=False, exit_on_error=False)
    _add_options(again)
    again.add_argument("files", nargs="*")
    try:
        late, unknown = again.parse_known_intermixed_args(rest)
    except argparse.ArgumentError as e:
        raise UsageError(str(e)) from None
    except SystemExit:
        raise UsageError("bad arguments after the file names (see mpiopt transform --help)") from None
    if unknown:
        raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (compiler flags go after --)")
    defaults = again.parse_args([])
    for name, value in vars(late).items():
        if name != "files" and value != getattr(defaults, name):
            setattr(args, name, value)
    if sum(bool(x) for x in (args.output, args.in_place, args.diff)) > 1:
        raise UsageError("-o, --in-place and --diff exclude each other")
    return late.files, flags


def run(args) -> int:
    from ..transform import Options, ParseError, transform_file
    from ..transform.report import print_profile_summary, print_table, to_json

    files, flags = _reparse(args)
    if not files:
        raise UsageError("no input file")
    if args.compile_commands and not args.compile_commands.is_file():
        raise UsageError(f"{args.compile_commands}: no such compilation database")
    select = None
    if args.profile is None and (args.top is not None or args.min_percent is not None):
        raise UsageError("--top and --min-percent choose call sites from a profile: give --profile")
    if args.top is not None and args.top < 1:
        raise UsageError("--top N: N must be at least 1")
    if args.min_percent is not None and not 0 <= args.min_percent <= 100:
        raise UsageError("--min-percent P: P must be between 0 and 100")
    if args.profile is not None:
        from ..transform.costs import Selector
        select = Selector(args.profile, args.top, args.min_percent)
    options = Options(mode=args.mode, flavour=args.mpi, mpi_version=args.mpi_version,
                      extra_args=flags, compile_commands=args.compile_commands, select=select)
    to_stdout = not (args.output or args.in_place or args.diff or args.report or args.json)
    if to_stdout and len(files) > 1:
        raise UsageError("several files: use -o DIR, --in-place, --diff, --report or --json")
    out_dir = None
    if args.output and len(files) > 1:
        out_dir = Path(args.output)
        if out_dir.exists() and not out_dir.is_dir():
            raise UsageError(f"{out_dir}: several input files need an output directory")

    # transform everything first: one bad file and nothing is written
    results = []
    for f in files:
        try:
            results.append(transform_file(f, options))
        except ParseError as e:
            raise UsageError(str(e)) from None

    written = {}
    if args.in_place:
        for r in results:
            if r.changed:
                r.path.write_bytes(r.output)
            written[str(r.path)] = str(r.path)
    elif args.output:
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
        for r in results:
            dest = out_dir / r.path.name if out_dir is not None else Path(args.output)
            dest.write_bytes(r.output)
            written[str(r.path)] = str(dest)

    if args.json:
        print(json.dumps(to_json(results, written, select), indent=2))
        return 0
    if select is not None and not args.report:
        print_profile_summary(results, select, sys.stderr)
    if to_stdout:
        sys.stdout.write(results[0].output.decode(errors="replace"))
        return 0
    if args.diff:
        for r in results:
            sys.stdout.writelines(difflib.unified_diff(
                r.original.decode(errors="replace").splitlines(keepends=True),
                r.output.decode(errors="replace").splitlines(keepends=True),
                fromfile=str(r.path), tofile=f"{r.path} (transformed)"))
    if args.report:
        print_table(results, select=select)
    return 0
