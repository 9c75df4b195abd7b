"""Steensgaard-style points-to analysis over a whole translation unit.

Every variable has a location node; every node points to at most one other node (its `pts`),
created on demand. An assignment `a = b` unifies what `a` points to with what `b` points to, so
the analysis is flow- and context-insensitive, field- and element-insensitive (a struct or an
array is one location), and runs in near-linear time. Two memory accesses may touch the same
memory iff their nodes are the same after unification (`same`).

C++ (the Node fields the front end fills in): a reference is an implicitly dereferenced pointer
(`double &r = recv;` makes `r` name `recv`'s location; a reference parameter binds to the
argument's location); the object of a method is `this`, which stands for any memory the program
may reach (`external`), so objects whose methods are called, class-typed variables (their
constructors and destructors run) and variables a lambda captures are unified with it."""
from __future__ import annotations

from .calls import ALLOCATORS, LIBC, RETURNS_FIRST_ARGUMENT, is_mpi
from .parse import NESTED_CODE, Node, Unit, call_args, call_object

# casts and wrappers whose value is their last child's
TRANSPARENT = {"UNEXPOSED_EXPR", "PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR",
               "CXX_REINTERPRET_CAST_EXPR", "CXX_CONST_CAST_EXPR", "CXX_DYNAMIC_CAST_EXPR",
               "CXX_FUNCTIONAL_CAST_EXPR"}
