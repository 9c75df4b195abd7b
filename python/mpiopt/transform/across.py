"""Waits that leave a small helper function (issue 65, item 3): the analysis.

A helper like HPCG's ComputeDotProduct_ref (a local sum, `MPI_Allreduce(&local, &global, …)`,
`result = global; return 0;`) or a `global_sum(double x)` wrapper completes its collective before
it returns, so inside it the wait has nothing to overlap with. The work to overlap is in the
caller, after the call.

Design: the helper is SPLIT, not inlined (Petal inlines). Why:
- inlining alone gives no overlap here: the helper's own statements after the collective
  (`result = global;`, `return s;`) read the result at once, so the inlined wait would stop right
  after the call again. What must move is the wait *together with* those statements. A split does
  exactly that: `start` runs the helper up to the collective and starts it, `finish` waits and
  runs the rest, and the caller calls `finish` where its own code first needs what the helper
  leaves behind;
- one copy of the helper's code, not one a call site; the helper itself stays for every call the
  tool leaves as it is (address taken, result used in an expression…);
- nothing of the caller's scope is renamed or re-declared (inlining must rename the helper's
  locals and bind its parameters in the caller's text); the state the two halves share is one
  struct the caller declares;
- `start`/`finish` are ordinary functions, so the same split can later be called from another
  file (or a Fortran caller) through a declaration, which inlining across files cannot do.

What this module decides works on the Node tree, the effects and the aliases only (no C text), so
a Fortran writer can use it (it runs as it is on fortran_parse's units; the writer's own limits
come in through the two hooks of `Across`): which helpers can be split (`Helper.why_not`), which variables their
two halves share (`Helper.carried`), and for each call of a split helper (`SplitSite`) what the
caller's code between the call and the finish must not touch (`SplitSite.accesses`, the same
form as a collective's buffers, so placement.Placer places the finish like a wait).

Soundness: the caller's code before the finish must not write the pending collective's buffers
(read them either, for receive buffers), nor read or write what the helper's statements after the
wait write (results through pointer or reference parameters, globals, the returned value's
variable), nor write what they read. A helper stays as today, with the reason, when it is
recursive, its address is taken, it has another `return` than a last one, a `goto` or label,
more than one collective, the collective is not a statement of its body's own block, or its
statements after the wait do more than compute in memory (I/O, unknown code, MPI, code that may
throw), or shared variables are arrays, objects, references or statics, or a pointer to them
exists (the start's copy would be stale)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .alias import find
from .calls import is_mpi
from .effects import EffectAnalysis, Effects, call_args, strip
from .parse import Function, Node, Unit, own_nodes
from .placement import Site

_FORBIDDEN_STMTS = {"GOTO_STMT", "INDIRECT_GOTO_STMT", "LABEL_STMT", "ASM_STMT", "CXX_TRY_STMT"}


@dataclass
class Helper:
    fn: Function
    site: Site | None               # its one rewritable call (a statement of the body's block)
    prefix: list = field(default_factory=list)    # statements before the call
    tail: list = field(default_factory=list)      # statements after it (not the last return)
    ret: Node | None = None         # the last `return E;`'s expression
    carried: dict = field(default_factory=dict)   # key -> PARM_DECL/VAR_DECL both halves use
    renames: list = field(default_factory=list)   # DECL_REF_EXPR nodes naming carried variables
    why_not: str = ""               # "" when it can be split
    tail_effects: Effects | None = None
    calls: list = field(default_factory=list)     # SplitSites of its calls


@dataclass
class SplitSite(Site):
    """A call of a helper whose collective's wait (with the helper's statements after it) moves
    into the caller."""
    helper: Helper | None = None
    lhs: Node | None = None         # `lhs = helper(…);`: the variable the finish's value goes to
    stmt: Node | None = None        # the statement holding the call


def _called(unit: Unit) -> dict:
    """function key -> keys of the functions of the file it calls."""
    out = {}
    for key, fn in unit.functions.items():
        out[key] = {n.target for n in own_nodes(fn.body) if n.kind == "CALL_EXPR" and n.target in unit.functions}
    return out


def _recursive(key: str, calls: dict) -> bool:
    seen, todo = set(), list(calls.get(key, ()))
    while todo:
        k = todo.pop()
        if k == key:
            return True
        if k not in seen:
            seen.add(k)
            todo += calls.get(k, ())
    return False


def _calling_mpi(unit: Unit, calls: dict) -> set:
    """Keys of the functions that call MPI, themselves or through the file's functions: moving a
    call of one would move MPI calls (their order between ranks, their matching)."""
    out = {k for k, fn in unit.functions.items()
           if any(n.kind == "CALL_EXPR" and is_mpi(n.callee) for n in own_nodes(fn.body))}
    changed = True
    while changed:
        changed = False
        for k, callees in calls.items():
            if k not in out and callees & out:
                out.add(k)
                changed = True
    return out


def _address_taken(unit: Unit) -> dict:
    """function key -> line of a use of its name other than calling it."""
    callees = set()
    roots = [fn.body for fn in unit.functions.values()] + list(unit.globals)
    for r in roots:
        for n in r.walk():
            if n.kind == "CALL_EXPR" and n.children and n.call_kind in ("", "call"):
                callees.add(id(strip(n.children[0])))
    out = {}
    for r in roots:
        for n in r.walk():
            if n.kind == "DECL_REF_EXPR" and n.ref_kind == "func" and id(n) not in callees:
                out.setdefault(n.ref, n.line)
    return out


class Across:
    def __init__(self, unit: Unit, ea: EffectAnalysis, sites_by_function: dict,
                 why_not_written=None, why_not_call=None):
        """sites_by_function: function key -> its sites (placement.find_sites, after --profile's
        choice). The writer's own limits: why_not_written(helper) -> "" or why it cannot write
        the helper's two halves; why_not_call(helper, caller) -> "" or why a call in `caller`
        cannot use them (C: the halves are written after the helper, so a caller before it cannot)."""
        self.unit, self.ea, self.pts = unit, ea, ea.pts
        self.why_not_call = why_not_call
        self.helpers: dict[str, Helper] = {}
        calls = _called(unit)
        taken = _address_taken(unit)
        self._pointees = self._pointed_to()
        self._mpi = _calling_mpi(unit, calls)
        for key, fn in unit.functions.items():
            if fn.node.spelling == "main" or not sites_by_function.get(key):
                continue
            h = Helper(fn, None)
            h.why_not = self._why_not_helper(h, sites_by_function.get(key, []), calls, taken)
            if not h.why_not and why_not_written is not None:
                h.why_not = why_not_written(h)
            self.helpers[key] = h

    # --- helpers ---------------------------------------------------------------------------
    def _why_not_helper(self, h: Helper, sites: list, calls: dict, taken: dict) -> str:
        fn, unit = h.fn, self.unit
        if len(sites) != 1:
            return "no collective or receive" if not sites else f"{len(sites)} MPI calls to rewrite (one only is split)"
        h.site = site = sites[0]
        if site.block is None:
            return f"its call stays blocking ({site.reason})"
        if fn.node.kind != "FUNCTION_DECL" or fn.top_start != fn.node.start:
            return "not a function at file scope (methods, templates, lambdas and functions in " \
                   "namespaces are not split)"
        if _recursive(fn.key, calls):
            return "recursive"
        if fn.key in taken:
            return f"its address is taken (line {taken[fn.key]}): it may be called where the tool cannot see"
        if fn.returns_ref:
            return "returns a reference"
        if site.block is not fn.body:
            return f"the {site.coll.name} is not a statement of the function's own block"
        params_end = max([c.end for c in fn.node.children if c.kind == "PARM_DECL"], default=fn.node.start)
        if b"..." in unit.text[params_end:fn.body.start]:
            return "variadic"
        if site.coll.status is not None and not self.ea.is_status_ignore(call_args(site.call)[site.coll.status]):
            return "the receive's status is not MPI_STATUS_IGNORE"
        stmts = fn.body.children
        k = site.index
        h.prefix, rest = stmts[:k], stmts[k + 1:]
        returns = [n for n in own_nodes(fn.body) if n.kind == "RETURN_STMT"]
        if rest and rest[-1].kind == "RETURN_STMT":
            h.tail, last = rest[:-1], rest[-1]
            h.ret = last.children[0] if last.children else None
            returns = [r for r in returns if r is not last]
        else:
            h.tail = rest
        if returns:
            return f"several return paths (return at line {returns[0].line})"
        for n in own_nodes(fn.body):
            if n.kind in _FORBIDDEN_STMTS:
                return f"{n.kind.split('_')[0].lower()} at line {n.line}"
        return self._why_not_tail(h) or self._why_not_carried(h)

    def _why_not_tail(self, h: Helper) -> str:
        """The statements after the wait run at the caller's finish: only computation in memory
        commutes with the caller's code."""
        eff = Effects()
        nodes = list(h.tail) + ([h.ret] if h.ret is not None else [])
        for st in h.tail:
            eff.merge(self.ea.of(st))
        if h.ret is not None:
            self.ea.expr(h.ret, eff)
        for part in nodes:
            for n in part.walk():
                if n.kind == "CALL_EXPR" and is_mpi(n.callee):
                    return f"its statements after the wait call {n.callee} (line {n.line})"
                if n.kind == "CALL_EXPR" and n.target in self._mpi:
                    return f"its statements after the wait call {n.callee} (line {n.line}), which calls MPI"
        what = None
        if eff.stop:
            what = (eff.stop[0], eff.stop[1])
        elif eff.unknown:
            what = (f"call {eff.unknown[0][0]}, whose body is not known", eff.unknown[0][2])
        elif eff.io is not None:
            what = (f"have effects outside memory ({self.ea.text(eff.io)[:40]})", eff.io)
        elif eff.throws:
            what = eff.throws
        if what:
            return f"side effects after the wait: its statements after it {what[0]} (line {what[1].line})"
        h.tail_effects = eff
        return ""

    def _why_not_carried(self, h: Helper) -> str:
        """The variables the pending call's buffers and the statements after it name are shared by
        the two halves (copied into the state after the start's statements)."""
        fn, site = h.fn, h.site
        decls = {c.ref: c for c in fn.node.children if c.kind == "PARM_DECL"}
        for st in h.prefix:
            for n in own_nodes(st):
                if n.kind == "VAR_DECL":
                    decls[n.ref] = n
        static_locals = {n.ref for n in own_nodes(fn.body) if n.kind == "VAR_DECL" and n.is_global}
        roots = [a for a, role in zip(call_args(site.call), site.coll.roles) if role.split("@")[0] != "value"]
        roots += list(h.tail) + ([h.ret] if h.ret is not None else [])
        for r in roots:
            for n in r.walk():
                if n.kind != "DECL_REF_EXPR" or n.ref_kind != "var":
                    continue
                if n.ref in static_locals:
                    return f"uses `{n.spelling}`, a static local, after the wait"
                d = decls.get(n.ref)
                if d is None:
                    continue
                if self.ea.text(n) != n.spelling:
                    return f"names `{n.spelling}` through a macro (line {n.line})"
                h.carried[n.ref] = d
                h.renames.append(n)
        for key, d in h.carried.items():
            if d.kind == "VAR_DECL" and d.is_ref:
                return f"`{d.spelling}` is a reference used across the wait"
            if d.shape in ("array", "record") and not d.is_ref:
                return f"`{d.spelling}` is an {'array' if d.shape == 'array' else 'object'} used across the wait"
            if not d.type or re.search(r"[\[(]", d.type):
                return f"the type of `{d.spelling}` cannot be a field as spelled (`{d.type}`)"
            if not d.is_ref and id(find(self.pts.var(key, d.is_global))) in self._pointees:
                return f"a pointer to `{d.spelling}` exists (a copy of it in the state would not be seen through it)"
        # memory of the helper's own variables reached through pointers ends with the start
        own, in_tail = {}, {n.ref for st in h.tail for n in st.walk() if n.kind == "VAR_DECL"}
        for d in [c for c in fn.node.children if c.kind == "PARM_DECL" and not c.is_ref] + \
                [n for n in own_nodes(fn.body) if n.kind == "VAR_DECL" and not n.is_global]:
            if d.ref not in h.carried and d.ref not in in_tail:
                own[id(find(self.pts.var(d.ref)))] = d
        used = [loc for loc, _w, _a, _r in self.ea.buffer_accesses(site.call)]
        used += list(h.tail_effects.reads) + list(h.tail_effects.writes)
        for loc in used:
            d = own.get(id(find(loc))) if loc is not None else None
            if d is not None:
                return f"the pending call or the statements after the wait use `{d.spelling}` " \
                       "through a pointer (it ends with the start)"
        return ""

    def _pointed_to(self) -> set:
        out = set()
        for loc in list(self.pts.locs.values()) + list(self.pts.sites.values()) + \
                list(self.pts.returns.values()) + [self.pts.external]:
            r = find(loc)
            if r._pts is not None:
                out.add(id(find(r._pts)))
        return out

    # --- calls of split helpers ------------------------------------------------------------
    def calls_in(self, caller: Function) -> list[SplitSite]:
        """Every call in `caller` of a helper with a collective: a SplitSite, with `block` None
        and the reason when it stays as it is."""
        out = []
        may_unwind = self.unit.lang == "c++" and not (caller.is_noexcept and not caller.has_try)
        for n in own_nodes(caller.body):
            h = self.helpers.get(n.target) if n.kind == "CALL_EXPR" else None
            if h is None or h.site is None:
                continue
            s = SplitSite(call=n, function=caller.name, coll=h.site.coll, helper=h, may_unwind=may_unwind)
            h.calls.append(s)
            if not h.why_not:          # else the helper's own site says why, once
                out.append(s)
            s.reason = self._why_not_call(s, caller)
            if s.reason:
                s.reason = "left as it is: " + s.reason
                s.block = None
        return out

    def _why_not_call(self, s: SplitSite, caller: Function) -> str:
        h, n = s.helper, s.call
        if h.why_not:
            return f"{h.fn.name} is not split: {h.why_not}"
        if caller.key == h.fn.key:
            return "a call of the helper in itself"
        why = self.why_not_call(h, caller) if self.why_not_call is not None else ""
        if why:
            return why
        stmt, parent = n, n.parent
        if parent is not None and parent.kind == "BINARY_OPERATOR" and parent.op == "=" \
                and strip(parent.children[1]) is n:
            lhs = strip(parent.children[0])
            if lhs.kind != "DECL_REF_EXPR" or lhs.ref_kind != "var" or \
                    not getattr(self.ea, "same_name", str.__eq__)(self.ea.text(lhs), lhs.spelling):
                return "its result is assigned to something other than a variable"
            s.lhs, stmt, parent = lhs, parent, parent.parent
        while parent is not None and parent.kind == "UNEXPOSED_EXPR" and len(parent.children) == 1:
            stmt, parent = parent, parent.parent
        if parent is not None and parent.kind == "VAR_DECL":
            return "it initialises a declaration (its value is needed where the variable is declared)"
        if parent is None or parent.kind != "COMPOUND_STMT":
            return "its result is used in an expression" if parent is not None and \
                not parent.kind.endswith("_STMT") else "not a statement of a { } block"
        text = self.ea.text(n)
        if not text.startswith(n.callee) or not text.rstrip().endswith(")"):
            return "written through a macro"
        args = call_args(n)
        if len(args) != len(h.fn.params):
            return "default arguments or a different number of arguments"
        for i, p in enumerate(h.fn.params):
            if p in h.carried and h.fn.param_refs[i] and self.pts.lval(args[i]) is None:
                return f"argument `{self.ea.text(args[i])}` is not an object (a temporary bound to a reference)"
        s.stmt, s.block, s.index = stmt, parent, parent.children.index(stmt)
        s.accesses = self._accesses(s)
        return ""

    def _accesses(self, s: SplitSite) -> list:
        """What the pending call and the helper's statements after the wait touch, in the caller's
        locations: (location, written?, caller's node, role) as Placer.conflict reads them."""
        h, ea, pts = s.helper, self.ea, self.pts
        subst = pts.substitution(h.fn.key, s.call)
        own = {id(find(pts.var(k, d.is_global))) for k, d in h.carried.items() if not d.is_ref}

        def mapped(loc):
            if loc is None or id(find(loc)) in own:      # the state's copy: the caller cannot name it
                return []
            return subst.get(id(find(loc)), [loc])

        def node_for(loc):
            for a in call_args(s.call):
                if pts.same(pts.val(a), loc) or pts.same(pts.lval(a), loc):
                    return a
            return s.call

        out = []
        for loc, written, _arg, role in ea.buffer_accesses(h.site.call):
            for m in mapped(loc):
                out.append((m, written, node_for(m), role.split("@")[0]))
        for loc in h.tail_effects.writes:
            for m in mapped(loc):
                out.append((m, True, node_for(m), "tail"))
        for loc in h.tail_effects.reads:
            for m in mapped(loc):
                out.append((m, False, node_for(m), "tail"))
        if s.lhs is not None:
            out.append((pts.lval(s.lhs), True, s.lhs, "tail"))
        return out
