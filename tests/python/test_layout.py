"""mpiopt layout: the case study's node (4 NUMA regions x 8 cores) and its 1024-rank grid: the
four layouts, cells that tile the decomposition, no thread team across a NUMA region, halo bytes
counted by hand; hwloc XML (this machine's and a made-up two-region one); --run on this machine
with examples/halo2d.c built with OpenMP, under each installed MPI; bad input."""
from __future__ import annotations

import json
import subprocess

import pytest

from mpiopt import mpi

STUDY_NODE = "numa:4 core:8"
HALO2D = str(mpi.repo_root() / "examples" / "halo2d.c")


def layouts(mpiopt, *args):
    r = mpiopt("layout", "--json", *args)     # first: after -- it would be the program's
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_study_node_1024_ranks(mpiopt):
    d = layouts(mpiopt, "--topology", STUDY_NODE, "-g", "32,32")
    assert d["nodes"] == 32          # -g without --nodes: the flat-MPI rank grid, 1024 / 32 cores
    assert d["topology"]["numa_regions"] == 4 and d["topology"]["cores_per_numa"] == 8
    rows = {(r["ranks_per_node"], r["threads"]): r for r in d["layouts"]}
    assert sorted(rows) == [(4, 8), (8, 4), (16, 2), (32, 1)]
    for (ranks, threads), r in rows.items():
        px, py = r["decomposition"]
        cx, cy = r["cell"]
        assert px * py == r["ranks"] == 32 * ranks
        assert cx * cy == ranks and px % cx == 0 and py % cy == 0     # a node = a whole block
        assert not r["crosses_numa"] and threads <= 8
        assert r["grid_order"] == f"mpiopt grid-order -C -c {cx},{cy} -g {px},{py}"
        assert f"--map-by ppr:{ranks}:node:pe={threads}" in r["launch"]["openmpi"]
        assert f"--ntasks-per-node={ranks} --cpus-per-task={threads}" in r["launch"]["slurm"]
        assert f"-ppn {ranks} -bind-to core:{threads}" in r["launch"]["mpich"]
        assert f"OMP_NUM_THREADS={threads} OMP_PLACES=cores" in r["launch"]["env"]
    # 32 x 1: one point a rank, 8-byte messages, 4x8 cells: a node's block sends 2*(4+8) messages
    # out (non-periodic; an inner node), 192 bytes; the rank grid has 2*2*32*31 messages, of
    # which those crossing a cell boundary leave the node: 2*32*(32/4 - 1) + 2*32*(32/8 - 1)
    flat = rows[(32, 1)]
    assert flat["cell"] == [4, 8] and flat["node_off_node_bytes"] == 192
    assert flat["off_node_bytes"] == 8 * (2 * 32 * 7 + 2 * 32 * 3)
    # ranked: model times ascending
    times = [r["model_us"] for r in d["layouts"]]
    assert times == sorted(times)


def test_study_cells_on_a_long_grid(mpiopt):
    # a WRF-like 4096x8192 grid on 32 nodes: X << Y decompositions (long inner loops), and for
    # 32x1 and 8x4 the study's cells: the long faces (across Y) stay on the node
    rows = {(r["ranks_per_node"], r["threads"]): r for r in
            layouts(mpiopt, "--topology", STUDY_NODE, "-g", "4096,8192", "--nodes", 32)["layouts"]}
    assert rows[(32, 1)]["cell"] == [2, 16] and rows[(8, 4)]["cell"] == [2, 4]
    assert all(r["decomposition"][0] < r["decomposition"][1] for r in rows.values())


def test_cross_numa_only_when_asked(mpiopt):
    rows = layouts(mpiopt, "--topology", STUDY_NODE, "-g", "32,32", "--cross-numa")["layouts"]
    crossing = {(r["ranks_per_node"], r["threads"]) for r in rows if r["crosses_numa"]}
    assert crossing == {(2, 16), (1, 32)}


TWO_REGIONS = """<?xml version="1.0"?><topology version="2.0">
<object type="Machine" cpuset="0x000000ff">
 <object type="Package" cpuset="0x000000ff">
  <object type="NUMANode" cpuset="0x0000000f"/>
  <object type="NUMANode" cpuset="0x000000f0"/>
  {cores}
 </object></object></topology>"""


def test_hwloc_xml(mpiopt, tmp_path):
    cores = "".join(f'<object type="Core" cpuset="0x{1 << i:08x}"><object type="PU" '
                    f'cpuset="0x{1 << i:08x}"/></object>' for i in range(8))
    xml = tmp_path / "node.xml"
    xml.write_text(TWO_REGIONS.format(cores=cores))
    d = layouts(mpiopt, "--topology", xml, "-g", "64,64", "--nodes", 2)
    assert d["topology"]["numa_regions"] == 2 and d["topology"]["cores_per_numa"] == 4
    assert sorted((r["ranks_per_node"], r["threads"]) for r in d["layouts"]) == [(2, 4), (4, 2), (8, 1)]
    # this machine, as lstopo writes it
    mine = tmp_path / "mine.xml"
    mine.write_text(subprocess.run(["lstopo", "--of", "xml"], capture_output=True, text=True,
                                   check=True).stdout)
    d = layouts(mpiopt, "--topology", mine, "-g", "16,16", "--nodes", 1)
    cores = d["topology"]["numa_regions"] * d["topology"]["cores_per_numa"]
    assert sum(1 for r in d["layouts"]) >= 1
    assert all(r["ranks_per_node"] * r["threads"] == cores for r in d["layouts"])


@pytest.mark.parametrize("flavour", mpi.available_flavours())
def test_run_on_this_machine(mpiopt, flavour, tmp_path):
    png = tmp_path / "layout.png"
    d = layouts(mpiopt, "--run", "--mpi", flavour, "-g", "256,256", "--png", png, "--",
                HALO2D, "{d1}", "{d0}", "5", "{halo_bytes}", "0", "{local1}", "{local0}")
    assert d["nodes"] == 1 and d["layouts"]
    for r in d["layouts"]:
        assert r["measured_us"] > 0
        out = r["run"]["output"]
        d0, d1 = r["decomposition"]
        # the program ran with the layout's ranks, decomposition and threads
        assert f"grid={d1}x{d0}" in out and f"threads={r['threads']}" in out
        assert f"local={r['block'][1]}x{r['block'][0]}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args,message", [
    (("--topology", STUDY_NODE, "-g", "3,3"), "give --nodes"),
    (("--topology", "numa:4 cores:8", "-g", "32,32"), "bad level"),
    (("--topology", "numa:4", "-g", "32,32"), "no core level"),
    (("--topology", STUDY_NODE, "-g", "32,32,32"), "two positive extents"),
    (("--topology", STUDY_NODE, "-g", "4,4", "--nodes", 32), "fits the grid"),
    (("--topology", STUDY_NODE, "-g", "32,32", "--serial", "2"), "--serial"),
    (("--run", "-g", "32,32"), "needs the program"),
    (("--run", "--topology", STUDY_NODE, "-g", "32,32", "--", "./x"), "this machine"),
])
def test_bad_input(mpiopt, tmp_path, args, message):
    png = tmp_path / "out.png"
    r = mpiopt("layout", *args, "--png", png)
    assert r.returncode != 0 and message in r.stderr, r.stderr
    assert not png.exists()
