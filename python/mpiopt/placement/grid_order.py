"""A rank order in the style of Cray's `grid_order`: the ranks of each cell (one node's block of
the virtual grid) listed together, cells visited row after row (Z), serpentine (P) or along a
Hilbert curve (H). The printed text is an MPICH_RANK_ORDER file."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .curves import CURVES, z_index
from .grid import Grid, PlacementError


@dataclass
class GridOrderOptions:
    grid: tuple[int, ...]
    cell: tuple[int, ...] | None = None   # None only with curve 'H': then one rank per cell
    numbering: str = "C"                  # 'C' or 'R'
    curve: str = "Z"                      # 'Z', 'P' or 'H'
    dim_order: tuple[int, ...] | None = None  # 1-based, fastest first; default: the numbering's
    max_rank: int | None = None           # -m: ranks above it are left out
    ranks_per_node: int | None = None     # -N
    ranks_per_line: int | None = None     # -n
    start: int = 0                        # -s: added to every rank
    table: bool = False                   # -T

    def __post_init__(self):
        self.grid = tuple(int(n) for n in self.grid)
        d = len(self.grid)
        if self.curve not in CURVES:
            raise PlacementError(f"curve must be one of Z, P, H, not {self.curve!r}")
        if self.cell is None:
            if self.curve != "H":
                raise PlacementError("a cell size (-c n1,n2,…) is required except with -H")
        else:
            self.cell = tuple(int(n) for n in self.cell)
            if len(self.cell) != d:
                raise PlacementError(f"cell -c has {len(self.cell)} dimensions but grid -g has {d}")
            for k, (c, n) in enumerate(zip(self.cell, self.grid)):
                if c < 1:
                    raise PlacementError(f"cell dimension {k + 1} is {c}: must be at least 1")
                if c > n:
                    raise PlacementError(f"cell dimension {k + 1} ({c}) is larger than the grid's ({n})")
        self.grid_obj = Grid(self.grid, self.numbering)   # validates numbering and size
        if self.dim_order is not None:
            self.dim_order = tuple(int(k) for k in self.dim_order)
            if sorted(self.dim_order) != list(range(1, d + 1)):
                raise PlacementError(f"-o must be a permutation of 1..{d}, got "
                                     f"{','.join(map(str, self.dim_order))}")
        for name, value, low in (("-m", self.max_rank, 0), ("-N", self.ranks_per_node, 1),
                                 ("-n", self.ranks_per_line, 1), ("-s", self.start, 0)):
            if value is not None and value < low:
                raise PlacementError(f"{name} must be at least {low}, got {value}")

    @property
    def cell_or_ones(self) -> tuple[int, ...]:
        return self.cell if self.cell is not None else (1,) * len(self.grid)

    @property
    def cell_size(self) -> int:
        return int(np.prod(self.cell_or_ones))

    def fastest(self) -> list[int]:
        """Dimensions (0-based), fastest varying first, for visiting cells and ranks in a cell."""
        if self.dim_order is not None:
            return [k - 1 for k in self.dim_order]
        return self.grid_obj.fastest_first()

    def line_length(self) -> int:
        return self.ranks_per_line or self.ranks_per_node or self.cell_size

    def node_size(self) -> int:
        return self.ranks_per_node or self.cell_size

    def command(self) -> str:
        """The header: the options with the defaults (-C/-R, -Z/-P/-H) filled in."""
        j = lambda v: ",".join(map(str, v))
        parts = ["grid_order", f"-{self.numbering}", f"-{self.curve}"]
        if self.cell is not None:
            parts += ["-c", j(self.cell)]
        parts += ["-g", j(self.grid)]
        if self.dim_order is not None:
            parts += ["-o", j(self.dim_order)]
        for flag, value in (("-m", self.max_rank), ("-N", self.ranks_per_node),
                            ("-n", self.ranks_per_line)):
            if value is not None:
                parts += [flag, str(value)]
        if self.start:
            parts += ["-s", str(self.start)]
        if self.table:
            parts.append("-T")
        return " ".join(parts)


@dataclass
class Region:
    origin: tuple[int, ...]
    ranks: np.ndarray               # in listing order, after -s and -m
    first: int = 0                  # positions in the whole printed list
    last: int = -1


@dataclass
class GridOrder:
    options: GridOrderOptions
    regions: list[Region] = field(default_factory=list)

    @property
    def order(self) -> np.ndarray:
        """The whole rank order (what fills node slots one after the other)."""
        if not self.regions:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([r.ranks for r in self.regions])


def _boxes(grid, cell, fastest):
    """The whole cells form region 0; each dimension the cell does not divide leaves a slab of
    remainder, and every combination of slabs is a further region (in the visiting order)."""
    whole = [(n // c) * c for n, c in zip(grid, cell)]
    for mask in range(1 << len(grid)):
        partial = {fastest[i] for i in range(len(grid)) if mask >> i & 1}
        origin = tuple(whole[k] if k in partial else 0 for k in range(len(grid)))
        extent = tuple(grid[k] - whole[k] if k in partial else whole[k] for k in range(len(grid)))
        if all(e > 0 for e in extent):
            yield origin, extent


def _box_order(origin, extent, cell, curve, fastest) -> np.ndarray:
    """Coordinates (ndim, n) of the points of one box, in listing order."""
    d = len(extent)
    local = np.indices(extent, dtype=np.int64).reshape(d, -1)
    c = np.array([min(ck, ek) for ck, ek in zip(cell, extent)], dtype=np.int64)[:, None]
    cell_of, inside = local // c, local % c
    ncells = [e // int(ck) for e, ck in zip(extent, c[:, 0])]
    cell_seq = CURVES[curve](cell_of, ncells, fastest)
    inside_seq = z_index(inside, c[:, 0], fastest)
    listing = np.lexsort((inside_seq, cell_seq))
    return local[:, listing] + np.array(origin, dtype=np.int64)[:, None]


def generate(opts: GridOrderOptions) -> GridOrder:
    result = GridOrder(opts)
    fastest = opts.fastest()
    position = 0
    for origin, extent in _boxes(opts.grid, opts.cell_or_ones, fastest):
        coords = _box_order(origin, extent, opts.cell_or_ones, opts.curve, fastest)
        ranks = opts.grid_obj.rank_of(coords) + opts.start
        if opts.max_rank is not None:
            ranks = ranks[ranks <= opts.max_rank]
        if ranks.size == 0:
            continue
        result.regions.append(Region(origin, ranks, position, position + ranks.size - 1))
        position += ranks.size
    return result


def node_table(go: GridOrder) -> list[str]:
    """-T: the grid drawn as node numbers (node = position in the list // ranks per node); rows
    run along dimension 1, columns along dimension 2, one table per index of dimensions 3…"""
    opts = go.options
    grid = opts.grid_obj
    node = np.full(grid.size, -1, dtype=np.int64)
    listed = go.order - opts.start
    node[listed] = np.arange(listed.size) // opts.node_size()
    coords = grid.all_coords()
    cube = np.full(opts.grid, -1, dtype=np.int64)
    cube[tuple(coords)] = node
    if cube.ndim == 1:
        cube = cube[:, None]
    width = len(str(max(int(node.max()), 0)))
    lines = [f"# Node numbers ({opts.node_size()} ranks per node; rows: dimension 1, "
             f"columns: dimension 2)"]
    for rest in np.ndindex(*cube.shape[2:]):
        if rest:
            lines.append("# " + ", ".join(f"dimension {k + 3} = {v}" for k, v in enumerate(rest)))
        plane = cube[(slice(None), slice(None)) + rest]
        for row in plane:
            lines.append("# " + " ".join("." * width if v < 0 else str(v).rjust(width) for v in row))
    return lines


def format_order(go: GridOrder) -> str:
    """The text grid_order prints: header, then per region its line and the ranks, n per line."""
    opts = go.options
    n = opts.line_length()
    out = [f"# {opts.command()}"]
    for i, region in enumerate(go.regions):
        out.append(f"# Region {i}: {','.join(map(str, region.origin))} ({region.first}..{region.last})")
        text = region.ranks.astype(str)
        out.extend(",".join(text[j:j + n]) for j in range(0, text.size, n))
    if opts.table:
        out.extend(node_table(go))
    return "\n".join(out) + "\n"
