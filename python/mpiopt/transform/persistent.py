"""Persistent collectives: which calls in loops have loop-invariant arguments, and which MPI
names the target library has for them.

A call can become `<Coll>_init` before the loop + `MPI_Start` in it + `MPI_Request_free` after it
when: it is a statement of the loop body itself (so it runs on every iteration every rank makes);
the loop cannot be left by `return`/`goto` (the request would leak); and every argument, evaluated
once before the loop, has the value it would have in every iteration: no side effects, every
variable it reads is declared outside the loop and written nowhere in it (reaching definitions all
outside the loop), and arrays of counts/displacements/types are not written in the loop. Buffer
contents may change; buffer addresses may not (a swapped pointer is not invariant)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .effects import EffectAnalysis, Effects, call_args
from .parse import Node, mpi_compile_flags
from .placement import Site, side_effect_free

LOOPS = {"FOR_STMT", "WHILE_STMT", "DO_STMT", "CXX_FOR_RANGE_STMT"}


@dataclass(frozen=True)
class Target:
    version: int           # 3 or 4
    prefix: str            # "MPI" (MPI-4 names), "MPIX" (Open MPI's extension) or "" (none)
    header: str = ""       # extra header the prefix needs
    library: str = ""      # e.g. "MPICH 4.0.2", for messages
    broken: frozenset = frozenset()   # persistent collectives known to compute wrong results

    @property
    def has_persistent(self) -> bool:
        return bool(self.prefix)


@lru_cache(maxsize=None)
def detect_target(flavour: str, version: int | None = None) -> Target:
    """MPI-4 persistent collectives if the headers declare them (MPICH 4), Open MPI's `MPIX_` ones
    (mpi-ext.h, pcollreq extension) otherwise; `version` forces 3 or 4."""
    dirs = [Path(a[2:]) for a in mpi_compile_flags(flavour) if a.startswith("-I")]
    has_mpi4 = has_mpix = False
    library = ""
    for d in dirs:
        try:
            m = re.search(r'#define\s+MPICH_VERSION\s+"([^"]+)"', (d / "mpi.h").read_text(errors="replace"))
        except OSError:
            m = None
        if m:
            library = f"MPICH {m.group(1)}"
        for h in list(d.glob("mpi*.h")) + list(d.glob("openmpi/mpiext/mpiext_pcollreq_c.h")):
            try:
                text = h.read_text(errors="replace")
            except OSError:
                continue
            has_mpi4 = has_mpi4 or re.search(r"\bMPI_Allreduce_init\s*\(", text) is not None
            has_mpix = has_mpix or re.search(r"\bMPIX_Allreduce_init\s*\(", text) is not None
    has_mpix = has_mpix and any((d / "mpi-ext.h").exists() for d in dirs)
    if version is None:
        version = 4 if has_mpi4 else 3
    # Reproduced here (3 starts with changing send data vs the blocking call, 2-4 ranks): MPICH
    # 4.0.x's persistent Allgather returns stale remote blocks, Gather loses the root's own
    # block, Scatter returns stale data or fails with "Invalid communicator". Those stay nonblocking.
    broken = frozenset({"MPI_Allgather", "MPI_Gather", "MPI_Scatter"}) \
        if library.startswith("MPICH 4.0") else frozenset()
    if version >= 4:
        return Target(4, "MPI", library=library, broken=broken)
    if has_mpix:
        return Target(3, "MPIX", "mpi-ext.h", library=library)
    return Target(3, "", library=library)


def enclosing_loop(site: Site) -> Node | None:
    """The loop whose body block directly holds the call, if any."""
    block = site.block
    parent = block.parent if block is not None else None
    if parent is None or parent.kind not in LOOPS:
        return None
    body = parent.children[0] if parent.kind == "DO_STMT" else parent.children[-1]
    return parent if body is block else None


def why_not_persistent(site: Site, ea: EffectAnalysis) -> str:
    """'' if the call can be made persistent, else the reason it cannot."""
    loop = enclosing_loop(site)
    if loop is None:
        return "not directly in a loop body"
    if loop.parent is None or loop.parent.kind != "COMPOUND_STMT":
        return "the loop is not a statement of a { } block (no room for the init)"
    decls = set()
    for n in loop.walk():
        if n.kind in ("RETURN_STMT", "GOTO_STMT", "INDIRECT_GOTO_STMT", "LABEL_STMT", "CXX_THROW_EXPR"):
            return f"the loop can be left or entered by {n.kind.split('_')[0].lower()} " \
                   f"(line {n.line}): the persistent request could leak"
        if n.kind == "VAR_DECL":
            decls.add(n.ref)
    loop_eff = ea.of(loop)
    pts = ea.pts
    for arg, role in zip(call_args(site.call), site.coll.roles):
        text = ea.text(arg)
        if not side_effect_free(arg):
            return f"argument `{text}` has side effects"
        for ref in arg.walk():
            if ref.kind == "DECL_REF_EXPR" and ref.ref_kind == "var" and ref.ref in decls:
                return f"`{ref.spelling}` in `{text}` is declared inside the loop"
        reads = Effects()
        ea.expr(arg, reads)
        for loc, node in reads.reads.items():
            why = _written_in(loc, loop_eff, ea)
            if why:
                return f"`{ea.text(node)}` in argument `{text}` {why}: not loop-invariant"
        if role.startswith("array"):
            target = pts.val(arg)
            why = _written_in(target, loop_eff, ea) if target is not None else ""
            if why:
                return f"the array `{text}` {why}: not loop-invariant"
    return ""


def _written_in(loc, loop_eff, ea: EffectAnalysis) -> str:
    pts = ea.pts
    for w, node in loop_eff.writes.items():
        if pts.same(w, loc):
            return f"is written in the loop (line {node.line})"
    for name, args, node in loop_eff.unknown:
        if any(a is not None and pts.reaches(a, loc) for a in args) or ea.may_reach_from_globals(loc):
            return f"may be changed by {name} in the loop (line {node.line})"
    return ""
