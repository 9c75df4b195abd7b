"""Where each collective's wait goes, and which request slot it uses.

A wait moves forward from its call through the statements of the block until one of them
conflicts with the pending collective (effects.py decides), a jump or label stops it, or the
block ends. C++: code that may throw stops it too, unless the function is noexcept without a
try block (effects.py), and so does the end of a block declaring a class object (its destructor
runs there). At the end of an `if` branch (or a nested `{}` block) it may continue after the `if`
in the enclosing block, guarded by a flag set at the start, unless a buffer is declared in the
block being left. It never leaves a loop body or the function.

Rooted collectives whose buffers matter at the root only (Reduce, Gather, Scatter, Bcast) get a
position for the root and one for the other ranks; when they differ both waits are emitted, the
earlier guarded by the rank test (the paper's figures 7-8)."""
from __future__ import annotations

from dataclasses import dataclass, field

import re

from .calls import LEFT_BLOCKING_P2P, REWRITABLE, SENDRECV_HALVES, Collective
from .effects import EffectAnalysis, Effects, call_args, strip
from .parse import FUNCTION_KIND_NAMES, Node, Unit, own_nodes

EXPR_PARENTS_RESULT_USED = "its result is used in an expression"
# A wait never moves past a conditional directive: the output is compiled in every configuration,
# and past an #endif that closes the call's branch it would wait, in the others, for a request
# never started (C and C++; Fortran's preprocessed text has no directives left)
CONDITIONAL_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b", re.M)
_LABELS = {"CASE_STMT", "DEFAULT_STMT", "LABEL_STMT"}


@dataclass
class Wait:
    site: "Site"
    block: Node          # COMPOUND_STMT the wait is inserted in
    index: int           # before block.children[index]; len(children) = before the closing brace
    guard: str           # "" (every rank), "root" or "nonroot"
    flag: bool           # in a different scope than the start: guarded by the site's flag
    blocked_by: str      # why it cannot go later
    blocked_line: int
    steps: int           # statements moved past (0: right after the call)
    after_previous: bool = False    # goes right after children[index - 1]: a preprocessor
                                    # conditional stands between it and children[index]


@dataclass
class Site:
    call: Node
    function: str
    coll: Collective
    block: Node | None = None
    index: int = -1
    slot: int = -1
    action: str = "unchanged"           # "nonblocking", "persistent" or "unchanged"
    reason: str = ""
    accesses: list = field(default_factory=list)
    in_place: bool = False
    waits: list = field(default_factory=list)
    loop: Node | None = None            # persistent mode: the loop the init is hoisted out of
    rank_guard: bool = False
    profile: dict | None = None         # --profile: costs.Selector.decide's word on this call
    may_unwind: bool = False            # C++: an exception could leave the function while pending


