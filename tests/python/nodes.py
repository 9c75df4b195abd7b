#!/usr/bin/env python3
"""A test cluster on this one machine: Linux namespaces as nodes (docs/nodes.md).

Each node is a set of namespaces held by one long-lived process (`sleep infinity` under `unshare`):
its own hostname (UTS), its own /dev/shm (IPC namespace and a mount namespace with a private tmpfs
there; /etc/hosts in it is the cluster's, naming every node), loopback up, and `eth0`, one end of a
veth pair whose other end is a port of a bridge. The bridge lives in one more namespace of its own
(the "switch"), so nothing of the cluster is in the machine's own network namespace: no interface,
no address, no route. The addresses come from 192.0.2.0/24 (TEST-NET-1, RFC 5737: documentation
only, never routed) and exist only inside the nodes; traffic stays between them.

Jobs start on the first node, as from a batch job's first node: the launcher (mpirun.openmpi,
mpirun.mpich) runs there and reaches the other nodes through an ssh stand-in, `agent`, that enters
a node's namespaces with nsenter and runs the command with the fresh environment an ssh login
gives (HOME, PATH, USER, LOGNAME, SHELL): Open MPI takes it as plm_rsh_agent
(OMPI_MCA_plm_rsh_agent), MPICH's Hydra as `-launcher ssh -launcher-exec` (HYDRA_LAUNCHER,
HYDRA_LAUNCHER_EXEC); Hydra also gets HYDRA_IFACE=eth0, as it otherwise tells the proxies a
hostname that resolves to loopback inside a node.

Teardown always runs: Cluster.stop() from a `with` block, a fixture's finaliser or atexit kills
every process inside the nodes and the switch, which frees the namespaces and, with them, the veth
pairs, the bridge and each node's /dev/shm. A run killed before that leaves holders behind: they
carry MPIOPT_TEST_NODES=<tag>:<name>:<owner pid> in their environment, and sweep() (run by
start()) ends those whose owner is gone.

By hand, as root:

    python3 tests/python/nodes.py up 2          # nodes n1, n2 (stays up; prints them)
    python3 tests/python/nodes.py run -np 4 --ppn 2 -- ./app args   # 2 ranks a node, Open MPI
    python3 tests/python/nodes.py run --flavour mpich -np 4 --ppn 2 -- ./app
    python3 tests/python/nodes.py exec n2 -- ip addr        # any command on one node
    python3 tests/python/nodes.py exec n1 -- mpiopt run -np 4 --rank-order ORDER --hosts n1,n2 --ppn 2 -- ./app
    python3 tests/python/nodes.py down
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

MARK = "MPIOPT_TEST_NODES"             # environment marker of a holder: <tag>:<name>:<owner pid>
STATE = Path("/run/mpiopt-test-nodes")  # one directory a cluster: state.json, hosts, agent
SUBNET = "192.0.2"                     # TEST-NET-1 (RFC 5737), only inside the nodes
IFACE = "eth0"                         # a node's interface on the bridge
LOGIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
NAMESPACES = ("net", "uts", "ipc", "mnt")
MAX_NODES = 250
# the known MPICH 4.0.2 (Debian 12) finalize hang across nodes, see docs/nodes.md
MPICH_FINALIZE_HANG = ("MPICH 4.0.2 finalize hang across nodes (known vendor bug, docs/nodes.md): "
                       "the program's results were complete, then MPI_Finalize did not return")
# seconds a job has to end once its results are complete before it counts as hung in
# MPI_Finalize (Cluster.run's grace). MPICH's known hang comes in about half of its runs and is a
# warning whichever way a slow end is read, so its jobs are not waited for as long as Open MPI's,
# where a hang fails
FINALIZE_GRACE = {"mpich": 3.0}
DEFAULT_FINALIZE_GRACE = 8.0


def finalize_grace(flavour: str) -> float:
    return FINALIZE_GRACE.get(flavour, DEFAULT_FINALIZE_GRACE)


class Unsupported(RuntimeError):
    """Namespaces cannot be made here (not root, or unshare refused): tests skip with this."""


def _run(cmd, check=True, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{shlex.join(map(str, cmd))}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def unsupported_reason() -> str | None:
    """Why namespaces cannot be made here, or None."""
    for tool in ("unshare", "nsenter", "ip"):
        if not shutil.which(tool):
            return f"{tool} is not installed (util-linux, iproute2)"
    if os.geteuid() != 0:
        return "the namespace nodes need root (unshare --net --uts --ipc --mount)"
    r = subprocess.run(["unshare", "--net", "--uts", "--ipc", "--mount", "true"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return f"unshare refused: {r.stderr.strip() or f'exit {r.returncode}'}"
    return None


def _ns_inode(pid: int, ns: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/{ns}").st_ino
    except OSError:
        return None


def _pids() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def _environ(pid: int) -> dict:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        k, _, v = item.partition(b"=")
        if k:
            out[k.decode(errors="replace")] = v.decode(errors="replace")
    return out


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not alive
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _describe(pid: int) -> str:
    """pid (comm) state, CPU seconds, and where the kernel has it waiting: for a hang's report."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        wchan = Path(f"/proc/{pid}/wchan").read_text().strip() or "-"
        return f"{pid} ({comm}) state {fields[0]}, {cpu:.1f} s CPU, wchan {wchan}"
    except (OSError, ValueError, IndexError):
        return f"{pid} (gone)"


