"""`mpiopt model`: the cost model's predicted time of every allreduce (or reduce) algorithm for
any number of processes, and which one is fastest.

The numbers come from libmpiopt's own `mpiopt_cost_seconds` (called through ctypes), the function
`auto` selection uses: there is one cost model in the project, in C."""
from __future__ import annotations

import argparse
import ctypes
import json
import math
from pathlib import Path

from .. import mpi
from ..errors import UsageError
from ..units import parse_ranks, parse_sizes, size_label
from ..model import LEVEL_KEYS, CostModel, _params, predictions
from ..simulation import smpi
from ..console import console as report_console

MAX_RANKS = 65536

EXAMPLE = """examples:
  mpiopt model --ranks 128,1023 --sizes 8:8M --platform torus --measure
        predictions for the machine `mpiopt simulate --platform torus` simulates, priced
        as its auto does (message patterns measured there)
  mpiopt model --ranks 65536 --sizes 8,64K,16M --alpha 2e-6 --beta 1e-10 --gamma 2.5e-10
  mpiopt model --ranks 4 --sizes 1M --tuning results/tuning-openmpi.json --json

α: seconds per message, β: seconds per byte sent, γ: seconds per byte reduced.
Without --alpha/--beta/--gamma or --tuning: the parameters of the simulated --platform (default
cluster), where reductions cost nothing (γ = 0) because the simulator does not charge them.
"""


def _levels(tuning: str, m: dict) -> dict | None:
    """A tuning file's second level (`mpiopt tune` on several nodes or with --ranks-per-node):
    {"ranks_per_node", "intra_alpha", "intra_beta"}, or None where it has one level."""
    if not m.get("ranks_per_node"):
        return None
    try:
        levels = {"ranks_per_node": int(m["ranks_per_node"]),
                  "intra_alpha": float(m.get("intra_alpha", 0.0)),
                  "intra_beta": float(m.get("intra_beta", 0.0))}
    except (ValueError, TypeError) as e:
        raise UsageError(f"{tuning}: a bad second level in its \"model\" ({e})")
    if levels["ranks_per_node"] < 0 or not all(math.isfinite(levels[k]) and levels[k] >= 0 for k in LEVEL_KEYS[1:]):
        raise UsageError(f"{tuning}: ranks_per_node, intra_alpha and intra_beta must be finite numbers >= 0")
    return levels


def _parameters(args, ranks: int) -> tuple[float, float, float, dict | None, str, dict | None]:
    """α, β, γ, the measured patterns (a tuning file's "exchange", or None), where they come
    from, and a tuning file's second level (or None); on a simulated platform α depends on the
    job's size."""
    levels = None
    given = [v is not None for v in (args.alpha, args.beta, args.gamma)]
    if args.tuning and any(given):
        raise UsageError("give either --tuning or --alpha/--beta/--gamma, not both")
    if args.measure and (args.tuning or any(given)):
        raise UsageError("--measure goes with --platform, not with --tuning or --alpha/--beta/--gamma")
    if args.tuning:
        try:
            data = json.loads(Path(args.tuning).read_text())
            m = data["model"]
            a, b, g = (float(m[k]) for k in ("alpha", "beta", "gamma"))
            exchange = m.get("exchange")
            if exchange is not None:
                _params(a, b, g, exchange)      # checks its shape
        except OSError as e:
            raise UsageError(f"cannot read tuning file {args.tuning}: {e.strerror}")
        except (ValueError, KeyError, TypeError) as e:
            raise UsageError(f"{args.tuning} is not a tuning file with a \"model\" of alpha, beta "
                             f"and gamma ({e.__class__.__name__}: {e})")
        source = f"tuning file {args.tuning}"
        if exchange and int(exchange["ranks"]) == ranks:
            source += ", measured patterns"
        levels = _levels(args.tuning, m)
        if levels:
            source += (f"; two levels: {levels['ranks_per_node']} ranks a node, inside one "
                       f"α = {levels['intra_alpha']:.3g} s, β = {levels['intra_beta']:.3g} s/B")
    elif any(given):
        if not all(given):
            raise UsageError("--alpha, --beta and --gamma go together")
        a, b, g, exchange = args.alpha, args.beta, args.gamma, None
        source = "given"
    else:
        net = smpi.Network()
        a = smpi.exchange_latency(args.platform, ranks, 1, net)
        b, g, exchange = 1.0 / net.link_bandwidth, 0.0, None
        source = f"simulated {args.platform}, 1 rank per node"
        if args.measure and ranks > 1:
            if not smpi.available():
                raise UsageError("--measure needs SimGrid SMPI (smpirun): `make deps`")
            try:
                exchange = smpi.measure_exchange(args.platform, ranks, 1, net)
            except RuntimeError as e:
                raise UsageError(f"--measure: {e}")
            source += ", patterns measured there by mpiopt-exchange"
    for name, v in (("alpha", a), ("beta", b), ("gamma", g)):
        if not (v >= 0 and math.isfinite(v)):
            raise UsageError(f"{name} must be a finite number >= 0, not {v}")
    return a, b, g, exchange, source, levels


