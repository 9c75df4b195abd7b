"""The Fortran writer: the transformation of one Fortran file, from the shared analyses' decisions
to edits of whole lines of the source.

For each procedure: the blocking collectives (placement.find_sites on the front end's tree),
Fortran's own reasons to leave one blocking (below), request slots and wait positions (shared),
then the text:

  CALL MPI_ALLREDUCE(a, b, n, …, comm, ierr)
      -> CALL MPI_IALLREDUCE(a, b, n, …, comm, mpiopt_reqs(1), ierr)
  … the statements the wait may move past …
  CALL MPI_WAIT(mpiopt_reqs(1), MPI_STATUS_IGNORE, mpiopt_ierr)

(with --mode persistent on Open MPI, for a call in a loop whose arguments do not change in it:
`CALL MPIX_ALLREDUCE_INIT(…, MPI_INFO_NULL, mpiopt_reqs(1), mpiopt_ierr)` before the loop,
`CALL MPI_START(mpiopt_reqs(1), ierr)` in place of the call, `MPI_REQUEST_FREE` after the loop)
with, before the first executable statement, `INTEGER mpiopt_reqs(N)` (`TYPE(MPI_Request)`
with mpi_f08, whose ierror arguments are optional and left out of the waits), `INTEGER
mpiopt_ierr` (the waits' own status variable, so that they never overwrite the program's)
and `ASYNCHRONOUS :: <buffers>`. Point-to-point calls the same way: MPI_SEND -> MPI_ISEND,
MPI_RECV(…, status, ierr) -> MPI_IRECV(…, mpiopt_reqs(k), ierr) with the status in its wait;
persistent MPI_SEND_INIT / MPI_RECV_INIT for both MPIs (fortran_p2p.py). Rooted collectives'
waits are split by rank as in C, with `mpiopt_root(k)` set before the call.

Why ASYNCHRONOUS (and not MPI_F_SYNC_REG): the buffer of a pending call is changed or read by
MPI while the program runs on; Fortran lets a compiler keep a variable in a register or move
its accesses across a call that does not name it (MPI_WAIT names only the request). The
ASYNCHRONOUS attribute (Fortran 2003; extended to any asynchronous communication by TS 29113,
the protection MPI-3.1 section 17.1.16 names) forbids that for every access in the scoping unit,
with one declaration per buffer and no change to the code that uses it; MPI_F_SYNC_REG would
need a call after every wait for every buffer and is not in every mpif.h.

Dummy arguments of module and internal procedures (whose interfaces are explicit wherever they
are called) get ASYNCHRONOUS in the specification part; a dummy argument of an external
procedure cannot get it (see external_dummy), so its calls stay blocking.

A call stays blocking (and the report says why) when a buffer may be a temporary the compiler
makes for the call alone (array section, vector subscript, array constructor, expression, named
constant, a possibly non-contiguous assumed-shape or pointer array) or a derived-type object or
component, or a dummy argument of an external procedure; when the call is labelled (a branch target or a DO terminal: a wait could not follow
it in the same place) or shares its line; when no MPI binding is in scope; with keyword
arguments; and (mpif.h, use mpi) without its ierror argument."""
from __future__ import annotations

import re
import time
from pathlib import Path

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from . import rewrite
from .effects import call_args
from .across import SplitSite
from .engine import FileResult, Options, _FunctionEmitter, _report_helpers, select_by_profile
from .fortran_across import FortranAcross, caller_edits, helper_edits, keep_if_nothing_to_overlap, slots
from .fortran_analysis import analyse
from .fortran_p2p import (nonblocking_name, pair_halves, reallocated_in_loop, sendrecv_halves,
                          startall_runs)
from .fortran_parse import FortranUnit, Procedure, parse_fortran
from .persistent import Target, detect_target, enclosing_loop, why_not_persistent
from .placement import Site, find_sites

_TEMPORARY = "the compiler may pass a temporary copy that no longer exists when the call returns"
# C wording of the shared analyses' reasons -> Fortran's
_WORDING = [("not a statement of a { } block (no room for a wait)",
             "not a statement of a block the transformer models (a one-line IF, or in a WHERE, "
             "ASSOCIATE, BLOCK, SELECT TYPE...): no room for a wait"),
            ("end of the function", "end of the procedure"),
            ("written through a macro", "not a plain CALL statement"),
            ("is not MPI_STATUS_IGNORE or `&variable`", "is not MPI_STATUS_IGNORE or a variable named "
             "whole (the wait evaluates it again)")]


