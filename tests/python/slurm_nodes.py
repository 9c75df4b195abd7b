"""A real Slurm on the namespace nodes of tests/python/nodes.py (docs/nodes.md, "Slurm").

Debian 12's slurmctld, slurmd and munged (`make deps`), as a site runs them, one set per node:
slurmctld on n1, a slurmd on every node registered under the node's hostname, and a munged on
every node, all with the same key (a credential made on one node is checked again by the munged
of each node the job reaches). The nodes share this machine's file system, so every node gets
its own state directory: inside each node's mount namespace, `<cluster>/slurm/node` is a bind of
`<cluster>/slurm/<name>` (munge's socket, seed and log; slurmd's spool, pid, log and TmpFS;
slurmctld's state on n1), and /etc/slurm is a bind of `<cluster>/slurm/etc`, where slurm.conf is:
srun, salloc, sbatch and the daemons find it where they would on a cluster, without SLURM_CONF.

The configuration is the plainest a site could have: proctrack/linuxproc and task/none (no
cgroups), select/cons_tres by core, no accounting, and MpiDefault=none, Slurm's own default
(under which a job that does not ask for an MPI plugin gets none: Open MPI aborts, an MPICH job
of N ranks runs as N jobs of one rank).

The daemons run in the foreground as children of the process that started them (they are reaped
here, not left to the machine's init); Cluster.processes() knows them by name
(DAEMON_PROCESSES) from a job's processes. They end with the cluster
(Cluster.stop() kills everything in the nodes) or before it with Slurm.stop()."""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

import nodes

DAEMONS = ("munged", "slurmctld", "slurmd")
# what the daemons keep in the nodes besides themselves: not a job's processes (Cluster.processes)
DAEMON_PROCESSES = (*DAEMONS, "slurmscriptd")
PACKAGES = "slurmctld slurmd slurm-client munge (Debian 12: apt-get install them; `make deps` does)"


def unsupported_reason() -> str | None:
    """Why a Slurm cannot be started on the nodes here, or None."""
    why = nodes.unsupported_reason()
    if why:
        return why
    missing = [d for d in (*DAEMONS, "srun", "sinfo") if not shutil.which(d) and
               not Path("/usr/sbin", d).exists()]
    if missing:
        return f"{', '.join(missing)} not installed: {PACKAGES}"
    return None


