"""examples/io_write.c on the real MPIs: a collective write of a distributed array read back
exactly, with the hints `mpiopt io-agg` wrote (ROMIO_HINTS file), and, on MPICH, ROMIO's own
aggregator list (the romio_aggregator_list hint) against mpiopt's model of cb_config_list.

One machine has one processor name, so "distinct nodes" cannot be seen here for real (ROMIO asks
the MPI library's own MPI_Get_processor_name, which a wrapper in the program does not reach); what
is checked for real is that ROMIO accepts the fixed hints, picks the aggregators the model
predicts for each cb_config_list form, and the data come back exactly."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import require_build
from mpiopt import mpi
from mpiopt.placement.io_agg import romio_aggregators

SOURCE = mpi.repo_root() / "examples" / "io_write.c"


def build(flavour, tmp_path):
    exe = tmp_path / f"io_write.{flavour}"
    subprocess.run([f"mpicc.{flavour}", "-O2", "-o", str(exe), str(SOURCE)], check=True)
    return exe


def run(flavour, exe, tmp_path, np, hints_file=None, extra=()):
    env = {"ROMIO_HINTS": str(hints_file)} if hints_file else {}
    launcher = ["--mca", "io", "romio321"] if flavour == "openmpi" else []
    r = mpi.run(flavour, np, [exe, "-n", "333", "-f", tmp_path / "data", *extra], timeout=120,
                env={**os.environ, **env}, launcher_args=launcher)
    assert r.returncode == 0, r.stderr
    hints = dict(re.findall(r"^hint (\S+) = (.*)$", r.stdout, re.M))
    names = [n for _, n in sorted((int(a), b) for a, b in re.findall(r"^processor (\d+) (\S+)$",
                                                                     r.stdout, re.M))]
    ok = re.search(r"^elements (\d+) mismatched (\d+) checksum (-?\d+) expected (-?\d+) (\w+)$",
                   r.stdout, re.M)
    assert ok and ok.group(5) == "OK" and ok.group(2) == "0" and ok.group(3) == ok.group(4), r.stdout
    assert int(ok.group(1)) == 333 * np
    assert len(names) == np
    return hints, names


@pytest.mark.parametrize("flavour", mpi.available_flavours())
def test_fixed_hints_accepted_and_data_exact(flavour, tmp_path, mpiopt):
    require_build()
    exe = build(flavour, tmp_path)
    _, names = run(flavour, exe, tmp_path, 4)
    host = names[0]
    hints_file = tmp_path / "romio_hints"
    r = mpiopt("io-agg", "--ppn", "4", "--method", "1", "--nodes", "1", "--cb-nodes", "1",
               "--hosts", host, "-o", hints_file)
    assert r.returncode == 0, r.stderr
    assert f"cb_config_list {host}:1" in hints_file.read_text()
    hints, _ = run(flavour, exe, tmp_path, 4, hints_file)
    if flavour == "mpich":   # ROMIO reports what it made of the hints
        assert hints["cb_config_list"] == f"{host}:1"
        assert hints["cb_nodes"] == "1"
        assert hints["romio_aggregator_list"].split() == ["0"]


@pytest.mark.parametrize("config", ["HOST:2", "*:3", "HOST:*", "*:*", "*:1"])
def test_romio_aggregator_list_matches_model(config, tmp_path):
    if "mpich" not in mpi.available_flavours():
        pytest.skip("MPICH not installed")
    exe = build("mpich", tmp_path)
    _, names = run("mpich", exe, tmp_path, 4)
    config = config.replace("HOST", names[0])
    hints, _ = run("mpich", exe, tmp_path, 4, extra=["-h", "cb_nodes=3", "-h", f"cb_config_list={config}"])
    expected = romio_aggregators(names, config, 3).tolist()
    assert [int(x) for x in hints["romio_aggregator_list"].split()] == expected
    assert hints["cb_nodes"] == str(len(expected))
