"""Slurm: SLURM_HOSTFILE from `place convert --format slurm`, and `mpiopt run` inside an
allocation (SLURM_JOB_ID) choosing srun --distribution=arbitrary. No Slurm here: the generated
files and command line are checked (run --dry-run)."""
import json
import os

import pytest

from mpiopt.placement import PlacementError
from mpiopt.placement.slurm import expand_nodelist


def test_place_convert_slurm(mpiopt, tmp_path):
    order = tmp_path / "order"
    order.write_text("0,3,1,2\n")      # node a: ranks 0,3; node b: ranks 1,2
    out = tmp_path / "hf"
    r = mpiopt("place", "convert", "--order", order, "--hosts", "a,b", "--ppn", "2",
               "--format", "slurm", "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_text().split() == ["a", "b", "b", "a"]   # line r = host of task r


def test_expand_nodelist():
    assert expand_nodelist("nid[00576-00577,00606],login1") == ["nid00576", "nid00577", "nid00606",
                                                                 "login1"]
    assert expand_nodelist("n[8-10]-ib") == ["n8-ib", "n9-ib", "n10-ib"]
    for bad in ("nid[5-3]", "nid[x]", "a,,b", "nid[1-2"):
        with pytest.raises(PlacementError):
            expand_nodelist(bad)


def slurm_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(SLURM_JOB_ID="42", SLURM_JOB_NODELIST="nid[00576-00577]", **extra)
    return env


def test_run_in_allocation_uses_srun(mpiopt, tmp_path):
    order = tmp_path / "order"
    order.write_text("0,2,1,3\n")
    r = mpiopt("run", "-np", "4", "--flavour", "mpich", "--no-preload", "--rank-order", order,
               "--ppn", "2", "--dry-run", "--", "/bin/true", env=slurm_env())
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["command"] == ["srun", "--mpi=pmi2", "-n", "4", "--distribution=arbitrary", "/bin/true"]
    assert d["files"]["slurm_hostfile"].split() == ["nid00576", "nid00577", "nid00576", "nid00577"]
    assert d["env"]["SLURM_HOSTFILE"].endswith("slurm_hostfile")
    # no order: plain srun; --no-srun: the MPI's own launcher
    r = mpiopt("run", "-np", "2", "--flavour", "mpich", "--no-preload", "--dry-run", "--", "/bin/true",
               env=slurm_env())
    assert json.loads(r.stdout)["command"] == ["srun", "--mpi=pmi2", "-n", "2", "/bin/true"]
    r = mpiopt("run", "-np", "2", "--flavour", "mpich", "--no-preload", "--no-srun", "--dry-run",
               "--", "/bin/true", env=slurm_env())
    assert json.loads(r.stdout)["command"][0] == "mpirun.mpich"


@pytest.mark.parametrize("flavour,plugin", [("openmpi", "pmix"), ("mpich", "pmi2")])
def test_srun_gets_the_mpis_plugin_unless_one_is_chosen(mpiopt, flavour, plugin):
    """Slurm's own MpiDefault is none: without --mpi an Open MPI job aborts and an MPICH job of N
    ranks runs as N jobs of one. mpiopt run names the plugin of the MPI it found, unless the
    user's srun options (after --launcher-opts… or as given) or SLURM_MPI_TYPE choose one."""
    run = lambda *extra, env=None: json.loads(mpiopt(
        "run", "-np", "2", "--flavour", flavour, "--no-preload", *extra, "--dry-run", "--",
        "/bin/true", env=env or slurm_env()).stdout)["command"]
    assert run() == ["srun", f"--mpi={plugin}", "-n", "2", "/bin/true"]
    assert run(env=slurm_env(SLURM_MPI_TYPE="pmi2")) == ["srun", "-n", "2", "/bin/true"]
    assert run("--mpi=none") == ["srun", "-n", "2", "--mpi=none", "/bin/true"]


def test_run_in_allocation_bad_input(mpiopt, tmp_path):
    order = tmp_path / "order"
    order.write_text("0,1,2,3\n")
    r = mpiopt("run", "-np", "2", "--flavour", "mpich", "--no-preload", "--rank-order", order,
               "--ppn", "2", "--dry-run", "--", "/bin/true", env=slurm_env())
    assert r.returncode == 2 and "-np" in r.stderr
    r = mpiopt("run", "-np", "4", "--flavour", "mpich", "--no-preload", "--rank-order", order,
               "--ppn", "1", "--dry-run", "--", "/bin/true", env=slurm_env())
    assert r.returncode == 2 and "hosts" in r.stderr   # 4 nodes needed, allocation has 2