def _exe(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class Slurm:
    """slurmctld, slurmd and munged on every node of `cluster`. Slurm.start(cluster) brings them
    up and waits until every node is idle; stop() ends them."""

    def __init__(self, cluster: nodes.Cluster, mpi_default: str = "none"):
        self.cluster = cluster
        self.mpi_default = mpi_default
        self.dir = cluster.directory / "slurm"
        self.node_dir = self.dir / "node"          # the same path in every node, its own there
        self.procs: list[subprocess.Popen] = []

    # ---- making and ending --------------------------------------------------------------------
    @classmethod
    def start(cls, cluster: nodes.Cluster, mpi_default: str = "none", timeout: float = 60) -> "Slurm":
        why = unsupported_reason()
        if why:
            raise nodes.Unsupported(why)
        s = cls(cluster, mpi_default)
        cluster.daemons |= set(DAEMON_PROCESSES)
        try:
            s._configure()
            for node in cluster.nodes:
                s._daemon(node, "munged", "--foreground", "--force", f"--socket={s.munge_socket}",
                          f"--key-file={s.dir / 'munge.key'}", f"--log-file={s.node_dir / 'munged.log'}",
                          f"--seed-file={s.node_dir / 'munged.seed'}", f"--pid-file={s.node_dir / 'munged.pid'}")
            s._wait(lambda: all((s.dir / n.name / "munge.socket").exists() for n in cluster.nodes),
                    timeout, "munged to open its socket on every node")
            s._daemon(cluster.nodes[0], "slurmctld", "-D", "-i")
            for node in cluster.nodes:
                s._daemon(node, "slurmd", "-D")
            s._wait(s._all_idle, timeout, "every node to register with slurmctld, idle")
        except BaseException:
            s.stop()
            raise
        return s

    @property
    def munge_socket(self) -> Path:
        return self.node_dir / "munge.socket"

    def _configure(self) -> None:
        c = self.cluster
        (self.dir / "etc").mkdir(parents=True)
        self.dir.chmod(0o700)
        key = self.dir / "munge.key"          # one key for the cluster, as a site copies it
        key.write_bytes(secrets.token_bytes(128))
        key.chmod(0o400)
        self.node_dir.mkdir()
        for node in c.nodes:
            own = self.dir / node.name
            for sub in ("spool", "tmp", "ctld"):
                (own / sub).mkdir(parents=True)
            own.chmod(0o700)
            nodes._run([*node.enter(), "mount", "--bind", own, self.node_dir])
            nodes._run([*node.enter(), "mount", "--bind", self.dir / "etc", "/etc/slurm"])
        d = self.node_dir
        cpus = max(1, len(os.sched_getaffinity(0)))
        first_job_id = 1000 + secrets.randbelow(60_000_000)
        (self.dir / "etc" / "slurm.conf").write_text(f"""\
# the namespace nodes' Slurm (tests/python/slurm_nodes.py); {d} is each node's own directory
ClusterName=mpiopt-test
SlurmctldHost={c.nodes[0].name}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
MpiDefault={self.mpi_default}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation={d}/ctld
SlurmctldPidFile={d}/slurmctld.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdSpoolDir={d}/spool
SlurmdPidFile={d}/slurmd.pid
SlurmdLogFile={d}/slurmd.log
TmpFS={d}/tmp
ReturnToService=2
SlurmdParameters=config_overrides
# job ids of this cluster's own: a fresh Slurm starts again at 1, and what a job id names outside
# the nodes' private /dev/shm (Open MPI's session directories under the shared /tmp, made from
# the Slurm job and step) must not meet a job of an earlier cluster
FirstJobId={first_job_id}
# every node has this machine's cores (the nodes share them: a job of more ranks than cores is
# oversubscribed though Slurm sees none)
NodeName={nodes_expr(c.hosts)} CPUs={cpus} State=UNKNOWN
PartitionName=nodes Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
""")

    def _daemon(self, node: nodes.Node, name: str, *args) -> None:
        env = {"PATH": nodes.LOGIN_PATH}
        log = (self.dir / node.name / f"{name}.out").open("ab")
        self.procs.append(subprocess.Popen([*node.enter(), _exe(name), *args], env=env,
                                             stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                             start_new_session=True))
        log.close()

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a Slurm daemon ended (exit {dead[0].returncode}) while waiting "
                                   f"for {what}: {self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}: {self.logs()}")
            time.sleep(0.2)

    def _all_idle(self) -> bool:
        r = self.cluster.exec(self.cluster.hosts[0], ["sinfo", "-h", "-N", "-o", "%N %T"],
                              capture_output=True, env=self.env())
        states = dict(line.split() for line in r.stdout.splitlines() if len(line.split()) == 2)
        return r.returncode == 0 and all(states.get(h) == "idle" for h in self.cluster.hosts)

    def logs(self, lines: int = 8) -> str:
        """The last lines of every daemon's log, for an error message."""
        out = []
        for f in sorted(self.dir.glob("n*/*.log")) + sorted(self.dir.glob("n*/*.out")):
            with contextlib.suppress(OSError):
                tail = f.read_text(errors="replace").splitlines()[-lines:]
                if tail:
                    out.append(f"--- {f.relative_to(self.dir)} ---\n" + "\n".join(tail))
        return "\n".join(out)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            if p.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []
        self.cluster.daemons -= set(DAEMON_PROCESSES)

    # ---- using it -----------------------------------------------------------------------------
    def env(self, base: dict | None = None) -> dict:
        """The environment of a user's command on a node: the cluster's, with no SLURM_* of an
        allocation this process may be in."""
        return {k: v for k, v in self.cluster.env(base).items() if not k.startswith("SLURM_")}

    def processes(self) -> list[str]:
        """The Slurm and munge processes still in the nodes (daemons and slurmstepd)."""
        found = []
        for pid in nodes._pids():
            comm = nodes._comm(pid)
            if comm in (*DAEMON_PROCESSES, "slurmstepd") and any(
                    nodes._ns_inode(pid, "net") == n.inodes["net"] for n in self.cluster.nodes):
                found.append(f"{pid} ({comm})")
        return found


def nodes_expr(hosts: list[str]) -> str:
    """n1,n2,…: Slurm's node list of the cluster's hosts (a plain comma list is one too)."""
    return ",".join(hosts)
