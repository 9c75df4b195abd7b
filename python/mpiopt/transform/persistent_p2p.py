"""--mode persistent for the nonblocking point-to-point calls already in loops (Petal's figure 16):
an `MPI_Isend`/`MPI_Issend`/`MPI_Irecv` becomes `MPI_Send_init`/`MPI_Ssend_init`/`MPI_Recv_init`
before the loop, `MPI_Start` where it was, `MPI_Request_free` after the loop; the program's own
waits stay where they are.

Why each condition (beyond persistent.py's: a statement of the loop body, a loop that no return,
goto or throw leaves, loop-invariant arguments):
  - the request is a local variable or a constant element of a local array (`&r`, `&reqs[2]`,
    `reqs + 2`), so that the init, the start and the free name the same handle;
  - every use of that variable in the function is the request of a nonblocking send or receive
    or an argument of MPI_Wait/MPI_Waitall: a completed persistent request stays allocated
    (inactive) where the original's became MPI_REQUEST_NULL, which MPI_Test, a comparison with
    MPI_REQUEST_NULL or another function could tell apart, and another call that posts into the
    same handle would leave MPI_Start a null request;
  - the element is posted by this call alone in the function;
  - an MPI_Wait on it or an MPI_Waitall whose constant count covers it is a later statement of
    the same loop body, and no break or continue of the loop comes between (one before the call
    skips the start, one after the wait finds the request inactive): every iteration ends
    with the request inactive, so the next MPI_Start is legal and the free after the loop frees a
    request nobody waits for any more.
Starts are one MPI_Start each, in the program's order: MPI_Startall may start its requests in any
order, which could change the matching order of two messages between one pair of ranks."""
from __future__ import annotations

from . import rewrite
from .calls import Collective
from .effects import EffectAnalysis, call_args, strip
from .parse import Function, Node, Unit, own_nodes
from .persistent import LOOPS, enclosing_loop, why_not_persistent
from .placement import Site

INIT = {"MPI_Isend": "MPI_Send_init", "MPI_Issend": "MPI_Ssend_init", "MPI_Irecv": "MPI_Recv_init"}
# as sites for persistent.py's loop-invariance test: the buffer, then six arguments passed by value
_AS_SITE = {name: Collective(name, ("recv" if name == "MPI_Irecv" else "send",) + ("value",) * 6, p2p=True)
            for name in INIT}
WAITS = {"MPI_Wait", "MPI_Waitall"}
REQUEST = 6                       # index of the request argument of the three calls


def convert(unit: Unit, fn: Function, ea: EffectAnalysis, profile: bool = False) -> tuple[list, list]:
    """(edits, report entries) for the nonblocking point-to-point calls in loops of `fn`. With a
    profile (--profile) they are reported and left alone: what they cost shows in their waits, not
    in the calls a profile would select."""
    src, edits, reports = unit.text, [], []
    posts = [n for n in own_nodes(fn.body) if n.kind == "CALL_EXPR" and n.callee in INIT]
    frees = 0
    for call in posts:
        if not _in_a_loop(call, fn):
            continue
        why, loop, wait = ("--profile selects blocking calls only", None, None) if profile \
            else _why_not(call, fn, ea)
        entry = _entry(unit, fn, call)
        if why:
            entry["reason"] = f"left as it is, not persistent: {why}"
            reports.append(entry)
            continue
        args = [" ".join(ea.text(a).split()) for a in call_args(call)]
        req = args[REQUEST]
        init = f"{INIT[call.callee]}({', '.join(args)});"
        edits.append(rewrite.insert_before_statement(src, loop.start, init, order=6))
        edits.append(rewrite.Edit(call.start, call.end, f"MPI_Start({req})"))
        end = rewrite.after_semicolon(src, loop.end) if loop.kind == "DO_STMT" else loop.end
        indent = rewrite.indentation(src, loop.start) or ""
        free = f"MPI_Request_free({req});"
        edits.append(rewrite.insert_after(src, end, free, indent, order=1000 + frees))
        frees += 1
        entry["action"] = "persistent"
        entry["reason"] = (f"existing {call.callee} made persistent: {INIT[call.callee]} before the loop "
                           f"(line {loop.line}), MPI_Start here, its wait stays at line {wait.line}, "
                           f"MPI_Request_free after the loop")
        reports.append(entry)
    return edits, reports


def _entry(unit: Unit, fn: Function, call: Node) -> dict:
    col = call.start - rewrite.line_start(unit.text, call.start) + 1
    return {"file": str(unit.path), "line": call.line, "column": col, "function": fn.name,
            "call": call.callee, "action": "unchanged", "reason": "", "request": None, "waits": []}


def _in_a_loop(n: Node, fn: Function) -> bool:
    while n is not None and n is not fn.body:
        if n.kind in LOOPS:
            return True
        n = n.parent
    return False


