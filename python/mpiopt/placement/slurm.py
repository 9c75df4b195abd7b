"""Launching inside a Slurm allocation: `srun --distribution=arbitrary` with SLURM_HOSTFILE, the
file that names the node of each task (line r = task r's host), so a rank order survives srun.

Slurm's own hostlist expansion (`scontrol show hostnames`) is used when present; without it
the compressed SLURM_JOB_NODELIST form (`nid[00576-00577,00606],login1`) is expanded here."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from .errors import PlacementError

_BRACKET = re.compile(r"^([^\[\],]*)\[([^\]]+)\](.*)$")


def in_allocation(env) -> bool:
    return bool(env.get("SLURM_JOB_ID"))


def expand_nodelist(text: str) -> list[str]:
    """`nid[00576-00577,00606],login1` -> nid00576, nid00577, nid00606, login1 (zero padding kept)."""
    out: list[str] = []
    depth, start = 0, 0
    parts = []
    for i, c in enumerate(text + ","):   # split on commas outside brackets
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if depth != 0 or not parts:
        raise PlacementError(f"node list {text!r}: unbalanced brackets")
    for part in parts:
        if not part:
            raise PlacementError(f"node list {text!r}: empty entry")
        m = _BRACKET.match(part)
        if not m:
            if "[" in part or "]" in part:
                raise PlacementError(f"node list {text!r}: bad brackets in {part!r}")
            out.append(part)
            continue
        prefix, ranges, suffix = m.groups()
        if "[" in suffix:
            raise PlacementError(f"node list {text!r}: several bracket groups in one name; "
                                 "give --hosts (scontrol show hostnames) instead")
        for rng in ranges.split(","):
            lo, _, hi = rng.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()) or (hi and int(hi) < int(lo)):
                raise PlacementError(f"node list {text!r}: bad range {rng!r}")
            out += [f"{prefix}{n:0{len(lo)}d}{suffix}" for n in range(int(lo), int(hi or lo) + 1)]
    return out


def allocation_hosts(env) -> list[str]:
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodelist:
        raise PlacementError("SLURM_JOB_ID is set but SLURM_JOB_NODELIST is not: give --hosts")
    if shutil.which("scontrol"):
        r = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.split():
            return r.stdout.split()
    return expand_nodelist(nodelist)


# srun's MPI plugin for each family of MPI, where neither the user (srun --mpi=…) nor the site
# (SLURM_MPI_TYPE) chose one: Slurm's own MpiDefault is `none`, under which Open MPI's ranks find
# no PMIx server and abort, and MPICH's each start alone as a job of one (N jobs of one rank).
# Debian's Open MPI 4.1.4 speaks PMIx only; MPICH, Intel MPI and the rest of its family PMI-2.
MPI_PLUGIN = {"openmpi": "pmix", "mpich": "pmi2"}


def mpi_plugin_args(abi_flavour: str | None, launcher_opts: list[str], env) -> list[str]:
    """`--mpi=PLUGIN` for an MPI of `abi_flavour` ("openmpi" or "mpich"), or nothing where the
    user's srun options or SLURM_MPI_TYPE already choose one, or the family is unknown."""
    if env.get("SLURM_MPI_TYPE") or any(o == "--mpi" or o.startswith("--mpi=")
                                         for o in launcher_opts):
        return []
    plugin = MPI_PLUGIN.get(abi_flavour or "")
    return [f"--mpi={plugin}"] if plugin else []


def srun_launch(np: int, order_file: str | None, hosts: list[str] | None, ppn: int | None,
                workdir: Path, env, mpi_args: list[str] = ()) -> tuple[list[str], dict[str, str]]:
    """The srun prefix and the environment additions for `np` tasks (mpi_args: mpi_plugin_args'
    choice); with a rank order, the SLURM_HOSTFILE is written into `workdir` and the
    distribution made arbitrary."""
    cmd = ["srun", *mpi_args, "-n", str(np)]
    if not order_file:
        return cmd, {}
    if not ppn:
        raise PlacementError("--rank-order under Slurm needs --ppn K")
    # here, not at the top: a launch without a rank order (every `mpiopt run`) needs no numpy
    from .launch import convert
    from .orders import read_order
    from .placements import order_placement
    placement = order_placement(read_order(order_file), int(ppn))
    if placement.nranks != np:
        raise PlacementError(f"{order_file} lists {placement.nranks} ranks but -np is {np}")
    hosts = hosts or allocation_hosts(env)
    path = Path(workdir) / "slurm_hostfile"
    path.write_text(convert(placement, hosts, "slurm"))
    return cmd + ["--distribution=arbitrary"], {"SLURM_HOSTFILE": str(path)}
