"""A real Slurm on the namespace nodes (tests/python/slurm_nodes.py, docs/nodes.md "Slurm"):
slurmctld on n1, a slurmd and a munged on every node, MpiDefault=none (Slurm's own default).

- 2 nodes x 2 ranks, both MPIs through srun and their plugins (`--mpi=pmix` for Debian's Open MPI
  4.1.4, `--mpi=pmi2` for MPICH 4.0.2): the ranks on the hosts Slurm put them on, MPI's
  MPI_Comm_split_type finding 2 nodes of 2, the drop-in exact with `auto` and `hierarchical` and
  its MPIOPT_REPORT counting every node's ranks; the allreduce/reduce checker with every
  algorithm;
- mpiopt's own commands inside a real allocation (salloc): `mpiopt run` names the MPI's plugin, so
  under MpiDefault=none the job is one MPI job of 4 ranks (a plain `srun` of an MPICH program is
  4 jobs of one, as the test shows first); `mpiopt run --rank-order` puts each rank on the host
  the order names (SLURM_HOSTFILE); `mpiopt profile` names every rank's host;
- the sbatch script of docs/nodes.md, submitted as written;
- 4 nodes x 2 ranks (oversubscribed: 8 ranks on 2 cores): Open MPI in `make test`, MPICH in the
  full tier (as test_nodes.py);
- afterwards no slurm, munge or slurmstepd process, no state directory, no node /dev/shm file.

MPICH's known finalize hang across nodes (test_nodes.py, docs/nodes.md) is handled as there: a job
whose results are complete and which then hangs is a KnownVendorBug warning where its ranks are
stuck where that bug leaves them; its job is then cancelled with scancel."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import nodes
import slurm_nodes
from conftest import REQUIRE_BUILD, require_build
from mpiopt import mpi
from test_nodes import (CHECKER_DONE, PROBE_DONE, check_probe, check_report_across_nodes,
                        checker_counts, finished, halo2d, nodes_report)

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = {"openmpi": "pmix", "mpich": "pmi2"}


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MPIOPT_RANKS_PER_NODE", "MPIOPT_ALLREDUCE", "MPIOPT_REDUCE", "LD_PRELOAD")
           and not k.startswith("SLURM_")}
    env.update(extra)
    return env


def _start(n: int):
    why = slurm_nodes.unsupported_reason()
    if why and REQUIRE_BUILD:
        pytest.fail(f"no Slurm on namespace nodes here: {why}; MPIOPT_REQUIRE_BUILD=1 makes this a failure")
    if why:
        pytest.skip(f"no Slurm on namespace nodes here: {why}")
    cluster = nodes.Cluster.start(n)
    try:
        slurm = slurm_nodes.Slurm.start(cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster, slurm


def _stop(cluster, slurm) -> None:
    state = cluster.directory
    slurm.stop()
    left = slurm.processes()
    extra = cluster.stop()
    assert not left, f"Slurm processes after Slurm.stop(): {left}"
    assert not cluster.remaining() and not extra, (cluster.remaining(), extra)
    assert not state.exists(), f"the cluster's state directory {state} is still there"


@pytest.fixture(scope="module")
def slurm2():
    cluster, slurm = _start(2)
    yield cluster, slurm
    _stop(cluster, slurm)


@pytest.fixture(scope="module")
def slurm4():
    cluster, slurm = _start(4)
    yield cluster, slurm
    _stop(cluster, slurm)


def job(cluster, slurm, cmd, flavour, done, env, timeout=120) -> nodes.JobResult:
    """`cmd` run on n1 as a user there; after a finalize hang the job is cancelled (scancel: the
    job's slurmstepd end its tasks) before the nodes are checked for leftovers."""
    r = cluster.run(cmd, env=slurm.env(env), timeout=timeout, done=done,
                    grace=nodes.finalize_grace(flavour))
    if r.finalize_hang or r.timed_out:
        cluster.exec(cluster.hosts[0], ["scancel", "--user=root"], env=slurm.env(), capture_output=True)
    return r


def test_slurm_is_up_with_a_daemon_set_on_every_node(slurm2):
    """sinfo lists both nodes idle; each node runs its own munged and slurmd, n1 slurmctld; a
    credential made on n1 is decoded by n2's munged (the same key, two daemons)."""
    cluster, slurm = slurm2
    r = cluster.exec("n1", ["sinfo", "-h", "-N", "-o", "%N %T"], env=slurm.env(), capture_output=True)
    assert r.stdout.split() == ["n1", "idle", "n2", "idle"], r.stdout + r.stderr
    by_node = {}
    for node in cluster.nodes:
        by_node[node.name] = sorted(nodes._comm(p) for p in nodes._pids()
                                    if nodes._ns_inode(p, "net") == node.inodes["net"] and
                                    nodes._comm(p) in slurm_nodes.DAEMONS)
    assert by_node == {"n1": ["munged", "slurmctld", "slurmd"], "n2": ["munged", "slurmd"]}, by_node
    cred = cluster.exec("n1", ["munge", "-n", f"--socket={slurm.munge_socket}"], env=slurm.env(),
                        capture_output=True)
    back = cluster.exec("n2", ["unmunge", f"--socket={slurm.munge_socket}"], input=cred.stdout,
                        env=slurm.env(), capture_output=True)
    assert "STATUS:          Success (0)" in back.stdout and "ENCODE_HOST:     n1" in back.stdout, back


# MPICH's jobs each wait out its finalize hang's grace (3 s): its forced algorithm and its checker
# run are in the full tier, as in test_nodes.py
@pytest.mark.parametrize("flavour,algorithm", [
    ("openmpi", "auto"), ("openmpi", "hierarchical"), ("mpich", "auto"),
    pytest.param("mpich", "hierarchical", marks=pytest.mark.full)])
def test_srun_runs_the_dropin_across_two_nodes(slurm2, flavour, algorithm):
    """srun --mpi=<the MPI's plugin> -N 2 -n 4 of an unmodified program under the drop-in: the
    ranks on n1, n1, n2, n2 (Slurm's block distribution), MPI finds 2 nodes of 2, the results are
    exact, every node's /dev/shm has the node's shared memory, and MPIOPT_REPORT counts every
    rank's calls (the drop-in reached the ranks slurmd started on both nodes)."""
    require_build(flavour)
    cluster, slurm = slurm2
    env = _env(LD_PRELOAD=str(mpi.library(flavour)), MPIOPT_REPORT="1",
               MPIOPT_ALLREDUCE=algorithm, MPIOPT_REDUCE=algorithm)
    r = job(cluster, slurm, ["srun", f"--mpi={PLUGIN[flavour]}", "-N", "2", "-n", "4",
                             mpi.binary(flavour, "test-plain_node_probe")], flavour, PROBE_DONE, env)
    out = finished(r, flavour, PROBE_DONE)
    check_probe(out, {0: "n1", 1: "n1", 2: "n2", 3: "n2"}, 2)
    for kind in ("MPI_Allreduce", "MPI_Reduce"):
        calls, by_mpiopt, by_vendor, details = nodes_report(out)[kind]
        assert calls > 0 and calls % 4 == 0, (kind, calls)
        if algorithm == "hierarchical":
            assert by_mpiopt == calls and details == f"hierarchical {calls}", details
        else:
            assert by_mpiopt + by_vendor == calls and by_mpiopt > 0
    check_report_across_nodes(out, algorithm)


@pytest.mark.parametrize("flavour", ["openmpi", pytest.param("mpich", marks=pytest.mark.full)])
def test_srun_checker_every_algorithm(slurm2, flavour):
    """coll_check through srun at 2 x 2: every algorithm, auto and vendor, exact."""
    require_build(flavour)
    cluster, slurm = slurm2
    r = job(cluster, slurm, ["srun", f"--mpi={PLUGIN[flavour]}", "-N", "2", "-n", "4",
                             mpi.binary(flavour, "test-coll_check"), "--cases", "quick",
                             "--big-cases", "minimal"], flavour, CHECKER_DONE, _env(), timeout=240)
    checks, failures = checker_counts(finished(r, flavour, CHECKER_DONE))
    assert failures == 0 and checks > 50_000


def _mpiopt(*args) -> list:
    return [sys.executable, "-m", "mpiopt", *map(str, args)]


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_mpiopt_run_in_salloc_is_one_job_where_mpi_default_is_none(slurm2, flavour):
    """MpiDefault=none. A plain `srun -n 4` of an MPICH program there is 4 jobs of one rank (each
    rank 0 of 1: what mpiopt must not do); `mpiopt run -np 4` inside `salloc -N 2 -n 4` names the
    MPI's plugin and is one job of 4 ranks on both nodes, under the drop-in."""
    require_build(flavour)
    cluster, slurm = slurm2
    probe = mpi.binary(flavour, "test-plain_node_probe")
    if flavour == "mpich":
        r = job(cluster, slurm, ["srun", "-N", "2", "-n", "4", probe], flavour, None, _env())
        ranks = re.findall(r"^probe: rank (\d+) host \S+ node_rank \d+ node_size \d+ nodes (\d+)",
                           r.stdout, re.M)
        assert sorted(ranks) == [("0", "1")] * 4, r.stdout[-2000:] + r.stderr[-2000:]
    r = job(cluster, slurm, ["salloc", "-N", "2", "-n", "4", *_mpiopt("run", "-np", 4, "--report",
                                                                      "--", probe)],
            flavour, PROBE_DONE, _env())
    out = finished(r, flavour, PROBE_DONE)
    check_probe(out, {0: "n1", 1: "n1", 2: "n2", 3: "n2"}, 2)
    calls, by_mpiopt, _, _ = nodes_report(out)["MPI_Allreduce"]
    assert calls % 4 == 0 and by_mpiopt > 0, calls


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_mpiopt_run_rank_order_in_salloc(slurm2, flavour, tmp_path):
    """`mpiopt run --rank-order` inside an allocation: srun --distribution=arbitrary with a
    SLURM_HOSTFILE; each rank reports the host the order names (n1: 0 and 3; n2: 2 and 1). MPICH
    finds 2 nodes here, where Hydra's machinefile for the same order makes it 3 (test_nodes.py)."""
    require_build(flavour)
    cluster, slurm = slurm2
    order = tmp_path / "order"
    order.write_text("0,3\n2,1\n")
    r = job(cluster, slurm, ["salloc", "-N", "2", "-n", "4",
                             *_mpiopt("run", "-np", 4, "--rank-order", order, "--ppn", 2, "--",
                                      mpi.binary(flavour, "test-plain_node_probe"))],
            flavour, PROBE_DONE, _env())
    out = finished(r, flavour, PROBE_DONE)
    ranks = check_probe(out, {0: "n1", 1: "n2", 2: "n2", 3: "n1"}, 2, split_hosts=flavour == "mpich")
    if flavour == "mpich":
        # MPICH 4.0.2 under srun --distribution=arbitrary takes every rank for a node of its own
        # (4 nodes of 1), where Hydra's machinefile of the same order gives 3 (test_nodes.py) and
        # Open MPI 2; the results are exact either way (docs/nodes.md)
        assert [(ranks[r]["nodes"], ranks[r]["node_size"]) for r in range(4)] == [(4, 1)] * 4, ranks


def test_mpiopt_profile_in_salloc(slurm2, tmp_path):
    """`mpiopt profile` inside an allocation (Open MPI): the job runs through srun, and the
    profile's hosts are where Slurm put each rank."""
    require_build("openmpi")
    cluster, slurm = slurm2
    exe = halo2d(tmp_path)
    out = tmp_path / "prof"
    r = job(cluster, slurm, ["salloc", "-N", "2", "-n", "4",
                             *_mpiopt("profile", "--json", "-np", 4, "-o", out, "--", exe, 2, 2,
                                      20, 4096)], "openmpi", None, _env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    summary = json.loads(r.stdout[r.stdout.index("{"):])
    assert summary["hosts"] == ["n1", "n1", "n2", "n2"], summary["hosts"]
    split = summary["node_split"]
    assert [(n["host"], n["ranks"]) for n in split["nodes"]] == [("n1", [0, 1]), ("n2", [2, 3])]


def _sbatch_script() -> str:
    """The sbatch script of docs/nodes.md (the ```sh block after its "sbatch" heading)."""
    text = (ROOT / "docs" / "nodes.md").read_text()
    m = re.search(r"### A batch job\n.*?```sh\n(.*?)```", text, re.S)
    assert m, "docs/nodes.md has no sbatch script under '### A batch job'"
    return m.group(1)


def test_the_docs_sbatch_script_runs(slurm2, tmp_path):
    """docs/nodes.md's batch script, submitted with sbatch as written (its PROGRAM made the
    probe): the job completes with exit code 0 and its output file has every rank's exact
    results from both nodes. (sbatch --wait looks at the job every 10 s or so; the test asks
    scontrol every 0.2 s instead.)"""
    require_build("openmpi")
    cluster, slurm = slurm2
    script = tmp_path / "job.sh"
    script.write_text(_sbatch_script())
    out = tmp_path / "job.out"
    env = _env(PROGRAM=str(mpi.binary("openmpi", "test-plain_node_probe")))
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', nodes.LOGIN_PATH)}"   # mpiopt
    sub = cluster.exec("n1", ["sbatch", "--parsable", f"--output={out}", f"--chdir={tmp_path}",
                              script], env=slurm.env(env), capture_output=True)
    assert sub.returncode == 0, sub.stdout + sub.stderr
    job_id = sub.stdout.strip().split(";")[0]
    state = ""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        r = cluster.exec("n1", ["scontrol", "show", "job", job_id], env=slurm.env(),
                         capture_output=True)
        state = r.stdout
        if re.search(r"JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)", state):
            break
        time.sleep(0.2)
    text = out.read_text() if out.exists() else ""
    assert "JobState=COMPLETED" in state and "ExitCode=0:0" in state, state + text[-3000:]
    check_probe(text, {0: "n1", 1: "n1", 2: "n2", 3: "n2"}, 2)


@pytest.mark.parametrize("flavour", [
    "openmpi", pytest.param("mpich", marks=pytest.mark.full)])
def test_srun_four_nodes(slurm4, flavour):
    """4 x 2 through srun (8 ranks on 2 cores: oversubscribed), hierarchical forced: the ranks on
    n1..n4 two a node, MPI finds 4 nodes of 2, exact."""
    require_build(flavour)
    cluster, slurm = slurm4
    env = _env(LD_PRELOAD=str(mpi.library(flavour)), MPIOPT_REPORT="1",
               MPIOPT_ALLREDUCE="hierarchical")
    r = job(cluster, slurm, ["srun", f"--mpi={PLUGIN[flavour]}", "-N", "4", "-n", "8",
                             mpi.binary(flavour, "test-plain_node_probe")], flavour, PROBE_DONE, env,
            timeout=240)
    out = finished(r, flavour, PROBE_DONE)
    check_probe(out, {r: f"n{r // 2 + 1}" for r in range(8)}, 2)
    calls, by_mpiopt, _, details = nodes_report(out)["MPI_Allreduce"]
    assert by_mpiopt == calls and details == f"hierarchical {calls}"


def test_mpiopt_advise_in_salloc_places_on_the_allocations_nodes(slurm2, tmp_path):
    """`mpiopt advise` inside `salloc -N 2 -n 4` (Open MPI), no --hosts: its runs go through srun,
    and its placement step runs the order it found on the allocation's nodes (not a simulation
    of one node), its output checked against the program as it is; the SLURM_HOSTFILE it wrote
    puts the ranks where that order says."""
    require_build("openmpi")
    cluster, slurm = slurm2
    exe = halo2d(tmp_path)
    out_dir = tmp_path / "advice"
    r = job(cluster, slurm, ["salloc", "-N", "2", "-n", "4",
                             *_mpiopt("advise", "--json", "--no-plots", "--repeat", 1, "-np", 4,
                                      "--check", r"checksum=\S+", "-o", out_dir, "--", exe, 2, 2,
                                      20, 4096)], "openmpi", None, _env(), timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    data = json.loads(r.stdout[r.stdout.index("{"):])
    pl = data["placement"]
    assert pl["how"] == "run with the order on the Slurm allocation's nodes", pl
    step = next(s for s in data["steps"] if s["name"] == "placement")
    assert step["status"] == "ran" and step["check"]["ok"] is True, step
    hostfile = (out_dir / "runs" / "placement-0" / "slurm_hostfile").read_text().split()
    want = [None] * 4
    for i, rank in enumerate(pl["order"]):
        want[rank] = ("n1", "n2")[i // 2]
    assert hostfile == want, (hostfile, pl["order"])
