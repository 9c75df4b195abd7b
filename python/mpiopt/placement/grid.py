"""A Cartesian grid of MPI ranks: how an application numbers its ranks (-C or -R) and how to go
from rank numbers to grid coordinates and back, vectorized over numpy arrays."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import PlacementError  # noqa: F401 (the tools import it from here too)

# Grids this size are generated and evaluated in a few seconds; far larger ones would need
# gigabytes of index arrays, so they are refused up front with a clear message.
MAX_RANKS = 50_000_000


def parse_int_list(text: str, what: str, minimum: int = 1) -> list[int]:
    """'4,6' -> [4, 6]; a clear error naming `what` for anything else."""
    items = [t.strip() for t in str(text).split(",")]
    if not items or any(t == "" for t in items):
        raise PlacementError(f"{what}: expected comma-separated integers, got {text!r}")
    out = []
    for t in items:
        try:
            v = int(t)
        except ValueError:
            raise PlacementError(f"{what}: {t!r} is not an integer (in {text!r})") from None
        if v < minimum:
            raise PlacementError(f"{what}: {v} is less than {minimum} (in {text!r})")
        out.append(v)
    return out


@dataclass(frozen=True)
class Grid:
    """dims: extent of each grid dimension; numbering 'C' (first dimension varies fastest in
    the rank number, Fortran-like) or 'R' (last dimension fastest, C-like and MPI_Cart_create's)."""
    dims: tuple[int, ...]
    numbering: str = "C"

    def __post_init__(self):
        if self.numbering not in ("C", "R"):
            raise PlacementError(f"rank numbering must be C or R, not {self.numbering!r}")
        if not self.dims or any(int(n) < 1 for n in self.dims):
            raise PlacementError(f"grid dimensions must be positive integers: {self.dims}")
        if self.size > MAX_RANKS:
            raise PlacementError(f"grid of {self.size} ranks is larger than the {MAX_RANKS} supported")

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def size(self) -> int:
        return int(np.prod(self.dims, dtype=np.int64))

    def fastest_first(self) -> list[int]:
        """Dimensions (0-based) from the fastest varying in the rank number to the slowest."""
        d = list(range(self.ndim))
        return d if self.numbering == "C" else d[::-1]

    def strides(self) -> np.ndarray:
        s = np.zeros(self.ndim, dtype=np.int64)
        step = 1
        for k in self.fastest_first():
            s[k] = step
            step *= self.dims[k]
        return s

    def rank_of(self, coords: np.ndarray) -> np.ndarray:
        """coords: (ndim, n) integer array -> (n,) ranks."""
        return (np.asarray(coords, dtype=np.int64) * self.strides()[:, None]).sum(axis=0)

    def coords_of(self, ranks: np.ndarray) -> np.ndarray:
        """(n,) ranks -> (ndim, n) coordinates."""
        ranks = np.asarray(ranks, dtype=np.int64)
        out = np.empty((self.ndim, ranks.size), dtype=np.int64)
        rest = ranks.copy()
        for k in self.fastest_first():
            out[k] = rest % self.dims[k]
            rest //= self.dims[k]
        return out

    def all_coords(self) -> np.ndarray:
        """Coordinates of ranks 0..size-1, as (ndim, size)."""
        return self.coords_of(np.arange(self.size, dtype=np.int64))
