"""The one reading of sizes, rank counts and lists on the command line, for every command.

Sizes are bytes with an optional binary unit, case-insensitive, as the OSU benchmarks count:
`8`, `8B`, `64K` = `64KB` = `64KiB` = 65536, `8M`/`8MB`/`8MiB`, `1G`/`1GB`/`1GiB`.
A size list (`--sizes`) is comma-separated sizes and MIN:MAX ranges, a range meaning every power
of two from MIN up to MAX (`8:8M`, `8,1K,1M`, `0,8:64`). Bad input raises UsageError naming the
bad token."""
from __future__ import annotations

import re

from .errors import UsageError

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}


def parse_size(text: str, minimum: int = 0) -> int:
    """'8', '64K', '1MiB', '16M' → bytes; at least `minimum`."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).upper() not in _UNITS:
        raise UsageError(f"bad size {text!r} (expected bytes such as 8, 64K, 1M, 1GiB)")
    value = int(m.group(1)) * _UNITS[m.group(2).upper()]
    if value < minimum:
        raise UsageError(f"bad size {text!r}: must be at least {minimum} byte{'s' * (minimum != 1)}")
    return value


def parse_sizes(text: str, minimum: int = 0) -> list[int]:
    """A size list (see the module doc) → sorted distinct sizes."""
    sizes: set[int] = set()
    for part in str(text).split(","):
        if not part.strip():
            raise UsageError(f"bad size list {text!r}: empty item")
        if ":" in part:
            lo_text, hi_text = part.split(":", 1)
            lo, hi = parse_size(lo_text, minimum), parse_size(hi_text, minimum)
            if lo < 1:
                raise UsageError(f"bad size range {part!r}: MIN must be at least 1 byte")
            if hi < lo:
                raise UsageError(f"bad size range {part!r}: the minimum is larger than the maximum")
            s = lo
            while s <= hi:
                sizes.add(s)
                s *= 2
        else:
            sizes.add(parse_size(part, minimum))
    return sorted(sizes)


def size_label(n: int) -> str:
    """65536 → '64K', 8388608 → '8M', 1000 → '1000': short, and exact (no rounding)."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def parse_int_list(text: str, what: str, minimum: int | None = None,
                   maximum: int | None = None) -> list[int]:
    """'4,6' → [4, 6] in the given order; an error naming `what` and the bad token otherwise."""
    out = []
    for token in str(text).split(","):
        t = token.strip()
        try:
            v = int(t)
        except ValueError:
            raise UsageError(f"bad {what} {text!r}: {t!r} is not an integer") from None
        if minimum is not None and v < minimum:
            raise UsageError(f"bad {what} {text!r}: {v} is less than {minimum}")
        if maximum is not None and v > maximum:
            raise UsageError(f"bad {what} {text!r}: {v} is more than {maximum}")
        out.append(v)
    return out


def parse_ranks(text: str, maximum: int | None = None) -> list[int]:
    """'16,128,1023' → [16, 128, 1023]: process counts, sorted, distinct, each >= 1."""
    return sorted(set(parse_int_list(text, "process counts", 1, maximum)))


def parse_names(text: str, what: str, allowed) -> list[str]:
    """'a,b' → ['a', 'b'], each one of `allowed`, no repeats; the error lists the choices."""
    allowed = list(allowed)
    names = [t.strip() for t in str(text).split(",")]
    bad = [n for n in names if n not in allowed]
    if bad or len(set(names)) != len(names):
        what_bad = f"unknown {', '.join(map(repr, bad))}" if bad else "repeated names"
        raise UsageError(f"bad {what} {text!r}: {what_bad}; expected a comma-separated list of "
                         f"{', '.join(allowed)}")
    return names
