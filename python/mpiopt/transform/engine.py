"""The transformation of one file: match collective calls -> analyse -> emit text edits.

Per function: find the blocking collectives (placement.find_sites), decide persistent or
nonblocking (persistent.py), give each a request slot, place its wait(s) (placement.Placer), then
write the edits (rewrite.py): the call renamed and given a request, waits inserted, request/status
(and flag) arrays declared at the top of the function body."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import persistent_p2p, rewrite, split_write
from .across import Across, SplitSite
from .alias import analyse as points_to
from .calls import REWRITABLE
from .effects import EffectAnalysis, call_args
from .parse import Function, Unit, parse
from .persistent import Target, detect_target, enclosing_loop, why_not_persistent
from .placement import Placer, Site, Wait, assign_slots, find_sites

MODES = ("nonblocking", "persistent")

IS_ROOT_HELPER = """\
/* Added by mpiopt transform: does this process act as the root of a rooted collective? */
static int mpiopt_is_root(MPI_Comm comm, int root)
{
    int inter, rank;
    MPI_Comm_test_inter(comm, &inter);
    if (inter)
        return root == MPI_ROOT;
    MPI_Comm_rank(comm, &rank);
    return rank == root;
}

"""


@dataclass
class Options:
    mode: str = "nonblocking"
    flavour: str = "openmpi"            # whose mpi.h to parse with (and detect the target from)
    mpi_version: int | None = None      # None: detect
    extra_args: list = field(default_factory=list)
    compile_commands: Path | None = None
    select: object | None = None        # --profile: a costs.Selector; only the calls it picks change


@dataclass
class FileResult:
    path: Path
    original: bytes
    output: bytes
    sites: list                          # report dicts, one per collective call
    seconds: float                       # wall time: parse, analyses, rewriting
    target: Target
    cpu_seconds: float = 0.0             # CPU time of the same (meaningful on a loaded machine)

    @property
    def changed(self) -> bool:
        return self.output != self.original


def select_by_profile(unit: Unit, sites: list, options: Options) -> None:
    """--profile: each site the profile does not select stays blocking, with the reason (the C
    and the Fortran writers alike)."""
    if options.select is None:
        return
    for s in sites:
        last = unit.text.count(b"\n", 0, max(s.call.end - 1, s.call.start)) + 1
        s.profile = options.select.decide(unit.path, s.coll.name, s.call.line, last)
        if s.block is not None and not s.profile["selected"]:
            s.block, s.reason = None, s.profile["reason"]


def transform_file(path: str | Path, options: Options | None = None) -> FileResult:
    options = options or Options()
    # --- language dispatch: Fortran has its own front end and writer (fortran_*.py) ---
    from .fortran_parse import is_fortran
    if is_fortran(path):
        from .fortran_write import transform_fortran_file
        return transform_fortran_file(path, options)
    # --- end of language dispatch ---
    t0, cpu0 = time.perf_counter(), time.process_time()
    unit = parse(path, options.flavour, options.extra_args, options.compile_commands)
    target = detect_target(options.flavour, options.mpi_version)
    output, sites = transform_unit(unit, options, target)
    return FileResult(Path(path), unit.text, output, sites, time.perf_counter() - t0, target,
                      time.process_time() - cpu0)


def transform_unit(unit: Unit, options: Options, target: Target) -> tuple[bytes, list]:
    ea = EffectAnalysis(unit, points_to(unit))
    placer = Placer(ea)
    edits, reports, helper_at = [], [], None
    needs_ext_header = False
    functions = sorted(unit.functions.values(), key=lambda f: f.node.start)
    own_sites = {}
    for fn in functions:
        own_sites[fn.key] = find_sites(unit, fn.key, ea)
        select_by_profile(unit, own_sites[fn.key], options)
    # waits that leave small helpers (across.py): the helpers split, the calls of them
    across = Across(unit, ea, own_sites, lambda h: split_write.why_not_written(h, unit.text),
                    split_write.why_not_call)
    split_calls = {fn.key: across.calls_in(fn) for fn in functions}
    split_names, site_reports = {}, {}
    for fn in functions:
        emitter = _FunctionEmitter(unit, fn, ea, options, target, split_names)
        sites = own_sites[fn.key] + split_calls[fn.key]
        todo = [s for s in sites if s.block is not None]
        if todo:
            emitter.decide(todo, placer)
            todo = [s for s in todo if s.action != "unchanged"]
        if todo:
            edits += emitter.emit(todo)
            if any(s.rank_guard for s in todo) and helper_at is None:
                # at file scope (C++: before the namespace or class holding the function)
                helper_at = rewrite.line_start(unit.text, fn.top_start)
            needs_ext_header |= any(s.action == "persistent" and not s.coll.p2p for s in todo)
        in_function = []
        for s in sites:
            in_function.append(emitter.report(s))
            site_reports[id(s)] = in_function[-1]
        if options.mode == "persistent":       # Isend/Irecv already in loops (persistent_p2p.py)
            more, entries = persistent_p2p.convert(unit, fn, ea, options.select is not None)
            edits += more
            if entries:
                in_function = sorted(in_function + entries, key=lambda r: (r["line"], r["column"]))
        reports += in_function
    for h in across.helpers.values():
        moved = [c for c in h.calls if c.action != "unchanged"]
        if moved:                           # the split goes right after the helper's definition
            edits.append(rewrite.Edit(h.fn.body.end, h.fn.body.end,
                                      split_write.helper_code(h, split_names[h.fn.key], ea), 50))
    _report_helpers(site_reports, across)
    reports += [_untransformed_site(unit, name, n, why) for name, node, why in unit.untransformed
                for n in node.walk() if n.kind == "CALL_EXPR" and n.callee in REWRITABLE]
    text = unit.text
    if helper_at is not None and b"mpiopt_is_root(MPI_Comm" not in text:
        edits.append(rewrite.Edit(helper_at, helper_at, IS_ROOT_HELPER, -10))
    if needs_ext_header and target.header and target.header.encode() not in text:
        m = re.search(rb"^[ \t]*#[ \t]*include[ \t]*[<\"]mpi\.h[>\"][^\n]*\n", text, re.M)
        at = m.end() if m else 0
        edits.append(rewrite.Edit(at, at, f"#include <{target.header}>\n", -20))
    return rewrite.apply(text, edits), reports


def _report_helpers(site_reports: dict, across: Across):
    """A helper's own site says whether its wait moved into its callers, or why not."""
    for h in across.helpers.values():
        r = site_reports.get(id(h.site)) if h.site is not None else None
        if r is None:
            continue
        moved = [c for c in h.calls if c.action != "unchanged"]
        uncalled = "not called in this file (calls from other files are not followed: each " \
                   "file is transformed on its own)"
        if h.why_not:
            why = h.why_not + ("" if h.calls else f"; and {uncalled}")
        else:
            why = "" if moved else "no call of it can take the wait" if h.calls else uncalled
        r["across"] = {"split": bool(moved), "reason": why,
                       "calls": [{"line": c.call.line, "function": c.function,
                                  "moved": c.action != "unchanged"} for c in h.calls]}


