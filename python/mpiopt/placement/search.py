"""`place search`: try grid_order orders (cell shapes, visiting curves, dimension orders) for a
grid, stencil and ranks per node, and rank them by off-node halo bytes, ties broken by the
busiest node's off-node bytes."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .grid import Grid
from .grid_order import GridOrder, GridOrderOptions, generate
from .halo import HaloPattern
from .placements import method_placement

# cells that do not divide the grid whose every visiting order is tried (stage 2 of search)
STAGE2_CELLS = 3


@dataclass
class Candidate:
    order: GridOrder
    off_node_messages: int
    max_node_off_node_messages: int

    @property
    def command(self) -> str:
        return self.order.options.command()


def cell_shapes(dims, ppn: int):
    """Every cell (n1, n2, …) with n1·n2·… = ppn that fits in the grid."""
    def rec(k, left):
        if k == len(dims) - 1:
            if left <= dims[k]:
                yield (left,)
            return
        for c in range(1, min(left, dims[k]) + 1):
            if left % c == 0:
                for rest in rec(k + 1, left // c):
                    yield (c,) + rest
    return list(rec(0, ppn))


def _variants(grid: Grid, cell):
    """The visiting curves and dimension orders for one cell shape."""
    default = [k + 1 for k in grid.fastest_first()]
    for curve in ("Z", "P", "H"):
        for perm in itertools.permutations(range(1, grid.ndim + 1)):
            # the default dimension order is left out of the options to keep the header short
            yield GridOrderOptions(grid.dims, cell, grid.numbering, curve,
                                   dim_order=None if list(perm) == default else perm)


def _divides(grid: Grid, cell) -> bool:
    return all(n % c == 0 for n, c in zip(grid.dims, cell))


def search(grid: Grid, stencil: str, ppn: int, periodic: bool = False) -> tuple[list[Candidate], dict]:
    """Candidates best first, and the SMP placement's figures (the baseline)."""
    pattern = HaloPattern(grid, stencil, periodic)
    smp_off, smp_max = pattern.off_node(method_placement(1, grid.size, ppn).node_of_rank())
    seen, found = set(), []

    def evaluate(opts):
        go = generate(opts)
        order = go.order
        key = hash(order.tobytes())
        if key in seen:
            return
        seen.add(key)
        node = np.empty(grid.size, dtype=np.int64)
        node[order] = np.arange(order.size) // ppn
        off, worst = pattern.off_node(node)
        found.append(Candidate(go, off, worst))

    # Stage 1: every cell shape, row after row. A cell that divides the grid makes each node one
    # cell whatever the visiting order, so it is done; for the others the remainder regions
    # depend on the order, and stage 2 tries all orders for the most promising few of them.
    uneven = []
    for cell in cell_shapes(grid.dims, ppn):
        evaluate(GridOrderOptions(grid.dims, cell, grid.numbering, "Z"))
        if not _divides(grid, cell):
            uneven.append(found[-1])
    evaluate(GridOrderOptions(grid.dims, None, grid.numbering, "H", ranks_per_node=ppn))
    uneven.sort(key=lambda c: (c.off_node_messages, c.max_node_off_node_messages))
    for cand in uneven[:STAGE2_CELLS]:
        for opts in _variants(grid, cand.order.options.cell):
            evaluate(opts)
    # stable sort: among equal figures the earlier (simpler) candidate stays first
    found.sort(key=lambda c: (c.off_node_messages, c.max_node_off_node_messages))
    return found, {"off_node_messages": smp_off, "max_node_off_node_messages": smp_max}
