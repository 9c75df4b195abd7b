"""Waits that leave a small helper function: the C and C++ text (the analysis is across.py).

For a helper H split at its collective, added right after H's definition (H itself stays, for
the calls left as they are):

    struct mpiopt_split_H { MPI_Request mpiopt_request; <the variables both halves use>; };
    static void mpiopt_start_H(<H's parameters>, struct mpiopt_split_H *mpiopt_st)
    { <H's statements before the call> <copies into the state> MPI_I<coll>(…, &mpiopt_st->mpiopt_request); }
    static <H's type> mpiopt_finish_H(struct mpiopt_split_H *mpiopt_st)
    { MPI_Wait(&mpiopt_st->mpiopt_request, MPI_STATUS_IGNORE); <H's statements after it> return …; }

The statements are copied as the file was parsed: preprocessor conditionals between them are
resolved (only the active code is copied), `#pragma` lines before a statement are kept. A variable
both halves use is a field of the state: a reference parameter as a pointer to its referee, any
other as a copy made after the start's statements (across.py makes sure nothing points to it).
A call `[v =] H(args);` becomes `mpiopt_start_H(args, &mpiopt_state_N);` and, at the wait,
`[v =] mpiopt_finish_H(&mpiopt_state_N);`; the state is declared at the top of the caller."""
from __future__ import annotations

import re

from .across import Helper, SplitSite
from .alias import find
from .effects import EffectAnalysis, call_args


class SplitNames:
    def __init__(self, h: Helper, fresh):
        base = h.fn.node.spelling or "helper"
        self.struct = fresh(f"mpiopt_split_{base}")
        self.start = fresh(f"mpiopt_start_{base}")
        self.finish = fresh(f"mpiopt_finish_{base}")


def _field(d) -> str:
    t = d.type
    if d.is_ref:                                     # a reference parameter: a pointer to its referee
        return f"{re.sub(r'&+$', '', t.strip()).strip()} *{d.spelling};"
    if "*" in t:
        t = re.sub(r"\*\s*const\s*$", "*", t)
    else:
        t = re.sub(r"^\s*const\s+|\s+const\s*$", "", t)
    sep = "" if t.endswith("*") else " "
    return f"{t}{sep}{d.spelling};"


def _stmt_end(text: bytes, st) -> int:
    i = st.end
    while i < len(text) and text[i:i + 1] in b" \t\r\n":
        i += 1
    return i + 1 if text[i:i + 1] == b";" else st.end


def _pragmas(text: bytes, start: int, end: int) -> list[str]:
    """`#pragma` lines in the gap before a statement (OpenMP's apply to the next statement)."""
    return [ln.strip() for ln in text[start:end].decode(errors="replace").splitlines()
            if ln.strip().startswith("#pragma")]


def _renamed(text: bytes, start: int, end: int, renames: list, helper: Helper) -> str:
    refs = {k for k, d in helper.carried.items() if d.is_ref}
    out, pos = [], start
    for n in sorted((n for n in renames if start <= n.start and n.end <= end), key=lambda n: n.start):
        out.append(text[pos:n.start].decode(errors="replace"))
        out.append(f"(*mpiopt_st->{n.spelling})" if n.ref in refs else f"mpiopt_st->{n.spelling}")
        pos = n.end
    out.append(text[pos:end].decode(errors="replace"))
    return "".join(out)


def _statements(text: bytes, stmts: list, after: int, h: Helper, rename: bool) -> list[str]:
    lines, prev = [], after
    for st in stmts:
        lines += _pragmas(text, prev, st.start)
        end = _stmt_end(text, st)
        body = _renamed(text, st.start, end, h.renames, h) if rename else \
            text[st.start:end].decode(errors="replace")
        lines.append(body)
        prev = end
    return lines


def why_not_written(h: Helper, text: bytes) -> str:
    """What the copies could not keep as it is: a conditional inside a copied statement."""
    for st in h.prefix + h.tail:
        for ln in text[st.start:_stmt_end(text, st)].decode(errors="replace").splitlines()[1:]:
            if ln.strip().startswith("#") and not ln.strip().startswith("#pragma"):
                return f"a preprocessor directive inside the statement at line {st.line}"
    if "(" in h.fn.result_type or "[" in h.fn.result_type:
        return f"its return type `{h.fn.result_type}` cannot be written before a name as spelled"
    return ""