def transform_fortran_file(path: str | Path, options: Options) -> FileResult:
    t0, cpu0 = time.perf_counter(), time.process_time()
    unit = parse_fortran(path, options.extra_args)
    target = detect_target(options.flavour, options.mpi_version)
    ea, placer = analyse(unit)
    edits, reports, site_reports = [], [], {}
    lines_of = _statement_lines(unit)
    functions = sorted(unit.functions.items(), key=lambda kv: kv[1].node.start)
    own_sites = {}
    for key, fn in functions:
        proc = unit.procedures[key]
        sites = own_sites[key] = find_sites(unit, key, ea)
        select_by_profile(unit, sites, options)
        for s in sites:
            # Fortran's reasons also replace the C wording for a buffer that is no variable
            if s.block is not None or "cannot tell what" in s.reason:
                why = why_blocking(unit, proc, s, lines_of)
                if why:
                    s.block, s.reason = None, "left blocking: " + why
        pair_halves(sites)
    # waits that leave small wrappers (across.py, written by fortran_across.py)
    across = FortranAcross(unit, ea, _ProcedureWriter, own_sites)
    for key, fn in functions:
        proc = unit.procedures[key]
        sites = own_sites[key] + across.calls_in(fn, lines_of)
        todo = [s for s in sites if s.block is not None]
        if todo:
            writer = _ProcedureWriter(unit, proc, fn)
            writer.across = across
            for s in todo:
                s.action = "nonblocking"
                if isinstance(s, SplitSite):
                    if options.mode == "persistent":
                        s.reason = "nonblocking, not persistent: the wait left its helper procedure"
                elif options.mode == "persistent":
                    why = _not_persistent(s, ea, target)
                    if why:
                        s.reason = "nonblocking, not persistent: " + why
                    else:
                        s.action, s.loop = "persistent", enclosing_loop(s)
            writer.nslots, writer.nflags = slots(fn.body, todo)
            for s in todo:
                placer.place(s)
            keep_if_nothing_to_overlap(todo)
            todo = [s for s in todo if s.block is not None and not _crosses_directive(unit, proc, s)]
            pair_halves(sites)
            todo = [s for s in todo if s.block is not None]
            if todo:
                edits += writer.emit(todo)
        reporter = _FunctionEmitter(unit, fn, ea, options, target)
        for s in sites:
            r = reporter.report(s)
            r["function"] = proc.scope.name
            for old, new in _WORDING:
                r["reason"] = r["reason"].replace(old, new)
                for w in r["waits"]:
                    w["blocked_by"] = w["blocked_by"].replace(old, new)
            reports.append(r)
            site_reports[id(s)] = r
    edits += helper_edits(across, _ProcedureWriter)
    _report_helpers(site_reports, across.across)
    output = rewrite.apply(unit.text, edits)
    return FileResult(Path(path), unit.text, output, reports, time.perf_counter() - t0, target,
                      time.process_time() - cpu0)


def _statement_lines(unit: FortranUnit) -> dict:
    """line -> number of statements on it (a `;` puts two on one line)."""
    count: dict[int, int] = {}
    seen = set()
    for proc in unit.procedures.values():
        for n in walk(proc.scope.node):
            item = getattr(n, "item", None)
            span = getattr(item, "span", None)
            if span and id(item) not in seen and not isinstance(n, F.Comment) and unit.in_file(n):
                seen.add(id(item))
                for line in range(span[0], span[1] + 1):
                    count[line] = count.get(line, 0) + 1
    return count


def external_dummy(proc: Procedure, name: str) -> bool:
    """A dummy argument of an external procedure. ASYNCHRONOUS on it would change the
    procedure's interface, and callers without an explicit interface may not call it then
    (F2008 12.4.2.2; gfortran 12 rejects them, also with the attribute given in a BLOCK
    construct). MPI_F_SYNC_REG is no way out with the Debian MPIs: MPICH 4.0.2's Fortran
    entry writes a second (ierror) argument the standard's routine does not have, and Open
    MPI 4.1's `use mpi` interface takes no scalar. So such a buffer keeps its call blocking."""
    v = proc.scope.vars.get(name.lower())
    return proc.scope.host is None and v is not None and v.is_dummy


