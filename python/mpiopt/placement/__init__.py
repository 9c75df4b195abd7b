"""Rank placement for Cartesian codes: grid_order-style rank orders, placements 0-3, launcher
files, halo-traffic statistics and a placement search. No MPI here: pure bookkeeping that the
commands (grid-order, place, halo-stats, run, simulate halo) build on."""
from .grid import Grid, PlacementError, parse_int_list
from .grid_order import GridOrderOptions, format_order, generate
from .halo import HaloPattern, STENCIL_DIMS, stencil_grid
from .launch import FORMATS, convert, launch_args, read_hosts
from .matrix_partition import MatrixPlacement, off_node_bytes, partition
from .orders import check_permutation, parse_order, read_order
from .placements import METHOD_NAMES, Placement, method_placement, order_placement
from .search import search

__all__ = [
    "stencil_grid",
    "Grid", "PlacementError", "parse_int_list", "GridOrderOptions", "format_order", "generate",
    "HaloPattern", "STENCIL_DIMS", "FORMATS", "convert", "launch_args", "read_hosts",
    "check_permutation", "parse_order", "read_order", "METHOD_NAMES", "Placement",
    "method_placement", "order_placement", "search", "MatrixPlacement", "off_node_bytes",
    "partition",
]
