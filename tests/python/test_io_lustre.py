"""mpiopt io-agg --lustre: the study's striping rule at the sizes it names, the cap by the OSTs,
the forms of the fix, bad input; and the hints given to ROMIO under both Debian MPIs
(examples/io_write.c prints MPI_File_get_info): accepted, the data read back exactly, and on a
file system that is not Lustre (here ext4/overlay, ROMIO's generic UFS driver) what ROMIO kept."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from mpiopt import mpi

SOURCE = mpi.repo_root() / "examples" / "io_write.c"


def lustre(mpiopt, *args):
    r = mpiopt("io-agg", "--lustre", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("ranks,factor", [(1, 2), (64, 4), (1024, 16), (2000, 22), (4096, 32),
                                          (16384, 64)])
def test_half_sqrt_even(mpiopt, ranks, factor):
    d = lustre(mpiopt, "--np", ranks)
    assert d["striping_factor"] == factor
    assert d["cb_nodes"] == min(factor, ranks)       # one aggregator per OST
    assert d["hints"]["striping_factor"] == str(factor)
    assert d["setstripe"] == f"lfs setstripe -c {factor} -S 1M OUTPUT_DIR"


def test_capped_by_osts_and_forms(mpiopt):
    d = lustre(mpiopt, "--np", 16384, "--osts", 48, "--pattern", "wrfout*", "--stripe-size", "4M",
               "--dir", "run")
    assert d["striping_factor"] == 48 and d["osts_from"] == "--osts"
    assert d["setstripe"] == "lfs setstripe -c 48 -S 4M run"
    assert d["hints"] == {"striping_factor": "48", "striping_unit": str(4 << 20), "cb_nodes": "48",
                          "romio_cb_write": "enable", "romio_cb_read": "enable"}
    assert d["mpich_mpiio_hints"] == ('MPICH_MPIIO_HINTS="wrfout*:striping_factor=48:striping_unit='
                                      f'{4 << 20}:cb_nodes=48:romio_cb_write=enable:romio_cb_read=enable"')
    assert lustre(mpiopt, "--np", 16384, "--osts", 7)["striping_factor"] == 6     # even, below 7
    assert lustre(mpiopt, "--np", 16384, "--osts", 64, "--cb-nodes", 8)["cb_nodes"] == 8


def test_with_placement_adds_cb_config_list(mpiopt):
    # 256 ranks -> factor 8; 16 nodes: the 8 aggregators on the first 8 nodes, one each
    d = lustre(mpiopt, "--ppn", 16, "-g", "16,16", "-c", "2,8")
    assert d["ranks"] == 256 and d["striping_factor"] == 8
    assert d["hints"]["cb_config_list"] == ",".join(f"nid{n:05d}:1" for n in range(8))


@pytest.mark.parametrize("args,message", [
    ((), "--np P"),
    (("--np", 0), "at least 1"),
    (("--np", 64, "--osts", 0), "--osts must be at least 1"),
    (("--np", 64, "--stripe-size", "100K"), "multiple of 64 KiB"),
    (("--np", 64, "--cb-nodes", 65), "cb_nodes must be between"),
    (("--np", 64, "--pattern", "a:b"), "without ':'"),
])
def test_bad_input_writes_nothing(mpiopt, tmp_path, args, message):
    out = tmp_path / "hints"
    r = mpiopt("io-agg", "--lustre", *args, "-o", out)
    assert r.returncode != 0 and message in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("flavour", mpi.available_flavours())
def test_romio_takes_the_hints(flavour, tmp_path, mpiopt):
    exe = tmp_path / f"io_write.{flavour}"
    subprocess.run([f"mpicc.{flavour}", "-O2", "-o", str(exe), str(SOURCE)], check=True)
    hints = lustre(mpiopt, "--np", 1024)["hints"]          # 16 stripes of 1 MiB, cb_nodes 16
    info = [a for k, v in hints.items() for a in ("-h", f"{k}={v}")]
    launcher = ["--mca", "io", "romio321"] if flavour == "openmpi" else []
    r = mpi.run(flavour, 2, [exe, "-n", "1000", "-f", tmp_path / "data", *info], timeout=120,
                env=dict(os.environ), launcher_args=launcher)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^elements 2000 mismatched 0 .* OK$", r.stdout, re.M), r.stdout
    kept = dict(re.findall(r"^hint (\S+) = (.*)$", r.stdout, re.M))
    if flavour == "mpich":
        # ROMIO's generic UFS driver: no striping_factor (only the Lustre/GPFS drivers keep it),
        # striping_unit kept (ROMIO's common hint code stores it), cb_nodes cut to the hosts
        # cb_config_list *:1 finds (one machine: 1)
        assert kept["romio_filesystem_type"].startswith("UFS")
        assert "striping_factor" not in kept
        assert kept["striping_unit"] == str(1 << 20)
        assert kept["cb_nodes"] == "1" and kept["romio_aggregator_list"].split() == ["0"]
    else:
        # Open MPI 4.1's romio321 returns the info it was given: every hint echoed
        assert {k: kept.get(k) for k in hints} == hints
