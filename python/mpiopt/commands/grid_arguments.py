"""The grid options of the commands that take a Cartesian stencil code (`halo-stats`,
`place search`): one definition, so they read the same everywhere. Not a command itself."""
from __future__ import annotations

import argparse

from ..placement import STENCIL_DIMS


def add_grid_arguments(p: argparse.ArgumentParser) -> None:
    """-g, -C/-R, --stencil, --periodic: shared with `place search`."""
    p.add_argument("-g", dest="grid", required=True, metavar="N1,N2[,N3]", help="grid dimensions")
    num = p.add_mutually_exclusive_group()
    num.add_argument("-C", dest="numbering", action="store_const", const="C",
                     help="ranks numbered with the first dimension fastest (default)")
    num.add_argument("-R", dest="numbering", action="store_const", const="R",
                     help="ranks numbered with the last dimension fastest (MPI_Cart_create's)")
    p.add_argument("--stencil", required=True, choices=list(STENCIL_DIMS),
                   help="neighbours: 5pt/9pt on 2-D grids, 7pt/27pt on 3-D grids")
    p.add_argument("--periodic", action="store_true", help="grid wraps around in every dimension")