def _not_persistent(s: Site, ea, target: Target) -> str:
    """'' if the call can become <coll>_INIT before its loop + MPI_START in it (the shared loop
    invariance test), else why not. Fortran's persistent collectives are written for Open MPI's
    MPIX_ extension only: Debian's MPICH 4.0.2 returned wrong sums from Fortran's
    MPI_ALLREDUCE_INIT in a 3-iteration test at 2 ranks (use mpi: garbage, mpi_f08: zeros).
    Point-to-point MPI_SEND_INIT / MPI_RECV_INIT are MPI-1: written for both MPIs."""
    why = reallocated_in_loop(s, ea)
    if why or s.coll.p2p:
        return why or why_not_persistent(s, ea)
    if target.prefix != "MPIX":
        return (f"{target.library or 'this MPI'}: persistent collectives from Fortran are written "
                "for Open MPI's MPIX_ extension only")
    if s.coll.name in target.broken:
        return f"{target.library}'s persistent {s.coll.name} computes wrong results"
    return why_not_persistent(s, ea)


def _crosses_directive(unit: FortranUnit, proc: Procedure, s: Site) -> bool:
    """A preprocessor line between the call and a wait, or a declaration that would land in a
    conditional region: the result would be right for this configuration only. The call is
    then left as it is (and True returned)."""
    lines = unit.text.decode(errors="replace").split("\n")

    def directive(a: int, b: int) -> bool:
        return any(lines[i - 1].lstrip().startswith("#") for i in range(a, min(b, len(lines) + 1)))

    depth = 0
    for ln in lines[:proc.spec_end_line - 1]:
        word = ln.lstrip()[1:].lstrip().split(" ")[0] if ln.lstrip().startswith("#") else ""
        depth += word in ("if", "ifdef", "ifndef") or -(word == "endif")
    why = ""
    if depth > 0:
        why = "the declarations would go inside a preprocessor conditional"
    for w in s.waits:
        end = unit.text.count(b"\n", 0, w.block.end - 1) + 1 if w.index >= len(w.block.children) \
            else w.block.children[w.index].line
        if directive(s.call.line, end):
            why = why or "a preprocessor line lies between the call and its wait"
    if why:
        s.block, s.action, s.waits, s.reason = None, "unchanged", [], "left blocking: " + why
    return bool(why)


# --- Fortran's reasons to leave a call blocking ------------------------------------------------

def why_blocking(unit: FortranUnit, proc: Procedure, s: Site, lines_of: dict) -> str:
    stmt = unit.fnodes.get(id(s.call))
    if not isinstance(stmt, F.Call_Stmt):
        return "not a CALL statement"
    if not proc.binding:
        return "no MPI binding (include 'mpif.h', use mpi, use mpi_f08) found in the scope of " \
               "the procedure"
    if proc.included_code:
        return f"the procedure has executable statements from an INCLUDEd file " \
               f"(`{proc.included_code}`): their lines are not this file's"
    if getattr(stmt.item, "macro", False):
        return "the preprocessor changed the statement (a macro) or it spans preprocessor lines"
    if getattr(stmt.item, "label", None) is not None:
        return f"the statement has label {stmt.item.label} (a branch target or a DO terminal: " \
               "a wait could not follow it in the same place)"
    first, last = stmt.item.span
    if any(lines_of.get(line, 0) > 1 for line in range(first, last + 1)):
        return "the call shares its line with another statement"
    actuals = list(stmt.children[1].children) if stmt.children[1] is not None else []
    if any(isinstance(a, F.Actual_Arg_Spec) for a in actuals):
        return "keyword arguments"
    if proc.binding != "mpi_f08" and len(actuals) != len(s.coll.roles) + 1:
        return f"expected {len(s.coll.roles) + 1} arguments (the last the ierror) with {proc.binding}"
    for role, a in zip(s.coll.roles, actuals):
        # a receive's status is not MPI's while the call is pending: it goes to the wait
        if role in ("value", "status") or str(a).upper() == "MPI_IN_PLACE":
            continue
        why = _temporary(unit, proc, a)
        base = a if isinstance(a, F.Name) else a.children[0] if isinstance(a, F.Part_Ref) else None
        if not why and base is not None and external_dummy(proc, str(base)):
            why = "is a dummy argument of an external procedure: ASYNCHRONOUS would need an " \
                  "explicit interface at every caller, and MPI_F_SYNC_REG is not usable with " \
                  "these MPIs (see fortran_write.external_dummy)"
        if why:
            what = {"send": "send buffer", "recv": "receive buffer", "bcast": "buffer",
                    "array": "count/displacement array"}[role.split("@")[0]]
            return f"the {what} `{a}` {why}"
    return ""


