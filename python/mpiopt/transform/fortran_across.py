"""Waits that leave a small Fortran wrapper (issue 66, item 5): across.py's split, written in Fortran.

across.py decides, on the shared node tree, which helpers split and which calls take their wait;
this module is the Fortran text (split_write.py is C's) and Fortran's own limits, given to
across.py through its two hooks. For a module procedure or a CONTAINed procedure H with one
collective (or receive) as a statement of its body:

    TYPE mpiopt_split_H                       ! in the module's (or the host's) specification part
      INTEGER :: mpiopt_request               ! TYPE(MPI_Request) with mpi_f08
      <type> :: <each local of H both halves use: a buffer, or named after the call>
    END TYPE mpiopt_split_H
    ...
    SUBROUTINE mpiopt_start_H(<H's dummies>, mpiopt_st)        ! right after H, same CONTAINS part
      <H's specification part>;  TYPE(mpiopt_split_H), ASYNCHRONOUS :: mpiopt_st
      <H's statements before the call>; mpiopt_st%v = v ...; CALL MPI_I<coll>(..., mpiopt_st%mpiopt_request, ierr)
    [<type>] FUNCTION mpiopt_finish_H(<H's dummies>, mpiopt_st) RESULT(<H's result>)   (SUBROUTINE for one)
      <H's specification part>;  CALL MPI_WAIT(mpiopt_st%mpiopt_request, ...)
      <H's statements after the call, its locals as mpiopt_st%v>; <result> = mpiopt_st%<result>

and in the caller `[v =] H(args)` becomes `CALL mpiopt_start_H(args, mpiopt_state_k)` with
`[v =] mpiopt_finish_H(args, mpiopt_state_k)` where the wait goes (placement.Placer, as a wait).

Why so: a derived type is Fortran's struct, and the state must outlive the start, so the caller
owns it; its type goes where both the helper's new procedures and the callers see it (the
module, or the host whose CONTAINed procedures these are). H's dummies are not copied into the
state (Fortran would need POINTER/TARGET for that, and TARGET on the caller's actuals): the
caller passes the same actual arguments again to the finish, which is the same storage when each
actual the finish uses is a variable named whole (else the call stays). The finish's result is
H's own result variable (RESULT(name)), so H's statements after the call are copied with only
its locals renamed. ASYNCHRONOUS is on the state (its components are the buffers), on the
dummies that are buffers in the start and the finish, and on the caller's actuals for them.
Start and finish are procedures of the same host as H, so their interfaces are explicit wherever
they are called, which ASYNCHRONOUS dummies require; an external H stays (its callers have no
explicit interface).

Stays as it is, with the reason: external procedures; helpers that CONTAIN procedures; saved locals (SAVE, DATA, initialisers:
the start and the finish would each have their own); OPTIONAL, allocatable, pointer or
derived-type dummies; locals both halves use that are arrays, pointers, targets, allocatable or
implicitly typed, or whose kind is a name of H's own; the ierror named after the call; keyword
arguments after the call; a helper named other than in CALLs and function references (it may be
called where the tool cannot see); mpi_f08 in H but not where the type goes; a caller that does not see
the module (USE with ONLY, a PRIVATE module) or passes an expression where the finish needs the
variable."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from . import rewrite
from .across import Across, Helper, SplitSite
from .effects import call_args
from .placement import assign_slots
from .fortran_symbols import head, name_of

_INTRINSIC_TYPES = ("integer", "real", "double precision", "complex", "logical", "double complex")


@dataclass
class FortranSplit:
    """What the Fortran text of one split helper needs."""
    carried: dict = field(default_factory=dict)     # local name -> type spec text
    buffer_dummies: list = field(default_factory=list)   # dummies that are buffers of the call
    finish_dummies: set = field(default_factory=set)     # dummies the finish uses (buffers, tail)
    names: dict = field(default_factory=dict)       # "type", "start", "finish" -> fresh names
    prefix_type: str = ""                           # a FUNCTION's type given in its FUNCTION statement
    type_at: int = 0                                # line before which the state's type goes
    code: str = ""                                  # start and finish, after H's END line


class FortranAcross:
    def __init__(self, unit, ea, writer_class, own_sites: dict):
        self.unit, self.ea, self.writer_class = unit, ea, writer_class
        self.splits: dict[str, FortranSplit] = {}
        helpers = {k: v for k, v in own_sites.items()
                   if unit.procedures[k].scope.kind in ("subroutine", "function")}
        self.across = Across(unit, ea, helpers, self.why_not_written, self.why_not_call)

    # --- hooks -------------------------------------------------------------------------------
    def why_not_written(self, h: Helper) -> str:
        unit, proc = self.unit, self.unit.procedures[h.fn.key]
        scope = proc.scope
        if scope.host is None:
            return "an external procedure: its start and finish would take ASYNCHRONOUS dummies, " \
                   "which need an explicit interface at every caller, and its state a type the " \
                   "callers see (a module or CONTAINed procedure can be split)"
        if proc.included_code or any(unit.text[unit.line_offsets[ln]:unit.line_offsets[ln] + 1] == b"#"
                                     for ln in range(self._first(scope), self._end(scope) + 1)):
            return "INCLUDEd statements or preprocessor lines in it"
        if any(isinstance(c, F.Internal_Subprogram_Part) for c in scope.node.children):
            return "it CONTAINs procedures of its own (its start and finish would not see them)"
        why = self._named_elsewhere(scope) or self._saved(scope) or self._dummies(scope)
        if why:
            return why
        fs = FortranSplit()
        site, stmt = h.site, unit.fnodes[id(h.site.call)]
        actuals = list(stmt.children[1].children)
        for role, a in zip(site.coll.roles, actuals):
            if role in ("value", "status") or str(a).upper() == "MPI_IN_PLACE":
                continue
            name = name_of(a) if isinstance(a, F.Name) else ""
            if name in scope.dummies:
                fs.buffer_dummies.append(name)
        ierr = actuals[len(site.coll.roles)] if len(actuals) > len(site.coll.roles) else None
        # H's locals named by the buffers or after the call: the state's components
        tail_text = [self._text(st) for st in h.tail]
        for st in h.tail:
            f = unit.fnodes.get(id(st))
            if f is not None and walk(f, F.Actual_Arg_Spec):
                return f"keyword arguments after the {site.coll.name} (line {st.line})"
        names = set()
        for n in [a for a, role in zip(call_args(site.call), site.coll.roles) if role != "value"] + h.tail:
            names |= {r.spelling for r in n.walk() if r.kind == "DECL_REF_EXPR" and r.ref_kind == "var"}
        if scope.kind == "function" and any(re.search(rf"(?<![%\w]){scope.result}(?!\w)", t, re.I)
                                            for t in tail_text):
            names.add(scope.result)
        if ierr is not None and any(re.search(rf"(?<![%\w]){name_of(ierr)}(?!\w)", t, re.I) for t in tail_text):
            return f"its ierror `{ierr}` is read after the {site.coll.name}"
        for name in sorted(names):
            v = scope.vars.get(name)
            if v is not None and not v.is_dummy and v.attrs & {"pointer", "target"}:
                # (its key is the one shared pointer/target location, like a global's)
                return f"`{name}` is a local pointer or target used across the wait"
            if v is None or v.is_global:
                continue
            if v.is_dummy:
                fs.finish_dummies.add(name)
                continue
            if v.is_array or v.derived or v.attrs & {"pointer", "target", "allocatable", "parameter"}:
                return f"`{name}` is an array, a derived-type object, a pointer, a target or a constant " \
                       f"used across the wait"
            spec = self._type_of(scope, name, fs)
            if not spec:
                return f"`{name}` has no type declaration of its own (implicit typing)"
            tnode = _type_spec_node(scope, name)
            if tnode is not None and any(scope.vars.get(name_of(k)) is not None and
                                         not scope.vars[name_of(k)].is_global for k in walk(tnode, F.Name)):
                return f"the kind of `{name}` is a name of {scope.name}'s own"
            fs.carried[name] = spec
        fs.finish_dummies |= set(fs.buffer_dummies)
        if scope.kind == "function" and scope.result not in fs.carried:
            spec = self._type_of(scope, scope.result, fs)
            if not spec:
                return f"the type of `{scope.result}` is not declared"
        host_binding = unit.symbols.binding(scope.host)
        if proc.binding == "mpi_f08" and host_binding != "mpi_f08":
            return "mpi_f08 is used in the procedure, not where the state's type goes (its host or module)"
        lower = unit.text.lower()
        base = scope.name
        fs.names = {k: _fresh(f"mpiopt_{k}_{base}", lower) for k in ("split", "start", "finish")}
        fs.type_at = self._type_line(scope.host)
        if not fs.type_at:
            return "no place for the state's type in the host"
        self.splits[h.fn.key] = fs
        fs.code = self._helper_code(h, fs, ierr)
        if unit.fixed_form and any(len(ln) > 72 for ln in fs.code.splitlines()
                                   if ln[:1] not in ("c", "C", "*", "!")):
            del self.splits[h.fn.key]
            return "a renamed statement would pass column 72"
        return ""

    def why_not_call(self, h: Helper, caller) -> str:
        unit = self.unit
        scope = unit.procedures[h.fn.key].scope
        cscope = unit.procedures[caller.key].scope
        chain, sc = set(), cscope
        while sc is not None:
            chain.add(id(sc))
            sc = sc.host
        host = scope.host
        if id(host) not in chain:
            if host.kind != "module":
                return f"{h.fn.name}'s start and finish are not visible in {caller.name}"
            if not self._uses_all_of(cscope, host.name):
                return f"{caller.name} does not USE module {host.name} without ONLY (its start and " \
                       f"finish would not be visible)"
            if any(isinstance(st, F.Access_Stmt) and str(st).strip().upper() == "PRIVATE"
                   for st in walk(host.node, F.Access_Stmt)):
                return f"module {host.name} is PRIVATE by default (its start and finish would not be visible)"
        return ""

    def calls_in(self, fn, lines_of: dict) -> list:
        """across.py's calls of split helpers in `fn`, with Fortran's limits on the call itself."""
        out = self.across.calls_in(fn)
        for s in out:
            why = self.why_not_call_args(s, lines_of) if s.block is not None else ""
            if why:
                s.reason, s.block = "left as it is: " + why, None
        return out

    def why_not_call_args(self, s: SplitSite, lines_of: dict) -> str:
        """The finish takes the call's actual arguments again: the ones it uses must be variables
        named whole; none may call a procedure (it would be called twice)."""
        unit = self.unit
        fs = self.splits[s.helper.fn.key]
        scope = unit.procedures[s.helper.fn.key].scope
        f = unit.fnodes.get(id(s.call))
        args = list(f.children[1].children) if f is not None and f.children[1] is not None else []
        caller = unit.procedures[next(k for k, fn in unit.functions.items() if fn.name == s.function)]
        for dummy, a, node in zip(scope.dummies, args, call_args(s.call)):
            if isinstance(a, F.Actual_Arg_Spec):
                return "keyword arguments"
            if any(n.kind == "CALL_EXPR" for n in node.walk()):
                return f"argument `{a}` calls a procedure (the finish would call it again)"
            if dummy in fs.finish_dummies:
                v = unit.symbols.lookup(caller.scope, name_of(a)) if isinstance(a, F.Name) else None
                if v is None or v.derived or v.foreign or v.attrs & {"pointer", "parameter"} or \
                        (v.assumed_shape and "contiguous" not in v.attrs):
                    return f"argument `{a}` is not a variable named whole (the finish takes it again)"
                if v.is_dummy and caller.scope.host is None and dummy in fs.buffer_dummies:
                    return f"argument `{a}` is a dummy of an external procedure (it cannot get ASYNCHRONOUS)"
        stmt = unit.fnodes.get(id(s.stmt))
        if not isinstance(stmt, (F.Call_Stmt, F.Assignment_Stmt)):
            return "not a CALL or an assignment statement"
        if getattr(stmt.item, "label", None) is not None:
            return f"the statement has label {stmt.item.label}"
        first, last = stmt.item.span
        if any(lines_of.get(line, 0) > 1 for line in range(first, last + 1)):
            return "the call shares its line with another statement"
        return ""

    # --- pieces of the helper ---------------------------------------------------------------
    def _first(self, scope) -> int:
        return head(scope.node).item.span[0]

    def _end(self, scope) -> int:
        return scope.node.children[-1].item.span[1]

    def _text(self, st) -> str:
        return self.unit.text[st.start:st.end].decode(errors="replace")

    def _named_elsewhere(self, scope) -> str:
        """A use of the helper's name that is not a call: an actual argument, a procedure pointer
        target, an INTERFACE body... it may then be called where the tool cannot see."""
        # (inside a FUNCTION without RESULT, its name is its result variable)
        own = {id(n) for n in walk(scope.node, F.Name)} if scope.result == scope.name else set()
        for n in walk(_root(scope.node), F.Name):
            if name_of(n) != scope.name or id(n) in own:
                continue
            parent = getattr(n, "parent", None)
            if isinstance(parent, (F.Actual_Arg_Spec_List, F.Actual_Arg_Spec, F.Pointer_Assignment_Stmt,
                                   F.Procedure_Declaration_Stmt, F.Proc_Decl_List)):
                return f"its name is used other than in a call (`{parent}`): it may be called where " \
                       "the tool cannot see"
        return ""

    def _saved(self, scope) -> str:
        spec = [c for c in scope.node.children if isinstance(c, F.Specification_Part)]
        for st in walk(spec, (F.Save_Stmt, F.Data_Stmt, F.Initialization, F.Attr_Spec)):
            if not isinstance(st, F.Attr_Spec) or str(st).upper() == "SAVE":
                return "it has saved local variables (SAVE, DATA or an initialiser): the start and " \
                       "the finish would each have their own"
        return ""

    def _dummies(self, scope) -> str:
        for d in scope.dummies:
            v = scope.vars.get(d)
            if v is None or v.derived or v.attrs & {"optional", "allocatable", "pointer", "value", "external"}:
                return f"dummy `{d}` is OPTIONAL, VALUE, allocatable, a pointer, a procedure or of a " \
                       "derived type (the finish takes it again)"
        return ""

    def _type_of(self, scope, name: str, fs: FortranSplit) -> str:
        node = _type_spec_node(scope, name)
        if node is not None:
            return str(node)
        stmt = head(scope.node)
        if scope.kind == "function" and name == scope.result and isinstance(stmt, F.Function_Stmt):
            for t in walk(stmt.children[0], (F.Intrinsic_Type_Spec, F.Declaration_Type_Spec)):
                fs.prefix_type = str(t)
                return str(t)
        return ""

    def _type_line(self, host) -> int:
        """The line before which the state's type is defined: a module's CONTAINS, a host
        procedure's first executable statement."""
        if host.kind == "module":
            for c in walk(host.node, F.Contains_Stmt):
                return c.item.span[0]
            return 0
        proc = next((p for p in self.unit.procedures.values() if p.scope is host), None)
        return proc.spec_end_line if proc is not None else 0

    def _uses_all_of(self, scope, module: str) -> bool:
        sc = scope
        while sc is not None:
            for mod, renames in sc.uses:
                if mod == module:
                    only = [u for u in walk(sc.node, F.Use_Stmt) if name_of(u.children[2]) == module
                            and u.children[4] is not None and "ONLY" in str(u).upper()]
                    return not only
            sc = sc.host
        return False

    def _helper_code(self, h: Helper, fs: FortranSplit, ierr) -> str:
        unit, scope = self.unit, self.unit.procedures[h.fn.key].scope
        proc = unit.procedures[h.fn.key]
        w = self.writer_class(unit, proc, h.fn)
        ind = w._indent(self._first(scope))
        body_ind = w._indent(h.site.call.line)
        f08 = proc.binding == "mpi_f08"
        kw = w.kw
        st = "mpiopt_st"
        first_line = head(scope.node).item.span[1] + 1
        spec = unit.text[unit.line_offsets[first_line]:unit.line_offsets[proc.spec_end_line]].decode(errors="replace")
        dummies = list(scope.dummies)
        async_dummies = [d for d in fs.buffer_dummies if d not in proc.asynchronous]
        state_decl = w._lines(f"{kw('TYPE')}({fs.names['split']}), {kw('ASYNCHRONOUS')} :: {st}", body_ind)
        if async_dummies:
            state_decl += w._lines(f"{kw('ASYNCHRONOUS')} :: {', '.join(async_dummies)}", body_ind)

        def rename(text: str) -> str:
            return _rename(text, fs.carried, st, unit.fixed_form)

        # the start: H up to the call, the copies into the state, the call started
        call = unit.fnodes[id(h.site.call)]
        actuals = [str(a) for a in call.children[1].children]
        n = len(h.site.coll.roles)
        mpi_args = [_rename(a, fs.carried, st, False) if role not in ("value",) else a
                    for a, role in zip(actuals, h.site.coll.roles)]
        if h.site.coll.status is not None:
            del mpi_args[h.site.coll.status]
        mpi_args += [f"{st}%mpiopt_request"] + actuals[n:]
        name = str(call.children[0])
        rest = name[4:]
        iname = name[:4] + ("I" + rest if rest.isupper() else "i" + rest if rest.islower() else "I" + rest.lower())
        prefix_text = "".join(self._text(x) for x in h.prefix)
        copies = "".join(w._lines(f"{st}%{v} = {v}", body_ind) for v in fs.carried
                         if re.search(rf"(?<![%\w]){v}(?!\w)", prefix_text, re.I))
        start_extra = ""
        if fs.prefix_type and scope.result in fs.carried and \
                re.search(rf"(?<![%\w]){scope.result}(?!\w)", prefix_text, re.I):
            start_extra = w._lines(f"{fs.prefix_type} :: {scope.result}", body_ind)
        head_args = ", ".join(dummies + [st])
        start = w._lines(f"{kw('SUBROUTINE')} {fs.names['start']}({head_args})", ind) + spec + \
            start_extra + state_decl + prefix_text + copies + \
            w._lines(f"{kw('CALL')} {iname}({', '.join(mpi_args)})", body_ind) + \
            w._lines(f"{kw('END SUBROUTINE')} {fs.names['start']}", ind)
        # the finish: the wait, H after the call (its locals in the state), the result
        ierr_name = _fresh("mpiopt_ierr", unit.text.lower())
        tail = "" if f08 else f", {ierr_name}"
        wait = w._lines(f"{kw('CALL')} {w.mpi('MPI_WAIT')}({st}%mpiopt_request, "
                        f"{w.mpi('MPI_STATUS_IGNORE')}{tail})", body_ind)
        if scope.kind == "function":
            typed = f"{fs.prefix_type} " if fs.prefix_type else ""
            header = f"{typed}{kw('FUNCTION')} {fs.names['finish']}({head_args}) {kw('RESULT')}({scope.result})"
            end = f"{kw('END FUNCTION')} {fs.names['finish']}"
        else:
            header = f"{kw('SUBROUTINE')} {fs.names['finish']}({head_args})"
            end = f"{kw('END SUBROUTINE')} {fs.names['finish']}"
        result = w._lines(f"{scope.result} = {st}%{scope.result}", body_ind) \
            if scope.kind == "function" and scope.result in fs.carried else ""
        finish = w._lines(header, ind) + spec + state_decl + \
            ("" if f08 else w._lines(f"{kw('INTEGER')} {ierr_name}", body_ind)) + wait + \
            "".join(rename(self._text(x)) for x in h.tail) + result + w._lines(end, ind)
        return start + finish

    def type_definition(self, h: Helper, indent: str, w) -> str:
        fs = self.splits[h.fn.key]
        f08 = self.unit.procedures[h.fn.key].binding == "mpi_f08"
        kw = w.kw
        lines = [f"{kw('TYPE')} {fs.names['split']}",
                 f"  {kw('TYPE')}(MPI_Request) :: mpiopt_request" if f08 else f"  {kw('INTEGER')} :: mpiopt_request"]
        lines += [f"  {spec} :: {v}" for v, spec in fs.carried.items()]
        lines.append(f"{kw('END TYPE')} {fs.names['split']}")
        return "".join(w._lines(ln, indent) for ln in lines)


