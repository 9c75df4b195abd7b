"""libmpiopt's cost model from Python: the C function mpiopt_cost_seconds (src/coll/algorithms/cost_model.c)
through ctypes, so that `mpiopt model`, `mpiopt simulate` and `mpiopt tune` predict with exactly the
model that `auto` selects with. Needs a built libmpiopt, no MPI_Init."""
from __future__ import annotations

import ctypes
import math
from pathlib import Path

from . import mpi
from .errors import UsageError

MAX_STEPS = 30     # MPIOPT_COST_MAX_STEPS


class _Link(ctypes.Structure):
    _fields_ = [("alpha", ctypes.c_double), ("beta", ctypes.c_double)]


class _Params(ctypes.Structure):
    """mpiopt_cost_params (include/mpiopt.h)."""
    _fields_ = [("alpha", ctypes.c_double), ("beta", ctypes.c_double), ("gamma", ctypes.c_double),
                ("exchange_ranks", ctypes.c_int), ("exchange_steps", ctypes.c_int),
                ("step", _Link * MAX_STEPS), ("fold", _Link), ("ring", _Link),
                ("doubling_latency", ctypes.c_double),
                ("halving_doubling_latency", ctypes.c_double),
                ("ranks_per_node", ctypes.c_int),
                ("intra_alpha", ctypes.c_double), ("intra_beta", ctypes.c_double)]


def _params(alpha: float, beta: float, gamma: float, exchange: dict | None) -> _Params:
    """The C parameters; `exchange` is mpiopt-exchange's JSON (measured patterns), or None."""
    params = _Params(alpha, beta, gamma)
    if not exchange:
        return params
    params.exchange_ranks = int(exchange["ranks"])
    for pat in exchange["patterns"]:
        link = _Link(float(pat["alpha"]), float(pat.get("beta", 0.0)))
        kind = pat["pattern"]
        if kind == "step":
            k = int(pat["distance"]).bit_length() - 1
            params.step[k] = link
            params.exchange_steps = max(params.exchange_steps, k + 1)
        elif kind in ("fold", "ring"):
            setattr(params, kind, link)
        elif kind in ("doubling", "halving_doubling"):
            setattr(params, f"{kind}_latency", link.alpha)
    return params


class CostModel:
    """libmpiopt's cost model, loaded from one of the MPI builds (it needs no MPI_Init)."""

    def __init__(self, library: Path | None = None):
        if library is None:
            built = mpi.built_flavours()
            if not built:
                raise UsageError("libmpiopt is not built: run `make build` first")
            library = mpi.library(built[0])
        lib = ctypes.CDLL(str(library))
        self._cost = lib.mpiopt_cost_seconds
        self._cost.restype = ctypes.c_double
        self._cost.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                               ctypes.POINTER(_Params)]
        name = lib.mpiopt_algorithm_name
        name.restype = ctypes.c_char_p
        name.argtypes = [ctypes.c_int]
        # the enum's names, in order, until the library says "unknown"
        self.ids: dict[str, int] = {}
        for i in range(64):
            n = name(i).decode()
            if n == "unknown":
                break
            self.ids[n] = i

    @property
    def algorithms(self) -> list[str]:
        """mpiopt's own algorithms that the model prices (not `auto`, which picks among them, nor
        the vendor's, nor `shared_memory`, which works only within one node and is measured;
        `hierarchical` is priced where ranks share nodes)."""
        return [n for n in self.ids if n not in ("auto", "vendor") and
                (any(self.seconds(n, p, 8, 1e-6, 2.5e-10, 1e-10) is not None for p in (3, 4)) or
                 self.seconds(n, 8, 8, 1e-6, 2.5e-10, 1e-10, ranks_per_node=2) is not None)]

    @property
    def one_node_algorithms(self) -> list[str]:
        """The algorithms the model prices only where every rank is on one node
        (ranks_per_node >= p): `shared_memory`'s large allreduces through its stages. Not among
        `algorithms`, which `mpiopt simulate` runs (SMPI has no shared memory)."""
        return [n for n in self.ids if n not in self.algorithms and n not in ("auto", "vendor")
                and self.seconds(n, 8, 1 << 20, 1e-6, 2.5e-10, 1e-10, ranks_per_node=8) is not None]

    @property
    def flat_algorithms(self) -> list[str]:
        """The algorithms priced with one level (every rank a node of its own): `algorithms`
        without those that need ranks sharing nodes (`hierarchical`)."""
        return [n for n in self.algorithms
                if any(self.seconds(n, p, 8, 1e-6, 2.5e-10, 1e-10) is not None for p in (3, 4))]

    def seconds(self, algorithm: str, ranks: int, nbytes: float, alpha: float, beta: float,
                gamma: float, reduce: bool = False, exchange: dict | None = None,
                ranks_per_node: int = 0, intra_alpha: float = 0.0,
                intra_beta: float = 0.0) -> float | None:
        """Predicted seconds; None where the algorithm does not apply. `exchange`: patterns
        measured by mpiopt-exchange (used when their process count is `ranks`); ranks_per_node,
        intra_alpha, intra_beta: the second level (0: one level)."""
        params = _params(alpha, beta, gamma, exchange)
        params.ranks_per_node = ranks_per_node
        params.intra_alpha, params.intra_beta = intra_alpha, intra_beta
        t = self._cost(self.ids[algorithm], int(reduce), ranks, float(nbytes),
                       ctypes.byref(params))
        return t if t >= 0 else None


LEVEL_KEYS = ("ranks_per_node", "intra_alpha", "intra_beta")


def predictions(model: CostModel, ranks: list[int], sizes: list[int], alpha: float, beta: float,
                gamma: float, reduce: bool = False, exchange: dict | None = None,
                levels: dict | None = None) -> list[dict]:
    """One record per (ranks, bytes, algorithm), as `mpiopt simulate` reports, with `fastest`
    marking the algorithm(s) of least predicted time for that (ranks, bytes). `levels`: the
    second level, {"ranks_per_node", "intra_alpha", "intra_beta"} (a tuning file's), or None."""
    rows = []
    for p in ranks:
        for n in sizes:
            group = []
            for alg in model.algorithms + model.one_node_algorithms:
                t = model.seconds(alg, p, n, alpha, beta, gamma, reduce, exchange, **(levels or {}))
                if t is not None:
                    group.append({"algorithm": alg, "ranks": p, "bytes": n, "seconds": t})
            best = min(r["seconds"] for r in group)
            for r in group:
                r["fastest"] = math.isclose(r["seconds"], best, rel_tol=1e-12, abs_tol=0.0)
            rows += group
    return rows
