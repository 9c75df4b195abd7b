"""What each step of `mpiopt advise` works out before its runs: the profile's summary, the rank
order for the placement step, the transformed and rebuilt copy of the sources. A step that cannot
go on says why in one line (StepSkipped) and the others go on."""
from __future__ import annotations

import difflib
import io
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..placement import PlacementError, partition
from ..placement.orders import format_order
from ..profile import Profile, site_rows
from ..profile.tables import imbalance_pct, top_calls

# the reduction family, every door (nonblocking, persistent, large-count, MPIX_ of Open MPI 4)
REDUCTION = re.compile(r"^MPIX?_I?(Allreduce|Reduce|Reduce_scatter|Reduce_scatter_block|Scan|"
                       r"Exscan|Reduce_local)(_init)?(_c)?$")
TOP = 5
BUILD_TIMEOUT = 1800


class StepSkipped(Exception):
    """A step that cannot run here; the message says why in one line."""


def profile_summary(prof: Profile) -> dict:
    """MPI share of time, the reduction calls and their sizes, the costliest calls and sites, and
    the imbalance of MPI time over ranks (minPE / maxPE)."""
    d = prof.data
    wall, mpi_t = d["system"]["wall_time"], d["mpi"]["mpi_time"]
    reductions = [{"call": name, "calls": c["calls"]["max"], "avg_bytes": c["avg_bytes"]["avg"],
                   "time": c["time"]["avg"],
                   "share_of_mpi_time": c["time"]["avg"] / mpi_t["avg"] if mpi_t["avg"] else 0.0}
                  for name, c in d["calls"].items() if REDUCTION.match(name)]
    sites = [{"call": s["call"], "where": s["where"], "function": s["function"],
              "count": s["count"]["max"], "time": s["time"]["avg"],
              "share_of_mpi_time": s["share_of_mpi_time"]} for s in site_rows(prof)[:TOP]]
    return {
        "ranks": prof.ranks,
        "wall_time": wall["max"],
        "mpi_time": mpi_t["avg"],
        "mpi_share": mpi_t["avg"] / wall["avg"] if wall["avg"] else 0.0,
        "reductions": sorted(reductions, key=lambda r: -r["time"]),
        "top_calls": top_calls(prof, TOP),
        "top_sites": sites,
        "sites_have_lines": any(s["debug_info"] for s in site_rows(prof)),
        "imbalance": {"min": mpi_t["min"], "max": mpi_t["max"], "avg": mpi_t["avg"],
                      "min_pe": mpi_t["min_pe"], "max_pe": mpi_t["max_pe"],
                      "imbalance_pct": imbalance_pct(mpi_t, prof.ranks)},
        "per_rank": {"mpi_time": prof.per_rank("mpi_time").tolist(),
                     "compute_time": prof.per_rank("compute_time").tolist()},
    }


@dataclass
class PlacementPlan:
    ppn: int
    why_ppn: str                 # where the node size came from
    order: np.ndarray
    order_file: Path
    total_bytes: float
    smp_off_node_bytes: float
    off_node_bytes: float

    def to_json(self) -> dict:
        return {"ppn": self.ppn, "why_ppn": self.why_ppn, "order": self.order.tolist(),
                "order_file": str(self.order_file), "total_bytes": self.total_bytes,
                "smp_off_node_bytes": self.smp_off_node_bytes, "off_node_bytes": self.off_node_bytes}


def plan_placement(prof: Profile, np_: int, ppn: int | None, out_dir: Path) -> PlacementPlan:
    """The order `mpiopt place search --matrix` finds from the profile's matrix, written as an
    MPICH_RANK_ORDER file; StepSkipped when there is nothing to place."""
    cores = os.cpu_count() or 1
    if ppn is None:
        if np_ <= cores:
            raise StepSkipped(f"all {np_} ranks fit on this node ({cores} cores) and no --ppn "
                              "was given: placement has nothing to change")
        ppn, why = cores, f"no --ppn: nodes of {cores} ranks, the cores of this one"
    else:
        why = "--ppn"
    if ppn >= np_:
        raise StepSkipped(f"{np_} ranks fit on one node of {ppn}: placement has nothing to change")
    nbytes, _ = prof.matrix()
    if nbytes.sum() <= 0:
        raise StepSkipped("the profile measured no point-to-point traffic: the rank order "
                          "changes nothing that placement can see (collectives are not in the matrix)")
    try:
        found = partition(nbytes, ppn)
    except PlacementError as e:
        raise StepSkipped(str(e)) from None
    order_file = out_dir / "MPICH_RANK_ORDER"
    order_file.write_text(format_order(found.order, ppn, header=f"mpiopt advise: {np_} ranks, "
                                       f"{ppn} a node, from the measured matrix"))
    return PlacementPlan(ppn, why, np.asarray(found.order), order_file, found.total_bytes,
                         found.smp_off_node_bytes, found.off_node_bytes)