def _temporary(unit: FortranUnit, proc: Procedure, a) -> str:
    """Why actual argument `a` may not be the variable's own storage ('' if it is)."""
    sym = unit.symbols
    if isinstance(a, F.Array_Constructor):
        return f"is an array constructor: {_TEMPORARY}"
    if isinstance(a, F.Data_Ref):
        return "is a derived-type component (it may be a pointer; components are not tracked apart)"
    if isinstance(a, (F.Name, F.Part_Ref)):
        base = a if isinstance(a, F.Name) else a.children[0]
        v = sym.lookup(proc.scope, str(base).lower())
        if v is None or v.foreign:
            return "is not a variable the transformer can see declared"
        if "parameter" in v.attrs:
            return f"is a named constant: {_TEMPORARY}"
        if v.derived:
            return "is of a derived type (its components may be pointers)"
        if isinstance(a, F.Part_Ref):
            if not v.is_array:
                return "is a substring or a function reference"
            subs = a.children[1]
            if walk(subs, F.Subscript_Triplet):
                return f"is an array section: {_TEMPORARY}"
            for sub in subs.children:
                if _array_valued(unit, proc, sub):
                    return f"has a vector subscript: {_TEMPORARY}"
            if v.assumed_shape and not v.attrs & {"allocatable", "contiguous"}:
                return "is an element of an assumed-shape or pointer array, which may be " \
                       "non-contiguous"
            return ""
        if v.assumed_shape and not v.attrs & {"allocatable", "contiguous"}:
            return f"is an assumed-shape or pointer array, which may be non-contiguous: {_TEMPORARY}"
        return ""
    return f"is an expression: {_TEMPORARY}"


def _array_valued(unit: FortranUnit, proc: Procedure, sub) -> bool:
    if walk(sub, (F.Array_Constructor, F.Subscript_Triplet)):
        return True
    for n in walk(sub, F.Name) if not isinstance(sub, F.Name) else [sub]:
        v = unit.symbols.lookup(proc.scope, str(n).lower())
        if v is not None and v.is_array and not _subscripted(sub, n):
            return True
    return False


def _subscripted(expr, name) -> bool:
    return any(p.children[0] is name for p in walk(expr, F.Part_Ref))


# --- text -------------------------------------------------------------------------------------

