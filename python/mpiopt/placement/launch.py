"""Turning a placement into the files launchers read: an Open MPI rankfile, a Hydra (MPICH)
machinefile, an SMPI hostfile; and the launcher arguments for `mpiopt run --rank-order`."""
from __future__ import annotations

import os
import socket
from pathlib import Path

from .grid import PlacementError
from .orders import read_order
from .placements import Placement, order_placement

FORMATS = ("rankfile", "machinefile", "smpi", "slurm")


def read_hosts(spec) -> list[str]:
    """Hosts from a list, a comma-separated string, or a hostfile (one host per line; Open MPI's
    `host slots=N` and Hydra's `host:N` are accepted, the slot counts ignored: --ppn decides)."""
    if isinstance(spec, (list, tuple)):
        hosts = [str(h).strip() for h in spec]
    elif os.path.isfile(str(spec)):
        hosts = []
        for line in Path(spec).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                hosts.append(line.split()[0].split(":")[0])
    elif "/" in str(spec):
        raise PlacementError(f"hostfile {spec} does not exist")
    else:
        hosts = [h.strip() for h in str(spec).split(",")]
    if not hosts or any(not h or any(c.isspace() or c in ",=:" for c in h) for h in hosts):
        raise PlacementError(f"bad host list {spec!r}: expected host names separated by commas, "
                             "or a hostfile")
    return hosts


def _this_machine() -> set[str]:
    names = {"localhost", "127.0.0.1", "::1"}
    for get in (socket.gethostname, socket.getfqdn):
        try:
            names.add(get())
        except OSError:
            pass
    return names


def _hosts_of_nodes(placement: Placement, hosts: list[str]) -> list[str]:
    if len(hosts) < placement.nnodes:
        raise PlacementError(f"{placement.nranks} ranks at {placement.ppn} per node need "
                             f"{placement.nnodes} hosts, but only {len(hosts)} were given")
    return hosts[:placement.nnodes]


def rankfile(placement: Placement, hosts: list[str]) -> str:
    """Open MPI rankfile: `rank R=host slot=K`, K = the rank's slot on its node. Open MPI binds
    to that core and refuses a slot the host does not have, so on this machine (all hosts local,
    several "nodes" sharing its cores) the slot wraps around its core count."""
    node_host = _hosts_of_nodes(placement, hosts)
    node, slot = placement.node_of_rank(), placement.local_slot_of_rank()
    local, ncpu = _this_machine(), len(os.sched_getaffinity(0))
    lines = []
    for r in range(placement.nranks):
        host = node_host[node[r]]
        k = int(slot[r]) % ncpu if host in local else int(slot[r])
        lines.append(f"rank {r}={host} slot={k}")
    return "\n".join(lines) + "\n"


def machinefile(placement: Placement, hosts: list[str]) -> str:
    """Hydra machinefile: one `host:1` line per rank, in rank order (Hydra gives rank r line r)."""
    node_host = _hosts_of_nodes(placement, hosts)
    return "".join(f"{node_host[n]}:1\n" for n in placement.node_of_rank().tolist())


def smpi_hostfile(placement: Placement, hosts: list[str]) -> str:
    """SMPI hostfile: one host per line, rank r on line r."""
    node_host = _hosts_of_nodes(placement, hosts)
    return "".join(f"{node_host[n]}\n" for n in placement.node_of_rank().tolist())


def convert(placement: Placement, hosts: list[str], fmt: str) -> str:
    if fmt == "rankfile":
        return rankfile(placement, hosts)
    if fmt == "machinefile":
        return machinefile(placement, hosts)
    if fmt in ("smpi", "slurm"):   # SLURM_HOSTFILE (srun --distribution=arbitrary): same layout
        return smpi_hostfile(placement, hosts)
    raise PlacementError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")


def launch_args(flavour: str, order_file: str, hosts: list[str], ppn: int, workdir: Path) -> list[str]:
    """For `mpiopt run --rank-order FILE --hosts … --ppn K`: validates the order (a permutation
    of 0..P-1), writes the Open MPI rankfile or Hydra machinefile into `workdir` and returns the
    launcher arguments that make rank r start on the node the order gives it."""
    order = read_order(order_file)
    placement = order_placement(order, int(ppn))
    hosts = read_hosts(hosts)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if flavour == "openmpi":
        path = workdir / "rankfile"
        path.write_text(rankfile(placement, hosts))
        return ["--rankfile", str(path)]
    if flavour == "mpich":
        path = workdir / "machinefile"
        path.write_text(machinefile(placement, hosts))
        return ["-f", str(path)]
    raise PlacementError(f"unknown MPI flavour {flavour!r} (expected openmpi or mpich)")