_TRANSPARENT = TRANSPARENT


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
        # memory code the analysis cannot see may reach; what it holds points into it again
        # (unknown code may store any address it is given), so it is its own pointee
        self.external = AbsLoc("<external memory>", is_global=True)
        self.external._pts = self.external
        self.sites: dict[int, AbsLoc] = {}
        self._defined: dict = {}
        self.owner: dict[str, str | None] = {}      # variable key -> function declaring it
        self.bindings: list = []                    # (callee, parameter index, argument, call)
        self.call_results: dict = {}                # id(call) -> (call, callee)
        self.clean: set = set()                     # (function, parameter index) kept apart
        self.cxx = False

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
            if e.ref_kind != "var":
                return None
            loc = self.var(e.ref, e.is_global)
            return self.pts(loc) if e.is_ref else loc        # a reference names its referee
        if k == "CALL_EXPR" and e.is_ref:
            return self._referenced_by_call(e)
        if k == "MEMBER_REF_EXPR" and not e.children:                 # implicit this->field
            if e.ref_kind != "field":
                return None
            return self.pts(self.external) if e.is_ref else self.external
        if k == "UNARY_OPERATOR" and e.op == "*":
            return self.val(e.children[0])
        if k == "ARRAY_SUBSCRIPT_EXPR":
            base, other = e.children[0], e.children[-1]
            if shape_of(other) in ("pointer", "array") and shape_of(base) not in ("pointer", "array"):
                base = other                                     # the i[a] spelling
            return self.val(base)
        if k == "MEMBER_REF_EXPR" and e.children and e.ref_kind != "func":
            base = e.children[0]
            obj = self.val(base) if _is_arrow(e) else self.lval(base)
            # a reference member names its referee (field-insensitive: any the object holds)
            return self.pts(obj) if e.is_ref and obj is not None else obj
        return None

    def val(self, e: Node) -> AbsLoc | None:
        """The location the value of `e` points to (None if it cannot be a pointer)."""
        k = e.kind
        if k in _TRANSPARENT and e.children:
            return self.val(e.children[-1])
        if k == "CXX_THIS_EXPR":
            return self.external
        if k in ("DECL_REF_EXPR", "MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR") or \
                (k == "UNARY_OPERATOR" and e.op == "*") or (k == "CALL_EXPR" and e.is_ref):
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
        if k == "CXX_NEW_EXPR":
            return self._site(e, f"<new at line {e.line}>")
        return None

    def operands(self, call: Node) -> list:
        """What a call to code the analysis cannot see may reach through its operands: what the
        arguments point to; in C++ also the arguments bound to non-const reference parameters
        (all of them if the callee is not known) and the object of a method call."""
        args = call_args(call)
        out = [self.val(a) for a in args]
        if self.cxx:
            refs = call.arg_refs
            out += [self.lval(a) for i, a in enumerate(args)
                    if refs is None or (i < len(refs) and refs[i])]
            obj = call_object(call)
            if obj is not None:
                out.append(self.object_location(call))
        return [o for o in out if o is not None]

    def object_location(self, call: Node) -> AbsLoc | None:
        """The object a method / operator call works on (`this` inside the method)."""
        obj = call_object(call)
        if obj is None:
            return None
        if obj.kind == "MEMBER_REF_EXPR" and not obj.children:      # implicit this->f()
            return self.external
        if call.call_kind == "member" and _is_arrow(call.children[0]):
            return self.val(obj)
        return self.lval(obj) or self.val(obj)

    def _referenced_by_call(self, call: Node) -> AbsLoc | None:
        """The location a call returning a reference refers to."""
        if call.target in self._defined:
            return self._call_value(call)
        out = self.external          # unknown code: anything its operands or globals reach
        for a in self.operands(call):
            out = self.join(out, a)
        return out

    def _call_value(self, call: Node) -> AbsLoc | None:
        name = call.callee
        if call.target in self._defined:
            # bound to the callee's result after the analysis (see _bind_calls)
            self.call_results.setdefault(id(call), (call, call.target))
            return self._site(call, f"<{name}() at line {call.line}>")
        if name in ALLOCATORS:
            return self._site(call, f"<{name} at line {call.line}>")
        if name == "realloc" and len(call.children) > 1:
            return self.val(call.children[1])
        if name in RETURNS_FIRST_ARGUMENT and len(call.children) > 1:
            return self.val(call.children[1])                    # memcpy(d, …) returns d
        if is_mpi(name) or name in LIBC:
            return None
        # unknown code may return a pointer to anything its arguments or globals reach
        out = self.external
        for a in self.operands(call):
            out = self.join(out, a)
        return out

    # --- the analysis --------------------------------------------------------------------------
    def analyse(self, unit: Unit) -> "PointsTo":
        self._defined = unit.functions
        self.cxx = unit.lang == "c++"
        for g in unit.globals:
            self.owner[g.ref] = None
            self._visit(g, None)
        for fn in unit.functions.values():
            for p in fn.params:
                self.owner[p] = ("param", fn.key, p)    # each parameter owns what it reaches
                self.var(p)
            self._visit(fn.body, fn.key)
        if self.cxx:
            self._escape_captures(unit)
            self._constructor_initialisers(unit)
        self._bind_calls()
        return self

    def _constructor_initialisers(self, unit: Unit):
        """A constructor's member initialisers (`: target(t), n(0)`) store into `this`, which is
        external memory: what they point to, or refer to, becomes reachable from it."""
        for fn in unit.functions.values():
            if fn.node.kind != "CONSTRUCTOR":
                continue
            for c in fn.node.children:
                if c is fn.body or c.kind in ("PARM_DECL", "MEMBER_REF", "TYPE_REF", "NAMESPACE_REF"):
                    continue
                for e in (c,) + tuple(x for x in c.walk() if x.kind == "DECL_REF_EXPR"):
                    self.join(self.external, self.val(e))
                    self.join(self.external, self.lval(e))

    def _escape_captures(self, unit: Unit):
        """Variables a lambda uses from its enclosing functions escape: the closure may run in
        any call the analysis does not follow (it is passed on, stored, called through
        operator())."""
        for fn in unit.functions.values():
            if fn.node.kind != "LAMBDA_EXPR":
                continue
            own = {n.ref for n in fn.node.walk() if n.kind in ("VAR_DECL", "PARM_DECL")}
            for n in fn.body.walk():
                if n.kind == "DECL_REF_EXPR" and n.ref_kind == "var" and not n.is_global \
                        and n.ref not in own:
                    self.join(self.var(n.ref), self.external)

    def arg_location(self, fn: str, i: int, arg: Node) -> AbsLoc | None:
        """What parameter i of `fn` is bound to: the argument's value, or for a reference
        parameter the argument's location."""
        refs = self._defined[fn].param_refs
        return self.lval(arg) if i < len(refs) and refs[i] else self.val(arg)

    # --- calls: parameters kept apart per call site where that is sound -----------------------
    def _bind_calls(self):
        """Unifying every call's arguments with the callee's parameters would make all buffers
        ever passed to one helper alias each other. A parameter whose pointee is reachable only
        from the callee's own variables (not stored in globals, the heap, other functions or
        returned, except as itself) is kept apart: its effects are mapped onto each call's
        argument (`substitution`). Others are unified, to a fixpoint."""
        done_args, done_ret, done_val = set(), set(), set()
        while True:
            self.clean = self._clean_parameters()
            changed = False
            for fn, i, arg, call in self.bindings:
                if (fn, i) not in self.clean and (id(call), i) not in done_args:
                    done_args.add((id(call), i))
                    self.join(self.pts(self.var(self._defined[fn].params[i])),
                              self.arg_location(fn, i, arg))
                    changed = True
            for key, (call, fn) in self.call_results.items():
                i = self.returned_parameter(fn)
                site = self._site(call, "")
                if i is not None and i < len(call_args(call)) and key not in done_val:
                    done_val.add(key)
                    self.join(site, self.arg_location(fn, i, call_args(call)[i]))
                    changed = True
                elif i is None and key not in done_ret:
                    done_ret.add(key)
                    self.join(site, self.ret(fn))
                    changed = True
            if not changed:
                return

    def returned_parameter(self, fn: str) -> int | None:
        """Index of the kept-apart parameter `fn` returns (like `return p;`), if that is all it returns."""
        r = self.returns.get(fn)
        if r is None:
            return None
        for i, p in enumerate(self._defined[fn].params):
            if (fn, i) in self.clean and find(r) is find(self.pts(self.var(p))):
                return i
        return None

    def _chain(self, n: AbsLoc | None, limit: int = 8):
        out, seen = [], set()
        while n is not None and len(out) < limit:
            n = find(n)
            if id(n) in seen:
                break
            seen.add(id(n))
            out.append(n)
            n = n._pts
        return out

    def _clean_parameters(self) -> set:
        owners: dict[int, set] = {}

        def mark(start, owner):
            for n in self._chain(start):
                owners.setdefault(id(n), set()).add(owner)

        for key, loc in self.locs.items():
            mark(loc, self.owner.get(key, None))
        for fn, r in self.returns.items():
            mark(r, "ret:" + fn)
        for key, site in self.sites.items():
            if key not in self.call_results:
                mark(site, None)
        mark(self.external, None)
        clean = set()
        for name, fn in self._defined.items():
            for i, p in enumerate(fn.params):
                chain = self._chain(self.pts(self.var(p)))
                ok = bool(chain)
                for depth, n in enumerate(chain):
                    # reachable from this parameter and the function's locals only: not from
                    # another parameter (`*out = in` hands `in` to the caller), a global, the heap
                    o = owners.get(id(n), set()) - {name, ("param", name, p)}
                    if o - {"ret:" + name}:
                        ok = False
                    elif o and not (depth == 0 and self.returns.get(name) is not None
                                    and find(self.returns[name]) is n):
                        ok = False
                if ok:
                    clean.add((name, i))
        return clean

    def substitution(self, fn: str, call: Node) -> dict:
        """For a call of `fn`: id(callee class) -> the caller's locations it stands for."""
        out: dict[int, list] = {}
        params = self._defined[fn].params
        for i, p in enumerate(params):
            if (fn, i) not in self.clean or i >= len(call_args(call)):
                continue
            callee_chain = self._chain(self.pts(self.var(p)))
            arg = self.arg_location(fn, i, call_args(call)[i])
            for depth, c in enumerate(callee_chain):
                if arg is None:
                    break
                out.setdefault(id(c), []).append(arg)
                arg = self.pts(arg)
        return out

    def _visit(self, n: Node, fn: str | None):
        k = n.kind
        if k == "VAR_DECL":
            self.owner.setdefault(n.ref, None if n.is_global else fn)
            loc = self.var(n.ref, n.is_global)
            if self.cxx and n.shape == "record":
                self.join(loc, self.external)       # its constructor and destructor see `this`
            inits = [c for c in n.children if c.kind not in _NOT_INITIALISERS]
            if self.cxx and inits and inits[-1].kind == "INIT_LIST_EXPR":
                # aggregate initialisation may bind reference members to its lvalue elements
                for el in inits[-1].walk():
                    if el.kind != "INIT_LIST_EXPR":
                        self.join(self.pts(loc), self.lval(el))
            if n.is_ref and inits:
                self.join(self.pts(loc), self.lval(inits[-1]) or self.val(inits[-1]))
                inits = []
            for init in inits:
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
        elif k == "CXX_FOR_RANGE_STMT" and len(n.children) >= 2 and n.children[0].kind == "VAR_DECL":
            # the loop variable is (a reference to / a copy of) an element of the range
            var, rng = n.children[0], n.children[1]
            elements = self.lval(rng) or self.val(rng)
            if elements is not None:
                self.join(self.pts(self.var(var.ref)),
                          elements if var.is_ref else self.pts(elements))
        elif k == "CALL_EXPR":
            if self.cxx and call_object(n) is not None:
                self.join(self.object_location(n), self.external)
            target = self._defined.get(n.target)
            if target is not None:
                for i, arg in enumerate(call_args(n)[:len(target.params)]):
                    self.bindings.append((n.target, i, arg, n))
                    self.val(arg)
                self.val(n)
            elif n.callee in ("strtol", "strtod") and len(n.children) > 2:
                # the end pointer points into the string
                self.join(self.pts(self.val(n.children[2]) or AbsLoc()), self.val(n.children[1]))
            elif n.callee in ("memcpy", "memmove") and len(n.children) > 2:
                # copying memory copies the pointers it holds
                self.join(self.pts(self.val(n.children[1]) or AbsLoc()),
                          self.pts(self.val(n.children[2]) or AbsLoc()))
            else:
                self.val(n)      # unknown callees: unify what the arguments point to
        elif k == "RETURN_STMT" and fn and n.children:
            e = n.children[0]
            self.join(self.ret(fn), self.lval(e) if self._defined[fn].returns_ref else self.val(e))
        for c in n.children:
            if c.kind not in NESTED_CODE:        # lambdas, local classes: functions of their own
                self._visit(c, fn)


_NOT_INITIALISERS = {"TYPE_REF", "NAMESPACE_REF", "TEMPLATE_REF"}


def _strip(e: Node) -> Node:
    while e.kind in _TRANSPARENT and e.children:
        e = e.children[-1]
    return e


def shape_of(e: Node) -> str:
    """The shape of an expression, looking through implicit casts (which carry no type here)."""
    while e.kind == "UNEXPOSED_EXPR" and e.children:
        e = e.children[-1]
    return e.shape


def _is_arrow(member: Node) -> bool:
    """`p->f` rather than `s.f`: the base expression is a pointer (or an array, decayed)."""
    return shape_of(member.children[0]) in ("pointer", "array")


def analyse(unit: Unit) -> PointsTo:
    return PointsTo().analyse(unit)
