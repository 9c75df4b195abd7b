"""`mpiopt transform --profile`: which collective call sites a profile found costly.

Reads the "sites" list of an mpiopt profile (`mpiopt profile --sites`, docs/profiling.md) as plain
JSON — the transformer knows nothing of the profiler beyond that format — and decides, for each
blocking collective the transformer finds, whether to rewrite it:

* a profile site is (call, file, line): the line of the call's return address in the caller.
  Rows that differ only in the stack above (`--stack N`) are summed into one site;
* a call in the source matches a profile site with the same call (PMPI_ and the MPI-4 `_c`
  variants are the same call) in the same file (same resolved path; else the same file name, and
  the report says so) whose line lies anywhere within the call expression (a call written over
  several lines is still found);
* a site is chosen when its share of MPI time (summed over ranks) is at least `min_percent`, and,
  with `top`, it is among the `top` costliest blocking-collective sites of the whole profile by
  time summed over ranks (ranked over the profile, not over the files given, so `--top 3` means
  the program's three costliest collectives wherever they are).

Everything else is left as it is, with the reason."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from .calls import COLLECTIVES

DEFAULT_MIN_PERCENT = 5.0
PROFILE_NAME = "mpiopt-profile.json"
HOW = "run the program with `mpiopt profile --sites` (binaries built with -g) to get one"

_BY_LOWER = {name.lower(): name for name in COLLECTIVES}


def normalise_call(name: str) -> str:
    """MPI_Allreduce for MPI_Allreduce, PMPI_Allreduce, MPI_Allreduce_c, mpi_allreduce_ (Fortran),
    "MPI_Allreduce (Fortran)"; other names keep their spelling without P/_c."""
    n = re.sub(r"\s*\(.*\)$", "", str(name).strip())
    low = n.lower().rstrip("_")
    if low.startswith("pmpi_"):
        low = low[1:]
    if low.endswith("_c") and low[:-2] in _BY_LOWER:
        low = low[:-2]
    if low in _BY_LOWER:
        return _BY_LOWER[low]
    if n[:1] in "Pp" and n[1:4].upper() == "MPI":
        n = n[1:]
    return n[:-2] if n.endswith("_c") else n


@dataclass
class CostSite:
    """One profile site: the rows of one (call, file, line), summed."""
    call: str                   # normalised
    file: str                   # as the profile names it
    line: int
    functions: list
    seconds: float              # time summed over ranks
    percent: float              # of MPI time summed over ranks
    count: float                # calls a rank (average)
    max_seconds: float          # the slowest rank's time at this site
    max_pe: int
    rows: int                   # profile rows summed (several with --stack)
    rank: int = 0               # 1 = costliest collective site of the profile; 0: not a collective
    matched: list = field(default_factory=list)   # "file:line" of the source calls it matched

    @property
    def where(self) -> str:
        return f"{Path(self.file).name}:{self.line}" if self.file else "?"

    def to_json(self) -> dict:
        return {"call": self.call, "file": self.file, "line": self.line, "function": self.functions,
                "seconds": round(self.seconds, 9), "percent": round(self.percent, 4),
                "count": self.count, "max_seconds": round(self.max_seconds, 9),
                "max_pe": self.max_pe, "rank": self.rank or None, "rows": self.rows}


def _num(x, default=0.0) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else default


def load(path: str | Path) -> tuple[Path, int, list[CostSite]]:
    """(path read, ranks, sites) of a profile; UsageError (exit 2) when it cannot be used."""
    path = Path(path)
    if path.is_dir():
        path = path / PROFILE_NAME
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"--profile {path}: no such file; {HOW}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--profile {path}: cannot read it ({e}); {HOW}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"--profile {path}: not JSON ({e.msg} at line {e.lineno}); "
                         f"expected an mpiopt profile: {HOW}") from None
    if not isinstance(data, dict) or data.get("format") != "mpiopt-profile":
        raise UsageError(f"--profile {path}: not an mpiopt profile (no \"format\": "
                         f"\"mpiopt-profile\"); {HOW}")
    sites = data.get("sites")
    if not isinstance(sites, dict) or not sites.get("enabled") or not isinstance(sites.get("list"), list):
        raise UsageError(f"--profile {path}: the profile has no call sites (it was taken without "
                         f"--sites): run the program again with `mpiopt profile --sites`")
    ranks = data.get("ranks") if isinstance(data.get("ranks"), int) and data["ranks"] > 0 else 1
    groups: dict[tuple, CostSite] = {}
    for i, row in enumerate(sites["list"]):
        if not isinstance(row, dict) or "call" not in row or not isinstance(row.get("time"), dict):
            raise UsageError(f"--profile {path}: sites.list[{i}] lacks call or time")
        line = row.get("line") if isinstance(row.get("line"), int) else 0
        file = row.get("file") or ""
        key = (normalise_call(row["call"]), file, line if file else row.get("function"))
        time, count = row["time"], row.get("count") or {}
        seconds = _num(time.get("avg")) * ranks
        share = row.get("share_of_mpi_time")
        g = groups.get(key)
        if g is None:
            g = groups[key] = CostSite(key[0], file, line, [], 0.0, 0.0, 0.0, -1.0, 0, 0)
        fn = row.get("function") or "?"
        if fn not in g.functions:
            g.functions.append(fn)
        g.seconds += seconds
        g.percent += 100.0 * _num(share)
        g.count += _num(count.get("avg"))
        g.rows += 1
        if _num(time.get("max")) > g.max_seconds:
            g.max_seconds, g.max_pe = _num(time.get("max")), int(_num(time.get("max_pe")))
    out = sorted(groups.values(), key=lambda g: (-g.seconds, g.file, g.line))
    k = 0
    for g in out:
        if g.call in COLLECTIVES:
            k += 1
            g.rank = k
    return path, ranks, out


def _fmt_pct(p: float) -> str:
    return f"{p:.2g}" if p < 1 else f"{p:.1f}".removesuffix(".0")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


class Selector:
    """Decides per call site of the sources; remembers which profile sites it matched."""

    def __init__(self, path: str | Path, top: int | None = None, min_percent: float | None = None,
                 copied_from: tuple[Path, Path] | None = None):
        self.path, self.ranks, self.sites = load(path)
        # (original tree, copy): sources in the copy are the original's files for the profile
        # (`mpiopt advise` transforms a copy of the tree the profiled program was built from)
        self.copied_from = copied_from
        self.top = top
        self._by_source: dict[str, tuple] = {}
        # the default threshold applies when neither is given; --top alone ranks only
        self.min_percent = (min_percent if min_percent is not None
                            else (None if top is not None else DEFAULT_MIN_PERCENT))

    def describe(self) -> str:
        parts = []
        if self.min_percent is not None:
            parts.append(f"at least {_fmt_pct(self.min_percent)} % of MPI time")
        if self.top is not None:
            parts.append(f"the {self.top} costliest collective site{'s' * (self.top != 1)}")
        return " and ".join(parts)

    def _files(self, source: Path) -> tuple[list[CostSite], str]:
        """The profile sites in `source`, and a note when they were found by file name only."""
        key = str(source)
        if key not in self._by_source:
            self._by_source[key] = self._find_files(source)
        return self._by_source[key]

    def _find_files(self, source: Path) -> tuple[list[CostSite], str]:
        if self.copied_from and source.resolve().is_relative_to(self.copied_from[1]):
            source = self.copied_from[0] / source.resolve().relative_to(self.copied_from[1])
        exact = [s for s in self.sites if s.file and _same_file(s.file, str(source))]
        if exact:
            return exact, ""
        named = [s for s in self.sites if s.file and Path(s.file).name == source.name]
        if named:
            where = sorted({s.file for s in named})
            return named, (f"matched by file name: the profile has {', '.join(where)}, "
                           f"not {source}")
        return [], ""

    def decide(self, source: Path, call: str, first: int, last: int) -> dict:
        """The profile's word on one call of `call` spanning lines first..last of `source`:
        {"selected", "reason", "seconds", "percent", "count", "rank", "lines", "note"}."""
        in_file, note = self._files(Path(source))
        hits = [s for s in in_file if s.call == call and first <= s.line <= last]
        where = f"{Path(source).name}:{first}"
        for s in hits:
            if where not in s.matched:
                s.matched.append(where)
        out = {"selected": False, "reason": "", "seconds": None, "percent": None, "count": None,
               "max_seconds": None, "max_pe": None, "rank": None,
               "lines": sorted({s.line for s in hits}), "note": note}
        if not hits:
            out["reason"] = ("not in profile: never called in the profiled run" if in_file else
                             f"not in profile: the profiled run called nothing in {Path(source).name} "
                             "(another program, or built without -g?)")
            return out
        seconds = sum(s.seconds for s in hits)
        percent = sum(s.percent for s in hits)
        rank = min(s.rank for s in hits)
        slowest = max(hits, key=lambda s: s.max_seconds)
        out.update(seconds=seconds, percent=percent, count=sum(s.count for s in hits), rank=rank,
                   max_seconds=slowest.max_seconds, max_pe=slowest.max_pe)
        if self.min_percent is not None and percent < self.min_percent:
            out["reason"] = (f"below threshold: {_fmt_pct(percent)} % of MPI time "
                             f"(threshold {_fmt_pct(self.min_percent)} %)")
        elif self.top is not None and rank == 0:
            # point-to-point sites are rewritten too, but --top ranks collective sites only
            out["reason"] = (f"not in top {self.top}: only collective sites are ranked "
                             f"({_fmt_pct(percent)} % of MPI time)")
        elif self.top is not None and rank > self.top:
            out["reason"] = (f"not in top {self.top}: #{rank} by time "
                             f"({_fmt_pct(percent)} % of MPI time)")
        else:
            out["selected"] = True
            out["reason"] = (f"costly: #{rank} by time, {_fmt_pct(percent)} % of MPI time, "
                             f"{out['count']:g} call{'s' * (out['count'] != 1)} a rank")
        return out

    def unmatched(self, sources: list[Path]) -> list[dict]:
        """Profile sites of blocking collectives that matched no call in the sources, with why."""
        names = {Path(p).name for p in sources}
        out = []
        for s in self.sites:
            if s.matched or s.call not in COLLECTIVES:
                continue
            d = s.to_json()
            if not s.file or not s.line:
                d["reason"] = "no file:line (a binary without debug info: build with -g)"
            elif any(_same_file(s.file, str(p)) for p in sources) or Path(s.file).name in names:
                d["reason"] = (f"no {s.call} at line {s.line} of {Path(s.file).name} "
                               "(the source changed since the profile, or a macro?)")
            else:
                d["reason"] = f"in another file: {s.file} (not given)"
            out.append(d)
        return out

    def other_calls(self) -> int:
        """Profile sites of MPI calls the transformer does not rewrite (point-to-point…)."""
        return sum(s.call not in COLLECTIVES for s in self.sites)

    def to_json(self, sources: list[Path]) -> dict:
        return {"path": str(self.path), "ranks": self.ranks,
                "selection": {"top": self.top, "min_percent": self.min_percent},
                "sites": len(self.sites),
                "collective_sites": sum(s.call in COLLECTIVES for s in self.sites),
                "other_sites": self.other_calls(),
                "unmatched": self.unmatched(sources)}
