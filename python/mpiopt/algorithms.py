"""mpiopt's allreduce/reduce algorithms as the C library lists them.

The one list is include/mpiopt_algorithms.h; the benchmark prints it
(`mpiopt-allreduce --list-algorithms --json`), and this module reads that, so a new algorithm
needs no edit on the Python side."""
from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import dataclass

from . import jobs, mpi
from .errors import UsageError

LIST_BINARY = "mpiopt-allreduce"


@dataclass(frozen=True)
class Algorithm:
    id: int
    name: str
    short: str       # a narrow table column
    kind: str        # "auto", "vendor" or "mpiopt"
    reduce_scatter: bool    # also runs MPI_Reduce_scatter(_block) (MPIOPT_FAMILY_LIST)
    scan: bool              # also runs MPI_Scan and MPI_Exscan
    keeps_order: bool
    needs_pow2: bool
    predefined_op_only: bool
    min_count: int


@functools.lru_cache(maxsize=None)
def _listed(flavour: str) -> tuple[Algorithm, ...]:
    binary = mpi.binary(flavour, LIST_BINARY)
    try:
        # one process, no launcher: MPI singleton init is enough to print a list
        proc = jobs.run([str(binary), "--list-algorithms", "--json"], capture_output=True,
                        text=True, timeout=120, env=mpi.launch_env(flavour))
        rows = json.loads(proc.stdout)["algorithms"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
        raise UsageError(f"cannot list the algorithms with {binary}: {e}") from None
    fields = Algorithm.__dataclass_fields__
    return tuple(Algorithm(**{k: v for k, v in row.items() if k in fields}) for row in rows)


def algorithms(flavour: str | None = None) -> tuple[Algorithm, ...]:
    """Every choice in registry order: auto, vendor, then mpiopt's algorithms."""
    if flavour is None:
        built = [f for f in mpi.FLAVOURS if mpi.binary(f, LIST_BINARY).exists()]
        if not built:
            raise UsageError(f"{LIST_BINARY} is not built for any MPI: run `make build` first")
        flavour = built[0]
    return _listed(flavour)


def names(flavour: str | None = None, kinds=("auto", "vendor", "mpiopt"),
          family: str | None = None) -> list[str]:
    """The names of the choices of those kinds, vendor first (the reference column); with
    family ("reduce_scatter" or "scan"), only those that run it."""
    listed = [a.name for a in algorithms(flavour)
              if a.kind in kinds and (family is None or getattr(a, family))]
    return sorted(listed, key=lambda name: name != "vendor")   # stable: registry order after


def short_names(flavour: str | None = None) -> dict[str, str]:
    return {a.name: a.short for a in algorithms(flavour)}