def why_not_call(h: Helper, caller) -> str:
    """The two halves are written right after the helper: a caller before it cannot see them."""
    if caller.top_start < h.fn.body.end:
        return "the call comes before the helper's definition (its split is written after it)"
    return ""


def helper_code(h: Helper, names: SplitNames, ea: EffectAnalysis) -> str:
    text, fn, site = ea.unit.text, h.fn, h.site
    ind = "    "
    fields = [f"{ind}MPI_Request mpiopt_request;"] + [ind + _field(d) for d in h.carried.values()]
    params = [ea.text(c) for c in fn.node.children if c.kind == "PARM_DECL"]
    state = f"struct {names.struct} *mpiopt_st"
    # copies into the state: parameters, and locals the start's statements give a value
    written = set()
    for st in h.prefix:
        written |= {id(find(w)) for w in ea.of(st).writes}
    copies = []
    for key, d in h.carried.items():
        if d.kind == "PARM_DECL" and d.is_ref:
            copies.append(f"mpiopt_st->{d.spelling} = &{d.spelling};")
        elif d.kind == "PARM_DECL" or id(find(ea.pts.var(key, d.is_global))) in written:
            copies.append(f"mpiopt_st->{d.spelling} = {d.spelling};")
    # a local only the pending call or the finish uses is dead in the start (its field is used)
    copies += [f"(void) {d.spelling};" for key, d in h.carried.items() if d.kind == "VAR_DECL"
               and id(find(ea.pts.var(key, d.is_global))) not in written]
    # a static helper whose calls all moved is still used (no -Wunused-function); not for C++
    # overloads, whose name alone is ambiguous
    same_name = [f for f in ea.unit.functions.values() if f.node.spelling == fn.node.spelling]
    if fn.is_static and len(same_name) == 1:
        copies.append(f"(void) {fn.node.spelling};   /* kept for the calls left as they are */")
    args = [_renamed(text, a.start, a.end, h.renames, h) for a in call_args(site.call)]
    request = "&mpiopt_st->mpiopt_request"
    if site.coll.status is not None:
        args[site.coll.status] = request
    else:
        args.append(request)
    start_body = _statements(text, h.prefix, fn.body.start + 1, h, False) + copies + \
        [f"{site.coll.nonblocking}({', '.join(args)});"]
    finish_body = ["MPI_Wait(&mpiopt_st->mpiopt_request, MPI_STATUS_IGNORE);"]
    tail_from = _stmt_end(text, site.call)
    finish_body += _statements(text, h.tail, tail_from, h, True)
    if h.ret is not None:
        finish_body.append(f"return {_renamed(text, h.ret.start, h.ret.end, h.renames, h)};")
    result_type = fn.result_type or "void"
    out = [f"/* Added by mpiopt transform: {fn.name} split at its {site.coll.name} (line {site.call.line}),",
           f"   so that its callers' work can overlap it: {names.start} runs it up to the call and",
           f"   starts it, {names.finish} waits and runs the rest where the caller first needs it. */",
           f"struct {names.struct} {{", *fields, "};", "",
           f"static void {names.start}({', '.join(params + [state])})", "{",
           *[ind + ln for ln in start_body], "}", "",
           f"static {result_type} {names.finish}({state})", "{",
           *[ind + ln for ln in finish_body], "}"]
    return "\n\n" + "\n".join(out)


def call_edits(s: SplitSite, names: SplitNames, state: str, ea: EffectAnalysis, edit) -> list:
    """The caller's call `[v =] H(args)` -> `mpiopt_start_H(args, &state)`."""
    call, src = s.call, ea.unit.text
    out = []
    if s.lhs is not None:
        out.append(edit(s.stmt.start, call.start, ""))
    out.append(edit(call.start, call.start + len(call.callee), names.start))
    close = call.end - 1
    assert src[close:close + 1] == b")", "call does not end with ')'"
    out.append(edit(close, close, (", " if call_args(call) else "") + f"&{state}"))
    return out


def finish_text(s: SplitSite, names: SplitNames, state: str, ea: EffectAnalysis) -> str:
    lhs = f"{ea.text(s.lhs)} = " if s.lhs is not None else ""
    return f"{lhs}{names.finish}(&{state});"