def _type_spec_node(scope, name: str):
    spec = [c for c in scope.node.children if isinstance(c, F.Specification_Part)]
    for d in walk(spec, F.Type_Declaration_Stmt):
        if any(name_of(e.children[0]) == name for e in walk(d.children[2], F.Entity_Decl)):
            t = d.children[0]
            if str(t).lower().startswith(_INTRINSIC_TYPES) and "*" not in str(t):
                return t
            return None
    return None


def _root(node):
    while getattr(node, "parent", None) is not None:
        node = node.parent
    return node


def _rename(text: str, carried: dict, st: str, fixed: bool) -> str:
    """`v` -> `st%v` for the carried locals, outside character literals and comments."""
    if not carried:
        return text
    pattern = re.compile(r"(?<![%\w])(" + "|".join(re.escape(v) for v in carried) + r")(?![\w])", re.I)
    out = []
    for line in text.splitlines(keepends=True):
        if fixed and line[:1] in ("c", "C", "*", "!"):
            out.append(line)
            continue
        pieces = re.split(r"('[^']*'|\"[^\"]*\"|!.*)", line)
        out.append("".join(p if i % 2 else pattern.sub(lambda m: f"{st}%{m.group(1)}", p)
                           for i, p in enumerate(pieces)))
    return "".join(out)


