"""Where tables and messages for people go. A terminal keeps its own width; output sent to a pipe
or file (`make run | tee`, CI logs) gets a wide fixed one, so that rich never squeezes a table
to 80 columns and cuts its cells ("MPI_…")."""
from __future__ import annotations

import sys

PIPED_WIDTH = 200


def console(stderr: bool = False):
    from rich.console import Console
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else PIPED_WIDTH)
