"""Errors every layer may raise. The command line (cli.py) turns a UsageError into
`mpiopt: error: MESSAGE` and exit status 2; it lives here, at the bottom of the layers, so that
benchmarks, simulation, placement and transform modules can raise it without importing cli."""
from __future__ import annotations


class UsageError(Exception):
    """A bad argument or input file: reported as `mpiopt: error: …` with exit status 2."""