def find_sites(unit: Unit, fn_key: str, ea: EffectAnalysis) -> list[Site]:
    """Every call of a blocking collective in a function, with why it cannot be transformed."""
    fn = unit.functions[fn_key]
    may_unwind = unit.lang == "c++" and not (fn.is_noexcept and not fn.has_try)
    sites = []
    for n in own_nodes(fn.body):
        if n.kind == "CALL_EXPR" and n.callee in LEFT_BLOCKING_P2P:
            sites.append(Site(call=n, function=fn.name, coll=Collective(n.callee, (), p2p=True),
                              reason=f"left blocking: {LEFT_BLOCKING_P2P[n.callee]}"))
            continue
        if n.kind != "CALL_EXPR" or n.callee not in REWRITABLE:
            continue
        site = Site(call=n, function=fn.name, coll=REWRITABLE[n.callee], may_unwind=may_unwind)
        sites.append(site)
        parent, stmt = n.parent, n
        # `case 1: MPI_Bcast(…);`: the labelled statement stands for the call in its block
        while parent is not None and parent.kind in _LABELS and parent.children[-1] is stmt:
            parent, stmt = parent.parent, parent
        text = ea.text(n)
        if parent is None or parent.kind != "COMPOUND_STMT":
            if parent is not None and not parent.kind.endswith("_STMT"):
                site.reason = f"left blocking: {EXPR_PARENTS_RESULT_USED}"
            else:
                site.reason = "left blocking: not a statement of a { } block (no room for a wait)"
            continue
        if not text.startswith(n.callee) or not text.rstrip().endswith(")"):
            site.reason = "left blocking: written through a macro"
            continue
        args = call_args(n)
        if len(args) != len(site.coll.roles):
            site.reason = "left blocking: unexpected number of arguments"
            continue
        if any("MPI_BOTTOM" in ea.text(a) for a in args):
            site.reason = "left blocking: MPI_BOTTOM (absolute addresses) hides the buffers"
            continue
        why = _why_not_point_to_point(site, args, ea) if site.coll.p2p else ""
        if why:
            site.reason = f"left blocking: {why}"
            continue
        site.block, site.index = parent, parent.children.index(stmt)
        site.in_place = any(ea.is_in_place(a) for a in args)
        site.accesses = ea.buffer_accesses(n)
        unknown = [a for loc, _w, a, _r in site.accesses if loc is None]
        if unknown:
            site.reason = f"left blocking: cannot tell what `{ea.text(unknown[0])}` points to"
            site.block = None
            continue
        if site.coll.name == "MPI_Sendrecv":
            sites[-1:] = [_half(site, half, ea) for half in SENDRECV_HALVES]
    return sites


def _half(site: Site, coll: Collective, ea: EffectAnalysis) -> Site:
    """One half of an MPI_Sendrecv as a site of its own: its own buffer, request and wait."""
    half = Site(call=site.call, function=site.function, coll=coll, block=site.block, index=site.index,
                may_unwind=site.may_unwind)
    half.accesses = ea.buffer_accesses(site.call, coll)
    return half


_STATUS_AT_WAIT = re.compile(r"^(MPI_STATUS_IGNORE|&\s*[A-Za-z_]\w*)$")


def _why_not_point_to_point(site: Site, args: list, ea: EffectAnalysis) -> str:
    """Receives from any source or with any tag stay blocking: with several receives pending, a
    wildcard one posted first could take a message a later, specific one takes in the original
    order of completion. The status argument is evaluated again at the wait, so it must be
    MPI_STATUS_IGNORE or the address of a variable."""
    where = {"MPI_Recv": 3, "MPI_Sendrecv": 8}.get(site.coll.name)     # source; the tag follows
    if where is not None:
        # Fortran: any case
        source, tag = ea.text(args[where]).upper(), ea.text(args[where + 1]).upper()
        for wildcard, text in (("MPI_ANY_SOURCE", source), ("MPI_ANY_TAG", tag)):
            if wildcard in text:
                return f"receives with {wildcard}: the order in which messages match is kept as it is"
        status = " ".join(ea.text(args[site.coll.status]).split())
        if not ea.status_at_wait(args[site.coll.status], _STATUS_AT_WAIT.match(status) is not None):
            return f"the status argument `{status}` is not MPI_STATUS_IGNORE or `&variable`"
    return ""


def assign_slots(body: Node, sites: list[Site]) -> int:
    """Request slots: in sequence each call gets the next one; the branches of an `if` start at the
    same slot (mutually exclusive paths share requests); the count is the maximum over branches."""
    by_call = {}
    for s in sites:
        if s.block is not None:      # the two halves of an MPI_Sendrecv: two slots, in a row
            by_call.setdefault(id(s.call), []).append(s)

    def visit(n: Node, base: int) -> int:
        for s in by_call.get(id(n), ()):
            s.slot = base
            base += 1
        if id(n) in by_call:
            return base
        if n.kind == "IF_STMT":
            cond, *branches = n.children
            base = visit(cond, base)
            return max([visit(b, base) for b in branches] + [base])
        for c in n.children:
            base = visit(c, base)
        return base

    return visit(body, 0)


