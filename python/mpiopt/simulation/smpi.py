"""SimGrid SMPI: building mpiopt programs with smpicc, describing a simulated machine, running
smpirun.

Every simulation command goes through here so that the simulated machine and the settings that
make runs deterministic are the same for all of them:

- computation is not timed (`smpi/simulate-computation:no`): the simulated time is network time
  only, for mpiopt's algorithms and for SMPI's own collectives alike (SMPI charges nothing for
  the reductions inside its collectives either, so charging ours would not be a fair race);
- message costs come from the platform alone (`smpi/bw-factor` and `smpi/lat-factor` set to 1
  instead of SMPI's defaults, which were calibrated on one particular cluster), so a message of
  m bytes over one link costs latency + m / bandwidth, as the cost model assumes;
- every message costs its sender and its receiver a software overhead (`smpi/os`, `smpi/or`;
  LogP's o, 0.5 µs each by default). SMPI's default is none, and without it a process receiving
  from 1022 others at once is done in one latency: SMPI's own `ompi` allreduce of small
  messages (a linear reduce to rank 0, then a broadcast) would look faster than any tree on a
  1023-node fat-tree, which no real machine would show;
- buffers of 64 KiB and more are SMPI shared mallocs (`smpi/auto-shared-malloc-thresh`): 1023
  ranks × 8 MiB would otherwise need real memory for every rank. Their contents are garbage,
  which does not matter because nothing is timed but the network. libmpiopt's scratch takes
  malloc under SMPI (scratch.c), so it is shared too;
- collectives other than the allreduce under test run fixed logarithmic algorithms that know
  nothing of nodes (SETUP_COLLECTIVES), not SMPI's linear `default` ones nor its `mpich`
  selection, whose node-aware algorithms cost the host O(p²) on every new communicator;
- libmpiopt.so is privatized (`smpi/privatize-libs`): every simulated rank gets its own copy of
  the library's globals, as every process does in a real run.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import jobs, mpi
from ..errors import UsageError

PLATFORMS = ("cluster", "torus", "fattree")
FLAVOUR = "smpi"
SHARED_MALLOC_THRESHOLD = 64 * 1024
# SMPI's collectives other than the allreduce under test (a vendor's is --cfg=smpi/allreduce,
# which comes later and takes precedence): setup (MPI_Comm_dup, MPI_Comm_split_type, libmpiopt's
# node layout allgather) and the benchmark's closing reductions. Each is named, logarithmic and
# flat, because both obvious choices cost the host, not the simulation, dearly at scale:
# - SMPI's `default` allgather is linear and nonblocking: every rank waits for 2(p-1) requests,
#   and SimGrid 3.32 unregisters each finished one from a list as long, so 1024 ranks spent
#   their whole run (tens of minutes) in one MPI_Allgather;
# - its `mpich` selection (bcast, reduce, allreduce) is node-aware: the first call on a
#   communicator runs Comm::init_smp, a ring allgather of p steps of p messages. Every new
#   communicator's constructor broadcasts its id, so each MPI_Comm_dup paid it too: at 1024
#   ranks, 16 a node, 20 s of host time a communicator, and 16 times that at 4096.
# With these, the dup costs 0.15 s there. SMPI's node-aware allreduces under test (`mpich`,
# `mvapich2`, the smp_* ones) still pay init_smp once for each communicator they run on.
SETUP_COLLECTIVES = {"allgather": "rdb", "bcast": "binomial_tree", "barrier": "ompi_recursivedoubling",
                     "reduce": "binomial", "gather": "ompi_binomial", "allreduce": "rdb"}


@dataclass(frozen=True)
class Network:
    """The links of a simulated machine. Defaults: a 100 Gb/s network with 1 µs per link (per hop
    on the torus and fat-tree), and 4× that bandwidth between ranks sharing a node."""
    link_bandwidth: float = 12.5e9      # bytes/s
    link_latency: float = 1e-6          # seconds per link
    loopback_bandwidth: float = 50e9    # bytes/s between ranks on one node
    loopback_latency: float = 0.2e-6
    send_overhead: float = 0.5e-6       # seconds of the sender's time per message
    recv_overhead: float = 0.5e-6       # seconds of the receiver's time per message


def available() -> bool:
    return bool(shutil.which("smpicc") and shutil.which("smpirun"))


def build_dir() -> Path:
    return mpi.build_dir(FLAVOUR)


def build(targets: list[str]) -> Path:
    """Builds libmpiopt (without the LD_PRELOAD entry points: SMPI defines MPI_* itself) and the
    given targets with smpicc into build/smpi/, and returns build/smpi/bin. Configures once;
    later calls are an up-to-date check. flock: several commands may build at once."""
    if not available():
        raise RuntimeError("SimGrid SMPI is not installed (smpicc, smpirun: Debian package "
                           "libsimgrid-dev, see `make deps`)")
    root = mpi.repo_root()
    out = build_dir()
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.parent / f"{FLAVOUR}.build.log"
    with open(out.parent / f".lock-{FLAVOUR}", "w") as lock, open(log, "w") as logf:
        fcntl.flock(lock, fcntl.LOCK_EX)
        steps = []
        if not (out / "CMakeCache.txt").exists():
            steps.append(["cmake", "-S", str(root), "-B", str(out), f"-DMPI_FLAVOUR={FLAVOUR}",
                          "-DMPIOPT_INTERPOSE=OFF", "-DCMAKE_BUILD_TYPE=Release",
                          "-DCMAKE_C_COMPILER=smpicc"])
        steps.append(["cmake", "--build", str(out), "-j2", "--target", "mpiopt", *targets])
        for cmd in steps:
            r = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT)
            if r.returncode != 0:
                tail = "".join(log.read_text(errors="replace").splitlines(True)[-30:])
                raise RuntimeError(f"SMPI build failed ({' '.join(cmd)}); see {log}:\n{tail}")
    return out / "bin"


def build_program(src: Path) -> Path:
    """A single-file MPI program that needs nothing of libmpiopt (examples/halo2d.c,
    examples/matrix_replay.c) compiled with smpicc into build/smpi-examples/, named after the
    source; rebuilt when the source is newer than the binary. UsageError without SMPI."""
    if not available():
        raise UsageError("SimGrid SMPI is not installed (smpicc, smpirun: Debian libsimgrid-dev)")
    out_dir = mpi.repo_root() / "build" / "smpi-examples"
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = out_dir / src.stem
    # flock: several simulations may build at once
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
            # built aside and renamed: a simulation still running the old binary keeps it
            fresh = exe.with_name(f"{src.stem}.{os.getpid()}")
            r = subprocess.run(["smpicc", "-O2", "-o", str(fresh), str(src), "-lm"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"smpicc failed on {src}:\n{r.stderr[-2000:]}")
            os.replace(fresh, exe)
    return exe


# ---- the simulated machine ----

def _torus_dims(nodes: int) -> list[int]:
    """A torus of up to 3 dimensions, as close to a cube as possible, with at least `nodes`
    nodes (SimGrid refuses dimensions of size 1)."""
    a = max(1, math.ceil(round(nodes ** (1 / 3), 9)))
    b = max(1, math.ceil(math.sqrt(nodes / a)))
    c = max(1, math.ceil(nodes / (a * b)))
    return [d for d in (a, b, c) if d > 1] or [2]


def _fat_tree_shape(nodes: int) -> tuple[int, int]:
    """(nodes per leaf switch, leaf switches) of a two-level fat-tree with at least `nodes`
    nodes: leaves of about sqrt(nodes) ports down, as many core switches as a leaf has nodes,
    so the tree has full bisection bandwidth."""
    down = max(1, 1 << math.ceil(math.log2(math.sqrt(nodes)))) if nodes > 1 else 1
    leaves = max(1, math.ceil(nodes / down))
    return down, leaves


def platform_xml(kind: str, nodes: int, net: Network = Network(),
                 cores: int = 1) -> tuple[str, int]:
    """The SimGrid platform XML of a machine with at least `nodes` nodes named node-0, node-1, …
    (a torus or fat-tree may have a few more than asked, to fill its shape), `cores` cores each;
    returns the XML and the number of nodes it has. Ranks on one node reach each other through
    the node's loopback link (Network.loopback_*), not the network.

    cluster: every node has its own link to a non-blocking crossbar (2 links per message).
    torus:   a 3-D torus of nodes, one link per hop (dimension-order routing).
    fattree: a two-level fat-tree with full bisection bandwidth (2 or 4 links per message)."""
    if kind not in PLATFORMS:
        raise ValueError(f"unknown platform {kind!r} (expected one of {', '.join(PLATFORMS)})")
    if nodes < 1:
        raise ValueError("a platform needs at least one node")
    topology = ""
    if kind == "torus":
        dims = _torus_dims(nodes)
        nodes = math.prod(dims)
        topology = f' topology="TORUS" topo_parameters="{",".join(map(str, dims))}"'
    elif kind == "fattree":
        down, leaves = _fat_tree_shape(nodes)
        nodes = down * leaves
        # levels; down ports per level; up ports per level; parallel links per level
        topology = f' topology="FAT_TREE" topo_parameters="2;{down},{leaves};1,{down};1,1"'
    xml = f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- written by mpiopt simulate: {kind}, {nodes} nodes -->
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="{kind}" prefix="node-" suffix="" radical="0-{nodes - 1}" speed="1Gf" core="{cores}"
             bw="{net.link_bandwidth:.6g}Bps" lat="{net.link_latency:.6g}s"{topology}
             sharing_policy="SPLITDUPLEX"
             loopback_bw="{net.loopback_bandwidth:.6g}Bps" loopback_lat="{net.loopback_latency:.6g}s"/>
  </zone>
</platform>
"""
    return xml, nodes


