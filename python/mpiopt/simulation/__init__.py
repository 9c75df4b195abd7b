"""Simulations run by `mpiopt simulate NAME` on SimGrid SMPI, one module each.

A module defines NAME, HELP, EXAMPLE (shown by --help), `add_arguments(parser)` and
`run(args) -> int`; `args.json` asks for JSON instead of tables. The shared SMPI machinery (the
SMPI build, platform XML and hostfile, smpirun, parsing simulated time) is in `smpi.py`."""
