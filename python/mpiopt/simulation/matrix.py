"""`mpiopt simulate matrix`: a program's measured point-to-point traffic (the communication matrix
of an mpiopt profile) replayed by examples/matrix_replay.c under SimGrid SMPI, with the ranks
placed on simulated nodes by SMP placement, by an order file and by the order
`mpiopt place search --matrix` finds. Shows what a placement would do to the time of the
program's own messages where it cannot be launched for real (one machine, one node).

`simulate_orders` is the plain function behind it, for other commands (mpiopt advise)."""
from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from rich.table import Table

from .. import mpi
from ..console import console as report_console
from ..errors import UsageError
from ..placement import (PlacementError, check_permutation, convert, method_placement,
                         off_node_bytes, order_placement, partition, read_order)
from ..profile import PROFILE_NAME, load
from . import smpi

NAME = "matrix"
HELP = "replay a profile's measured communication matrix under SMP, a given and the searched placement"
EXAMPLE = """examples:
  mpiopt profile -np 64 -- ./app
  mpiopt simulate matrix --profile . --ppn 16
      SMP placement against the order `mpiopt place search --matrix` finds, 4 simulated nodes
  mpiopt simulate matrix --profile mpiopt-profile.json --ppn 16 --order MPICH_RANK_ORDER \\
      --platform fattree --json

Each pair's measured bytes are sent in at most 8 messages (one a round): the time is that of the
run's whole point-to-point volume, not of its every message (see docs/simulation.md).
"""

REPLAY_SOURCE = "matrix_replay.c"
SMP = "SMP"
PARTITIONED = "partitioned (Kernighan-Lin)"
_RESULT = re.compile(r"rounds=(\d+) max_rounds=(\d+) bytes_scale=(\S+) bytes_moved=(\d+) "
                     r"replay_seconds=(\S+)")


def add_arguments(p) -> None:
    p.add_argument("--profile", required=True, metavar="DIR_OR_JSON",
                   help=f"a profile of `mpiopt profile`: {PROFILE_NAME} or its directory")
    p.add_argument("--ppn", type=int, required=True, metavar="K", help="ranks per simulated node")
    p.add_argument("--order", metavar="FILE",
                   help="also simulate this MPICH_RANK_ORDER file's placement")
    p.add_argument("--platform", choices=smpi.PLATFORMS, default="cluster",
                   help="simulated machine (default cluster; see `mpiopt simulate --help`)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per simulation (default 600)")


def check_matrix(nbytes, nmsgs, ppn: int) -> tuple[np.ndarray, np.ndarray]:
    """The matrices as float arrays; UsageError with a one-line message if they cannot be
    replayed on nodes of `ppn` ranks."""
    nbytes = np.asarray(nbytes, dtype=float)
    nmsgs = np.asarray(nmsgs, dtype=float)
    if nbytes.ndim != 2 or nbytes.shape[0] != nbytes.shape[1] or nbytes.shape != nmsgs.shape:
        raise UsageError(f"the byte and message matrices must be square and alike, got "
                         f"{nbytes.shape} and {nmsgs.shape}")
    ranks = nbytes.shape[0]
    if (nbytes < 0).any() or (nmsgs < 0).any():
        raise UsageError("the communication matrix has negative entries")
    if not (nbytes.any() or nmsgs.any()):
        raise UsageError("the communication matrix is empty: the program sent no point-to-point "
                         "messages, so placement changes nothing to replay")
    if ppn < 1 or ranks % ppn:
        raise UsageError(f"{ranks} ranks do not fill nodes of {ppn} ranks: --ppn must divide "
                         "the rank count")
    return nbytes, nmsgs


def write_matrix(path: Path, nbytes: np.ndarray, nmsgs: np.ndarray) -> None:
    """matrix_replay's input: `ranks N`, then `source destination bytes messages` per nonzero."""
    src, dst = np.nonzero((nbytes > 0) | (nmsgs > 0))
    lines = [f"ranks {nbytes.shape[0]}"]
    lines += [f"{s} {d} {nbytes[s, d]:.17g} {nmsgs[s, d]:.17g}" for s, d in zip(src, dst)]
    path.write_text("\n".join(lines) + "\n")


def _replay(exe: Path, matrix_file: Path, platform: Path, hostfile: Path, ranks: int,
            timeout: float) -> dict:
    # matrix_replay has no global state to privatize: without it SMPI does not map a copy of
    # the program per rank
    r = smpi.smpirun(exe, [matrix_file], ranks, platform, hostfile,
                     config=["--cfg=smpi/privatization:no"], timeout=timeout, cwd=platform.parent)
    m = _RESULT.search(r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"smpirun of matrix_replay failed (exit {r.returncode}):\n"
                           f"{(r.stdout + r.stderr)[-2000:]}")
    return {"seconds": float(m.group(5)), "rounds": int(m.group(1)),
            "max_messages_per_pair": int(m.group(2)), "bytes_scale": float(m.group(3)),
            "bytes_moved": int(m.group(4))}


