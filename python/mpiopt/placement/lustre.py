"""Lustre striping for a parallel write: the WRF case study's rule of thumb and the forms a user
needs it in (an `lfs setstripe` line, ROMIO hints, Cray MPICH's MPICH_MPIIO_HINTS).

The study stripes its output over about ½·√P OSTs (P ranks), in multiples of 2, and lets the
MPI-IO library use one aggregator per OST (cb_nodes = striping factor), which is what Cray's
MPI-IO does by default on Lustre: each aggregator then talks to one OST and no OST is shared.
Pure bookkeeping: no MPI, no file system access except `ost_count` (which asks `lfs df`)."""
from __future__ import annotations

import math
import shutil
import subprocess
from dataclasses import dataclass

from ..units import size_label
from .grid import PlacementError

DEFAULT_STRIPE_SIZE = 1 << 20      # Lustre's own default stripe size
STRIPE_SIZE_GRANULE = 64 << 10     # Lustre needs stripe sizes in multiples of 64 KiB


def striping_factor(nranks: int, osts: int | None = None) -> int:
    """½·√P rounded to the nearest multiple of 2, at least 2, and at most the OSTs there are
    (rounded down to a multiple of 2 when there are more than one; a 1-OST file system gets 1)."""
    if nranks < 1:
        raise PlacementError(f"the number of ranks must be at least 1, got {nranks}")
    if osts is not None and osts < 1:
        raise PlacementError(f"--osts must be at least 1, got {osts}")
    factor = max(2, 2 * math.floor(math.sqrt(nranks) / 4 + 0.5))   # halves round up
    if osts is not None and factor > osts:
        factor = osts if osts == 1 else osts - osts % 2
    return factor


def check_stripe_size(size: int) -> None:
    if size < STRIPE_SIZE_GRANULE or size % STRIPE_SIZE_GRANULE:
        raise PlacementError(f"stripe size {size} B: Lustre needs a positive multiple of 64 KiB")


@dataclass
class Striping:
    nranks: int
    factor: int            # OSTs a file is striped over
    stripe_size: int       # bytes written to one OST before moving to the next
    cb_nodes: int          # MPI-IO aggregators
    osts: int | None       # OSTs available (given or found), None when unknown

    def romio_hints(self) -> dict[str, str]:
        """ROMIO's names: striping_* take effect only when ROMIO creates the file on Lustre."""
        return {"striping_factor": str(self.factor), "striping_unit": str(self.stripe_size),
                "cb_nodes": str(self.cb_nodes), "romio_cb_write": "enable",
                "romio_cb_read": "enable"}

    def setstripe(self, directory: str) -> str:
        """New files in DIRECTORY inherit this striping (existing files keep theirs)."""
        return f"lfs setstripe -c {self.factor} -S {size_label(self.stripe_size)} {directory}"

    def mpich_mpiio_hints(self, pattern: str, hints: dict[str, str]) -> str:
        """Cray MPICH's variable: `pattern:key=value:…`, hints applied to files matching it."""
        if ":" in pattern or "," in pattern or not pattern:
            raise PlacementError(f"file pattern {pattern!r}: must be non-empty, without ':' or ','")
        value = ":".join([pattern] + [f"{k}={v}" for k, v in hints.items()])
        return f'MPICH_MPIIO_HINTS="{value}"'   # quoted: the pattern is a glob


def plan(nranks: int, osts: int | None = None, cb_nodes: int | None = None,
         stripe_size: int = DEFAULT_STRIPE_SIZE) -> Striping:
    check_stripe_size(stripe_size)
    factor = striping_factor(nranks, osts)
    if cb_nodes is not None and not 1 <= cb_nodes <= nranks:
        raise PlacementError(f"cb_nodes must be between 1 and the number of ranks ({nranks}), "
                             f"got {cb_nodes}")
    aggregators = cb_nodes if cb_nodes is not None else min(factor, nranks)
    return Striping(nranks, factor, stripe_size, aggregators, osts)


def ost_count(directory: str) -> int | None:
    """The OSTs of the Lustre file system holding DIRECTORY, from `lfs df` (one line per OST,
    named …-OSTxxxx_UUID); None when `lfs` is absent, fails, or lists none."""
    lfs = shutil.which("lfs")
    if lfs is None:
        return None
    try:
        out = subprocess.run([lfs, "df", directory], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    # an OST line ends with "/mount[OST:k]"; MDT lines end with "[MDT:k]"
    count = sum(1 for line in out.stdout.splitlines() if "[OST:" in line)
    return count or None
