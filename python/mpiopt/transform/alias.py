"""Steensgaard-style points-to analysis over a whole translation unit.

Every variable has a location node; every node points to at most one other node (its `pts`),
created on demand. An assignment `a = b` unifies what `a` points to with what `b` points to, so
the analysis is flow- and context-insensitive, field- and element-insensitive (a struct or an
array is one location), and runs in near-linear time. Two memory accesses may touch the same
memory iff their nodes are the same after unification (`same`)."""
from __future__ import annotations

from .calls import ALLOCATORS, LIBC, is_mpi
from .parse import Node, Unit

_TRANSPARENT = {"UNEXPOSED_EXPR", "PAREN_EXPR", "CSTYLE_CAST_EXPR"}


class AbsLoc:
    """An abstract memory location (a union-find class)."""
    __slots__ = ("parent", "_pts", "names", "is_global", "rank")

    def __init__(self, name: str = "", is_global: bool = False):
        self.parent = None
        self._pts = None
        self.names = [name] if name else []
        self.is_global = is_global
        self.rank = 0


def find(n: AbsLoc) -> AbsLoc:
    root = n
    while root.parent is not None:
        root = root.parent
    while n.parent is not None and n.parent is not root:    # path compression
        n.parent, n = root, n.parent
    return root


class PointsTo:
    def __init__(self):
        self.locs: dict[str, AbsLoc] = {}      # declaration key -> location of the variable
        self.returns: dict[str, AbsLoc] = {}   # function name -> what its result points to
        self.external = AbsLoc("<external memory>", is_global=True)
        self.sites: dict[int, AbsLoc] = {}
        self._defined: dict = {}

    # --- union-find with points-to -------------------------------------------------------
    def pts(self, n: AbsLoc) -> AbsLoc:
        n = find(n)
        if n._pts is None:
            n._pts = AbsLoc("*" + (n.names[0] if n.names else "?"), n.is_global)
        n._pts = find(n._pts)
        return n._pts

    def join(self, a: AbsLoc | None, b: AbsLoc | None) -> AbsLoc | None:
        if a is None:
            return find(b) if b is not None else None
        if b is None:
            return find(a)
        a, b = find(a), find(b)
        if a is b:
            return a
        if a.rank < b.rank:
            a, b = b, a
        b.parent = a
        if a.rank == b.rank:
            a.rank += 1
        a.names += b.names
        a.is_global = a.is_global or b.is_global
        pa, pb = a._pts, b._pts
        a._pts = None
        merged = self.join(pa, pb)
        find(a)._pts = merged
        return find(a)

    def same(self, a: AbsLoc | None, b: AbsLoc | None) -> bool:
        return a is not None and b is not None and find(a) is find(b)

    def reaches(self, start: AbsLoc | None, target: AbsLoc) -> bool:
        """True if `target` is `start` or reachable from it by following pointers."""
        seen, n, target = set(), start, find(target)
        while n is not None:
            n = find(n)
            if n is target:
                return True
            if id(n) in seen or n._pts is None:
                return False
            seen.add(id(n))
            n = n._pts

    def _site(self, node: Node, name: str) -> AbsLoc:
        """One location per allocation site (malloc call, compound literal)."""
        loc = self.sites.get(id(node))
        if loc is None:
            loc = self.sites[id(node)] = AbsLoc(name)
        return loc

    # --- locations of variables ------------------------------------------------------------
    def var(self, key: str, is_global: bool = False) -> AbsLoc:
        loc = self.locs.get(key)
        if loc is None:
            loc = self.locs[key] = AbsLoc(key.split("@")[0], is_global)
        return loc

    def ret(self, fn: str) -> AbsLoc:
        if fn not in self.returns:
            self.returns[fn] = AbsLoc(f"{fn}()")
        return self.returns[fn]

    # --- expressions -------------------------------------------------------------------------
    def lval(self, e: Node) -> AbsLoc | None:
        """The location an lvalue expression designates (None if it is not memory)."""
        k = e.kind
        if k in _TRANSPARENT and e.children:
            return self.lval(e.children[-1])
        if k == "DECL_REF_EXPR":
            return self.var(e.ref, e.is_global) if e.ref_kind == "var" else None
        if k == "UNARY_OPERATOR" and e.op == "*":
            return self.val(e.children[0])
        if k == "ARRAY_SUBSCRIPT_EXPR":
            base = e.children[0] if e.children[0].shape in ("pointer", "array") or \
                _strip(e.children[0]).shape in ("pointer", "array") else e.children[-1]
            return self.val(base)
        if k == "MEMBER_REF_EXPR" and e.children:
            base = e.children[0]
            if _is_arrow(e):
                return self.val(base)
            return self.lval(base)
        return None

    def val(self, e: Node) -> AbsLoc | None:
        """The location the value of `e` points to (None if it cannot be a pointer)."""
        k = e.kind
        if k in _TRANSPARENT and e.children:
            return self.val(e.children[-1])
        if k in ("DECL_REF_EXPR", "MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR") or \
                (k == "UNARY_OPERATOR" and e.op == "*"):
            loc = self.lval(e)
            if loc is None:
                return None
            return loc if e.shape == "array" else self.pts(loc)   # arrays decay to their address
        if k == "UNARY_OPERATOR":
            if e.op == "&":
                return self.lval(e.children[0])
            if e.op in ("++", "--"):
                return self.val(e.children[0])
            return None
        if k == "BINARY_OPERATOR":
            if e.op in ("+", "-"):
                a, b = self.val(e.children[0]), self.val(e.children[1])
                return a if a is not None else b
            if e.op == "=":
                return self.val(e.children[1])
            if e.op == ",":
                return self.val(e.children[1])
            return None
        if k == "COMPOUND_ASSIGNMENT_OPERATOR":
            return self.val(e.children[0])
        if k == "CONDITIONAL_OPERATOR":
            return self.join(self.val(e.children[1]), self.val(e.children[2]))
        if k == "CALL_EXPR":
            return self._call_value(e)
        if k == "COMPOUND_LITERAL_EXPR":
            return self._site(e, f"<compound literal at line {e.line}>")
        return None

    def _call_value(self, call: Node) -> AbsLoc | None:
        name = call.callee
        if name in self._defined:
            return self.ret(name)
        if name in ALLOCATORS:
            return self._site(call, f"<{name} at line {call.line}>")
        if name == "realloc" and len(call.children) > 1:
            return self.val(call.children[1])
        if is_mpi(name) or name in LIBC:
            return None
        # unknown code may return a pointer to anything its arguments or globals reach
        out = self.external
        for a in call.children[1:]:
            out = self.join(out, self.val(a))
        return out

    # --- the analysis --------------------------------------------------------------------------
    def analyse(self, unit: Unit) -> "PointsTo":
        self._defined = unit.functions
        for g in unit.globals:
            self._visit(g, None)
        for fn in unit.functions.values():
            for p in fn.params:
                self.var(p)
            self._visit(fn.body, fn.name)
        # unknown callees may store pointers to anything they get into globals: model all
        # globals as reachable from the external node through `external_reach` (effects.py)
        return self

    def _visit(self, n: Node, fn: str | None):
        k = n.kind
        if k == "VAR_DECL":
            loc = self.var(n.ref, n.is_global)
            for init in n.children:
                if init.kind == "INIT_LIST_EXPR":
                    for el in init.walk():
                        if el is not init and el.kind not in ("INIT_LIST_EXPR",):
                            self.join(self.pts(loc), self.val(el))
                elif init.kind not in ("TYPE_REF", "INTEGER_LITERAL"):
                    self.join(self.pts(loc), self.val(init))
        elif k == "BINARY_OPERATOR" and n.op == "=":
            lhs = self.lval(n.children[0])
            if lhs is not None:
                self.join(self.pts(lhs), self.val(n.children[1]))
        elif k == "CALL_EXPR":
            target = self._defined.get(n.callee)
            if target is not None:
                for param, arg in zip(target.params, n.children[1:]):
                    self.join(self.pts(self.var(param)), self.val(arg))
            elif n.callee in ("memcpy", "memmove") and len(n.children) > 2:
                # copying memory copies the pointers it holds
                self.join(self.pts(self.val(n.children[1]) or AbsLoc()),
                          self.pts(self.val(n.children[2]) or AbsLoc()))
            else:
                self.val(n)      # unknown callees: unify what the arguments point to
        elif k == "RETURN_STMT" and fn and n.children:
            self.join(self.ret(fn), self.val(n.children[0]))
        for c in n.children:
            self._visit(c, fn)


def _strip(e: Node) -> Node:
    while e.kind in _TRANSPARENT and e.children:
        e = e.children[-1]
    return e


def _is_arrow(member: Node) -> bool:
    """`p->f` rather than `s.f`: the base expression is a pointer."""
    base = member.children[0]
    return base.shape == "pointer" or _strip(base).shape == "pointer"


def analyse(unit: Unit) -> PointsTo:
    return PointsTo().analyse(unit)
