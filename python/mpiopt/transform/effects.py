"""Read and write sets of statements, with interprocedural summaries.

`Effects` of a statement: the abstract locations (alias.py) it may read and write, the calls to
code the tool cannot see (with what their arguments point to), and whether it must not be crossed
by a pending collective at all (`stop`: a jump out, a label, a synchronising or unknown MPI call,
a call that never returns). Calls to functions defined in the translation unit use the callee's
summary: the union of the effects of its body, computed to a fixpoint so recursion terminates.

C++: a `throw` stops a wait (the request would stay pending while the stack unwinds); a call
that may throw (neither noexcept nor extern "C", and not a function of the file whose body
cannot throw) is recorded in `throws`, which placement.py treats as a stop unless the function
being transformed is noexcept and has no try block (then an exception ends the program in
std::terminate and never reaches code that could use the buffers)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .alias import TRANSPARENT, AbsLoc, PointsTo, find, shape_of
from .calls import (LIBC, MPI_SYNCHRONISING, MPI_UNDERSTOOD, MPI_WAITS, NO_RETURN, NONBLOCKING_P2P,
                    REWRITABLE, is_mpi)
from .parse import LOCAL_CLASS_KINDS, Node, Unit, call_args, call_object  # noqa: F401 (call_args: re-exported)

_TRANSPARENT = TRANSPARENT
_LOOPS = {"FOR_STMT", "WHILE_STMT", "DO_STMT", "CXX_FOR_RANGE_STMT"}
# C library calls with effects a barrier may be ordering (output, files, time)
_IO = {"printf", "fprintf", "puts", "fputs", "putchar", "fputc", "fflush", "clock", "time"}


@dataclass
class Effects:
    reads: dict = field(default_factory=dict)     # AbsLoc root -> Node that reads it
    writes: dict = field(default_factory=dict)    # AbsLoc root -> Node that writes it
    unknown: list = field(default_factory=list)   # (callee name, [AbsLoc of arguments], Node)
    stop: tuple | None = None                     # (why, Node): nothing pending may cross it
    io: Node | None = None                        # a call with effects outside memory (I/O, MPI)
    throws: tuple | None = None                   # (why, Node): C++ code that may throw

    def read(self, loc: AbsLoc | None, node: Node):
        if loc is not None:
            self.reads.setdefault(find(loc), node)

    def write(self, loc: AbsLoc | None, node: Node):
        if loc is not None:
            self.writes.setdefault(find(loc), node)

    def stop_at(self, why: str, node: Node):
        if self.stop is None:
            self.stop = (why, node)

    def merge(self, other: "Effects", at: Node | None = None, keep_stop: bool = True,
              subst: dict | None = None):
        """Adds `other` (a callee's summary when `at` is the call), mapping the callee's
        parameter locations onto the call's arguments through `subst`."""
        subst = subst or {}

        def mapped(loc):
            return subst.get(id(find(loc)), [loc])

        for loc, n in other.reads.items():
            for m in mapped(loc):
                self.reads.setdefault(find(m), at or n)
        for loc, n in other.writes.items():
            for m in mapped(loc):
                self.writes.setdefault(find(m), at or n)
        for name, args, n in other.unknown:
            margs = [m for a in args if a is not None for m in mapped(a)]
            self.unknown.append((name, margs, at or n))
        if other.io is not None and self.io is None:
            self.io = at or other.io
        if keep_stop and other.stop and self.stop is None:
            self.stop = (other.stop[0], at or other.stop[1])
        if other.throws and self.throws is None:
            self.throws = other.throws if at is None else \
                (f"calls {at.callee or 'a function'}, which {other.throws[0]}", at)

    def size(self) -> int:
        return len(self.reads) + len(self.writes) + len(self.unknown) + (self.stop is not None) + \
            (self.throws is not None)


def strip(e: Node) -> Node:
    while e.kind in _TRANSPARENT and e.children:
        e = e.children[-1]
    return e


class EffectAnalysis:
    def __init__(self, unit: Unit, pts: PointsTo):
        self.unit, self.pts = unit, pts
        self.summaries: dict[str, Effects] = {}        # by function key (USR in C++)
        self.cxx = unit.lang == "c++"
        self.receive_buffers = self._receive_buffers()
        self._cache: dict[int, Effects] = {}
        self._compute_summaries()
        self.global_reach = self._reachable_from_globals()

    def _receive_buffers(self) -> list:
        """What the file's nonblocking receives receive into: written when any wait completes."""
        out = []
        for fn in self.unit.functions.values():
            for n in fn.body.walk():
                spec = NONBLOCKING_P2P.get(n.callee) if n.kind == "CALL_EXPR" else None
                if spec and spec[0] == "recv" and len(call_args(n)) > spec[1]:
                    loc = self.pts.val(call_args(n)[spec[1]])
                    if loc is not None:
                        out.append(loc)
        return out

    # --- summaries -------------------------------------------------------------------------
    def _compute_summaries(self):
        for key in self.unit.functions:
            self.summaries[key] = Effects()
        for _ in range(50):      # fixpoint over the call graph (recursion, call chains)
            before = sum(s.size() for s in self.summaries.values())
            for name, fn in self.unit.functions.items():
                eff = Effects()
                self._stmt(fn.body, eff, 0, 0, summary=True)
                self.summaries[name] = eff
            if sum(s.size() for s in self.summaries.values()) == before:
                break

    def _reachable_from_globals(self) -> set:
        out = set()
        starts = [loc for loc in self.pts.locs.values() if loc.is_global] + [self.pts.external]
        for s in starts:
            n = find(s)
            while n is not None and id(n) not in out:
                out.add(id(n))
                n = find(n._pts) if n._pts is not None else None
        return out

    def may_reach_from_globals(self, loc: AbsLoc) -> bool:
        return id(find(loc)) in self.global_reach

    # --- statements --------------------------------------------------------------------------
    def of(self, stmt: Node) -> Effects:
        """Effects of one statement of a block (memoised)."""
        eff = self._cache.get(id(stmt))
        if eff is None:
            eff = self._cache[id(stmt)] = Effects()
            self._stmt(stmt, eff, 0, 0, summary=False)
        return eff

    def _stmt(self, n: Node, eff: Effects, loops: int, switches: int, summary: bool):
        k = n.kind
        if k in LOCAL_CLASS_KINDS:         # a class declared in a body: its methods run elsewhere
            return
        if k == "RETURN_STMT":
            if not summary:
                eff.stop_at("return", n)
        elif k in ("GOTO_STMT", "INDIRECT_GOTO_STMT"):
            if not summary:
                eff.stop_at("goto", n)
        elif k == "BREAK_STMT":
            if not summary and loops == 0 and switches == 0:
                eff.stop_at("break", n)
            return
        elif k == "CONTINUE_STMT":
            if not summary and loops == 0:
                eff.stop_at("continue", n)
            return
        elif k in ("ASM_STMT", "MS_ASM_STMT"):
            eff.stop_at("inline assembly", n)
        elif k == "LABEL_STMT":
            if not summary:
                eff.stop_at(f"label {n.spelling} (a goto may enter here)", n)
        elif k in ("CASE_STMT", "DEFAULT_STMT") and switches == 0:
            if not summary:
                eff.stop_at("case label", n)
        if k in _LOOPS:
            for c in n.children:
                self._stmt(c, eff, loops + 1, switches, summary)
            return
        if k == "SWITCH_STMT":
            for c in n.children:
                self._stmt(c, eff, loops, switches + 1, summary)
            return
        if k.endswith("_STMT") or k in ("VAR_DECL",):
            if k == "VAR_DECL":
                inits = [c for c in n.children if c.kind not in ("TYPE_REF", "NAMESPACE_REF",
                                                                  "TEMPLATE_REF")]
                if inits:
                    eff.write(self.pts.var(n.ref, n.is_global), n)
                for c in inits:
                    if n.is_ref:              # binding a reference reads nothing but the address
                        self.address(c, eff)
                    else:
                        self.expr(c, eff)
                return
            for c in n.children:
                self._stmt(c, eff, loops, switches, summary)
            return
        self.expr(n, eff)

    # --- expressions -------------------------------------------------------------------------
    def expr(self, e: Node, eff: Effects):
        """Effects of evaluating `e` for its value."""
        k = e.kind
        if k in _TRANSPARENT:
            for c in e.children:
                self.expr(c, eff)
        elif k in ("DECL_REF_EXPR", "MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR") or \
                (k == "UNARY_OPERATOR" and e.op == "*"):
            if k == "DECL_REF_EXPR" and e.ref_kind != "var":
                return
            if e.shape != "array":            # an array's value is its address: no read
                eff.read(self.pts.lval(e), e)
            self.address(e, eff)
        elif k == "UNARY_OPERATOR" and e.op == "&":
            self.address(e.children[0], eff)
        elif k == "UNARY_OPERATOR" and e.op in ("++", "--"):
            self.access(e.children[0], eff, read=True, write=True)
        elif k == "BINARY_OPERATOR" and e.op == "=":
            self.access(e.children[0], eff, read=False, write=True)
            self.expr(e.children[1], eff)
        elif k == "COMPOUND_ASSIGNMENT_OPERATOR":
            self.access(e.children[0], eff, read=True, write=True)
            self.expr(e.children[1], eff)
        elif k == "CALL_EXPR":
            self.call(e, eff)
            if e.is_ref:                      # the value of the referenced object is used
                eff.read(self.pts.lval(e), e)
        elif k in ("CXX_UNARY_EXPR", "UNARY_EXPR"):      # sizeof / alignof: not evaluated
            return
        elif k == "CXX_THROW_EXPR":
            for c in e.children:
                self.expr(c, eff)
            eff.stop_at("throw", e)
        elif k == "LAMBDA_EXPR":
            # creating the closure copies what it captures by value; its body runs elsewhere
            own = {n.ref for n in e.walk() if n.kind in ("VAR_DECL", "PARM_DECL")}
            for n in e.walk():
                if n.kind == "DECL_REF_EXPR" and n.ref_kind == "var" and n.ref not in own:
                    eff.read(self.pts.lval(n), e)
        elif k == "CXX_NEW_EXPR":
            for c in e.children:
                self.expr(c, eff)
            if eff.throws is None:
                eff.throws = ("allocates with new, which may throw std::bad_alloc", e)
        elif k == "CXX_DELETE_EXPR":
            for c in e.children:
                self.expr(c, eff)
            target = self.pts.val(e.children[-1]) if e.children else None
            eff.write(target, e)                 # ends the object's life, like free()
            eff.unknown.append(("a destructor", [target] if target else [], e))
        else:
            for c in e.children:
                if c.kind.endswith("_STMT"):          # GNU statement expressions
                    self._stmt(c, eff, 0, 0, False)
                else:
                    self.expr(c, eff)

    def access(self, e: Node, eff: Effects, read: bool, write: bool):
        loc = self.pts.lval(e)
        if loc is None:
            if write:          # memory the analysis cannot name: nothing may move across it
                eff.stop_at(f"writes `{self.text(e)[:40]}`, whose target the analysis cannot tell", e)
            self.expr(e, eff)
            return
        if read:
            eff.read(loc, e)
        if write:
            eff.write(loc, e)
        self.address(e, eff)

    def address(self, e: Node, eff: Effects):
        """Effects of computing the address of lvalue `e` (indices, pointers read), not of `e`."""
        e = strip(e)
        k = e.kind
        if k in ("DECL_REF_EXPR", "CXX_THIS_EXPR") or (k == "MEMBER_REF_EXPR" and not e.children):
            return                 # a variable, or a member of *this (`this` itself is not memory)
        if k == "UNARY_OPERATOR" and e.op == "*":
            self.expr(e.children[0], eff)
        elif k == "ARRAY_SUBSCRIPT_EXPR":
            for c in e.children:
                self.expr(c, eff)
        elif k == "MEMBER_REF_EXPR" and e.children:
            base = e.children[0]
            if shape_of(base) in ("pointer", "array"):
                self.expr(base, eff)
            else:
                self.address(base, eff)
        else:
            self.expr(e, eff)

    # --- calls -------------------------------------------------------------------------------
    def buffer_accesses(self, call: Node, coll=None) -> list:
        """(location, written?, argument, role) for the buffers and arrays a collective (or a
        point-to-point call, or `coll`: one half of an MPI_Sendrecv) uses."""
        coll = coll or REWRITABLE[call.callee]
        args = call_args(call)
        in_place = any(self.is_in_place(a) for a in args)
        out = []
        for role, arg in zip(coll.roles, args):
            base = role.split("@")[0]
            if base == "value" or self.is_in_place(arg) or self.is_null(arg) or \
                    (base == "status" and self.is_status_ignore(arg)):
                continue
            written = base in ("recv", "bcast", "status") or (in_place and base == "send")
            out.append((self.pts.val(arg), written, arg, role))
        return out

    def is_in_place(self, arg: Node) -> bool:
        text = self.text(arg).strip()
        return text == "MPI_IN_PLACE" or text.endswith("MPI_IN_PLACE)")

    def is_status_ignore(self, arg: Node) -> bool:
        return self.text(arg).strip() == "MPI_STATUS_IGNORE"

    def status_at_wait(self, arg: Node, c_form: bool) -> bool:
        """Whether a receive's status argument can be evaluated again at its wait (C: the
        form placement.py matched, MPI_STATUS_IGNORE or `&variable`)."""
        return c_form

    def is_null(self, arg: Node) -> bool:
        return self.text(arg).strip() in ("NULL", "0", "((void *)0)", "(void *)0", "nullptr")

    def text(self, n: Node) -> str:
        return self.unit.text[n.start:n.end].decode(errors="replace")

    def call(self, call: Node, eff: Effects):
        for a in call_args(call):
            self.expr(a, eff)
        obj = call_object(call)
        if obj is not None and obj.kind != "MEMBER_REF_EXPR":
            self.expr(obj, eff)
        name = call.callee
        args = call_args(call)
        defined = call.target in self.unit.functions
        if (name not in LIBC and not defined) or name in _IO:
            eff.io = eff.io or call
        if self.cxx and not defined and not call.nothrow and eff.throws is None:
            eff.throws = (f"calls {name or 'a function through a pointer'}, which may throw "
                          "(not noexcept)", call)
        if not name:
            eff.unknown.append(("(function pointer)", self.pts.operands(call), call))
            return
        if name in MPI_SYNCHRONISING:
            eff.stop_at(f"calls {name}", call)
            return
        if name in REWRITABLE:
            for loc, written, _arg, _role in self.buffer_accesses(call):
                eff.read(loc, call)
                if written:
                    eff.write(loc, call)
            return
        if name in NONBLOCKING_P2P and len(args) > 6:
            role, buf, req = NONBLOCKING_P2P[name]
            data = self.pts.val(args[buf])
            eff.read(data, call)
            if role == "recv":
                eff.write(data, call)
            eff.write(self.pts.val(args[req]), call)          # the request handle
            return
        if name in MPI_WAITS and len(args) > max(MPI_WAITS[name]):
            req, status = MPI_WAITS[name]
            handles = self.pts.val(args[req])
            eff.write(handles, call)                          # set to MPI_REQUEST_NULL
            # which receive a request belongs to is not tracked: a wait may complete any receive
            # posted in this file, or by code the analysis cannot see (into escaped memory)
            for loc in self.receive_buffers:
                eff.write(loc, call)
            eff.write(self.pts.external, call)
            if self.text(args[status]).strip() not in ("MPI_STATUS_IGNORE", "MPI_STATUSES_IGNORE"):
                eff.write(self.pts.val(args[status]), call)
            return
        if name in MPI_UNDERSTOOD:
            for i in MPI_UNDERSTOOD[name]:
                if i < len(args):
                    eff.write(self.pts.val(args[i]), call)
            return
        if is_mpi(name):
            eff.stop_at(f"calls {name}, which the transformer does not model", call)
            # and it may write through any argument (MPI_Comm_split(…, &comm) changes `comm`)
            eff.unknown.append((name, self.pts.operands(call), call))
            return
        if defined:
            summary = self.summaries.get(call.target)
            if summary is not None:
                eff.merge(summary, at=call, subst=self.pts.substitution(call.target, call))
                if summary.stop:
                    eff.stop = eff.stop or (f"calls {name}, which {summary.stop[0]}", call)
            return
        if name in NO_RETURN:
            eff.stop_at(f"calls {name}, which does not return", call)
            return
        if name in LIBC:
            spec = LIBC[name]
            if spec == "read-all":
                reads, writes = tuple(range(len(args))), ()
            elif spec == "write0-read-rest":
                reads, writes = tuple(range(1, len(args))), (0,)
            else:
                reads, writes = spec if spec else ((), ())
            for i in reads:
                if i < len(args):
                    eff.read(self.pts.val(args[i]), call)
            for i in writes:
                if i < len(args):
                    eff.write(self.pts.val(args[i]), call)
            return
        eff.unknown.append((name, self.pts.operands(call), call))