def _fresh(name: str, lower_text: bytes) -> str:
    while re.search(rb"\b" + name.encode() + rb"\b", lower_text):
        name += "_"
    return name


# --- the caller's text ---------------------------------------------------------------------------

def caller_edits(fa: FortranAcross, w, splits: list) -> tuple[list, list, list]:
    """(edits, declarations, names to make ASYNCHRONOUS) for the calls of split helpers in the
    procedure `w` (a fortran_write._ProcedureWriter) writes."""
    unit = fa.unit
    edits, decls, asynchronous = [], [], []
    state_base = _fresh("mpiopt_state", unit.text.lower())
    for k, s in enumerate(splits):
        fs = fa.splits[s.helper.fn.key]
        scope = unit.procedures[s.helper.fn.key].scope
        state = f"{state_base}_{k}"
        decls.append(f"{w.kw('TYPE')}({fs.names['split']}), {w.kw('ASYNCHRONOUS')} :: {state}")
        f = unit.fnodes[id(s.call)]
        args = [str(a) for a in f.children[1].children] if f.children[1] is not None else []
        for dummy, a in zip(scope.dummies, args):
            if dummy in fs.buffer_dummies:
                asynchronous.append(a)
        stmt = unit.fnodes[id(s.stmt)]
        first, last = stmt.item.span
        indent = w._indent(first)
        text = w._lines(f"{w.kw('CALL')} {fs.names['start']}({', '.join(args + [state])})", indent)
        if any(x.flag for x in s.waits):
            text += w._lines(f"{w.flags}({s.slot + 1}) = 1", indent)
        edits.append(rewrite.Edit(w._off(first), w._off(last + 1), text))
        lhs = f"{stmt.children[0]} = " if isinstance(stmt, F.Assignment_Stmt) else ""
        finish = f"{w.kw('CALL') + ' ' if not lhs else lhs}{fs.names['finish']}({', '.join(args + [state])})"
        for x in s.waits:
            at, ind, order = _wait_place(w, x)
            body = w._lines(finish, ind)
            if x.flag:
                body = w._lines(f"{w.kw('IF')} ({w.flags}({s.slot + 1}) " + (".NE." if w.fixed else "/=") +
                                f" 0) {w.kw('THEN')}", ind) + w._lines(finish, ind + "  ") + \
                    w._lines(f"{w.flags}({s.slot + 1}) = 0", ind + "  ") + w._lines(w.kw("END IF"), ind)
            edits.append(rewrite.Edit(at, at, body, order + 1))
    return edits, decls, asynchronous


