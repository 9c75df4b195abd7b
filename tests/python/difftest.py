"""Differential testing of `mpiopt transform`: a program and its transformed version must print
the same thing, with every MPI flavour and 1-4 ranks.

This is a helper module (no tests in it), for tests/python/test_examples.py and for the
transformer's own tests. The small API:

    transform(source, mode, out_dir, flavour)  -> Transformed(path, report)
        runs `mpiopt transform SOURCE -o OUT --mode MODE --mpi FLAVOUR --json`; raises
        DiffTestError (with the tool's stderr) if it fails.
    build(source, flavour, out_dir)            -> Build(executable, warnings)
        compiles with mpicc.FLAVOUR (mpicxx.FLAVOUR for C++ sources) -O2 -Wall -Wextra, Fortran
        with mpif90.FLAVOUR -O2 -fallow-argument-mismatch; raises DiffTestError on errors. The
        warnings kept are the source file's own (the MPI headers' are the same for the original
        and the transformed program: Open MPI's C++ bindings warn under -Wextra).
    run(executable, flavour, np, args, dropin_env=None) -> str (the program's stdout)
        runs it under mpiopt.mpi.run (with the LD_PRELOAD drop-in in dropin_env if given);
        raises DiffTestError on non-zero exit or timeout.
    reference(executable, flavour, np, args)   -> str
        run() of an original under the vendor alone, the output its versions are compared
        with: once a session per executable, rank count and arguments.
    compare_outputs(expected, actual)          -> list[str] (the differences; empty if equal)
    call_sites(report)                         -> list[dict] (the report's collective call sites)
    check(source, out_dir, modes, flavours, ranks, args, dropin_env=None, dropin_envs=None)
        -> list[str]
        the whole round: transform, build original and transformed, run, compare (every
        difference found). dropin_env: the transformed versions run with the drop-in library
        in that environment, the original without (the vendor's results are the reference);
        dropin_envs ({label: env}): each version runs in each, against one reference run.

Compiles and transforms are done once a session (mpicc and a new interpreter are slow on a
loaded machine): `build` and `transform` remember their results by the source's content (and
flavour, mode, options), so the examples and cases that several test files build and transform
are compiled once; a later call gets the same executable (or a copy of the same transformed
text at the path it asked for). So are the originals' reference runs (`reference`).

How outputs are compared (compare_outputs): line by line, token by token (whitespace-separated).
Integer tokens and words must be equal. Floating tokens (anything float() accepts that is not an
integer) must agree within RTOL relative or ATOL absolute. Why a tolerance: a nonblocking or
persistent collective may run another algorithm than the blocking one, and so combine the
ranks' floating contributions in another order; the sums then differ in the last bits (about
1e-16 relative per operation, a little more after tens of dependent iterations as in CG). The
examples print 11 significant digits (%.10e); RTOL = 1e-8 accepts reordering noise but not a
result computed from stale or partly received data, which changes leading digits.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mpiopt import mpi
# the comparison is shared with `mpiopt bench transform`, which checks outputs before timing them
from mpiopt.benchmarks.transform import ATOL, RTOL, compare_outputs  # noqa: F401

MODES = ("nonblocking", "persistent")
FORTRAN_SUFFIXES = {".f", ".f90", ".for", ".f77", ".f95", ".f03", ".f08"}
RANKS = (1, 2, 3, 4)
CXX_SUFFIXES = {".cpp", ".cc", ".cxx", ".C"}
RUN_TIMEOUT = 120  # seconds per run; the test sizes take well under a second

# Warnings that only say something is unused do not make generated code wrong; every other
# warning (implicit declarations, pointer/int conversions, uninitialized use, …) does. One more is
# a known false alarm: GCC 12 reads MPICH's MPI_STATUS(ES)_IGNORE sentinel, (MPI_Status *)1, as
# a zero-sized array and warns -Wstringop-overflow at MPI_Wait/MPI_Waitall calls that pass it.
HARMLESS_WARNING = re.compile(r"\[-W(unused[-\w]*)\]")
STATUS_IGNORE_FALSE_ALARM = re.compile(r"\[-Wstringop-overflow=\][^\n]*\n[^\n]*MPI_STATUS(ES)?_IGNORE")
# a warning line and the source line gcc quotes after it
WARNING = re.compile(r"^(?P<where>[^:\n]+:\d+:\d+): warning: (?P<text>.*)$(?P<quote>\n.*)?", re.M)


class DiffTestError(Exception):
    """A step of the differential round failed (transform, compile or run)."""


@dataclass
class Transformed:
    path: Path
    report: object  # the JSON printed by `mpiopt transform --json` (None if it printed nothing)


@dataclass
class Build:
    executable: Path
    warnings: list[str] = field(default_factory=list)  # warnings that matter, "file:line:col: text"


def transform(source: Path | str, mode: str, out_dir: Path | str, flavour: str,
              extra: list[str] | None = None) -> Transformed:
    """Transforms `source` with `mpiopt transform` for `flavour`'s MPI into
    OUT_DIR/NAME.MODE.FLAVOUR.c (.cpp etc.: the source's suffix)."""
    import json

    source, out_dir = Path(source), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{source.stem}.{mode}.{flavour}{source.suffix}"
    key = (str(source.resolve()), _digest(source), mode, flavour, tuple(extra or ()))
    done = _TRANSFORMED.get(key)
    if done is not None and done.path.exists():
        if done.path != out:
            shutil.copyfile(done.path, out)
        return Transformed(out, done.report)
    cmd = [sys.executable, "-m", "mpiopt.cli", "transform", str(source), "-o", str(out),
           "--mode", mode, "--mpi", flavour, "--json", *(extra or [])]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or not out.exists():
        raise DiffTestError(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr}{r.stdout}")
    report = None
    if r.stdout.strip():
        try:
            report = json.loads(r.stdout)
        except ValueError as e:
            raise DiffTestError(f"mpiopt transform --json printed something that is not JSON: {e}\n{r.stdout[:2000]}")
    _TRANSFORMED[key] = Transformed(out, report)
    return Transformed(out, report)


def transform_in_process(source: Path | str, mode: str, out_dir: Path | str, flavour: str) -> Transformed:
    """transform()'s work in this interpreter, for check(transformer=...): no new interpreter per
    call (the tests' time budget; the command line is tested elsewhere), no report."""
    from mpiopt.transform import Options, transform_file

    source = Path(source)
    r = transform_file(source, Options(mode=mode, flavour=flavour))
    out = Path(out_dir) / f"{source.stem}.{mode}.{flavour}{source.suffix}"
    out.write_bytes(r.output)
    return Transformed(out, None)


FORTRAN_SUFFIXES = (".f", ".for", ".f77", ".f90", ".f95", ".f03", ".f08", ".F", ".F90")


def check_transformed(source: Path | str, out_dir: Path | str, modes=MODES, ranks=RANKS) -> list[str]:
    """check() with transform_in_process on every installed MPI that can build `source` (Fortran:
    those with mpif90); skips the test where none can."""
    import pytest

    fortran = Path(source).suffix in FORTRAN_SUFFIXES
    flavours = [f for f in mpi.available_flavours() if not fortran or shutil.which(f"mpif90.{f}")]
    if not flavours:
        pytest.skip("no MPI with mpif90" if fortran else "no MPI installed")
    return check(source, out_dir, modes=modes, flavours=flavours, ranks=ranks,
                 transformer=transform_in_process)


# ---- once a session: what build() compiled and transform() wrote, by the source's content ----
_BUILT: dict[tuple, Build] = {}
_TRANSFORMED: dict[tuple, Transformed] = {}


def _digest(source: Path) -> str:
    return hashlib.sha256(source.read_bytes()).hexdigest()


def call_sites(report) -> list[dict]:
    """The collective call sites of a `mpiopt transform --json` report (schema 1: files[].sites[]),
    each a dict with at least `line`, `call`, `action` ("nonblocking", "persistent" or
    "unchanged"), `reason` and `waits` (each with `line`, `guard`, `blocked_by`)."""
    if not isinstance(report, dict) or "files" not in report:
        raise DiffTestError(f"not a mpiopt transform --json report: {str(report)[:300]}")
    return [site for f in report["files"] for site in f["sites"]]


def build(source: Path | str, flavour: str, out_dir: Path | str, name: str | None = None) -> Build:
    """Compiles one C file against `flavour`'s MPI; the executable goes to OUT_DIR/NAME.FLAVOUR."""
    source, out_dir = Path(source), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    key = (_digest(source), flavour)
    done = _BUILT.get(key)
    if done is not None and done.executable.exists():
        return Build(done.executable, list(done.warnings))
    exe = out_dir / f"{name or source.stem}.{flavour}"
    cwd = None
    if source.suffix.lower() in FORTRAN_SUFFIXES:
        # mpif90; each build in its own directory, where its .mod files go (gfortran -J with
        # Open MPI's wrapper fails to find mpi.mod). mpif.h declares no interfaces: GCC 10+
        # rejects an MPI routine called with buffers of different types unless told to allow it
        # (what real mpif.h codes are built with); warnings are the original code's, not checked
        cwd = out_dir / f"{exe.name}.build"
        cwd.mkdir(exist_ok=True)
        cmd = [f"mpif90.{flavour}", "-O2", "-fallow-argument-mismatch", "-o", str(exe.resolve()),
               str(source.resolve())]
    else:
        compiler = "mpicxx" if source.suffix in CXX_SUFFIXES else "mpicc"
        cmd = [f"{compiler}.{flavour}", "-O2", "-Wall", "-Wextra", "-o", str(exe), str(source), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=cwd)
    if r.returncode != 0:
        raise DiffTestError(f"{' '.join(cmd)} failed:\n{r.stderr}")
    warnings = [f"{m['where']}: {m['text']}" for m in WARNING.finditer(r.stderr)
                if m["where"].startswith(str(source))
                and not HARMLESS_WARNING.search(m["text"])
                and not STATUS_IGNORE_FALSE_ALARM.search(m["text"] + (m["quote"] or ""))]
    _BUILT[key] = Build(exe, list(warnings))
    return Build(exe, warnings)


def run(executable: Path | str, flavour: str, np: int, args: list[str] | tuple = (),
        dropin_env: dict | None = None) -> str:
    """Runs a program with `np` ranks; returns its standard output. dropin_env: run it with the
    LD_PRELOAD drop-in library, in this environment."""
    try:
        r = mpi.run(flavour, np, [str(executable), *args], timeout=RUN_TIMEOUT,
                    preload=dropin_env is not None, env=dropin_env)
    except subprocess.TimeoutExpired:
        raise DiffTestError(f"{executable} with {np} ranks ({flavour}) did not finish in {RUN_TIMEOUT} s")
    if r.returncode != 0:
        raise DiffTestError(f"{executable} with {np} ranks ({flavour}) exited {r.returncode}:\n"
                            f"{r.stderr[-3000:]}")
    return r.stdout


_REFERENCES: dict[tuple, str] = {}


def reference(executable: Path | str, flavour: str, np: int, args: list[str] | tuple = ()) -> str:
    """The output of an original program under the vendor MPI alone (no drop-in): the reference
    its transformed versions, and the same program under the drop-in, are compared with. Run
    once a session per executable (its path, size and time), rank count and arguments: the
    examples and cases that several tests compare against are launched once."""
    st = Path(executable).stat()
    key = (str(executable), st.st_size, st.st_mtime_ns, flavour, np, tuple(args))
    if key not in _REFERENCES:
        _REFERENCES[key] = run(executable, flavour, np, args)
    return _REFERENCES[key]


def check(source: Path | str, out_dir: Path | str, modes=MODES, flavours=None, ranks=RANKS,
          args: list[str] | tuple = (), transformer=transform,
          dropin_env: dict | None = None, dropin_envs: dict | None = None) -> list[str]:
    """The whole differential round for one C file: for each flavour, build the original and each
    mode's transformed version, run all with each rank count and compare. Returns every
    failure as a message (empty list: all outputs agree and nothing warned).
    `transformer(source, mode, out_dir, flavour)` returns an object with `.path` (the transformed
    file); by default `transform` above, i.e. `mpiopt transform`. dropin_envs ({label: env}):
    the transformed versions run in each environment (the label names it in a failure), each
    compared with the original's one run at that rank count."""
    source, out_dir = Path(source), Path(out_dir)
    envs = dropin_envs if dropin_envs is not None else {"": dropin_env}
    failures = []
    for flavour in flavours or mpi.available_flavours():
        try:
            original = build(source, flavour, out_dir, f"{source.stem}.original")
            versions = {}
            for mode in modes:
                t = transformer(source, mode, out_dir, flavour)
                b = build(t.path, flavour, out_dir)
                failures += [f"{flavour} {mode}: warning {w}" for w in b.warnings]
                versions[mode] = b.executable
        except DiffTestError as e:
            failures.append(f"{flavour}: {e}")
            continue
        for np in ranks:
            try:
                expected = reference(original.executable, flavour, np, args)
            except DiffTestError as e:
                failures.append(str(e))
                continue
            for label, env in envs.items():
                try:
                    for mode, exe in versions.items():
                        diffs = compare_outputs(expected, run(exe, flavour, np, args, env))
                        failures += [f"{flavour} {mode}{' ' + label if label else ''} np={np}: {d}"
                                     for d in diffs]
                except DiffTestError as e:
                    failures.append(f"{label + ': ' if label else ''}{e}")
    return failures
