"""What the transformer knows about MPI and C library calls.

Each blocking collective with a nonblocking form is listed with the role of every argument:

  send      buffer the collective reads (later writes must wait)
  recv      buffer the collective writes (later reads and writes must wait)
  bcast     read at the root, written at the other ranks
  array     counts / displacements / datatypes arrays: read until completion
  value     passed by value (count, datatype, op, root, comm): nothing to protect
  status    (point-to-point receives) the MPI_Status the call fills in: written at completion

A `@root` suffix marks arguments significant at the root only (so non-root ranks may wait later,
the paper's figures 7-8).

Point-to-point calls with a nonblocking form are listed the same way (POINT_TO_POINT): a send's
buffer is read until the wait, a receive's buffer and status written at the wait."""
from __future__ import annotations

from dataclasses import dataclass

_V = "value"


@dataclass(frozen=True)
class Collective:
    name: str                  # blocking name, e.g. MPI_Allreduce
    roles: tuple               # one role per argument
    root: int | None = None    # index of the root argument of rooted collectives
    comm_index: int | None = None   # where it is not the last argument (MPI_Recv)
    p2p: bool = False          # a point-to-point call
    half: str = ""             # "send"/"recv": one half of an MPI_Sendrecv (a site of its own)

    @property
    def comm(self) -> int:
        return len(self.roles) - 1 if self.comm_index is None else self.comm_index

    @property
    def status(self) -> int | None:
        """Index of the status argument (a receive's), which moves to the wait."""
        return self.roles.index("status") if "status" in self.roles else None

    @property
    def nonblocking(self) -> str:
        if self.half:
            return {"send": "MPI_Isend", "recv": "MPI_Irecv"}[self.half]
        return "MPI_I" + self.name[4:].lower()

    def persistent(self, prefix: str = "MPI") -> str:
        if self.p2p:           # persistent point-to-point is MPI-1: every MPI has it, no prefix
            return {"send": "MPI_Send_init", "recv": "MPI_Recv_init"}.get(self.half) or \
                f"MPI_{self.name[4:]}_init"
        return f"{prefix}_{self.name[4:]}_init"

    def own_args(self, args: list) -> list:
        """The arguments of the nonblocking (or persistent) call, without the request: a
        receive's status moves to the wait, a Sendrecv half keeps its own six."""
        if self.half == "send":
            return args[0:5] + args[10:11]
        if self.half == "recv":
            return args[5:11]
        return [a for i, a in enumerate(args) if i != self.status]


def _c(name, roles, root=None):
    return Collective(name, tuple(roles.split()), root)


_TABLE = [
    _c("MPI_Barrier", "value"),
    _c("MPI_Bcast", "bcast value value value value", root=3),
    _c("MPI_Reduce", "send recv@root value value value value value", root=5),
    _c("MPI_Allreduce", "send recv value value value value"),
    _c("MPI_Gather", "send value value recv@root value value value value", root=6),
    _c("MPI_Gatherv", "send value value recv@root array@root array@root value value value", root=7),
    _c("MPI_Scatter", "send@root value value recv value value value value", root=6),
    _c("MPI_Scatterv", "send@root array@root array@root value recv value value value value", root=7),
    _c("MPI_Allgather", "send value value recv value value value"),
    _c("MPI_Allgatherv", "send value value recv array array value value"),
    _c("MPI_Alltoall", "send value value recv value value value"),
    _c("MPI_Alltoallv", "send array array value recv array array value value"),
    _c("MPI_Alltoallw", "send array array array recv array array array value"),
    _c("MPI_Reduce_scatter", "send recv array value value value"),
    _c("MPI_Reduce_scatter_block", "send recv value value value value"),
    _c("MPI_Scan", "send recv value value value value"),
    _c("MPI_Exscan", "send recv value value value value"),
    _c("MPI_Neighbor_allgather", "send value value recv value value value"),
    _c("MPI_Neighbor_allgatherv", "send value value recv array array value value"),
    _c("MPI_Neighbor_alltoall", "send value value recv value value value"),
    _c("MPI_Neighbor_alltoallv", "send array array value recv array array value value"),
    _c("MPI_Neighbor_alltoallw", "send array array array recv array array array value"),
]

COLLECTIVES = {c.name: c for c in _TABLE}

