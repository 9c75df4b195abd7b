"""A node's shape as the layout advisor needs it: NUMA regions and cores in each, read from hwloc
(`lstopo --of xml` on this machine, or an hwloc XML file) or from a short synthetic description
such as "numa:4 core:8" (hwloc's synthetic notation, levels from the top down)."""
from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from .grid import PlacementError

# synthetic level names (lower case, hwloc's and common aliases) -> the level they count
_LEVELS = {"machine": "above", "package": "above", "socket": "above", "group": "above",
           "numa": "numa", "numanode": "numa", "node": "numa",
           "l3": "below", "l3cache": "below", "l2": "below", "l2cache": "below",
           "l1": "below", "l1cache": "below", "die": "below",
           "core": "core", "pu": "pu"}


@dataclass(frozen=True)
class Topology:
    numa_regions: int        # NUMA regions a node
    cores_per_numa: int      # cores in each (the smallest, if they differ)
    source: str              # where it came from, for the output

    @property
    def cores(self) -> int:
        return self.numa_regions * self.cores_per_numa

    def describe(self) -> str:
        return f"{self.numa_regions} NUMA x {self.cores_per_numa} cores ({self.source})"


def parse_synthetic(text: str) -> Topology:
    """'numa:4 core:8', 'package:2 numa:2 core:8 pu:2': counts multiply down the levels; the
    levels above the NUMA level multiply the regions, those between NUMA and core (caches) and
    core itself multiply the cores of a region; PUs (hardware threads) are not cores."""
    regions, cores, seen_numa, seen_core = 1, 1, False, False
    for token in text.split():
        name, _, count = token.partition(":")
        level = _LEVELS.get(name.lower())
        if level is None or not count.isdigit() or int(count) < 1:
            raise PlacementError(f"topology {text!r}: bad level {token!r} (expected e.g. "
                                 "'numa:4 core:8'; levels: package, numa, l3, l2, core, pu)")
        n = int(count)
        if level == "pu":
            continue
        if level == "core":
            cores *= n
            seen_core = True
        elif level == "numa" or (level == "above" and not seen_numa):
            regions *= n
            seen_numa = seen_numa or level == "numa"
        else:
            cores *= n
    if not seen_numa:       # the levels above count sockets, not memory regions: one region
        regions, cores = 1, regions * cores
    if not seen_core:
        raise PlacementError(f"topology {text!r} has no core level (e.g. 'numa:4 core:8')")
    return Topology(regions, cores, f"synthetic {text!r}" if seen_numa
                    else f"synthetic {text!r}, no NUMA level: one region")


def _cpuset(text: str) -> int:
    """hwloc's cpuset '0x0000000f,0xffffffff' (32-bit words, most significant first) -> int."""
    return int("".join(w[2:] if w.startswith("0x") else w for w in text.split(",")), 16)


def read_hwloc_xml(text: str, source: str) -> Topology:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise PlacementError(f"{source}: not hwloc XML ({e})") from None
    objects = list(root.iter("object"))
    cores = [_cpuset(o.get("cpuset", "0")) for o in objects if o.get("type") == "Core"]
    numas = [_cpuset(o.get("cpuset", "0")) for o in objects if o.get("type") == "NUMANode"]
    if not cores:
        raise PlacementError(f"{source}: no Core objects in the hwloc XML")
    if not numas:
        return Topology(1, len(cores), source)
    per_region = [sum(1 for c in cores if c & n) for n in numas]
    if min(per_region) < 1:
        per_region = [k for k in per_region if k] or [len(cores)]   # memory-only regions
    return Topology(len(per_region), min(per_region), source)


def this_machine() -> Topology:
    tool = shutil.which("lstopo") or shutil.which("hwloc-ls")
    if tool is None:
        raise PlacementError("hwloc's lstopo is not installed (Debian: apt-get install hwloc); "
                             "give --topology 'numa:N core:M' or an hwloc XML file")
    r = subprocess.run([tool, "--of", "xml"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise PlacementError(f"lstopo failed: {r.stderr.strip()[-500:]}")
    return read_hwloc_xml(r.stdout, "this machine (lstopo)")


def topology(spec: str | None) -> Topology:
    """--topology: None = this machine; a file = hwloc XML; else a synthetic description."""
    if spec is None:
        return this_machine()
    path = Path(spec)
    if path.is_file():
        try:
            return read_hwloc_xml(path.read_text(), str(path))
        except (OSError, UnicodeDecodeError) as e:
            raise PlacementError(f"cannot read {path}: {e}") from None
    return parse_synthetic(spec)
