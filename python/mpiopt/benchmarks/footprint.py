"""`mpiopt bench footprint`: what the drop-in holds while a program keeps many communicators alive
(issue 37), beside what the vendor alone holds: /dev/shm in use and rank 0's peak RSS with 1, 10,
100 and 1000 live duplicates of MPI_COMM_WORLD, each with an 8-byte and a LARGE allreduce and
reduce, every result checked. The program is tests/c/plain_many_comms.c (an unmodified MPI
program), run with and without LD_PRELOAD in turn."""
from __future__ import annotations

import re

from .. import mpi
from . import save_document
from ..console import console as report_console
from ..errors import UsageError
from ..units import parse_size, size_label
from .allreduce import choose_flavours

NAME = "footprint"
HELP = "/dev/shm and memory the drop-in holds per live communicator, beside the vendor's"
EXAMPLE = """examples:
  mpiopt bench footprint                          1, 10, 100, 1000 communicators, np 2, every MPI
  mpiopt bench footprint --comms 1,50 --large 1M --flavour mpich --json
"""
BINARY = "test-plain_many_comms"
LINE = re.compile(r"many_comms live: (\d+) comms, shm_used_bytes (-?\d+), peak_rss_kib (-?\d+), "
                  r"(\d+) checks, (\d+) failures")


def add_arguments(p) -> None:
    p.add_argument("--comms", default="1,10,100,1000", metavar="LIST",
                   help="live communicators, comma-separated (default 1,10,100,1000)")
    p.add_argument("-np", type=int, default=2, help="processes (default 2)")
    p.add_argument("--large", default="64K", help="bytes of the large calls (default 64K)")
    p.add_argument("--flavour", default="all", help="openmpi, mpich or all built ones (default all)")


def measure_one(flavour: str, np: int, comms: int, large: int, preload: bool) -> dict:
    """One run: {"shm_bytes", "rss_bytes", "checks"}; RuntimeError where it failed."""
    argv = [mpi.binary(flavour, BINARY), "live", str(comms), str(large)]
    r = mpi.run(flavour, np, argv, preload=preload, timeout=900)
    m = LINE.search(r.stdout)
    who = "the drop-in" if preload else "the vendor alone"
    if r.returncode != 0 or not m or int(m.group(5)):
        raise RuntimeError(f"{comms} live communicators under {flavour}, {who}: rc={r.returncode}\n"
                           f"{r.stdout[-500:]}{r.stderr[-1500:]}")
    return {"shm_bytes": int(m.group(2)), "rss_bytes": int(m.group(3)) * 1024, "checks": int(m.group(4))}


def measure(flavour: str, np: int, counts: list[int], large: int, progress=None) -> dict:
    rows = []
    for n in counts:
        if progress:
            progress(f"footprint: {flavour}, {n} communicators")
        vendor = measure_one(flavour, np, n, large, preload=False)
        mine = measure_one(flavour, np, n, large, preload=True)
        rows.append({"comms": n, "vendor": vendor, "dropin": mine,
                     "extra_shm_per_comm": (mine["shm_bytes"] - vendor["shm_bytes"]) / n,
                     "extra_rss_per_comm": (mine["rss_bytes"] - vendor["rss_bytes"]) / n})
    return {"benchmark": NAME, "flavour": flavour, "ranks": np, "large_bytes": large, "results": rows}


def run(args) -> int:
    from rich.console import Console
    from rich.progress import Progress

    try:
        counts = [int(x) for x in args.comms.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--comms takes whole numbers, comma-separated, not {args.comms!r}")
    if not counts or min(counts) < 1:
        raise UsageError("--comms needs at least one count, each 1 or more")
    large = parse_size(args.large, minimum=8)
    flavours = choose_flavours(args.flavour, BINARY)
    console = report_console(stderr=args.json)
    docs, failures = [], []
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("footprint", total=len(flavours) * len(counts))

        def step(text):
            progress.update(task, description=text)
            progress.advance(task)

        for flavour in flavours:
            try:
                docs.append(measure(flavour, args.np, counts, large, step))
            except RuntimeError as e:
                failures.append(str(e))
                console.print(f"[red]error:[/red] {e}")
    path = save_document(args, "footprint.json", {"runs": docs, "errors": failures})
    if not args.json:
        for doc in docs:
            print_table(console, doc)
        console.print(f"files: {path}")
    return 1 if failures or not docs else 0


def _mib(n: float) -> str:
    return f"{n / (1 << 20):.1f}"


def print_table(console, doc: dict) -> None:
    from rich.table import Table
    table = Table(title=f"What the drop-in holds, {doc['flavour']}, {doc['ranks']} ranks: live duplicates "
                  f"of MPI_COMM_WORLD, an 8-byte and a {size_label(doc['large_bytes'])} allreduce and "
                  "reduce on each (MiB; RSS: rank 0's peak)", title_justify="left")
    for head in ("communicators", "/dev/shm vendor", "/dev/shm drop-in", "extra a comm",
                 "RSS vendor", "RSS drop-in", "extra a comm"):
        table.add_column(head, justify="right")
    for r in doc["results"]:
        v, d = r["vendor"], r["dropin"]
        table.add_row(str(r["comms"]), _mib(v["shm_bytes"]), _mib(d["shm_bytes"]),
                      f"{r['extra_shm_per_comm'] / 1024:.0f} KiB", _mib(v["rss_bytes"]),
                      _mib(d["rss_bytes"]), f"{r['extra_rss_per_comm'] / 1024:.0f} KiB")
    console.print(table)