def hostfile(ranks: int, ppn: int) -> str:
    """Block placement: ranks r·ppn … r·ppn + ppn − 1 share node r (SMP order, as mpirun fills
    nodes by default)."""
    return "".join(f"node-{r // ppn}\n" for r in range(ranks))


def write_machine(directory: Path, kind: str, ranks: int, ppn: int = 1,
                  net: Network = Network()) -> tuple[Path, Path]:
    """Writes platform.xml and hostfile for `ranks` ranks, `ppn` per node, into `directory`."""
    if ranks < 1 or ppn < 1:
        raise ValueError("ranks and ranks per node must be at least 1")
    directory.mkdir(parents=True, exist_ok=True)
    xml, _ = platform_xml(kind, math.ceil(ranks / ppn), net, cores=ppn)
    platform = directory / f"{kind}.xml"
    platform.write_text(xml)
    hosts = directory / f"hostfile-{ranks}-{ppn}"
    hosts.write_text(hostfile(ranks, ppn))
    return platform, hosts


def _node_latency(kind: str, nodes: int, net: Network):
    """latency(a, b) between nodes a and b of the platform platform_xml(kind, nodes) builds."""
    if kind == "torus":
        dims = _torus_dims(nodes)

        def coords(i):
            out = []
            for d in dims:      # SimGrid numbers torus nodes with the first dimension fastest
                out.append(i % d)
                i //= d
            return out

        def latency(a, b):
            hops = sum(min(abs(x - y), d - abs(x - y)) for x, y, d in zip(coords(a), coords(b), dims))
            return hops * net.link_latency
    elif kind == "fattree":
        down, _ = _fat_tree_shape(nodes)

        def latency(a, b):
            return (2 if a // down == b // down else 4) * net.link_latency
    else:
        def latency(a, b):
            return 2 * net.link_latency
    return latency


def exchange_latency(kind: str, ranks: int, ppn: int = 1, net: Network = Network()) -> float:
    """Mean latency of the messages of the log p algorithms (binomial, recursive doubling,
    halving, Rabenseifner), send and receive overheads included: rank r and r XOR 2^k for every
    step k, with the hostfile's placement. These pairs are nearer than two random nodes (the
    first steps stay within a node, a leaf switch or a torus row), so this, rather than the mean
    over all node pairs, is their α on this platform (without contention: measure_exchange
    gives the real thing)."""
    nodes = math.ceil(ranks / ppn)
    latency = _node_latency(kind, nodes, net)
    overhead = net.send_overhead + net.recv_overhead
    total, count = 0.0, 0
    k = 1
    while k < ranks:
        for r in range(ranks):
            partner = r ^ k
            if partner < ranks:
                a, b = r // ppn, partner // ppn
                total += net.loopback_latency if a == b else latency(a, b)
                count += 1
        k *= 2
    return overhead + (total / count if count else net.loopback_latency)


# ---- running ----

def deterministic_config(library: Path | None = None, net: Network = Network()) -> list[str]:
    """The --cfg options every mpiopt simulation uses (why: see the module docstring)."""
    cfg = ["--cfg=smpi/simulate-computation:no",
           "--cfg=smpi/bw-factor:0:1", "--cfg=smpi/lat-factor:0:1",
           f"--cfg=smpi/os:0:{net.send_overhead:.6g}:0", f"--cfg=smpi/or:0:{net.recv_overhead:.6g}:0",
           f"--cfg=smpi/auto-shared-malloc-thresh:{SHARED_MALLOC_THRESHOLD}",
           *(f"--cfg=smpi/{coll}:{algorithm}" for coll, algorithm in SETUP_COLLECTIVES.items())]
    if library is not None:
        cfg.append(f"--cfg=smpi/privatize-libs:{library}")
    # SimGrid's start-up chatter (every option set, every collective chosen) is not for users
    cfg += ["--log=xbt_cfg.thres:warning", "--log=smpi_config.thres:warning",
            "--log=smpi_coll.thres:warning", "--log=smpi_colls.thres:warning"]
    return cfg


# Memory mappings a simulated rank takes: its copies of the program and of libmpiopt (one dlopen
# each, several segments apiece) and SMPI's folded shared mallocs. A 4096-rank run died at rank
# 4007 with "Could not map folded virtual memory" under Linux's default vm.max_map_count (65530):
# about 16 a rank; this leaves room.
MAPPINGS_PER_RANK = 24
MAP_COUNT = Path("/proc/sys/vm/max_map_count")


def check_map_count(ranks: int) -> None:
    """RuntimeError saying what to do, before a run that would die of too few mappings."""
    need = ranks * MAPPINGS_PER_RANK + 10000
    try:
        have = int(MAP_COUNT.read_text())
    except (OSError, ValueError):
        return
    if have < need:
        raise RuntimeError(f"{ranks} simulated ranks need about {need} memory mappings in one "
                           f"process (SMPI maps a copy of the program and of libmpiopt per rank), "
                           f"and vm.max_map_count is {have}: raise it first, as root: "
                           f"sysctl -w vm.max_map_count={max(need, 262144)}")


def smpirun(program: Path, argv: list[str], ranks: int, platform: Path, hosts: Path,
            config: list[str] | None = None, env: dict | None = None, timeout: float | None = None,
            cwd: Path | None = None, net: Network = Network()) -> subprocess.CompletedProcess:
    """Runs `program argv…` on `ranks` simulated ranks; output is captured (text). Kernels run
    single-threaded (MPIOPT_THREADS=1): simulated ranks share this process and its cores."""
    check_map_count(ranks)
    lib = build_dir() / "lib" / "libmpiopt.so"
    cmd = ["smpirun", "-np", str(ranks), "-platform", str(platform), "-hostfile", str(hosts),
           *deterministic_config(lib if lib.exists() else None, net), *(config or []),
           str(program), *[str(a) for a in argv]]
    run_env = dict(os.environ if env is None else env)
    run_env["MPIOPT_THREADS"] = "1"
    # smpirun leaves temporary files in its working directory. jobs.run: on a timeout, ^C or
    # SIGTERM the whole simulation (smpirun's smpimain child) goes, not smpirun alone.
    return jobs.run(cmd, capture_output=True, text=True, env=run_env,
                    cwd=str(cwd or platform.parent), timeout=timeout)


EXCHANGE_BENCH = "mpiopt-exchange"


def measure_exchange(kind: str, ranks: int, ppn: int = 1, net: Network = Network()) -> dict:
    """mpiopt-exchange's measurements (JSON) of the message patterns of the allreduce algorithms
    on this simulated machine: what libmpiopt's cost model needs to price each step where
    distance and link sharing matter. Simulated runs are deterministic, so results are kept in
    build/smpi/exchange/, keyed by the machine and the benchmark binary, and nothing is warmed
    up or repeated. Steps of one tier (step_tiers) are measured at the tier's two ends; where
    those agree, the steps between take their figures ("from_distance" names which), where they
    do not, a second run measures the steps between. At 4096 ranks on the fat-tree that is 6 of
    12 steps, and the measurement took about a third of the host time (docs/simulation.md)."""
    program = build([EXCHANGE_BENCH]) / EXCHANGE_BENCH
    key = hashlib.sha256(program.read_bytes())
    key.update(repr((kind, ranks, ppn, net)).encode())
    cache = build_dir() / "exchange" / f"{kind}-{ranks}-{ppn}-{key.hexdigest()[:16]}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    tiers = step_tiers(kind, ranks, ppn)
    ends = sorted({d for tier in tiers for d in (tier[0], tier[-1])})
    with tempfile.TemporaryDirectory(prefix="mpiopt-exchange-") as tmp:
        platform, hosts = write_machine(Path(tmp), kind, ranks, ppn, net)

        def run(distances: list[int] | None) -> dict:
            argv = ["-i", "1", "--warmup", "0", "--json"]
            if distances is not None:
                argv += ["--distances", ",".join(map(str, distances))]
            return smpirun_json(program, argv, ranks, platform, hosts, net=net)

        every = [d for tier in tiers for d in tier]
        doc = run(ends if ends and len(ends) < len(every) else None)
        steps = {p["distance"]: p for p in doc["patterns"] if p["pattern"] == "step"}
        between = [d for tier in tiers if not _same_figures(steps, tier[0], tier[-1])
                   for d in tier[1:-1]]
        if between:
            steps.update({p["distance"]: p for p in run(between)["patterns"]
                          if p["pattern"] == "step"})
        for tier in tiers:
            for d in tier:
                if d not in steps:
                    steps[d] = dict(steps[tier[0]], distance=d, from_distance=tier[0])
        others = [p for p in doc["patterns"] if p["pattern"] != "step"]
        doc["patterns"] = [steps[d] for d in sorted(steps)] + others
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def _same_figures(steps: dict, a: int, b: int) -> bool:
    keys = ("small_seconds", "large_seconds")
    return all(math.isclose(steps[a][k], steps[b][k], rel_tol=1e-9, abs_tol=1e-15) for k in keys)


def step_tiers(kind: str, ranks: int, ppn: int = 1) -> list[list[int]]:
    """The distances 2^k of mpiopt-exchange's step patterns on this machine, in runs of
    consecutive distances at which every message crosses the same kind of path: inside a node,
    inside one leaf switch of the fat-tree, across its core. Within a run every rank sends and
    receives one message at once over links of the same kind, so the figures can differ only by
    how the routes share links, which the ends of a run show. Only where ranks and ppn are
    powers of two (the partner's node is then the node XOR distance/ppn; the fold of surplus
    ranks breaks that) and on the fat-tree or the flat cluster; elsewhere (the torus: every
    distance its own hop counts) each distance is a run of its own, measured."""
    distances = []
    while ranks > 1 and (2 << len(distances)) <= ranks:
        distances.append(1 << len(distances))
    power_of_two = ranks & (ranks - 1) == 0 and ppn & (ppn - 1) == 0
    if not power_of_two or kind not in ("fattree", "cluster"):
        return [[d] for d in distances]
    down = _fat_tree_shape(math.ceil(ranks / ppn))[0] if kind == "fattree" else 0

    def path(d):
        if d < ppn:
            return "node"
        return "leaf" if kind == "fattree" and d // ppn < down else "network"

    tiers: list[list[int]] = []
    for d in distances:
        if tiers and path(tiers[-1][-1]) == path(d):
            tiers[-1].append(d)
        else:
            tiers.append([d])
    return tiers


def smpirun_json(program: Path, argv: list[str], ranks: int, platform: Path, hosts: Path,
                 **options) -> dict:
    """smpirun (same options) of a program that prints one JSON document; RuntimeError saying
    what failed otherwise."""
    r = smpirun(program, argv, ranks, platform, hosts, **options)
    if r.returncode != 0:
        raise RuntimeError(f"smpirun failed (exit {r.returncode}) for {program.name} "
                           f"{' '.join(map(str, argv))} on {ranks} ranks:\n{r.stderr[-3000:]}")
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"{program.name} printed no JSON:\n{r.stdout[-2000:]}\n"
                           f"{r.stderr[-2000:]}")


_SIMULATED_TIME = re.compile(r"Simulated time:\s*([0-9.eE+-]+)\s*seconds")


def simulated_time(output: str) -> float | None:
    """The whole run's simulated seconds, from the output of a run with
    `--cfg=smpi/display-timing:yes`; None if absent."""
    m = _SIMULATED_TIME.search(output)
    return float(m.group(1)) if m else None
