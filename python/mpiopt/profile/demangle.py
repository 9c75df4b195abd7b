"""C++ names for the mangled symbols a profile may hold (`_Z12ExchangeHaloRK19SparseMatrix_STRUCT
R13Vector_STRUCT` -> `ExchangeHalo(SparseMatrix_STRUCT const&, Vector_STRUCT&)`).

libmpiopt-profile demangles where it names a site (src/profile/sites.c, with the program's own
libstdc++); a name still mangled here is one it could not: a program linked with
-static-libstdc++ (whose demangler is not exported), or a profile of an older profiler. The same
demangler does it here, libstdc++'s __cxa_demangle through ctypes: libstdc++ is on every
machine with g++, and without it a name stays as it is (never an error)."""
from __future__ import annotations

import ctypes
import functools


@functools.lru_cache(maxsize=1)
def _cxa_demangle():
    for name in ("libstdc++.so.6", "libstdc++.so"):
        try:
            f = ctypes.CDLL(name).__cxa_demangle
        except (OSError, AttributeError):
            continue
        f.restype = ctypes.c_void_p      # a malloc'ed string, freed below
        f.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        return f
    return None


@functools.lru_cache(maxsize=1)
def _free():
    f = ctypes.CDLL(None).free
    f.argtypes = [ctypes.c_void_p]
    return f


@functools.lru_cache(maxsize=4096)
def cxx_name(symbol: str) -> str:
    """The demangled name of an Itanium-ABI symbol ("_Z..."), else `symbol` unchanged."""
    if not symbol.startswith("_Z"):
        return symbol
    demangle = _cxa_demangle()
    if demangle is None:
        return symbol
    status = ctypes.c_int(-1)
    out = demangle(symbol.encode(), None, None, ctypes.byref(status))
    if not out:
        return symbol
    try:
        return ctypes.string_at(out).decode(errors="replace") if status.value == 0 else symbol
    finally:
        _free()(out)


def demangle_sites(data: dict) -> None:
    """Every site's function and the functions of the stack above it, demangled in place."""
    for site in (data.get("sites") or {}).get("list", []):
        for frame in [site, *site.get("stack", [])]:
            if isinstance(frame, dict) and isinstance(frame.get("function"), str):
                frame["function"] = cxx_name(frame["function"])