# the launchers' own processes (Hydra's, Open MPI's), which map MPI libraries too
LAUNCHER_COMMS = re.compile(r"^(mpirun|mpiexec|hydra_|orted|orterun|prte|prted|sh|bash|python|srun|salloc|sbatch|slurmstepd)")


def _is_mpi_program(pid: int) -> bool:
    """Whether the process is a rank: it maps an MPI library and is no launcher, proxy or shell."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        maps = Path(f"/proc/{pid}/maps").read_text()
    except (OSError, ValueError):
        return False
    return not LAUNCHER_COMMS.match(comm) and bool(re.search(r"/lib(mpi|mpich)\.so", maps))


def stacks(pid: int) -> str:
    """Every thread's stack of process pid (gdb, attached for a moment), or why not."""
    try:
        r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"(no stack: {e})"
    return "\n".join(line for line in r.stdout.splitlines() if line.startswith(("#", "Thread")))


def stack_summary(hang_stacks: dict[str, str]) -> str:
    """Each stuck rank's main thread's frames by function name, innermost first: a line for the
    hang's warning (gdb lists the threads last first: the main one is "Thread 1")."""
    out = []
    for who, text in hang_stacks.items():
        threads = re.split(r"^(?=Thread )", text, flags=re.M)
        main = next((t for t in threads if t.startswith("Thread 1 ")), threads[0])
        names = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(", main, re.M)
        out.append(f"{who.split(' state')[0]}: {' < '.join(names[:8])}")
    return "; ".join(out)


def finalize_hang_is_the_vendors(hang_stacks: dict[str, str]) -> tuple[bool, str]:
    """Whether the stuck ranks are where MPICH 4.0.2's finalize hang leaves them: inside the
    vendor's MPI_Finalize (PMPI_Finalize / MPIR/MPID finalize frames: its PMI barrier, the UCX
    close) and nowhere in libmpiopt, whose own work at MPI_Finalize (its windows, its report)
    runs inside it too. (False, why) otherwise: a hang of mpiopt's, or one nobody looked at."""
    if not hang_stacks:
        return False, "no stuck MPI process was looked at"
    for who, text in hang_stacks.items():
        if "libmpiopt" in text or re.search(r"\bmpiopt_\w+", text):
            return False, f"{who} is stuck in libmpiopt:\n{text}"
        if not re.search(r"\b(P?MPI_Finalize|MPI[RD]_Finalize|MPII_Finalize)\b", text, re.I):
            return False, f"{who} is not in MPI_Finalize:\n{text}"
    return True, ""


def _kill_in_namespace(inode: int, ns: str = "net", keep: set[int] = frozenset()) -> list[int]:
    """SIGKILL every process whose `ns` namespace is `inode`, but `keep`; the pids killed."""
    killed = []
    for pid in _pids():
        if pid in keep or pid == os.getpid():
            continue
        if _ns_inode(pid, ns) == inode:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    return killed


def sweep(all_owners: bool = False) -> list[str]:
    """Ends the holders a killed run left (owner gone; with all_owners, every cluster's, by-hand
    ones too), everything inside their namespaces, and their state directories; what it ended."""
    ended = []
    holders = {}
    for pid in _pids():
        mark = _environ(pid).get(MARK)
        if not mark:
            continue
        tag, name, owner = (mark.split(":") + ["", "", "0"])[:3]
        owner = int(owner) if owner.isdigit() else 0
        persistent = owner == 0 or (STATE / tag / "persistent").exists()
        if all_owners or (not persistent and not _alive(owner)):
            holders.setdefault(tag, []).append((pid, name))
    for tag, members in holders.items():
        for pid, name in members:
            inode = _ns_inode(pid, "net")
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            if inode:
                _kill_in_namespace(inode)
            ended.append(f"{tag}/{name} (pid {pid})")
        shutil.rmtree(STATE / tag, ignore_errors=True)
    # state directories whose holders are all gone
    if STATE.is_dir():
        for d in STATE.iterdir():
            try:
                state = json.loads((d / "state.json").read_text())
            except (OSError, ValueError):
                continue
            if not any(_alive(n["pid"]) for n in state["nodes"]):
                shutil.rmtree(d, ignore_errors=True)
    return ended


@dataclasses.dataclass
class Node:
    name: str
    index: int          # 1-based
    pid: int            # the holder (sleep), inside every namespace of the node
    address: str
    inodes: dict = dataclasses.field(default_factory=dict)   # namespace -> inode

    def enter(self) -> list[str]:
        """The command prefix that runs a command inside this node (the caller's environment)."""
        return ["nsenter", "-t", str(self.pid), "--uts", "--net", "--ipc", "--mount", "--"]


@dataclasses.dataclass
class JobResult:
    """One job on the cluster. finalize_hang: the job printed what `done` matches (its results,
    complete) and then did not end within the grace; it was killed, and this says which
    processes were left on which node. timed_out: it never printed that within the timeout."""
    cmd: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    elapsed: float
    finalize_hang: str | None = None
    timed_out: bool = False
    leftovers: list[str] = dataclasses.field(default_factory=list)
    # with finalize_hang: each stuck MPI process ("node: pid (comm)") and its threads' stacks
    hang_stacks: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.finalize_hang and not self.timed_out


class Cluster:
    """N namespace nodes n1..nN on a bridge. Cluster.start(2) makes them; stop() ends them."""

    def __init__(self, tag: str, nodes: list[Node], switch_pid: int, directory: Path):
        self.tag, self.nodes, self.switch_pid, self.directory = tag, nodes, switch_pid, directory
        self.switch_inode = _ns_inode(switch_pid, "net")
        self._stopped = False
        self.daemons: set[str] = set()

    # ---- making and ending ----------------------------------------------------------------
    @classmethod
    def start(cls, n: int, tag: str | None = None, persistent: bool = False) -> "Cluster":
        reason = unsupported_reason()
        if reason:
            raise Unsupported(reason)
        if not 1 <= n <= MAX_NODES:
            raise ValueError(f"1 to {MAX_NODES} nodes")
        sweep()
        owner = 0 if persistent else os.getpid()
        tag = tag or f"c{os.getpid()}x{time.monotonic_ns() % 100000}"
        directory = STATE / tag
        directory.mkdir(parents=True, exist_ok=False)
        if persistent:
            (directory / "persistent").touch()
        names = [f"n{i}" for i in range(1, n + 1)]
        hosts = directory / "hosts"
        hosts.write_text("127.0.0.1\tlocalhost\n" +
                         "".join(f"{SUBNET}.{i}\t{h}\n" for i, h in enumerate(names, 1)))
        holders: list[int] = []
        cluster = None
        try:
            switch = cls._holder(tag, "switch", owner, ["--net"], holders)
            nodes = []
            for i, name in enumerate(names, 1):
                pid = cls._holder(tag, name, owner, ["--net", "--uts", "--ipc", "--mount",
                                                     "--propagation", "private"], holders)
                nodes.append(Node(name, i, pid, f"{SUBNET}.{i}",
                                  {ns: _ns_inode(pid, ns) for ns in NAMESPACES}))
            cluster = cls(tag, nodes, switch, directory)
            cluster._configure(hosts)
            cluster._write_agent()
            (directory / "state.json").write_text(json.dumps(cluster.to_json(), indent=1))
        except BaseException:
            if cluster:
                cluster.stop()
            else:
                for pid in holders:
                    inode = _ns_inode(pid, "net")
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                    if inode:
                        _kill_in_namespace(inode)
                shutil.rmtree(directory, ignore_errors=True)
            raise
        if not persistent:
            atexit.register(cluster.stop)
        return cluster

    @staticmethod
    def _holder(tag, name, owner, flags, holders) -> int:
        """A process holding new namespaces (flags of unshare); its pid once they exist."""
        env = {"PATH": LOGIN_PATH, MARK: f"{tag}:{name}:{owner}"}
        # unshare forks (--fork) `sleep infinity`, which is in the namespaces; --kill-child: the
        # sleep dies with unshare. The shell prints the pid of the process holding them.
        p = subprocess.Popen(["unshare", *flags, "--fork", "--kill-child", "--", "sh", "-c",
                              'echo $$; exec sleep infinity'],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, start_new_session=True, text=True)
        holders.append(p.pid)
        line = p.stdout.readline().strip()
        if not line.isdigit():
            err = p.stderr.read() if p.poll() is not None else ""
            raise Unsupported(f"unshare {' '.join(flags)} failed: {err.strip() or 'no pid'}")
        holders.append(int(line))
        p.stdout.close()
        p.stderr.close()
        return int(line)

    def _in(self, pid: int, *cmd, ns=("--net",)):
        return _run(["nsenter", "-t", pid, *ns, "--", *cmd])

    def _configure(self, hosts: Path) -> None:
        sw = self.switch_pid
        self._in(sw, "ip", "link", "set", "lo", "up")
        self._in(sw, "ip", "link", "add", "br0", "type", "bridge")
        self._in(sw, "ip", "link", "set", "br0", "up")
        for node in self.nodes:
            everything = ("--net", "--uts", "--ipc", "--mount")
            self._in(node.pid, "hostname", node.name, ns=everything)
            self._in(node.pid, "mount", "-t", "tmpfs", "-o", "mode=1777,size=256m",
                     f"mpiopt-{node.name}", "/dev/shm", ns=everything)
            self._in(node.pid, "mount", "--bind", hosts, "/etc/hosts", ns=everything)
            # no IPv6 at all (no link-local chatter, nothing an MPI could try besides the block)
            self._in(node.pid, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
            self._in(node.pid, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1")
            self._in(node.pid, "ip", "link", "set", "lo", "up")
            # the veth pair: `node.name` a port of the bridge in the switch, eth0 in the node
            self._in(sw, "ip", "link", "add", node.name, "type", "veth", "peer", "name", IFACE,
                     "netns", str(node.pid))
            self._in(sw, "ip", "link", "set", node.name, "master", "br0", "up")
            self._in(node.pid, "ip", "addr", "add", f"{node.address}/24", "dev", IFACE)
            self._in(node.pid, "ip", "link", "set", IFACE, "up")

    def _write_agent(self) -> None:
        """The ssh stand-in: agent [ssh options] HOST COMMAND… runs COMMAND (joined by spaces, as
        ssh does) by sh inside HOST's namespaces, with a login's fresh environment."""
        cases = "".join(f"  {n.name}|{n.address}) pid={n.pid} ;;\n" for n in self.nodes)
        path = self.directory / "agent"
        path.write_text(f"""#!/bin/sh
# ssh stand-in for the namespace nodes of cluster {self.tag} (tests/python/nodes.py)
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-l|-i|-F) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1; shift
case "$host" in
{cases}  *) echo "agent: no node $host in cluster {self.tag}" >&2; exit 255 ;;
esac
exec nsenter -t "$pid" --uts --net --ipc --mount -- env -i HOME="${{HOME:-/root}}" \\
  PATH={LOGIN_PATH} USER="$(id -un)" LOGNAME="$(id -un)" SHELL=/bin/sh sh -c "$*"
""")
        path.chmod(0o755)

    @property
    def agent(self) -> Path:
        return self.directory / "agent"

    def to_json(self) -> dict:
        return {"tag": self.tag, "switch": self.switch_pid, "directory": str(self.directory),
                "nodes": [dataclasses.asdict(n) for n in self.nodes]}

    @classmethod
    def load(cls, tag: str | None = None) -> "Cluster":
        """A cluster already up (by `nodes.py up`): the only one, or `tag`."""
        dirs = [STATE / tag] if tag else [p.parent for p in sorted(STATE.glob("*/state.json"))]
        if not dirs or not (dirs[0] / "state.json").exists():
            raise RuntimeError("no cluster is up (nodes.py up N)")
        if len(dirs) > 1:
            raise RuntimeError(f"several clusters are up: {', '.join(d.name for d in dirs)} (--tag)")
        state = json.loads((dirs[0] / "state.json").read_text())
        nodes = [Node(**n) for n in state["nodes"]]
        c = cls(state["tag"], nodes, state["switch"], Path(state["directory"]))
        if not all(_alive(n.pid) for n in nodes):
            raise RuntimeError(f"cluster {c.tag} is broken (a holder is gone): nodes.py down")
        return c

    def stop(self) -> list[str]:
        """Ends every process in the nodes and the switch; the namespaces, veths, bridge and the
        nodes' /dev/shm go with them. Returns the processes other than the holders it had to end."""
        if self._stopped:
            return []
        self._stopped = True
        extra = []
        for node in self.nodes:
            extra += [_describe(p) for p in self.processes(node)]
        holders = {n.pid for n in self.nodes} | {self.switch_pid}
        for _ in range(50):
            for node in self.nodes:
                if node.inodes.get("net"):
                    _kill_in_namespace(node.inodes["net"])
            if self.switch_inode:
                _kill_in_namespace(self.switch_inode)
            # the unshare parents (outside the namespaces) end when their child does
            if not self.remaining():
                break
            time.sleep(0.05)
        for pid in holders:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        shutil.rmtree(self.directory, ignore_errors=True)
        return extra

    def remaining(self) -> list[str]:
        """What is left of the cluster: processes in any of its namespaces (empty once stopped)."""
        wanted = {(ns, n.inodes[ns]) for n in self.nodes for ns in NAMESPACES if n.inodes.get(ns)}
        if self.switch_inode:
            wanted.add(("net", self.switch_inode))
        left = []
        for pid in _pids():
            for ns in NAMESPACES:
                if (ns, _ns_inode(pid, ns)) in wanted and _alive(pid):
                    left.append(f"{ns}: {_describe(pid)}")
                    break
        return left

    # ---- inside the nodes ---------------------------------------------------------------------
    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    @property
    def hosts(self) -> list[str]:
        return [n.name for n in self.nodes]

    def processes(self, node: Node) -> list[int]:
        """The processes in the node other than its holder and its daemons (self.daemons: the
        names of the processes a service on the nodes keeps there, slurm_nodes.py's): a job's,
        still there."""
        return [p for p in _pids() if p != node.pid and _ns_inode(p, "net") == node.inodes["net"]
                and _alive(p) and MARK not in _environ(p) and _comm(p) not in self.daemons]

    def end_jobs(self) -> list[str]:
        """Kills whatever runs in the nodes but the holders; what it found, per node."""
        found = []
        for node in self.nodes:
            pids = self.processes(node)
            found += [f"{node.name}: {_describe(p)}" for p in pids]
            for p in pids:
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(self.processes(n) for n in self.nodes):
            time.sleep(0.05)
        return found

    def shm(self, node: Node) -> list[str]:
        """The files in a node's own /dev/shm."""
        r = _run([*node.enter(), "ls", "-A", "/dev/shm"])
        return r.stdout.split()

    def exec(self, name: str, cmd, **kw) -> subprocess.CompletedProcess:
        """Runs a command inside one node, with this process's environment (text output)."""
        return subprocess.run([*self.node(name).enter(), *map(str, cmd)], text=True, **kw)

    def env(self, base: dict | None = None) -> dict:
        """The environment that makes both MPIs' launchers reach the nodes through the agent."""
        out = dict(os.environ if base is None else base)
        out.update({"OMPI_MCA_plm_rsh_agent": str(self.agent), "HYDRA_LAUNCHER": "ssh",
                    "HYDRA_LAUNCHER_EXEC": str(self.agent), "HYDRA_IFACE": IFACE})
        # the nodes share this machine's cores: a job of more ranks than cores is oversubscribed
        # though no node is, so that neither MPI nor mpiopt sees it; waiting by polling then
        # starves the rank that would answer (a 2 x 2 checker run: 19.6 s polling, 2.3 s so)
        if len(os.sched_getaffinity(0)) < 2 * len(self.nodes):
            out.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
            out.setdefault("MPIOPT_YIELD", "1")
        return out

    def launcher(self, flavour: str, np: int, ppn: int, export=(), env: dict | None = None) -> list[str]:
        """mpirun for `np` ranks, `ppn` a node, filling the nodes in order (rank r on node r // ppn);
        `export`: the environment variables the ranks on the other nodes need besides LD_PRELOAD
        and MPIOPT_* of env() (Open MPI passes on only those it is told to, as on a real cluster;
        Hydra passes on all)."""
        full = self.env(env)
        export = [*(["LD_PRELOAD"] if full.get("LD_PRELOAD") else []),
                  *sorted(k for k in full if k.startswith("MPIOPT_")), *export]
        nnodes = -(-np // ppn)
        if nnodes > len(self.nodes):
            raise ValueError(f"{np} ranks at {ppn} a node need {nnodes} nodes; the cluster has "
                             f"{len(self.nodes)}")
        hosts = ",".join(f"{n.name}:{ppn}" for n in self.nodes[:nnodes])
        if flavour == "openmpi":
            cmd = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "--host", hosts,
                   "--map-by", "slot", "--bind-to", "none", "-np", str(np)]
            for name in export:
                cmd += ["-x", name]
            return cmd
        if flavour == "mpich":
            return ["mpirun.mpich", "-hosts", hosts, "-np", str(np)]
        raise ValueError(f"unknown flavour {flavour!r}")

    def run(self, cmd, env: dict | None = None, timeout: float = 120, done: str | None = None,
            grace: float = DEFAULT_FINALIZE_GRACE, on: str | None = None) -> JobResult:
        """Runs `cmd` on the first node (or `on`), as a user there would, with env() added. `done`:
        a regex the job's stdout or stderr matches once its results are complete (before
        MPI_Finalize); if the job has not ended `grace` seconds after that, it counts as hung in
        finalize: the processes left on each node are recorded and killed. Without `done` (or
        before it) the job is killed at `timeout`. Whatever the end, nothing of the job is left in
        the nodes afterwards (JobResult.leftovers says what had to be killed after the job's
        launcher ended)."""
        from mpiopt import jobs
        node = self.node(on) if on else self.nodes[0]
        full = [*node.enter(), *map(str, cmd)]
        start = time.monotonic()
        proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env(env), start_new_session=True)
        chunks = {"out": [], "err": []}
        seen = threading.Event()
        pattern = re.compile(done, re.M) if done else None

        def read(stream, key):
            for line in iter(stream.readline, b""):
                text = line.decode(errors="replace")
                chunks[key].append(text)
                if pattern and pattern.search(text):
                    seen.set()
            stream.close()

        readers = [threading.Thread(target=read, args=(proc.stdout, "out"), daemon=True),
                   threading.Thread(target=read, args=(proc.stderr, "err"), daemon=True)]
        for t in readers:
            t.start()
        done_at = None
        hang, timed_out, hang_stacks = None, False, {}
        while proc.poll() is None:
            now = time.monotonic()
            if seen.is_set() and done_at is None:
                done_at = now
            if done_at is not None and now - done_at > grace:
                left = [f"{n.name}: {_describe(p)}" for n in self.nodes for p in self.processes(n)]
                hang = (f"did not end {grace:.0f} s after its results were complete; processes "
                        f"left: " + "; ".join(left))
                # where the ranks are stuck: the vendor's known hang, or something else
                hang_stacks = {f"{n.name}: {_describe(p)}": stacks(p) for n in self.nodes
                               for p in self.processes(n) if _is_mpi_program(p)}
                break
            if now - start > timeout:
                timed_out = True
                break
            time.sleep(0.05)
        if proc.poll() is None:
            jobs.end(proc)
        for t in readers:
            t.join(timeout=10)
        # the launcher's end can come before the other nodes' last processes have gone: the
        # agent's shell there waiting for its proxy to end (MPICH at 4 x 2 under load 10-12:
        # sh with hydra_pmi_proxy a zombie, or still in R with no CPU time, as mpirun.mpich
        # exited; 2 s was not always enough). What is still there after 5 s is left over. After
        # a hang too, once the launcher is ended: its proxies go the same way (seen once the
        # stacks were read, their ranks held by gdb a moment: two proxies and a shell still
        # exiting at once)
        if not timed_out:
            settle = time.monotonic() + 5
            while time.monotonic() < settle and any(self.processes(n) for n in self.nodes):
                time.sleep(0.05)
        leftovers = self.end_jobs()
        return JobResult(full, proc.returncode if not (hang or timed_out) else None,
                         "".join(chunks["out"]), "".join(chunks["err"]), time.monotonic() - start,
                         hang, timed_out, leftovers, hang_stacks)

    def mpirun(self, flavour: str, np: int, ppn: int, argv, env=None, export=(), **kw) -> JobResult:
        """An MPI program on the nodes: launcher(flavour, np, ppn) + argv, run on the first node
        (the flavour's finalize_grace unless kw names one)."""
        kw.setdefault("grace", finalize_grace(flavour))
        return self.run([*self.launcher(flavour, np, ppn, export, env), *map(str, argv)], env=env, **kw)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def host_leftovers() -> list[str]:
    """What the machine's own namespaces hold of any test cluster: holders (by their marker),
    interfaces named as the cluster's (a bridge br0 or veth n<k> in the machine's namespace would
    be one), state directories. Empty when every cluster is down."""
    out = [f"holder pid {p} ({_environ(p)[MARK]})" for p in _pids() if MARK in _environ(p)]
    r = _run(["ip", "-o", "link", "show"], check=False)
    for line in r.stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        if re.fullmatch(r"n\d+", name) or name == "br0":
            out.append(f"interface {name} in the machine's network namespace")
    if STATE.is_dir():
        out += [f"state directory {d}" for d in STATE.iterdir()]
    return out


# ---- the command line ---------------------------------------------------------------------------
def _main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="nodes.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    up = sub.add_parser("up", help="start N nodes n1..nN (they stay up until `down`)")
    up.add_argument("n", type=int)
    up.add_argument("--tag", help="the cluster's name (default: made up)")
    up.add_argument("--slurm", action="store_true", help="and a Slurm on them: slurmctld on n1, "
                    "slurmd and munged on every node (slurm_nodes.py, docs/nodes.md)")
    run = sub.add_parser("run", help="run an MPI program across the nodes (from n1)")
    run.add_argument("--flavour", default="openmpi", choices=["openmpi", "mpich"])
    run.add_argument("-np", type=int, required=True)
    run.add_argument("--ppn", type=int, required=True, help="ranks a node")
    run.add_argument("-x", action="append", default=[], metavar="VAR",
                     help="Open MPI: pass VAR on to the ranks of the other nodes (repeatable)")
    run.add_argument("--timeout", type=float, default=600)
    run.add_argument("--done", help="regex of the output once the results are complete: a job "
                     "that then does not end within 8 s is reported as hung in MPI_Finalize")
    run.add_argument("command", nargs=argparse.REMAINDER)
    ex = sub.add_parser("exec", help="run any command inside one node (from its namespaces)")
    ex.add_argument("node")
    ex.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("status", help="the cluster's nodes, addresses, processes, /dev/shm files")
    sub.add_parser("down", help="end the cluster (and any left by a killed run)")
    for s in (run, ex, sub.choices["status"], sub.choices["down"]):
        s.add_argument("--tag")
    a = p.parse_args(argv)
    command = getattr(a, "command", None)
    if command and command[0] == "--":
        command = command[1:]
    try:
        if a.what == "up":
            c = Cluster.start(a.n, a.tag, persistent=True)
            if a.slurm:
                import slurm_nodes
                try:
                    slurm_nodes.Slurm.start(c)
                except BaseException:
                    c.stop()
                    raise
                print(f"slurm: slurmctld on {c.hosts[0]}, slurmd and munged on every node; "
                      f"`nodes.py exec {c.hosts[0]} -- sinfo`")
            for n in c.nodes:
                print(f"{n.name}\t{n.address}\tholder pid {n.pid}")
            print(f"cluster {c.tag}: agent {c.agent}; hosts {','.join(c.hosts)}")
            print(f"for a launcher of your own, inside a node: OMPI_MCA_plm_rsh_agent={c.agent} "
                  f"HYDRA_LAUNCHER=ssh HYDRA_LAUNCHER_EXEC={c.agent} HYDRA_IFACE={IFACE}")
            return 0
        if a.what == "down":
            ended = sweep(all_owners=True)
            print("\n".join(f"ended {e}" for e in ended) or "no cluster was up")
            return 0
        c = Cluster.load(a.tag)
        if a.what == "status":
            for n in c.nodes:
                print(f"{n.name}\t{n.address}\tholder {n.pid}\tprocesses {len(c.processes(n))}"
                      f"\t/dev/shm: {' '.join(c.shm(n)) or '-'}")
            return 0
        if not command:
            p.error("no command (… -- PROGRAM ARGS)")
        if a.what == "exec":
            return c.exec(a.node, command, env=c.env()).returncode
        r = c.mpirun(a.flavour, a.np, a.ppn, command, export=a.x, timeout=a.timeout, done=a.done)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        if r.finalize_hang:
            print(f"nodes.py: the job {r.finalize_hang}" +
                  (f"\nnodes.py: {MPICH_FINALIZE_HANG}" if a.flavour == "mpich" else ""), file=sys.stderr)
            return 124
        if r.timed_out:
            print(f"nodes.py: the job did not end within {a.timeout:.0f} s; killed", file=sys.stderr)
            return 124
        if r.leftovers:
            print("nodes.py: left after the job, killed: " + "; ".join(r.leftovers), file=sys.stderr)
        return r.returncode
    except (Unsupported, RuntimeError, KeyError, ValueError) as e:
        print(f"nodes.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    sys.exit(_main())
