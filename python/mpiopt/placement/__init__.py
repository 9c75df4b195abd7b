"""Rank placement for Cartesian codes: grid_order-style rank orders, placements 0-3, launcher
files, halo-traffic statistics and a placement search. No MPI here: pure bookkeeping that the
commands (grid-order, place, halo-stats, run, simulate halo) build on.

The names below are imported from their modules when first used (PEP 562), so that importing one
light module of the package (slurm, errors) does not import numpy and networkx with the rest."""
import importlib

from .errors import PlacementError

# name -> the module of this package that defines it
_WHERE = {
    "Grid": "grid", "parse_int_list": "grid",
    "GridOrderOptions": "grid_order", "format_order": "grid_order", "generate": "grid_order",
    "HaloPattern": "halo", "STENCIL_DIMS": "halo", "stencil_grid": "halo",
    "FORMATS": "launch", "convert": "launch", "launch_args": "launch", "read_hosts": "launch",
    "MatrixPlacement": "matrix_partition", "off_node_bytes": "matrix_partition",
    "partition": "matrix_partition",
    "check_permutation": "orders", "parse_order": "orders", "read_order": "orders",
    "METHOD_NAMES": "placements", "Placement": "placements", "method_placement": "placements",
    "order_placement": "placements",
    "search": "search",
}

__all__ = ["PlacementError", *_WHERE]


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
