"""Fortran point-to-point in persistent mode: what the Fortran writer adds for MPI_SEND_INIT /
MPI_RECV_INIT requests in a loop (the shared analyses decide everything else).

  * MPI_STARTALL: consecutive MPI_START calls of point-to-point requests become one
    MPI_STARTALL, but only where the order of starting cannot matter. MPI_STARTALL starts its
    requests "in some arbitrary order" (MPI-3.1 section 3.9), and two sends to one destination
    (or two receives from one source) with one tag and communicator match in the order they
    start: the original order would be lost. So every two sends of a run, and every two
    receives, must have different integer-literal tags (peers and communicators need not be
    told apart then). Collectives never go into a run: every rank must start them in one order.
  * a buffer ALLOCATEd or DEALLOCATEd in the loop moves: a request made before the loop
    would point at its old storage.
  * MPI_SENDRECV: its two halves (placement.SENDRECV_HALVES, sites of their own with a request
    and a wait each) are one statement, so they change together: where Fortran leaves one
    half blocking (a section, an expression, a dummy of an external procedure...) the other
    stays too, with that reason; the statement becomes MPI_IRECV then MPI_ISEND (the receive
    posted first, as in C)."""
from __future__ import annotations

from fparser.two import Fortran2003 as F

from .persistent import enclosing_loop
from .placement import Site

TAG = 4          # the tag's position in MPI_SEND / MPI_SSEND / MPI_RECV


def startall_runs(sites: list[Site], unit) -> list[list[Site]]:
    """Runs (two or more) of persistent point-to-point calls that are consecutive statements of
    one block with consecutive request slots and tags that keep their matching order."""
    chosen = sorted((s for s in sites if s.action == "persistent" and s.coll.p2p and not s.coll.half),
                    key=lambda s: (s.block.start, s.index))
    runs, run = [], []
    for s in chosen:
        if run and (s.block is run[-1].block and s.index == run[-1].index + 1
                    and s.slot == run[-1].slot + 1 and _tags_apart(run + [s], unit)
                    and not _has_comment(s, unit)):
            run.append(s)
            continue
        if len(run) > 1:
            runs.append(run)
        run = [s] if not _has_comment(s, unit) else []
    if len(run) > 1:
        runs.append(run)
    return runs


def _tag(site: Site, unit) -> int | None:
    actual = unit.fnodes[id(site.call)].children[1].children[TAG]
    return int(str(actual)) if isinstance(actual, F.Int_Literal_Constant) and \
        str(actual).isdigit() else None


def _tags_apart(run: list[Site], unit) -> bool:
    for receive in (True, False):
        tags = [_tag(s, unit) for s in run if (s.coll.status is not None) == receive]
        if None in tags or len(set(tags)) != len(tags):
            return False
    return True


def _has_comment(site: Site, unit) -> bool:
    """A call with a trailing comment keeps its own line (the comment stays with it)."""
    last = unit.fnodes[id(site.call)].item.span[1]
    offs = unit.line_offsets
    line = unit.text[offs[last]:offs[min(last + 1, len(offs) - 1)]].decode(errors="replace")
    return "!" in line


def reallocated_in_loop(s: Site, ea) -> str:
    """Why the request cannot be made before the loop: a buffer (de)allocated in it ('' if none)."""
    loop = enclosing_loop(s)
    if loop is None:
        return ""
    for n in loop.walk():
        if n.kind == "FORTRAN_ALLOCATION_STMT":
            for w in ea.of(n).writes:
                for loc, _written, arg, _role in s.accesses:
                    if ea.pts.same(w, loc):
                        return f"the buffer `{ea.text(arg)}` is allocated or deallocated in the loop " \
                               f"(line {n.line}): not loop-invariant"
    return ""


def pair_halves(sites: list[Site]) -> None:
    """The halves of one MPI_SENDRECV stay blocking together: the first reason of either is both's."""
    for s in sites:
        if s.coll.half and s.block is None:
            for other in sites:
                if other.call is s.call and other is not s and other.block is not None:
                    other.block, other.action, other.waits = None, "unchanged", []
                    other.reason = s.reason


def sendrecv_halves(sites: list[Site]) -> dict:
    """id(send half) -> its receive half, for the halves the writer writes as one statement."""
    recv = {id(s.call): s for s in sites if s.coll.half == "recv"}
    return {id(s): recv[id(s.call)] for s in sites if s.coll.half == "send" and id(s.call) in recv}


def nonblocking_name(original: str, nonblocking: str) -> str:
    """MPI_Isend in the case the program wrote the blocking call's name in (MPI_SENDRECV ->
    MPI_ISEND, mpi_sendrecv -> mpi_isend, MPI_Sendrecv -> MPI_Isend)."""
    rest = original[4:]
    if rest.isupper():
        return nonblocking.upper()
    if rest.islower():
        return nonblocking.lower()
    return nonblocking