def _wait_place(w, x) -> tuple[int, str, int]:
    """(offset, indent, order) of a wait, as fortran_write places MPI_WAIT."""
    block = x.block
    if x.index < len(block.children):
        line = block.children[x.index].line
        return w._off(line), w._indent(line), 0
    closing = w.unit.text.count(b"\n", 0, block.end - 1) + 1
    last = block.children[-1].line if block.children else closing
    return w._off(closing), (w._indent(last) if block.children else w._indent(closing) + "  "), 100


def helper_edits(fa: FortranAcross, w_class) -> list:
    """The state's type in the module or host, start and finish after each helper whose calls moved."""
    unit, edits = fa.unit, []
    for h in fa.across.helpers.values():
        if not any(c.action != "unchanged" for c in h.calls) or h.fn.key not in fa.splits:
            continue
        fs = fa.splits[h.fn.key]
        scope = unit.procedures[h.fn.key].scope
        w = w_class(unit, unit.procedures[h.fn.key], h.fn)
        end = scope.node.children[-1].item.span[1] + 1
        edits.append(rewrite.Edit(w._off(end), w._off(end), fs.code, 50))
        edits.append(rewrite.Edit(w._off(fs.type_at), w._off(fs.type_at),
                                  fa.type_definition(h, w._indent(fs.type_at), w), -10))
    return edits


def slots(body, sites: list) -> tuple[int, int]:
    """(requests, flags): calls of split wrappers take no request, only a flag slot, after the
    requests (their state holds the request)."""
    nreqs = assign_slots(body, [s for s in sites if not isinstance(s, SplitSite)])
    splits = [s for s in sites if isinstance(s, SplitSite)]
    nflags = nreqs + assign_slots(body, splits)
    for s in splits:
        s.slot += nreqs
    return nreqs, nflags


def keep_if_nothing_to_overlap(sites: list):
    """A call whose finish would come right after it stays as it is: splitting would only add code."""
    for s in sites:
        if isinstance(s, SplitSite) and s.waits and all(w.steps == 0 for w in s.waits):
            w = s.waits[0]
            s.action, s.waits, s.block = "unchanged", [], None
            s.reason = f"left as it is: the caller needs what {s.helper.fn.name} leaves at " \
                       f"once ({w.blocked_by}, line {w.blocked_line})"
