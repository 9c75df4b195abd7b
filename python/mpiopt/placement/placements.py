"""Which node each rank runs on, for the placements MPICH_RANK_REORDER_METHOD knows:
0 round-robin, 1 SMP (fill a node, then the next), 2 folded (0..n-1 then back n-1..0),
3 a custom order (ranks filled into node slots in the order listed)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .grid import PlacementError

METHOD_NAMES = {0: "round-robin", 1: "SMP", 2: "folded", 3: "custom order"}


@dataclass
class Placement:
    """slot_order[s] = the rank in slot s, where slot s is local slot s % ppn of node s // ppn."""
    name: str
    slot_order: np.ndarray
    ppn: int

    @property
    def nranks(self) -> int:
        return int(self.slot_order.size)

    @property
    def nnodes(self) -> int:
        return -(-self.nranks // self.ppn)

    def node_of_rank(self) -> np.ndarray:
        node = np.empty(self.nranks, dtype=np.int64)
        node[self.slot_order] = np.arange(self.nranks) // self.ppn
        return node

    def local_slot_of_rank(self) -> np.ndarray:
        slot = np.empty(self.nranks, dtype=np.int64)
        slot[self.slot_order] = np.arange(self.nranks) % self.ppn
        return slot


def _check(nranks: int, ppn: int) -> None:
    if nranks < 1:
        raise PlacementError(f"number of ranks must be at least 1, got {nranks}")
    if ppn < 1:
        raise PlacementError(f"ranks per node must be at least 1, got {ppn}")


def method_placement(method: int, nranks: int, ppn: int) -> Placement:
    """Placement 0, 1 or 2 for `nranks` ranks on ceil(nranks/ppn) nodes of `ppn` slots."""
    _check(nranks, ppn)
    ranks = np.arange(nranks, dtype=np.int64)
    nnodes = -(-nranks // ppn)
    if method == 1:
        node = ranks // ppn
    elif method == 0:
        node = ranks % nnodes
    elif method == 2:
        lap, pos = ranks // nnodes, ranks % nnodes
        node = np.where(lap % 2 == 0, pos, nnodes - 1 - pos)
    else:
        raise PlacementError(f"placement method must be 0, 1, 2 (or 3 with an order file), got {method}")
    # ranks of one node take its slots in rank order; a stable sort by node gives the slot list
    return Placement(METHOD_NAMES[method], np.argsort(node, kind="stable").astype(np.int64), ppn)


def order_placement(order: np.ndarray, ppn: int, name: str = "custom order") -> Placement:
    _check(len(order), ppn)
    return Placement(name, np.asarray(order, dtype=np.int64), ppn)