class _ProcedureWriter:
    def __init__(self, unit: FortranUnit, proc: Procedure, fn):
        self.unit, self.proc, self.fn = unit, proc, fn
        self.fixed = unit.fixed_form
        lower = unit.text.lower()
        self.reqs = _fresh("mpiopt_reqs", lower)
        self.flags = _fresh("mpiopt_flags", lower)
        self.ierr = _fresh("mpiopt_ierr", lower)
        self.root = _fresh("mpiopt_root", lower)
        self.rank = _fresh("mpiopt_rank", lower)
        self.f08 = proc.binding == "mpi_f08"
        self.nslots = self.nflags = 0
        self.upper = True
        # lower-case keywords if the procedure's first statement is written so
        first = self._raw(self._first_line()).lstrip(" \t0123456789")
        self.lower_case = first[:1].islower()

    def _first_line(self) -> int:
        for c in self.proc.scope.node.children:
            span = getattr(getattr(c, "item", None), "span", None)
            if span:
                return span[0]
        return 1

    def req(self, k: int) -> str:
        return f"{self.reqs}({k + 1})"

    def mpi(self, name: str) -> str:
        return name.upper() if self.upper else name.lower()

    def emit(self, sites: list[Site]) -> list[rewrite.Edit]:
        edits, buffers, more_decl = [], [], []
        splits = [s for s in sites if isinstance(s, SplitSite)]
        if splits:           # calls of split wrappers (fortran_across.py)
            edits, more_decl, buffers = caller_edits(self.across, self, splits)
            sites = [s for s in sites if not isinstance(s, SplitSite)]
        runs = {id(run[0]): run for run in startall_runs(sites, self.unit)}
        started = {id(s) for run in runs.values() for s in run[1:]}
        halves = sendrecv_halves(sites)
        for s in sites:
            stmt = self.unit.fnodes[id(s.call)]
            self.upper = str(stmt.children[0]) != str(stmt.children[0]).lower()
            for role, a in zip(s.coll.roles, stmt.children[1].children):
                if role not in ("value", "status") and str(a).upper() != "MPI_IN_PLACE":
                    buffers.append(str(a if isinstance(a, F.Name) else a.children[0]))
            if s.coll.half == "recv":
                pass                    # written with its send half: one statement
            elif id(s) in started:      # started by the MPI_STARTALL in its run's first line
                first, last = stmt.item.span
                edits.append(rewrite.Edit(self._off(first), self._off(last + 1), ""))
            else:
                edits.append(self._call(s, stmt, runs.get(id(s)), halves.get(id(s))))
            if s.action == "persistent":
                edits += self._persistent(s, stmt)
        edits += self._waits([w for s in sites for w in s.waits])
        uses_flags = any(w.flag for s in sites + splits for w in s.waits)
        at = self._off(self.proc.spec_end_line)
        indent = self._indent(self.proc.spec_end_line)
        decl = [f"{self.kw('TYPE')}(MPI_Request) {self.reqs}({self.nslots})" if self.f08
                else f"{self.kw('INTEGER')} {self.reqs}({self.nslots})"] if sites else []
        decl += more_decl
        if not self.f08 and sites:
            decl.append(f"{self.kw('INTEGER')} {self.ierr}")
        if uses_flags:
            decl.append(f"{self.kw('INTEGER')} {self.flags}({self.nflags})")
        if any(s.rank_guard for s in sites):
            decl.append(f"{self.kw('LOGICAL')} {self.root}({self.nslots})")
            decl.append(f"{self.kw('INTEGER')} {self.rank}")
        names = [b for b in dict.fromkeys(b.lower() for b in buffers) if b not in self.proc.asynchronous]
        if names:
            decl.append(self.kw("ASYNCHRONOUS") + " " + ", ".join(names))
        if uses_flags:
            decl.append(f"{self.flags} = 0")
        edits.append(rewrite.Edit(at, at, "".join(self._lines(d, indent) for d in decl), -5))
        if any(s.action == "persistent" and not s.coll.p2p for s in sites) and self.proc.binding != "mpif.h":
            # Open MPI's MPIX_ routines: their module, first in the specification part
            # (mpif.h needs nothing: the routines are external procedures there)
            module = "mpi_f08_ext" if self.f08 else "mpi_ext"
            head_end = self._first_line()
            for c in self.proc.scope.node.children:
                span = getattr(getattr(c, "item", None), "span", None)
                if span:
                    head_end = span[1]
                    break
            at_use = self._off(head_end + 1)
            edits.append(rewrite.Edit(at_use, at_use, self._lines(
                f"{self.kw('USE')} {module}", self._indent(self.proc.spec_end_line)), -30))
        return edits

    # --- pieces --------------------------------------------------------------------------------
    def kw(self, word: str) -> str:
        """A keyword in the case the file writes its statements in."""
        return word.lower() if self.lower_case else word

    def _raw(self, line: int) -> str:
        return self.unit.text[self._off(line):self._off(line + 1)].decode(errors="replace")

    def _off(self, line: int) -> int:
        offs = self.unit.line_offsets
        return offs[min(line, len(offs) - 1)]

    def _indent(self, line: int) -> str:
        raw = self.unit.text[self._off(line):self._off(line + 1)].decode(errors="replace")
        if self.fixed:
            body = raw[6:] if len(raw) > 6 else ""
            return " " * 6 + body[:len(body) - len(body.lstrip(" "))]
        stripped = raw.lstrip(" \t0123456789")
        n = len(raw) - len(stripped)
        return raw[:n] if raw[:n].strip() == "" else " " * n

    def _lines(self, stmt: str, indent: str) -> str:
        """One statement as source lines, continued within the line length of the form."""
        width = 72 if self.fixed else 100
        out, line = [], indent
        for piece in re.split(r"(?<=, )", stmt):
            if len(line) + len(piece.rstrip()) > width - (0 if self.fixed else 2) and line.strip():
                out.append(line.rstrip() + ("" if self.fixed else " &"))
                line = ("     &" + indent[6:] + "   ") if self.fixed else indent + "    "
            line += piece
        out.append(line.rstrip())
        if self.fixed:
            # a piece longer than a line: fixed form may break anywhere (blanks do not count, a
            # character context goes on at column 7), and text past column 72 would be lost
            cut = []
            for ln in out:
                while len(ln) > 72:
                    cut.append(ln[:72])
                    ln = "     &" + ln[72:]
                cut.append(ln)
            out = cut
        return "".join(x + "\n" for x in out)

    def _call(self, s: Site, stmt, run: list | None = None, recv: Site | None = None) -> rewrite.Edit:
        """The statement that posts `s` (with `recv`, an MPI_SENDRECV's receive half: MPI_IRECV,
        then MPI_ISEND for `s`, the send half)."""
        first, last = stmt.item.span
        actuals = [str(a) for a in stmt.children[1].children]
        indent = self._indent(first)
        comment = _trailing_comment(self._raw(last))
        posted = [recv, s] if recv is not None else [s]
        text = "".join(self._lines(self._posting(h, stmt, actuals, run), indent) for h in posted)
        if comment:
            text = text[:-1] + "  " + comment + "\n"
        for h in posted:
            if any(w.flag for w in h.waits):
                text += self._lines(f"{self.flags}({h.slot + 1}) = 1", indent)
        if s.rank_guard:
            text = self._root_test(s, actuals, indent) + text
        return rewrite.Edit(self._off(first), self._off(last + 1), text)

    def _posting(self, s: Site, stmt, actuals: list, run: list | None) -> str:
        """The CALL statement that starts `s`."""
        n = len(s.coll.roles)
        at = s.coll.status
        if s.coll.half:             # MPI_SENDRECV's half: its own arguments, the request, ierror
            args = s.coll.own_args(actuals[:n]) + [self.req(s.slot)] + actuals[n:]
        elif at is not None:        # a receive: the request takes the status's place
            args = actuals[:at] + [self.req(s.slot)] + actuals[at + 1:]
        else:
            args = actuals[:n] + [self.req(s.slot)] + actuals[n:]
        name = str(stmt.children[0])
        rest = name[4:]
        new = nonblocking_name(name, s.coll.nonblocking) if s.coll.half else \
            name[:4] + ("I" + rest if rest.isupper() else "i" + rest if rest.islower() else "I" + rest.lower())
        if s.action == "persistent":
            new = self.mpi("MPI_START")
            args = [self.req(s.slot)] + actuals[n:]
            if run:
                new = self.mpi("MPI_STARTALL")
                args = [str(len(run)), f"{self.reqs}({run[0].slot + 1}:{run[-1].slot + 1})"] + actuals[n:]
        return f"{self.kw('CALL')} {new}({', '.join(args)})"

    def _root_test(self, s: Site, actuals: list, indent: str) -> str:
        """Whether this rank is the call's root, for its split waits (C: mpiopt_is_root). On an
        intercommunicator the root passes MPI_ROOT; a rank of the other group whose number is the
        root's is taken for a root too, which only makes its wait earlier. The root and the
        communicator are side-effect free (placement.Placer.place), so evaluating them again is
        the call's own value."""
        root, comm = actuals[s.coll.root], actuals[s.coll.comm]
        tail = "" if self.f08 else f", {self.ierr}"
        test = f"{self.kw('CALL')} {self.mpi('MPI_COMM_RANK')}({comm}, {self.rank}{tail})"
        eq = ".EQ."
        value = f"{self.root}({s.slot + 1}) = {self.rank} {eq} {root} .OR. {root} {eq} {self.mpi('MPI_ROOT')}"
        return self._lines(test, indent) + self._lines(value, indent)

    def _persistent(self, s: Site, stmt) -> list[rewrite.Edit]:
        """<coll>_INIT before the loop, MPI_REQUEST_FREE after it."""
        loop = s.loop
        actuals = [str(a) for a in stmt.children[1].children][:len(s.coll.roles)]
        tail = "" if self.f08 else f", {self.ierr}"
        if s.coll.p2p:              # MPI_SEND_INIT / MPI_RECV_INIT (MPI-1): no info, no status
            actuals = s.coll.own_args(actuals)
            init = f"{self.kw('CALL')} {self.mpi(s.coll.persistent('MPI'))}(" \
                   f"{', '.join(actuals + [self.req(s.slot)])}{tail})"
        else:
            init = f"{self.kw('CALL')} {self.mpi(s.coll.persistent('MPIX'))}(" \
                   f"{', '.join(actuals + [self.mpi('MPI_INFO_NULL'), self.req(s.slot)])}{tail})"
        free = f"{self.kw('CALL')} {self.mpi('MPI_REQUEST_FREE')}({self.req(s.slot)}{tail})"
        indent = self._indent(loop.line)
        after = self.unit.text.count(b"\n", 0, loop.end - 1) + 2
        return [rewrite.Edit(self._off(loop.line), self._off(loop.line), self._lines(init, indent), 5),
                rewrite.Edit(self._off(after), self._off(after), self._lines(free, indent), 150 + s.slot)]

    def _status(self, site: Site) -> str | None:
        """A receive's own status argument (its wait fills it in), None for MPI_STATUS_IGNORE."""
        if site.coll.status is None:
            return None
        a = str(self.unit.fnodes[id(site.call)].children[1].children[site.coll.status])
        return None if a.upper() == "MPI_STATUS_IGNORE" else a

    def _wait_call(self, slots: list[int], status: str | None = None) -> str:
        tail = "" if self.f08 else f", {self.ierr}"
        if len(slots) == 1:
            return f"{self.kw('CALL')} {self.mpi('MPI_WAIT')}({self.req(slots[0])}, " \
                   f"{status or self.mpi('MPI_STATUS_IGNORE')}{tail})"
        a, b = slots[0] + 1, slots[-1] + 1
        return f"{self.kw('CALL')} {self.mpi('MPI_WAITALL')}({len(slots)}, {self.reqs}({a}:{b}), " \
               f"{self.mpi('MPI_STATUSES_IGNORE')}{tail})"

    def _guarded_wait(self, w, status: str | None, indent: str) -> str:
        """A wait that runs only where its call ran (a flag: the wait left the call's IF branch)
        and/or on the root or the other ranks only (a rooted collective's split wait)."""
        k = w.site.slot
        cond = []
        if w.flag:
            cond.append(f"{self.flags}({k + 1}) " + (".NE." if self.fixed else "/=") + " 0")
        if w.guard:
            cond.append(("" if w.guard == "root" else ".NOT. ") + f"{self.root}({k + 1})")
        text = self._lines(f"{self.kw('IF')} ({' .AND. '.join(cond)}) {self.kw('THEN')}", indent)
        text += self._lines(self._wait_call([k], status), indent + "  ")
        if w.flag:
            text += self._lines(f"{self.flags}({k + 1}) = 0", indent + "  ")
        return text + self._lines(self.kw("END IF"), indent)

    def _waits(self, waits) -> list[rewrite.Edit]:
        groups: dict = {}
        for w in waits:
            groups.setdefault((w.block.start, id(w.block), w.index), []).append(w)
        edits = []
        for (_s, _b, index), group in groups.items():
            block = group[0].block
            if index < len(block.children):
                line = block.children[index].line
                # a labelled statement's own line: the label stays on it
                at = self._off(line)
                indent = self._indent(line)
            else:
                closing = self.unit.text.count(b"\n", 0, block.end - 1) + 1
                at = self._off(closing)
                last = block.children[-1].line if block.children else closing
                indent = self._indent(last) if block.children else self._indent(closing) + "  "
            plain = sorted({w.site.slot for w in group
                            if not w.flag and not w.guard and self._status(w.site) is None})
            text = ""
            if plain and (len(plain) == 1 or plain[-1] - plain[0] + 1 == len(plain)):
                text += self._lines(self._wait_call(plain), indent)
            else:
                text += "".join(self._lines(self._wait_call([k]), indent) for k in plain)
            status = {w.site.slot: self._status(w.site) for w in group}
            with_status = {w.site.slot for w in group if not w.flag and not w.guard and status[w.site.slot]}
            for k in sorted(with_status):
                text += self._lines(self._wait_call([k], status[k]), indent)
            guarded = []
            for w in sorted((w for w in group if w.flag or w.guard), key=lambda w: w.site.slot):
                t = self._guarded_wait(w, status[w.site.slot], indent)
                if t not in guarded:      # exclusive branches' sites share a slot and a wait
                    guarded.append(t)
            text += "".join(guarded)
            edits.append(rewrite.Edit(at, at, text, 100 if index >= len(block.children) else 0))
        return edits


def _trailing_comment(line: str) -> str:
    """The `! …` comment ending a line of code, if any (quotes skipped)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "!":
            return line[i:].rstrip("\n")
    return ""


def _fresh(name: str, lower_text: bytes) -> str:
    while re.search(rb"\b" + name.encode() + rb"\b", lower_text):
        name += "_"
    return name


__all__ = ["transform_fortran_file", "why_blocking", "call_args"]
