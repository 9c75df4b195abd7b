"""The grid options of the commands that take a Cartesian grid (`grid-order`, `io-agg`,
`halo-stats`, `place search`): one definition, so they read the same everywhere. Not a command
itself."""
from __future__ import annotations

import argparse

from ..placement import STENCIL_DIMS


def add_numbering_arguments(p: argparse.ArgumentParser) -> None:
    """-C / -R: how grid_order numbers the ranks of the grid."""
    num = p.add_mutually_exclusive_group()
    num.add_argument("-C", dest="numbering", action="store_const", const="C",
                     help="ranks numbered with the first dimension varying fastest (default)")
    num.add_argument("-R", dest="numbering", action="store_const", const="R",
                     help="ranks numbered with the last dimension varying fastest "
                     "(MPI_Cart_create's)")


def add_curve_arguments(p: argparse.ArgumentParser) -> None:
    """-Z / -P / -H: the order in which grid_order visits the cells."""
    curve = p.add_mutually_exclusive_group()
    curve.add_argument("-Z", dest="curve", action="store_const", const="Z",
                       help="cells listed row after row, each row in the same order (default)")
    curve.add_argument("-P", dest="curve", action="store_const", const="P",
                       help="serpentine: successive rows of cells in alternating order")
    curve.add_argument("-H", dest="curve", action="store_const", const="H",
                       help="cells along a Hilbert curve (-c optional: one rank per cell)")


def add_grid_arguments(p: argparse.ArgumentParser) -> None:
    """-g, -C/-R, --stencil, --periodic: shared by `halo-stats` and `place search`."""
    p.add_argument("-g", dest="grid", required=True, metavar="N1,N2[,N3]", help="grid dimensions")
    add_numbering_arguments(p)
    p.add_argument("--stencil", required=True, choices=list(STENCIL_DIMS),
                   help="neighbours: 5pt/9pt on 2-D grids, 7pt/27pt on 3-D grids")
    p.add_argument("--periodic", action="store_true", help="grid wraps around in every dimension")