def simulate_orders(nbytes: np.ndarray, nmsgs: np.ndarray, ppn: int,
                    orders: dict[str, np.ndarray | list[int]], platform: str = "cluster",
                    timeout: float = 600) -> list[dict]:
    """Simulated time of replaying the matrix (nbytes, nmsgs: ranks x ranks, [source,
    destination], as Profile.matrix() returns) with the ranks placed on nodes of `ppn` by each
    order (MPICH_RANK_ORDER: the ranks node by node), in the dict's order. One dict per order:
    {"placement": name, "seconds": simulated replay time, "off_node_bytes": measured bytes
    crossing nodes, "max_node_off_node_bytes", "ratio_to_first": seconds / the first's,
    "rounds", "max_messages_per_pair", "bytes_scale", "nodes"}.

    UsageError (one line) for input that cannot be replayed (SMPI missing, an empty matrix, ppn
    not dividing the ranks, an order that is not a permutation, an unknown platform);
    RuntimeError if a simulation fails."""
    if not smpi.available():
        raise UsageError("SimGrid SMPI is not installed (smpicc, smpirun: Debian libsimgrid-dev)")
    nbytes, nmsgs = check_matrix(nbytes, nmsgs, ppn)
    if platform not in smpi.PLATFORMS:
        raise UsageError(f"unknown platform {platform!r} (expected one of {', '.join(smpi.PLATFORMS)})")
    if not orders:
        raise UsageError("no placement to simulate")
    ranks = nbytes.shape[0]
    placements = []
    for name, order in orders.items():
        order = np.asarray(order, dtype=np.int64)
        try:
            check_permutation(order, ranks, source=f"order {name!r}")
        except PlacementError as e:
            raise UsageError(str(e)) from None
        placements.append(order_placement(order, ppn, name=name))

    # it needs nothing of libmpiopt, so it is not part of the CMake build
    exe = smpi.build_program(mpi.repo_root() / "examples" / REPLAY_SOURCE)
    nodes = ranks // ppn
    # a directory per call: several simulations may run at once, and smpirun leaves files behind
    workdir = Path(tempfile.mkdtemp(prefix=f"matrix-{ranks}-{ppn}-", dir=exe.parent))
    try:
        matrix_file = workdir / "matrix.txt"
        write_matrix(matrix_file, nbytes, nmsgs)
        xml, _ = smpi.platform_xml(platform, nodes)
        platform_file = workdir / f"{platform}-{nodes}.xml"
        platform_file.write_text(xml)
        hosts = [f"node-{i}" for i in range(nodes)]
        done: dict[bytes, dict] = {}   # an order given twice (the search found SMP) runs once
        rows = []
        for i, pl in enumerate(placements):
            key = pl.slot_order.tobytes()
            if key not in done:
                hostfile = workdir / f"hostfile-{i}"
                hostfile.write_text(convert(pl, hosts, "smpi"))
                done[key] = _replay(exe, matrix_file, platform_file, hostfile, ranks, timeout)
            off, busiest = off_node_bytes(nbytes, pl.node_of_rank())
            rows.append({"placement": pl.name, **done[key], "off_node_bytes": off,
                         "max_node_off_node_bytes": busiest, "nodes": nodes})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if len({row["bytes_moved"] for row in rows}) != 1:
        # the same messages are sent wherever the ranks run
        raise RuntimeError(f"matrix_replay moved different byte counts between placements: {rows}")
    first = rows[0]["seconds"]
    for row in rows:
        row["ratio_to_first"] = row["seconds"] / first if first > 0 else 1.0
    return rows


def _profile_path(text: str) -> Path:
    path = Path(text)
    return path / PROFILE_NAME if path.is_dir() else path


def run(args) -> int:
    path = _profile_path(args.profile)
    prof = load(path)                       # a ProfileError is a UsageError: exit 2
    nbytes, nmsgs = check_matrix(*prof.matrix(), args.ppn)
    orders = {SMP: method_placement(1, prof.ranks, args.ppn).slot_order}
    try:
        if args.order:
            orders[f"order ({Path(args.order).name})"] = read_order(args.order, prof.ranks)
        orders[PARTITIONED] = partition(nbytes, args.ppn).order
    except PlacementError as e:
        raise UsageError(str(e)) from None
    try:
        rows = simulate_orders(nbytes, nmsgs, args.ppn, orders, args.platform, args.timeout)
    except RuntimeError as e:
        print(f"mpiopt: error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    first = rows[0]
    scaled = f", bytes scaled by {first['bytes_scale']:.3g}" if first["bytes_scale"] < 1 else ""
    table = Table(title=f"simulated replay of the matrix of {path}: {prof.ranks} ranks, "
                  f"{args.ppn}/node on a {args.platform} of {first['nodes']} nodes, "
                  f"{nbytes.sum():.3G} bytes point-to-point in {first['rounds']} rounds "
                  f"(at most {first['max_messages_per_pair']} messages a pair{scaled})")
    for col in ("placement", "off-node bytes", "simulated time", "vs SMP"):
        table.add_column(col, justify="left" if col == "placement" else "right",
                         no_wrap=col == "placement")
    for row in rows:
        table.add_row(row["placement"], f"{row['off_node_bytes']:.3G}",
                      f"{row['seconds'] * 1e6:.2f} µs", f"{row['ratio_to_first']:.2f}x")
    report_console().print(table)
    return 0
