"""Preprocessed Fortran (.F90, .F with `#` lines): gfortran's preprocessor, and the way back
from its output's lines to the file's own lines (what the writer edits)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from fparser.two.utils import walk

from .parse import ParseError


def preprocess(path: Path, extra_args: list) -> tuple[str, list]:
    """The file through gfortran's preprocessor (-cpp -E; -D/-U/-I options of `extra_args`), and
    for each line of the result the (file, line) it comes from (marker lines become blank
    lines, so the result's line numbers index the list)."""
    flags = [a for a in extra_args if a.startswith(("-D", "-U", "-I"))]
    cmd = ["gfortran", "-cpp", "-E", f"-I{path.resolve().parent}", *flags, str(path)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except OSError as e:
        raise ParseError(f"{path}: preprocessed Fortran needs gfortran ({e})") from None
    if r.returncode != 0:
        first = next((ln for ln in r.stderr.splitlines() if "rror" in ln), r.stderr.strip()[:200])
        raise ParseError(f"{path}: the preprocessor failed: {first}")
    lines, origin = [], [(None, 0)]          # origin[0]: line numbers are 1-based
    where, number = None, 0
    for raw in r.stdout.split("\n"):
        m = _MARKER.match(raw)
        if m:
            number, where = int(m.group(1)), m.group(2)
            lines.append("")
            origin.append((None, 0))
            continue
        lines.append(raw)
        origin.append((where, number))
        number += 1
    main = str(path)
    return "\n".join(lines), [(n if f == main else 0) for f, n in origin]


_MARKER = re.compile(r'^# (\d+) "([^"]*)"')


def map_lines(tree, origin: list, pre_lines: list, file_lines: list):
    """Statement spans from the preprocessed text to the file's lines. A statement from another
    file (#include) is marked so (`in_file` false); one whose text a macro changed, or whose
    lines are not consecutive lines of the file, gets `item.macro` (it stays as it is)."""
    for n in walk(tree):
        item = getattr(n, "item", None)
        span = getattr(item, "span", None)
        if not span or getattr(item, "mapped", False):
            continue
        item.mapped = True
        lines = [origin[i] if i < len(origin) else 0 for i in range(span[0], span[1] + 1)]
        if not all(lines):
            item.other_file = True
            continue
        item.macro = lines != list(range(lines[0], lines[0] + len(lines))) or any(
            pre_lines[i - 1].rstrip() != file_lines[o - 1].rstrip()
            for i, o in zip(range(span[0], span[1] + 1), lines) if o - 1 < len(file_lines))
        item.span = (lines[0], lines[-1])
