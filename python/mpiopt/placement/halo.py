"""Halo traffic of a Cartesian stencil code under a placement: every rank sends one message of
B bytes to each stencil neighbour; a message is on-node when both ranks share a node."""
from __future__ import annotations

import itertools

import numpy as np

from .grid import Grid, PlacementError, parse_int_list
from .placements import Placement

STENCIL_DIMS = {"5pt": 2, "9pt": 2, "7pt": 3, "27pt": 3}


def stencil_offsets(stencil: str) -> np.ndarray:
    """(k, ndim) offsets of the neighbours: faces only (5pt, 7pt) or faces, edges, corners."""
    if stencil not in STENCIL_DIMS:
        raise PlacementError(f"unknown stencil {stencil!r} (expected one of {', '.join(STENCIL_DIMS)})")
    d = STENCIL_DIMS[stencil]
    offs = [o for o in itertools.product((-1, 0, 1), repeat=d) if any(o)]
    if stencil in ("5pt", "7pt"):
        offs = [o for o in offs if sum(map(abs, o)) == 1]
    return np.array(offs, dtype=np.int64)


class HaloPattern:
    """All (sender, receiver) pairs of one halo exchange, computed once and evaluated against
    many placements (what `place search` does)."""

    def __init__(self, grid: Grid, stencil: str, periodic: bool = False):
        offsets = stencil_offsets(stencil)
        if grid.ndim != offsets.shape[1]:
            raise PlacementError(f"stencil {stencil} is {offsets.shape[1]}-D but the grid "
                                 f"{'x'.join(map(str, grid.dims))} is {grid.ndim}-D")
        self.grid, self.stencil, self.periodic = grid, stencil, periodic
        coords = grid.all_coords()
        dims = np.array(grid.dims, dtype=np.int64)[:, None]
        src, dst, kind = [], [], []
        for k, off in enumerate(offsets):
            to = coords + off[:, None]
            if periodic:
                to %= dims
                keep = slice(None)
            else:
                keep = np.all((to >= 0) & (to < dims), axis=0)
            src.append(np.flatnonzero(keep) if not periodic else np.arange(grid.size))
            dst.append(grid.rank_of(to[:, keep]))
            kind.append(np.full(dst[-1].size, k, dtype=np.int64))
        self.offsets = offsets
        self.src = np.concatenate(src)
        self.dst = np.concatenate(dst)
        self.kind = np.concatenate(kind)     # which offset each message goes along

    def off_node(self, node_of_rank: np.ndarray) -> tuple[int, int]:
        """(off-node messages, largest number of off-node messages sent by one node)."""
        node = np.asarray(node_of_rank)
        from_node = node[self.src]
        off = from_node != node[self.dst]
        per_node = np.bincount(from_node[off], minlength=int(node.max()) + 1)
        return int(off.sum()), int(per_node.max()) if per_node.size else 0

    def weighted_traffic(self, node_of_rank: np.ndarray, bytes_per_offset) -> dict:
        """Bytes when a message's size depends on its direction (a non-square block sends longer
        faces one way than the other): bytes_per_offset[k] for self.offsets[k]."""
        node = np.asarray(node_of_rank)
        size = np.asarray(bytes_per_offset, dtype=np.int64)[self.kind]
        from_node = node[self.src]
        off = from_node != node[self.dst]
        per_node_bytes = np.bincount(from_node[off], weights=size[off], minlength=int(node.max()) + 1)
        per_node_msgs = np.bincount(from_node[off], minlength=int(node.max()) + 1)
        return {"bytes_total": int(size.sum()), "bytes_off_node": int(size[off].sum()),
                "max_node_off_node_bytes": int(per_node_bytes.max()),
                "max_node_off_node_messages": int(per_node_msgs.max()),
                "max_rank_bytes": int(np.bincount(self.src, weights=size).max(initial=0)),
                "max_rank_messages": int(np.bincount(self.src).max(initial=0))}

    def stats(self, placement: Placement, nbytes: int) -> dict:
        if placement.nranks != self.grid.size:
            raise PlacementError(f"the placement has {placement.nranks} ranks but the grid "
                                 f"{'x'.join(map(str, self.grid.dims))} has {self.grid.size}")
        off, worst = self.off_node(placement.node_of_rank())
        total = int(self.src.size)
        return {
            "placement": placement.name,
            "ranks": placement.nranks,
            "ranks_per_node": placement.ppn,
            "nodes": placement.nnodes,
            "messages_total": total,
            "messages_on_node": total - off,
            "messages_off_node": off,
            "bytes_total": total * nbytes,
            "bytes_on_node": (total - off) * nbytes,
            "bytes_off_node": off * nbytes,
            "max_node_off_node_bytes": worst * nbytes,
            "on_node_share": (total - off) / total if total else 0.0,
        }


def stencil_grid(grid_text: str, stencil: str, numbering: str | None = None) -> Grid:
    """The grid of `-g N1,N2[,N3]` for a stencil, checked: the stencil fixes the dimensions."""
    dims = parse_int_list(grid_text, "-g")
    if len(dims) != STENCIL_DIMS[stencil]:
        raise PlacementError(f"stencil {stencil} needs a {STENCIL_DIMS[stencil]}-D grid, got -g {grid_text}")
    return Grid(tuple(dims), numbering or "C")