@dataclass
class TransformedBuild:
    program: list[str]           # the rebuilt program's command line
    copy: Path                   # the transformed copy of --source
    diff: Path                   # unified diff of the copy against --source
    sites_changed: int
    summary: str                 # which sites changed and why the others did not

    def to_json(self) -> dict:
        return {"program": self.program, "copy": str(self.copy), "diff": str(self.diff),
                "sites_changed": self.sites_changed, "summary": self.summary}


def _site_files(sites: list[dict], copy: Path) -> list[Path]:
    """The C, C++ and Fortran files of the copy that hold call sites the profile has file:line
    for."""
    from ..transform.fortran_parse import is_fortran
    from ..transform.parse import CXX_SUFFIXES

    names = {Path(s["file"]).name for s in sites if s["debug_info"] and s["file"]}
    return sorted(f for f in copy.rglob("*") if f.name in names and f.is_file()
                  and (f.suffix == ".c" or f.suffix in CXX_SUFFIXES or is_fortran(f)))


def transform_and_build(prof_path: Path, prof: Profile, source: Path, build: str,
                        program: list[str], flavour: str, out_dir: Path) -> TransformedBuild:
    """The costly call sites of a copy of `source` rewritten (`mpiopt transform --profile`),
    the copy built with the user's command; their tree is never written."""
    from ..transform import Options, ParseError, transform_file
    from ..transform.costs import Selector
    from ..transform.report import print_profile_summary

    source = source.resolve()
    exe = Path(program[0])
    exe = (exe if exe.is_absolute() else Path.cwd() / exe).resolve()
    if not exe.is_relative_to(source):
        raise StepSkipped(f"the program {program[0]} is not inside --source {source}: which "
                          "executable the build makes cannot be told")
    sites = site_rows(prof)
    if not sites:
        raise StepSkipped("the profile has no call sites")
    if not any(s["debug_info"] for s in sites):
        raise StepSkipped("the profile's call sites have no file:line: build the program with -g")
    copy = out_dir / "transformed-source"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    files = _site_files(sites, copy)
    if not files:
        raise StepSkipped(f"no C, C++ or Fortran file under {source} holds a call site of the "
                          "profile")
    db = copy / "compile_commands.json"
    if db.exists():
        # its entries name the files by absolute path, of the original tree: point them at the copy
        # (whose files are the ones parsed), or none would match and the macros would be lost
        db.write_text(db.read_text().replace(str(source), str(copy)))
    options = Options(mode="nonblocking", flavour=flavour if flavour in ("openmpi", "mpich") else "mpich",
                      compile_commands=db if db.exists() else None,
                      select=Selector(prof_path, copied_from=(source, copy.resolve())))
    try:
        results = [transform_file(f, options) for f in files]
    except ParseError as e:
        raise StepSkipped(f"mpiopt transform could not parse the sources: {e}") from None
    summary = io.StringIO()
    print_profile_summary(results, options.select, summary)
    (out_dir / "transform-report.txt").write_text(summary.getvalue())
    changed = [r for r in results if r.changed]
    if not changed:
        raise StepSkipped("no costly collective call site could be rewritten (see "
                          f"{out_dir / 'transform-report.txt'})")
    diff = out_dir / "transform.diff"
    with diff.open("w") as f:
        for r in changed:
            rel = r.path.relative_to(copy)
            f.writelines(difflib.unified_diff(
                r.original.decode(errors="replace").splitlines(keepends=True),
                r.output.decode(errors="replace").splitlines(keepends=True),
                fromfile=f"a/{rel}", tofile=f"b/{rel}"))
            r.path.write_bytes(r.output)
    log = out_dir / "transform-build.log"
    try:
        b = subprocess.run(build, shell=True, cwd=copy, capture_output=True, text=True,
                           timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise StepSkipped(f"the build command did not finish in {BUILD_TIMEOUT} s") from None
    log.write_text(f"$ {build}\n{b.stdout}{b.stderr}")
    if b.returncode != 0:
        last = ((b.stderr or b.stdout).strip().splitlines() or ["no output"])[-1]
        raise StepSkipped(f"the build command failed (exit {b.returncode}: {last[:160]}; log: {log})")
    rebuilt = copy / exe.relative_to(source)
    if not rebuilt.exists():
        raise StepSkipped(f"the build command made no {rebuilt.relative_to(copy)} in the copy")
    n = sum(1 for r in changed for s in r.sites if s["action"] != "unchanged")
    return TransformedBuild([str(rebuilt), *program[1:]], copy, diff, n, summary.getvalue())
