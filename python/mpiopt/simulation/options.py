"""Command-line values shared by `mpiopt simulate` and `mpiopt model`: lists of sizes and of
process counts. Bad input raises ValueError with a message for the user."""
from __future__ import annotations

import re

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}


def parse_bytes(text: str) -> int:
    """'8', '64K', '1MiB', '16M' → bytes (binary units, as the OSU benchmarks use)."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (examples: 8, 64K, 1M)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def parse_sizes(text: str) -> list[int]:
    """A comma-separated list of sizes and MIN:MAX ranges (every power of two from MIN to MAX,
    as osu_allreduce -m): '8:8M', '8,1K,1M', '0,8:64'."""
    sizes: list[int] = []
    for part in text.split(","):
        if ":" in part:
            lo_text, hi_text = part.split(":", 1)
            lo, hi = parse_bytes(lo_text), parse_bytes(hi_text)
            if lo < 1 or hi < lo:
                raise ValueError(f"bad size range {part!r}: need 1 <= MIN <= MAX")
            s = lo
            while s <= hi:
                sizes.append(s)
                s *= 2
        else:
            sizes.append(parse_bytes(part))
    return sorted(set(sizes))


def parse_ranks(text: str, most: int) -> list[int]:
    """'16,128,1023' → [16, 128, 1023]; each between 1 and `most`."""
    out = []
    for part in text.split(","):
        if not part.strip().isdigit():
            raise ValueError(f"not a process count: {part!r}")
        p = int(part)
        if not 1 <= p <= most:
            raise ValueError(f"process count {p} out of range 1..{most}")
        out.append(p)
    return sorted(set(out))