# Blocking point-to-point calls rewritten as nonblocking ones (posting order unchanged, so the
# matching order of messages is the same). MPI_Bsend, MPI_Rsend and probes stay.
POINT_TO_POINT = {c.name: c for c in [
    Collective("MPI_Send", tuple("send value value value value value".split()), p2p=True),
    Collective("MPI_Ssend", tuple("send value value value value value".split()), p2p=True),
    Collective("MPI_Recv", tuple("recv value value value value value status".split()),
               comm_index=5, p2p=True),
    Collective("MPI_Sendrecv", tuple("send value value value value recv value value value value value "
                                     "status".split()), comm_index=10, p2p=True),
]}
# MPI_Sendrecv becomes MPI_Irecv + MPI_Isend: two sites, each with the buffer of its half only (the
# other half's arguments are values to it), so each gets its own request and its own wait. Sends
# stay in order among sends and receives among receives, which is all MPI's matching order is about.
SENDRECV_HALVES = (
    Collective("MPI_Sendrecv", tuple(("send" + " value" * 11).split()), comm_index=10, p2p=True,
               half="send"),
    Collective("MPI_Sendrecv", tuple(("value " * 5 + "recv value value value value value status").split()),
               comm_index=10, p2p=True, half="recv"),
)
# Point-to-point calls reported, left as they are: (why). Not in REWRITABLE, so still unknown MPI
# that no wait crosses.
LEFT_BLOCKING_P2P = {
    "MPI_Sendrecv_replace": "MPI_Sendrecv_replace receives into the buffer it sends: as two nonblocking "
                            "calls it would need a copy of the message the size of the buffer",
}
# every call the transformer rewrites
REWRITABLE = {**COLLECTIVES, **POINT_TO_POINT}

# MPI calls whose effects are understood: (argument index written, …); nothing else is touched.
MPI_UNDERSTOOD = {
    "MPI_Comm_rank": (1,), "MPI_Comm_size": (1,), "MPI_Comm_test_inter": (1,),
    "MPI_Initialized": (0,), "MPI_Finalized": (0,), "MPI_Type_size": (1,),
    "MPI_Get_processor_name": (0, 1),
}

# Nonblocking point-to-point calls already in the program: (role, buffer index, request index).
# The buffer is read (send) or written (receive) from the call on, until the request's wait.
NONBLOCKING_P2P = {"MPI_Isend": ("send", 0, 6), "MPI_Issend": ("send", 0, 6),
                   "MPI_Irecv": ("recv", 0, 6)}
# Waits on requests: (index of the request or request array, index of the status(es)).
MPI_WAITS = {"MPI_Wait": (0, 1), "MPI_Waitall": (1, 2)}

# MPI calls that must never be overlapped with a pending collective (the paper's special operations).
MPI_SYNCHRONISING = {"MPI_Wtime", "MPI_Barrier", "MPI_Finalize", "MPI_Abort"}

# C library functions without a body in the translation unit whose effects are known:
# (indices of pointer arguments read, indices written, effect on everything else).
#   "pure": touches only what the arguments point to as listed; "exit": never returns normally.
_READ_ALL = "read-all"
LIBC = {
    # formatted output reads whatever its pointer arguments point to
    "printf": _READ_ALL, "fprintf": _READ_ALL, "puts": _READ_ALL, "fputs": _READ_ALL,
    "putchar": (), "fputc": (), "fflush": (), "sprintf": "write0-read-rest",
    "snprintf": "write0-read-rest",
    "memcpy": ((1,), (0,)), "memmove": ((1,), (0,)), "memset": ((), (0,)),
    "memcmp": ((0, 1), ()), "strlen": ((0,), ()), "strcmp": ((0, 1), ()),
    "strncmp": ((0, 1), ()), "strcpy": ((1,), (0,)), "strncpy": ((1,), (0,)),
    "strcat": ((0, 1), (0,)), "atoi": ((0,), ()), "atof": ((0,), ()), "atol": ((0,), ()),
    "strtol": ((0,), (1,)), "strtod": ((0,), (1,)),
    # memory management: free ends the buffer's life, like a write
    "malloc": (), "calloc": (), "realloc": ((), (0,)), "free": ((), (0,)),
    "abs": (), "labs": (), "rand": (), "srand": (),
    "sqrt": (), "fabs": (), "exp": (), "log": (), "pow": (), "sin": (), "cos": (), "tan": (),
    "floor": (), "ceil": (), "fmin": (), "fmax": (), "round": (), "sqrtf": (), "fabsf": (),
    "clock": (), "time": ((), (0,)),
}
RETURNS_FIRST_ARGUMENT = {"memcpy", "memmove", "memset", "strcpy", "strncpy", "strcat", "realloc"}
NO_RETURN = {"exit", "abort", "_exit", "_Exit", "longjmp", "siglongjmp", "quick_exit"}
ALLOCATORS = {"malloc", "calloc", "aligned_alloc", "strdup"}


def is_mpi(name: str) -> bool:
    return name.startswith(("MPI_", "PMPI_", "MPIX_", "PMPIX_"))
