"""`mpiopt simulate NAME`: runs at scale on SimGrid SMPI. Each simulation is a module of
mpiopt.simulation with NAME, HELP, EXAMPLE, `add_arguments(parser)` and `run(args)`."""
from __future__ import annotations

import argparse

from .. import simulation
from ..plugins import plugin_modules

EXAMPLE = """examples:
  mpiopt simulate allreduce --ranks 128 --sizes 8:8M --platform torus
  mpiopt simulate allreduce --ranks 64 --sizes 8,1M --platform fattree --ppn 4 --json
  mpiopt simulate matrix --profile mpiopt-profile.json --ppn 16    a measured matrix, placed

Simulated time is network time on the machine the platform describes; runs are deterministic.
"""


def _modules():
    return plugin_modules(simulation, "NAME", "run")


def register(sub) -> None:
    p = sub.add_parser("simulate", help="simulate collectives at scale with SimGrid SMPI",
                       description="Simulates MPI programs on hundreds or thousands of ranks with "
                       "SimGrid SMPI, on a cluster, torus or fat-tree machine.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    ssub = p.add_subparsers(dest="simulation", metavar="NAME")
    for mod in _modules():
        sp = ssub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP,
                             formatter_class=argparse.RawDescriptionHelpFormatter,
                             epilog=getattr(mod, "EXAMPLE", None))
        sp.add_argument("--json", action="store_true", help="print JSON instead of tables")
        mod.add_arguments(sp)
        sp.set_defaults(func=mod.run)

    def usage(args) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=usage)
