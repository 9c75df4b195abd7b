"""Reading mpiopt-profile.json: every problem (missing file, half-written or foreign JSON, a
profile of a run that did not finish) is a ProfileError naming the file and what is wrong."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UsageError
from .demangle import demangle_sites

PROFILE_NAME = "mpiopt-profile.json"
STAT_KEYS = ("min", "max", "avg", "min_pe", "max_pe")
SECTIONS = ("system", "mpi", "calls", "regions", "per_rank", "matrix")


class ProfileError(UsageError):
    """A profile that cannot be used (exit status 2)."""


@dataclass
class Profile:
    path: Path
    data: dict

    @property
    def ranks(self) -> int:
        return int(self.data["ranks"])

    @property
    def program(self) -> str:
        return str(self.data.get("program", "?"))

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """(bytes, messages), each ranks x ranks: [source, destination]."""
        n = self.ranks
        nbytes = np.zeros((n, n))
        msgs = np.zeros((n, n))
        for src, dst, b, m in self.data["matrix"]["entries"]:
            nbytes[src, dst] += b
            msgs[src, dst] += m
        return nbytes, msgs

    @property
    def hosts(self) -> list[str] | None:
        """Each rank's host (MPI_Get_processor_name), or None: a profile from before they were
        recorded."""
        hosts = self.data.get("hosts")
        return list(hosts) if hosts else None

    def per_rank(self, key: str) -> np.ndarray:
        return np.asarray(self.data["per_rank"][key], dtype=float)


def _check_stat(path: Path, where: str, stat) -> None:
    if not isinstance(stat, dict) or any(k not in stat for k in STAT_KEYS):
        raise ProfileError(f"{path}: {where} is not a min/max/avg/min_pe/max_pe record")


def load(path: str | Path) -> Profile:
    """The profile at `path`, checked."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such file (was the program run with `mpiopt profile`, "
                           "and did it reach MPI_Finalize?)") from None
    except OSError as e:
        raise ProfileError(f"{path}: cannot read it: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not a text file, so not an mpiopt profile") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProfileError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column "
                           f"{e.colno}): a truncated or foreign file, not a profile") from None
    if not isinstance(data, dict) or data.get("format") != "mpiopt-profile":
        raise ProfileError(f"{path}: not an mpiopt profile (no \"format\": \"mpiopt-profile\")")
    if data.get("version") != 1:
        raise ProfileError(f"{path}: profile format version {data.get('version')!r}, this mpiopt "
                           "reads version 1")
    if data.get("complete") is not True:
        raise ProfileError(f"{path}: the profile is marked incomplete")
    missing = [s for s in SECTIONS if not isinstance(data.get(s), dict)]
    if missing or not isinstance(data.get("ranks"), int) or data["ranks"] < 1:
        raise ProfileError(f"{path}: profile lacks {', '.join(missing) or 'a rank count'}")
    for section in ("system", "mpi"):
        for key, stat in data[section].items():
            _check_stat(path, f"{section}.{key}", stat)
    for name, call in data["calls"].items():
        for key in ("calls", "time", "bytes", "avg_bytes"):
            _check_stat(path, f"calls.{name}.{key}", call.get(key) if isinstance(call, dict) else None)
    sites = data.get("sites", {"enabled": False})
    if not isinstance(sites, dict) or not isinstance(sites.get("list", []), list):
        raise ProfileError(f"{path}: sites is not an object with a list")
    for i, site in enumerate(sites.get("list", [])):
        if not isinstance(site, dict) or any(k not in site for k in ("call", "function", "file", "line")):
            raise ProfileError(f"{path}: sites.list[{i}] lacks call, function, file or line")
        for key in ("count", "bytes", "time"):
            _check_stat(path, f"sites.list[{i}].{key}", site.get(key))
    n = data["ranks"]
    for key, values in data["per_rank"].items():
        if not isinstance(values, list) or len(values) != n:
            raise ProfileError(f"{path}: per_rank.{key} does not have {n} values")
    hosts = data.get("hosts")
    if hosts is not None and (not isinstance(hosts, list) or (hosts and len(hosts) != n)
                              or not all(isinstance(h, str) for h in hosts)):
        raise ProfileError(f"{path}: hosts is not a list of {n} host names")
    entries = data["matrix"].get("entries")
    if not isinstance(entries, list) or any(
            not isinstance(e, list) or len(e) != 4 or not (0 <= e[0] < n and 0 <= e[1] < n)
            for e in entries):
        raise ProfileError(f"{path}: matrix entries are not [source, destination, bytes, "
                           f"messages] with ranks in 0..{n - 1}")
    demangle_sites(data)     # what the profiler could not (profile/demangle.py says when)
    return Profile(path, data)