def _why_not(call: Node, fn: Function, ea: EffectAnalysis) -> tuple:
    """('' , loop, covering wait) if the call can be made persistent, else (reason, None, None)."""
    block = call.parent
    if block is None or block.kind != "COMPOUND_STMT":
        return "its result is used, or it is not a statement of a { } block", None, None
    args = call_args(call)
    if len(args) != REQUEST + 1:
        return "unexpected number of arguments", None, None
    site = Site(call=call, function=fn.name, coll=_AS_SITE[call.callee], block=block,
                index=block.children.index(call))
    why = why_not_persistent(site, ea)
    if why:
        return why, None, None
    loop = enclosing_loop(site)
    element = request_element(args[REQUEST], ea)
    if element is None:
        return (f"the request `{ea.text(args[REQUEST])}` is not a variable or a constant element of an "
                "array"), None, None
    var = element[0]
    if not any(n.kind == "VAR_DECL" and n.ref == var and not n.is_global for n in fn.body.walk()):
        return f"the request `{ea.text(args[REQUEST])}` is not a local variable of the function", None, None
    for n in fn.body.walk():
        if n.kind == "DECL_REF_EXPR" and n.ref == var:
            user = _calling(n, fn)
            if user is None or user.callee not in WAITS and user.callee not in INIT:
                what = f"`{' '.join(ea.text(user).split())[:60]}`" if user is not None else "an expression"
                return (f"the request variable is used by {what} (line {n.line}), which could tell a "
                        "completed persistent request from MPI_REQUEST_NULL"), None, None
            if user.callee in INIT:
                if not any(a is n or _inside(n, a) for a in call_args(user)[REQUEST:REQUEST + 1]):
                    return f"the request variable is a buffer or value of line {n.line}", None, None
                other = request_element(call_args(user)[REQUEST], ea)
                if user is not call and (other is None or other == element):
                    return (f"line {user.line} posts into the same request: MPI_Start would find it "
                            "null"), None, None
    wait = _covering_wait(call, element, block, ea)
    if wait is None:
        return ("no MPI_Wait/MPI_Waitall (constant count) of its request later in the same loop body: "
                "the request could still be active at the next MPI_Start"), None, None
    jump = _loop_jump(block.children[block.children.index(call) + 1:block.children.index(wait)])
    if jump is not None:
        return f"the loop body has a {jump.kind.split('_')[0].lower()} (line {jump.line}) that " \
               "could skip the wait", None, None
    return "", loop, wait


def request_element(arg: Node, ea: EffectAnalysis) -> tuple | None:
    """(variable key, index or None for a scalar) for `&r`, `&reqs[2]`, `reqs + 2`, `reqs`."""
    e = strip(arg)
    if e.kind == "DECL_REF_EXPR" and e.ref_kind == "var" and e.shape == "array":
        return e.ref, 0
    if e.kind == "UNARY_OPERATOR" and e.op == "&":
        inner = strip(e.children[0])
        if inner.kind == "DECL_REF_EXPR" and inner.ref_kind == "var" and inner.shape != "array":
            return inner.ref, None
        if inner.kind == "ARRAY_SUBSCRIPT_EXPR" and len(inner.children) == 2:
            base, index = (strip(c) for c in inner.children)
            k = _constant(index, ea)
            if base.kind == "DECL_REF_EXPR" and base.shape == "array" and k is not None:
                return base.ref, k
        return None
    if e.kind == "BINARY_OPERATOR" and e.op == "+" and len(e.children) == 2:
        a, b = (strip(c) for c in e.children)
        if b.kind == "DECL_REF_EXPR":
            a, b = b, a
        k = _constant(b, ea)
        if a.kind == "DECL_REF_EXPR" and a.shape == "array" and k is not None:
            return a.ref, k
    return None


def _constant(n: Node, ea: EffectAnalysis) -> int | None:
    if n.kind != "INTEGER_LITERAL":
        return None
    try:
        return int(ea.text(n).rstrip("uUlL"), 0)
    except ValueError:
        return None


def _covering_wait(call: Node, element: tuple, block: Node, ea: EffectAnalysis) -> Node | None:
    var, k = element
    for stmt in block.children[block.children.index(call) + 1:]:
        s = strip(stmt)
        if s.kind != "CALL_EXPR" or s.callee not in WAITS:
            continue
        args = call_args(s)
        if s.callee == "MPI_Wait" and args and request_element(args[0], ea) == element:
            return s
        if s.callee == "MPI_Waitall" and len(args) == 3:
            first, count = request_element(args[1], ea), _constant(strip(args[0]), ea)
            if first is not None and count is not None and first[0] == var:
                lo = first[1] or 0
                if lo <= (k or 0) < lo + count:
                    return s
    return None


def _loop_jump(statements: list) -> Node | None:
    """A break or continue of the loop in these statements of its body (not one of a loop or
    switch inside them)."""
    def visit(n: Node, in_loop: bool, in_switch: bool):
        if n.kind == "CONTINUE_STMT" and not in_loop or n.kind == "BREAK_STMT" and not (in_loop or in_switch):
            return n
        for c in n.children:
            hit = visit(c, in_loop or c.kind in LOOPS, in_switch or c.kind == "SWITCH_STMT")
            if hit is not None:
                return hit
        return None
    for stmt in statements:
        hit = visit(stmt, stmt.kind in LOOPS, stmt.kind == "SWITCH_STMT")
        if hit is not None:
            return hit
    return None


def _calling(n: Node, fn: Function) -> Node | None:
    """The call `n` is an argument (or part of one) of, if it is directly one."""
    child, p = n, n.parent
    while p is not None and p is not fn.body:
        if p.kind == "CALL_EXPR":
            return p if any(child is a for a in call_args(p)) else None
        if p.kind.endswith("_STMT") or p.kind == "VAR_DECL":
            return None
        child, p = p, p.parent
    return None


def _inside(n: Node, outer: Node) -> bool:
    while n is not None:
        if n is outer:
            return True
        n = n.parent
    return False