class _FunctionEmitter:
    def __init__(self, unit: Unit, fn: Function, ea: EffectAnalysis, options: Options, target: Target,
                 split_names: dict | None = None):
        self.unit, self.fn, self.ea, self.options, self.target = unit, fn, ea, options, target
        self.split_names = {} if split_names is None else split_names   # helper key -> SplitNames
        self.states = {}                                                # id(SplitSite) -> state variable
        body_text = unit.text[fn.body.start:fn.body.end]
        self.reqs = _fresh("mpiopt_reqs", body_text)
        self.stats = _fresh("mpiopt_stats", body_text)
        self.flags = _fresh("mpiopt_flags", body_text)
        self.root = _fresh("mpiopt_root", body_text)
        self.state = _fresh("mpiopt_state", body_text)

    # --- analysis ----------------------------------------------------------------------------
    def decide(self, sites: list[Site], placer: Placer):
        for s in sites:
            s.action = "nonblocking"
            if isinstance(s, SplitSite):
                if self.options.mode == "persistent":
                    s.reason = "nonblocking, not persistent: the wait left its helper function"
            elif self.options.mode == "persistent":
                why = why_not_persistent(s, self.ea)
                if s.coll.p2p:           # MPI_Send_init & co. are MPI-1: no target to ask
                    pass
                elif not why and not self.target.has_persistent:
                    why = f"MPI-{self.target.version} target has no persistent collectives"
                if not why and s.coll.name in self.target.broken:
                    why = f"{self.target.library}'s persistent {s.coll.name} computes wrong results"
                if why:
                    s.reason = f"nonblocking, not persistent: {why}"
                else:
                    s.action, s.loop = "persistent", enclosing_loop(s)
        self.nslots = assign_slots(self.fn.body, sites)
        for s in sites:
            placer.place(s)
            if isinstance(s, SplitSite) and all(w.steps == 0 for w in s.waits):
                # nothing to overlap: splitting would only add code
                w = s.waits[0]
                s.action, s.waits, s.block = "unchanged", [], None
                s.reason = f"left as it is: the caller needs what {s.helper.fn.name} leaves at once " \
                           f"({w.blocked_by}, line {w.blocked_line})"

    # --- text --------------------------------------------------------------------------------
    def req(self, k: int) -> str:
        return f"&{self.reqs}[{k}]"

    def emit(self, sites: list[Site]) -> list[rewrite.Edit]:
        src, edits = self.unit.text, []
        uses_flags = any(w.flag for s in sites for w in s.waits)
        uses_root = any(s.rank_guard for s in sites)
        splits = [s for s in sites if isinstance(s, SplitSite)]
        for s in splits:
            h = s.helper
            if h.fn.key not in self.split_names:
                self.split_names[h.fn.key] = split_write.SplitNames(h, lambda n: _fresh(n, src))
            self.states[id(s)] = f"{self.state}_{len(self.states)}"
        for s in sites:
            edits += self._emit_call(s)
            if s.coll.half == "send":      # MPI_Sendrecv: one text for its two halves
                recv = next(r for r in sites if r.call is s.call and r.coll.half == "recv")
                indent = rewrite.indentation(self.unit.text, s.call.start)
                between = ";\n" + indent if indent is not None else "; "
                edits.append(rewrite.Edit(s.call.start, s.call.end,
                                          f"{self._posting(recv)}{between}{self._posting(s)}"))
        edits += self._emit_waits([w for s in sites for w in s.waits])
        # declarations first in the body: C99 allows them anywhere, this keeps them in one place
        body = self.fn.body
        indent = (rewrite.indentation(src, body.children[0].start) if body.children else None) or "    "
        decl = [] if len(splits) == len(sites) else \
            [f"MPI_Request {self.reqs}[{self.nslots}];", f"MPI_Status {self.stats}[{self.nslots}];"]
        decl += [f"struct {self.split_names[s.helper.fn.key].struct} {self.states[id(s)]};" for s in splits]
        if uses_flags:
            decl.append(f"int {self.flags}[{self.nslots}] = {{0}};")
        if uses_root:
            decl.append(f"int {self.root}[{self.nslots}];")
        edits.append(rewrite.Edit(body.start + 1, body.start + 1,
                                  "".join("\n" + indent + d for d in decl), -5))
        return edits

    def _emit_call(self, s: Site) -> list[rewrite.Edit]:
        src, call, k = self.unit.text, s.call, s.slot
        edits = []
        if isinstance(s, SplitSite):
            edits += split_write.call_edits(s, self.split_names[s.helper.fn.key], self.states[id(s)],
                                            self.ea, rewrite.Edit)
            if any(w.flag for w in s.waits):
                semi = _after_semicolon(src, call.end)
                edits.append(rewrite.Edit(semi, semi, f" {self.flags}[{k}] = 1;"))
            return edits
        args = [self.ea.text(a) for a in call_args(call)]
        if s.rank_guard:
            comm, root = args[s.coll.comm], args[s.coll.root]
            edits.append(rewrite.insert_before_statement(
                src, call.start, f"{self.root}[{k}] = mpiopt_is_root({comm}, {root});", order=10))
        if s.action == "persistent":
            loop = s.loop
            # a persistent point-to-point call takes no info; a receive's status goes to the wait
            own = s.coll.own_args(args) if s.coll.p2p else args + ["MPI_INFO_NULL"]
            init = f"{s.coll.persistent(self.target.prefix)}({', '.join(own + [self.req(k)])});"
            edits.append(rewrite.insert_before_statement(src, loop.start, init, order=5))
            if not s.coll.half:
                edits.append(rewrite.Edit(call.start, call.end, f"MPI_Start({self.req(k)})"))
            end = _after_semicolon(src, loop.end) if loop.kind == "DO_STMT" else loop.end
            indent = rewrite.indentation(src, loop.start) or ""
            edits.append(rewrite.insert_after(src, end, f"MPI_Request_free({self.req(k)});", indent,
                                              order=k))
        elif s.coll.half:
            pass                                  # emit() writes both halves' calls
        else:
            name_end = call.start + len(call.callee)
            edits.append(rewrite.Edit(call.start, name_end, s.coll.nonblocking))
            if s.coll.status is not None:        # MPI_Recv's status goes to the wait
                status = call_args(call)[s.coll.status]
                edits.append(rewrite.Edit(status.start, status.end, self.req(k)))
            else:
                close = call.end - 1
                assert src[close:close + 1] == b")", "call does not end with ')'"
                edits.append(rewrite.Edit(close, close, f", {self.req(k)}"))
        if any(w.flag for w in s.waits):
            semi = _after_semicolon(src, call.end)
            edits.append(rewrite.Edit(semi, semi, f" {self.flags}[{k}] = 1;"))
        return edits

    def _posting(self, s: Site) -> str:
        """The call that posts one half of an MPI_Sendrecv (no `;`)."""
        if s.action == "persistent":
            return f"MPI_Start({self.req(s.slot)})"
        args = [" ".join(self.ea.text(a).split()) for a in call_args(s.call)]
        return f"{s.coll.nonblocking}({', '.join(s.coll.own_args(args) + [self.req(s.slot)])})"

    def _status(self, site: Site) -> str:
        """The status a wait fills in: a receive's own status argument, else the site's slot."""
        if site.coll.status is not None:
            return " ".join(self.ea.text(call_args(site.call)[site.coll.status]).split())
        return f"&{self.stats}[{site.slot}]"

    def _wait_text(self, w: Wait) -> str:
        k = w.site.slot
        if isinstance(w.site, SplitSite):
            call = split_write.finish_text(w.site, self.split_names[w.site.helper.fn.key],
                                           self.states[id(w.site)], self.ea)
        else:
            call = f"MPI_Wait({self.req(k)}, {self._status(w.site)});"
        cond = []
        if w.flag:
            cond.append(f"{self.flags}[{k}]")
        if w.guard:
            cond.append(("" if w.guard == "root" else "!") + f"{self.root}[{k}]")
        if not cond:
            return call
        reset = f" {self.flags}[{k}] = 0;" if w.flag else ""
        return f"if ({' && '.join(cond)}) {{ {call}{reset} }}"

    def _emit_waits(self, waits: list[Wait]) -> list[rewrite.Edit]:
        src, edits, groups = self.unit.text, [], {}
        for w in waits:
            groups.setdefault((w.block.start, w.index), []).append(w)
        for (_, index), group in groups.items():
            group.sort(key=lambda w: w.site.slot)
            plain = [w for w in group if not w.flag and not w.guard and w.site.coll.status is None
                     and not isinstance(w.site, SplitSite)]
            slots = sorted({w.site.slot for w in plain})
            lines = []
            if len(slots) > 1 and slots[-1] - slots[0] + 1 == len(slots):
                a = slots[0]
                lines.append(f"MPI_Waitall({len(slots)}, {self.req(a)}, &{self.stats}[{a}]);")
            else:
                lines += [self._wait_text(w) for w in plain]
            for w in group:
                if not any(w is p for p in plain):
                    t = self._wait_text(w)
                    if t not in lines:
                        lines.append(t)
            text = "\n".join(lines)
            block = group[0].block
            if any(w.after_previous for w in group):     # before a conditional directive
                prev = block.children[index - 1]
                edits.append(rewrite.insert_after(src, rewrite.after_semicolon(src, prev.end), text,
                                                  rewrite.indentation(src, prev.start) or ""))
            elif index < len(block.children):
                target, indent = block.children[index], None
                if target.kind in ("CASE_STMT", "DEFAULT_STMT", "LABEL_STMT") and index > 0:
                    prev = block.children[index - 1]      # indent like the statements of the case
                    while prev.kind in ("CASE_STMT", "DEFAULT_STMT", "LABEL_STMT") and prev.children:
                        prev = prev.children[-1]
                    indent = rewrite.indentation(src, prev.start)
                edits.append(rewrite.insert_before_statement(src, target.start, text, 0, indent))
            else:
                brace = block.end - 1
                last = block.children[-1] if block.children else None
                hint = rewrite.indentation(src, last.start) if last is not None else None
                if hint is None:
                    hint = (rewrite.indentation(src, brace) or "") + "    "
                edits.append(rewrite.insert_before_brace(src, brace, text, hint, order=100))
        return edits

    # --- report ------------------------------------------------------------------------------
    def report(self, s: Site) -> dict:
        col = s.call.start - rewrite.line_start(self.unit.text, s.call.start) + 1
        out = {"file": str(self.unit.path), "line": s.call.line, "column": col,
               "function": self.fn.name, "call": s.coll.name, "action": s.action,
               "reason": s.reason, "request": s.slot if s.action != "unchanged" else None,
               "waits": []}
        if s.profile is not None:
            out["profile"] = s.profile
        if isinstance(s, SplitSite):        # a call of a helper: the helper's collective's wait
            h = s.helper
            out["across"] = {"helper": h.fn.name, "helper_line": h.site.call.line,
                             "helper_call": s.call.callee}
            out["request"] = None
        if s.coll.half:
            out["half"] = s.coll.half
        for w in s.waits:
            at_end = w.index >= len(w.block.children)
            line = (self.unit.text.count(b"\n", 0, w.block.end - 1) + 1) if at_end \
                else w.block.children[w.index].line
            if w.after_previous:        # the line after the statement it follows
                prev = w.block.children[w.index - 1]
                line = self.unit.text.count(b"\n", 0, rewrite.after_semicolon(self.unit.text, prev.end)) + 2
            out["waits"].append({"line": line, "guard": w.guard or "all", "flag": w.flag,
                                 "moved_past": w.steps, "blocked_by": w.blocked_by,
                                 "blocked_line": w.blocked_line})
        if s.action != "unchanged" and not s.reason:
            moved = max((w["moved_past"] for w in out["waits"]), default=0)
            out["reason"] = (f"wait moved past {moved} statement(s)" if moved
                             else "no independent work: wait right after the call")
            if isinstance(s, SplitSite):
                out["reason"] = f"{s.coll.name} of {s.helper.fn.name} (line {s.helper.site.call.line}) " \
                    f"split: its wait, with the helper's statements after it, left the helper; " + out["reason"]
        return out


def _untransformed_site(unit: Unit, fn_name: str, call, why: str) -> dict:
    col = call.start - rewrite.line_start(unit.text, call.start) + 1
    return {"file": str(unit.path), "line": call.line, "column": col, "function": fn_name,
            "call": call.callee, "action": "unchanged", "reason": f"left blocking: {why}",
            "request": None, "waits": []}


def _fresh(name: str, text: bytes) -> str:
    while re.search(rb"\b" + name.encode() + rb"\b", text):
        name += "_"
    return name


_after_semicolon = rewrite.after_semicolon
