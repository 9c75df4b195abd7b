"""MPICH_RANK_ORDER files: comma-separated ranks filled into node slots in order. Line breaks
are not significant, `#` starts a comment (grid_order's header and region lines), and `a-b`
stands for the ranks a, a+1, …, b."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .grid import PlacementError

_RANGE = re.compile(r"^(\d+)\s*-\s*(\d+)$")


def parse_order(text: str, source: str = "order") -> np.ndarray:
    """The ranks listed, in order; an error naming the first entry that is not a rank or range."""
    out: list[int] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0]
        for token in re.split(r"[,\s]+", line.strip()):
            if not token:
                continue
            if token.isdigit():
                out.append(int(token))
                continue
            m = _RANGE.match(token)
            if m and int(m.group(1)) <= int(m.group(2)):
                out.extend(range(int(m.group(1)), int(m.group(2)) + 1))
                continue
            raise PlacementError(f"{source}, line {lineno}: {token!r} is not a rank or a range a-b "
                                 f"(entry {len(out)})")
    return np.array(out, dtype=np.int64)


def check_permutation(order: np.ndarray, nranks: int | None = None, source: str = "order") -> None:
    """A valid order lists each of 0..P-1 exactly once (P = nranks, or the number listed)."""
    order = np.asarray(order, dtype=np.int64)
    p = order.size if nranks is None else nranks
    if order.size == 0:
        raise PlacementError(f"{source}: no ranks listed")
    seen = np.zeros(max(p, 1), dtype=bool)
    for i, r in enumerate(order.tolist()):
        if r >= p:
            raise PlacementError(f"{source}: entry {i} is rank {r}, outside 0..{p - 1}")
        if seen[r]:
            raise PlacementError(f"{source}: entry {i} repeats rank {r}")
        seen[r] = True
    if order.size != p:
        missing = int(np.flatnonzero(~seen)[0])
        raise PlacementError(f"{source}: lists {order.size} ranks but the job has {p}; "
                             f"rank {missing} is missing")


def read_order(path: str | Path, nranks: int | None = None) -> np.ndarray:
    """Reads and validates an order file."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise PlacementError(f"cannot read order file {path}: {e.strerror}") from None
    order = parse_order(text, source=str(path))
    check_permutation(order, nranks, source=str(path))
    return order


def format_order(order, per_line: int, header: str | None = None) -> str:
    """An MPICH_RANK_ORDER text: `per_line` ranks a line (one node's worth reads best)."""
    text = np.asarray(order).astype(str)
    lines = [f"# {header}"] if header else []
    lines += [",".join(text[i:i + per_line]) for i in range(0, text.size, max(1, per_line))]
    return "\n".join(lines) + "\n"
