"""The source transformer behind `mpiopt transform`: blocking MPI collectives in C files become
nonblocking (waits as late as the data allow) or persistent ones (in loops).

parse (libclang -> Node tree) -> alias (Steensgaard points-to) -> effects (read/write sets,
summaries) -> placement (waits, slots) / persistent (loop invariance) -> engine (text edits via
rewrite) -> report."""
from .engine import MODES, FileResult, Options, transform_file  # noqa: F401
from .parse import ParseError  # noqa: F401