def _print_table(console, rows: list[dict], algorithms: list[str], title: str) -> None:
    from rich.table import Table

    for p in sorted({r["ranks"] for r in rows}):
        table = Table(title=f"{title}, p = {p} (µs; fastest in bold)")
        table.add_column("bytes", justify="right")
        for alg in algorithms:
            table.add_column(alg.replace("_", "\n"), justify="right")
        table.add_column("fastest")
        for n in sorted({r["bytes"] for r in rows if r["ranks"] == p}):
            by_alg = {r["algorithm"]: r for r in rows if r["ranks"] == p and r["bytes"] == n}
            cells = []
            for alg in algorithms:
                r = by_alg.get(alg)
                if r is None:
                    cells.append("–")
                else:
                    text = f"{r['seconds'] * 1e6:.2f}"
                    cells.append(f"[bold]{text}[/bold]" if r["fastest"] else text)
            fastest = ", ".join(a for a in algorithms if a in by_alg and by_alg[a]["fastest"])
            table.add_row(size_label(n), *cells, fastest)
        console.print(table)


def run(args) -> int:
    args.ranks = parse_ranks(args.ranks_text, MAX_RANKS)
    sizes = parse_sizes(args.sizes)
    model = CostModel()
    rows, titles, two_levels = [], {}, False
    for p in args.ranks:
        alpha, beta, gamma, exchange, source, levels = _parameters(args, p)
        two_levels = two_levels or levels is not None
        rows += predictions(model, [p], sizes, alpha, beta, gamma, args.collective == "reduce",
                            exchange, levels)
        titles[p] = (f"Predicted MPI_{args.collective.capitalize()} time, α = {alpha:.3g} s, "
                     f"β = {beta:.3g} s/B, γ = {gamma:.3g} s/B ({source})")
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0

    console = report_console()
    columns = model.algorithms if two_levels else model.flat_algorithms
    # shared_memory where some p fits on one node (a tuning file's ranks_per_node >= p)
    columns += [a for a in model.one_node_algorithms if any(r["algorithm"] == a for r in rows)]
    for p in args.ranks:
        _print_table(console, [r for r in rows if r["ranks"] == p], columns, titles[p])
    return 0


def register(sub) -> None:
    p = sub.add_parser("model", help="predicted time of each allreduce/reduce algorithm (cost model)",
                       description="Predicted time of each mpiopt allreduce (or reduce) algorithm "
                       "from the α–β–γ cost model `auto` selection uses, for any process count up "
                       f"to {MAX_RANKS}, and which algorithm is fastest.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", dest="ranks_text", required=True, metavar="P[,P2…]",
                   help=f"process counts (1..{MAX_RANKS})")
    p.add_argument("--sizes", default="8:8M", metavar="LIST",
                   help="message sizes in bytes: a list and MIN:MAX ranges of powers of two "
                   "(default 8:8M)")
    p.add_argument("--collective", choices=("allreduce", "reduce"), default="allreduce")
    p.add_argument("--alpha", type=float, help="seconds per message")
    p.add_argument("--beta", type=float, help="seconds per byte sent")
    p.add_argument("--gamma", type=float, help="seconds per byte reduced")
    p.add_argument("--tuning", metavar="FILE", help="take α, β, γ from a tuning file "
                   "(`mpiopt tune`'s JSON, its \"model\"; with ranks_per_node, intra_alpha and "
                   "intra_beta there, hierarchical is priced with two levels)")
    p.add_argument("--platform", choices=smpi.PLATFORMS, default="cluster",
                   help="without other parameters: the simulated machine's α and β (default cluster)")
    p.add_argument("--measure", action="store_true",
                   help="with --platform: measure the algorithms' message patterns on the simulated "
                   "machine (mpiopt-exchange under SMPI, cached; about a minute at 1023 ranks), as "
                   "`mpiopt simulate` does for auto")
    p.add_argument("--json", action="store_true",
                   help='print a JSON list of {"algorithm", "ranks", "bytes", "seconds", "fastest"}')
    p.set_defaults(func=run)
