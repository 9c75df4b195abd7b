"""Text edits by byte offset: everything outside the edited ranges stays byte for byte."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    start: int
    end: int          # == start for an insertion
    text: str
    order: int = 0    # among insertions at one offset: lower first


class EditConflict(Exception):
    pass


def apply(source: bytes, edits: list[Edit]) -> bytes:
    """Applies non-overlapping edits; insertions at one offset keep (order, creation) order."""
    indexed = sorted(enumerate(edits), key=lambda ie: (ie[1].start, ie[1].end > ie[1].start,
                                                       ie[1].order, ie[0]))
    out, pos = [], 0
    for _, e in indexed:
        if e.start < pos:
            raise EditConflict(f"overlapping edits at byte {e.start}")
        out.append(source[pos:e.start])
        out.append(e.text.encode())
        pos = e.end
    out.append(source[pos:])
    return b"".join(out)


def line_start(source: bytes, offset: int) -> int:
    return source.rfind(b"\n", 0, offset) + 1


def indentation(source: bytes, offset: int) -> str | None:
    """The whitespace before `offset` on its line, or None if other text precedes it."""
    start = line_start(source, offset)
    prefix = source[start:offset]
    return prefix.decode() if prefix.strip() == b"" else None


def _comment_lines_above(source: bytes, offset: int) -> int:
    """Start of the whole-line comments right above the line of `offset` (they belong to the
    statement: a wait goes above them; `/* falls through */` must stay next to its label)."""
    start = line_start(source, offset)
    while start > 0:
        prev = line_start(source, start - 1)
        line = source[prev:start].strip()
        if line.startswith(b"//") or (line.startswith(b"/*") and line.endswith(b"*/")):
            start = prev
        else:
            break
    return start


def insert_before_statement(source: bytes, offset: int, text: str, order: int = 0,
                            indent: str | None = None) -> Edit:
    """`text` as its own line(s) before the statement at `offset` (and the comment lines right
    above it), at the statement's indentation (or `indent`)."""
    own = indentation(source, offset)
    if own is None:
        return Edit(offset, offset, text + " ", order)
    indent = own if indent is None else indent
    at = _comment_lines_above(source, offset)
    if at != line_start(source, offset) or indent != own:
        return Edit(at, at, "".join(indent + line + "\n" for line in text.split("\n")), order)
    return Edit(offset, offset, text.replace("\n", "\n" + indent) + "\n" + indent, order)


def insert_before_brace(source: bytes, brace: int, text: str, indent_hint: str, order: int = 0) -> Edit:
    """`text` as the last line(s) of a block whose closing brace is at `brace`."""
    indent = indentation(source, brace)
    if indent is None:
        return Edit(brace, brace, " " + text + " ", order)
    start = line_start(source, brace)
    body = "\n".join(indent_hint + line for line in text.split("\n"))
    return Edit(start, start, body + "\n", order)


def after_semicolon(src: bytes, offset: int) -> int:
    """Offset just past the `;` that ends the statement whose expression ends at `offset`."""
    i = offset
    while i < len(src) and src[i:i + 1] in b" \t\r\n":
        i += 1
    return i + 1 if src[i:i + 1] == b";" else offset


def insert_after(source: bytes, offset: int, text: str, indent: str, order: int = 0) -> Edit:
    """`text` on new line(s) after the statement ending at `offset`."""
    return Edit(offset, offset, "".join("\n" + indent + line for line in text.split("\n")), order)
