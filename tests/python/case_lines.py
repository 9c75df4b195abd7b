"""Lines of a transform test case (tests/transform_cases/): its text, the lines a marker comment
ends (Fortran: `! NAME` or fixed form's `C NAME`), and the first line holding a text."""
from __future__ import annotations

import re
from pathlib import Path


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def markers(path: Path, name: str) -> list[int]:
    return [i for i, ln in enumerate(lines(path), 1) if re.search(rf"(!|^C)\s*{name}\s*$", ln)]


def line_of(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(lines(path), 1) if text in ln)