class Placer:
    def __init__(self, ea: EffectAnalysis):
        self.ea = ea
        self.pts = ea.pts

    def conflict(self, site: Site, eff: Effects, cls: str) -> tuple | None:
        """(why, node) if statement effects `eff` may not run while `site` is pending, for ranks
        of class `cls` ("all", "root", "nonroot")."""
        if eff.stop:
            return eff.stop
        if eff.throws and site.may_unwind:
            return (f"{eff.throws[0]}: an exception would leave the request pending", eff.throws[1])
        if site.coll.name == "MPI_Barrier":
            if eff.io is not None:
                return (f"has effects outside memory ({self.ea.text(strip(eff.io))[:40]}) the barrier "
                        "may be ordering", eff.io)
            if eff.unknown:
                return (f"calls {eff.unknown[0][0]}, whose body is not known", eff.unknown[0][2])
        for loc, written_any, arg, role in site.accesses:
            base, _, only = role.partition("@")
            if only == "root" and cls == "nonroot":
                continue
            written = written_any
            what = self._buffer_name(base, written)
            arg_text = self.ea.text(arg)
            for w, node in eff.writes.items():
                if self.pts.same(w, loc):
                    return (self._access("writes", node, what, arg_text), node)
            if written:
                for r, node in eff.reads.items():
                    if self.pts.same(r, loc):
                        return (self._access("reads", node, what, arg_text), node)
            for name, args, node in eff.unknown:
                if any(a is not None and self.pts.reaches(a, loc) for a in args):
                    return (f"passes an alias of `{arg_text}` to {name}, whose body is not known", node)
                if self.ea.may_reach_from_globals(loc):
                    return (f"calls {name} (body not known), which may reach `{arg_text}` through a global",
                            node)
        return None

    def _access(self, verb: str, node: Node, what: str, arg_text: str) -> str:
        if node.kind == "CALL_EXPR":
            return f"calls {node.callee or 'a function pointer'} (`{self._short(node)}`), which " \
                   f"{verb} the {what} `{arg_text}` or an alias of it"
        return f"{verb} `{self._short(node)}`, which may alias the {what} `{arg_text}`"

    @staticmethod
    def _buffer_name(base: str, written: bool) -> str:
        if base == "array":
            return "count/displacement/type array"
        if base == "tail":           # across.py: what a split helper touches after its wait
            return "result the helper writes after its wait" if written else \
                "memory the helper reads after its wait"
        return "receive buffer" if written else "send buffer"

    def _short(self, node: Node) -> str:
        text = " ".join(self.ea.text(node).split())
        return text if len(text) <= 50 else text[:47] + "..."

    def _directive_between(self, start: int, end: int) -> tuple[str, int] | None:
        """The first conditional directive in the source between two offsets: (its text, line)."""
        if getattr(self.ea.unit, "lang", "") not in ("c", "c++"):
            return None
        text = self.ea.unit.text
        m = CONDITIONAL_DIRECTIVE.search(text, start, end)
        if m is None:
            return None
        return f"#{m.group(1).decode()}", text.count(b"\n", 0, m.start()) + 1

    def _stop_at_directive(self, site, block, j, flag, steps, start, end) -> Wait | None:
        d = self._directive_between(start, end)
        if d is None:
            return None
        return Wait(site, block, j, "", flag, f"a preprocessor conditional (`{d[0]}`): the other "
                    "configurations must see the wait too", d[1], steps, after_previous=True)

    def position(self, site: Site, cls: str) -> Wait:
        block, index, flag, steps = site.block, site.index, False, 0
        while True:
            stmts = block.children
            for j in range(index + 1, len(stmts)):
                stop = self._stop_at_directive(site, block, j, flag, steps, stmts[j - 1].end,
                                               stmts[j].start)
                if stop:
                    return stop
                hit = self.conflict(site, self.ea.of(stmts[j]), cls)
                if hit:
                    why, node = hit
                    return Wait(site, block, j, "", flag, why, node.line, steps)
                steps += 1
            stop = self._stop_at_directive(site, block, len(stmts), flag, steps, stmts[-1].end,
                                           block.end - 1)
            if stop:
                return stop
            parent = block.parent
            if parent is None or parent.kind in FUNCTION_KIND_NAMES:
                return Wait(site, block, len(stmts), "", flag, "end of the function",
                            self._end_line(block), steps)
            declared = self._buffer_declared_in(site, block)
            if declared:
                return Wait(site, block, len(stmts), "", flag, f"end of the scope of `{declared}`",
                            self._end_line(block), steps)
            obj = self._object_declared_in(block) if self.ea.cxx else ""
            if obj:
                return Wait(site, block, len(stmts), "", flag,
                            f"end of the scope of `{obj}` (its destructor runs there)",
                            self._end_line(block), steps)
            if parent.kind == "COMPOUND_STMT":          # a nested { } block: always entered
                outer, child = parent, block
            elif parent.kind == "IF_STMT" and block is not parent.children[0]:
                outer, child = parent, block
                while outer is not None and outer.kind == "IF_STMT":   # leave if / else-if chains
                    outer, child = outer.parent, outer
                flag = True
            else:
                outer = None
            if outer is None or outer.kind != "COMPOUND_STMT":
                where = {"FOR_STMT": "loop body", "WHILE_STMT": "loop body", "DO_STMT": "loop body",
                         "CXX_FOR_RANGE_STMT": "loop body", "SWITCH_STMT": "switch body",
                         "CXX_TRY_STMT": "try block", "CXX_CATCH_STMT": "catch block"
                         }.get(parent.kind, "block")
                return Wait(site, block, len(stmts), "", flag, f"end of the {where}",
                            self._end_line(block), steps)
            block, index = outer, outer.children.index(child)

    def _end_line(self, block: Node) -> int:
        """Line of the block's closing brace."""
        return self.ea.unit.text.count(b"\n", 0, max(block.end - 1, 0)) + 1

    @staticmethod
    def _object_declared_in(block: Node) -> str:
        """A class-typed variable declared in the block (C++: a destructor runs at its end)."""
        for stmt in block.children:
            if stmt.kind == "DECL_STMT":
                for d in stmt.children:
                    if d.kind == "VAR_DECL" and d.shape == "record" and not d.is_global:
                        return d.spelling
        return ""

    def _buffer_declared_in(self, site: Site, block: Node) -> str:
        for stmt in block.children:
            if stmt.kind != "DECL_STMT":
                continue
            for d in stmt.children:
                if d.kind == "VAR_DECL" and not d.is_global:
                    loc = self.pts.var(d.ref)
                    if any(self.pts.same(loc, a[0]) for a in site.accesses):
                        return d.spelling
        return ""

    def place(self, site: Site):
        # Bcast's buffer is read at the root and written elsewhere; splitting its wait by rank
        # rarely helps, so only buffers significant at the root alone get rank-guarded waits.
        rooted = site.coll.root is not None and any("@root" in r for _l, _w, _a, r in site.accesses)
        if not rooted:
            site.waits = [self.position(site, "all")]
            return
        root, other = self.position(site, "root"), self.position(site, "nonroot")
        if (root.block, root.index) == (other.block, other.index):
            site.waits = [root]
            return
        args = call_args(site.call)
        if not (side_effect_free(args[site.coll.root]) and side_effect_free(args[site.coll.comm])):
            site.waits = [min(root, other, key=lambda w: w.steps)]
            return
        site.rank_guard = True
        first, second = sorted([root, other], key=lambda w: w.steps)
        first.guard = "root" if first is root else "nonroot"
        if second.flag:          # the first wait clears the flag: the second needs no rank test
            first.flag, second.guard = True, ""
        else:
            second.guard = "root" if second is root else "nonroot"
        site.waits = [first, second]




def side_effect_free(e: Node) -> bool:
    for n in e.walk():
        if n.kind == "CALL_EXPR" or n.kind == "COMPOUND_ASSIGNMENT_OPERATOR":
            return False
        if n.kind in ("BINARY_OPERATOR", "UNARY_OPERATOR") and n.op in ("=", "++", "--"):
            return False
    return True
