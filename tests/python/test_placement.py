"""Rank placement: grid-order against the design notes' grid_order examples and against its
properties, halo-stats against hand counts, order files, converters and launch_args with the
real launchers, place search, and the halo exchange under real MPI and SMPI."""
import contextlib
import io
import itertools
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from mpiopt import mpi
from mpiopt.cli import main
from mpiopt.placement import (Grid, GridOrderOptions, HaloPattern, PlacementError, format_order,
                              generate, launch_args, method_placement, order_placement,
                              parse_order, read_order, search)
from mpiopt.placement.orders import check_permutation
from conftest import run_mpiopt_in_process as mpiopt


def test_entry_point():
    r = subprocess.run([sys.executable, "-m", "mpiopt.cli", "grid-order", "-c", "2,2", "-g", "2,4"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.splitlines()[2:] == ["0,1,2,3", "4,5,6,7"]
    r = subprocess.run([sys.executable, "-m", "mpiopt.cli", "grid-order", "-g", "2,4"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("mpiopt: error:") and r.stdout == ""


# ---- grid-order: the design notes' examples, character for character ----

def test_design_example_column_major_1x6_cells():
    r = mpiopt("grid-order", "-C", "-Z", "-c", "1,6", "-g", "4,6")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("# grid_order -C -Z -c 1,6 -g 4,6\n"
                        "# Region 0: 0,0 (0..23)\n"
                        "0,4,8,12,16,20\n"
                        "1,5,9,13,17,21\n"
                        "2,6,10,14,18,22\n"
                        "3,7,11,15,19,23\n")


def test_design_example_row_major_and_defaults_filled_in():
    r = mpiopt("grid-order", "-R", "-c", "1,6", "-g", "4,6")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "# grid_order -R -Z -c 1,6 -g 4,6", "# Region 0: 0,0 (0..23)",
        "0,1,2,3,4,5", "6,7,8,9,10,11", "12,13,14,15,16,17", "18,19,20,21,22,23"]
    # without -C/-R the numbering is -C, and the header says so
    assert mpiopt("grid-order", "-c", "1,6", "-g", "4,6").stdout.startswith(
        "# grid_order -C -Z -c 1,6 -g 4,6\n")


def test_design_example_2x8_cells_of_32x32():
    lines = mpiopt("grid-order", "-C", "-Z", "-c", "2,8", "-g", "32,32").stdout.splitlines()
    assert lines[0] == "# grid_order -C -Z -c 2,8 -g 32,32"
    assert lines[1] == "# Region 0: 0,0 (0..1023)"
    assert lines[2] == "0,1,32,33,64,65,96,97,128,129,160,161,192,193,224,225"
    assert lines[3].startswith("2,3,34,35,")
    assert lines[-1] == "798,799,830,831,862,863,894,895,926,927,958,959,990,991,1022,1023"
    assert len(lines) == 2 + 64


# ---- grid-order: properties over many shapes and options ----

SHAPES = [((4, 6), (1, 6)), ((8, 8), (2, 4)), ((12, 10), (4, 5)), ((10, 7), (4, 2)),
          ((9, 9), (3, 3)), ((6, 4, 4), (2, 2, 2)), ((5, 6, 7), (2, 3, 2)), ((16, 1), (4, 1))]


def _cases():
    for (grid, cell), numbering, curve in itertools.product(SHAPES, "CR", "ZPH"):
        for perm in [None, tuple(range(len(grid), 0, -1))]:
            yield GridOrderOptions(grid, cell, numbering, curve, dim_order=perm)


@pytest.mark.parametrize("opts", list(_cases()), ids=lambda o: o.command())
def test_grid_order_is_a_permutation_and_each_line_one_cell(opts):
    go = generate(opts)
    g = Grid(opts.grid, opts.numbering)
    assert sorted(go.order.tolist()) == list(range(g.size))
    lines = [l for l in format_order(go).splitlines() if not l.startswith("#")]
    position = 0
    for region in go.regions:
        assert (region.first, region.last) == (position, position + region.ranks.size - 1)
        position += region.ranks.size
    whole = [n // c * c for n, c in zip(opts.grid, opts.cell)]
    for line in lines:
        ranks = np.array([int(t) for t in line.split(",")])
        coords = g.coords_of(ranks)
        lo, hi = coords.min(axis=1), coords.max(axis=1)
        if all((hi < whole).tolist()):   # region 0: a full cell, aligned on the cell grid
            assert ranks.size == opts.cell_size
            assert (lo % np.array(opts.cell) == 0).all()
            assert ((hi - lo + 1) == np.array(opts.cell)).all()


def test_hilbert_without_cell_walks_to_neighbours():
    go = generate(GridOrderOptions((16, 16), None, "R", "H", ranks_per_node=16))
    coords = Grid((16, 16), "R").coords_of(go.order)
    assert (np.abs(np.diff(coords, axis=1)).sum(axis=0) == 1).all()
    assert sorted(go.order.tolist()) == list(range(256))


def test_serpentine_cells_follow_each_other():
    go = generate(GridOrderOptions((8, 8), (2, 2), "C", "P"))
    cells = Grid((8, 8)).coords_of(go.order)[:, ::4] // 2    # first rank of each cell
    assert (np.abs(np.diff(cells, axis=1)).sum(axis=0) == 1).all()


def test_remainder_regions_and_start_max_options():
    r = mpiopt("grid-order", "-c", "4,2", "-g", "10,7", "-s", "100", "-m", "160")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "# grid_order -C -Z -c 4,2 -g 10,7 -m 160 -s 100"
    assert lines[1] == "# Region 0: 0,0 (0..47)"
    regions = [l for l in lines if l.startswith("# Region")]
    assert regions[1].startswith("# Region 1: 8,0 (48..")
    listed = [int(t) for l in lines if not l.startswith("#") for t in l.split(",")]
    assert listed and min(listed) == 100 and max(listed) == 160
    assert sorted(listed) == list(range(100, 161))


def test_table_shows_node_numbers():
    lines = mpiopt("grid-order", "-C", "-c", "2,2", "-g", "4,4", "-T").stdout.splitlines()
    table = [l for l in lines if l.startswith("# ") and not l.startswith(("# grid", "# Region", "# Node"))]
    assert table == ["# 0 0 2 2", "# 0 0 2 2", "# 1 1 3 3", "# 1 1 3 3"]


@pytest.mark.parametrize("argv, message", [
    (["-c", "1,7", "-g", "4,6"], "larger than the grid"),
    (["-c", "1,6", "-g", "4,x"], "not an integer"),
    (["-c", "1,2,3", "-g", "4,6"], "dimensions"),
    (["-c", "1,6", "-g", "4,6", "-o", "1,1"], "permutation"),
    (["-g", "4,6"], "cell size"),
    (["-c", "0,6", "-g", "4,6"], "less than 1"),
    (["-Z", "-P", "-c", "1,6", "-g", "4,6"], "not allowed"),
    (["-c", "1,6"], "required"),
])
def test_grid_order_bad_options_exit_2(argv, message):
    r = mpiopt("grid-order", *argv)
    assert r.returncode == 2
    assert message in r.stderr
    assert r.stdout == ""


# ---- halo-stats against hand counts ----

def halo(*argv):
    r = mpiopt("halo-stats", *argv, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_halo_8x8_5pt_smp_hand_count():
    s = halo("-g", "8,8", "--stencil", "5pt", "--bytes", "100", "--ppn", "8", "--method", "1")
    # 2 directions x 7 pairs x 8 lines each way: 112 along x (in a node's row), 112 along y
    assert (s["messages_total"], s["messages_on_node"], s["messages_off_node"]) == (224, 112, 112)
    assert (s["bytes_total"], s["bytes_on_node"], s["bytes_off_node"]) == (22400, 11200, 11200)
    assert s["max_node_off_node_bytes"] == 16 * 100   # an inner row sends 8 up and 8 down


def test_halo_periodic_round_robin_9pt_and_3d_hand_counts():
    s = halo("-g", "8,8", "--stencil", "5pt", "--bytes", "1", "--ppn", "8", "--method", "1", "--periodic")
    assert (s["messages_total"], s["messages_on_node"], s["messages_off_node"]) == (256, 128, 128)
    assert s["max_node_off_node_bytes"] == 16
    # round-robin over 8 nodes puts column x on node x: now the y direction stays on-node
    s = halo("-g", "8,8", "--stencil", "5pt", "--bytes", "1", "--ppn", "8", "--method", "0")
    assert (s["messages_on_node"], s["messages_off_node"]) == (112, 112)
    # 9pt on 4x4, rows of 4 per node: 48 face + 36 diagonal messages, 24 along the rows
    s = halo("-g", "4,4", "--stencil", "9pt", "--bytes", "1", "--ppn", "4", "--method", "1")
    assert (s["messages_total"], s["messages_on_node"], s["messages_off_node"]) == (84, 24, 60)
    # 7pt on 4x4x4, one z-plane per node: 96 of the 288 messages cross planes
    s = halo("-g", "4,4,4", "--stencil", "7pt", "--bytes", "1", "--ppn", "16", "--method", "1")
    assert (s["messages_total"], s["messages_on_node"], s["messages_off_node"]) == (288, 192, 96)
    assert s["max_node_off_node_bytes"] == 32
    # with -R the last dimension is fastest: a node holds an x-plane, the same counts
    s = halo("-R", "-g", "4,4,4", "--stencil", "7pt", "--bytes", "1", "--ppn", "16", "--method", "1")
    assert s["messages_off_node"] == 96
    s = halo("-g", "3,3,3", "--stencil", "27pt", "--bytes", "1", "--ppn", "27", "--method", "1")
    assert (s["messages_total"], s["messages_off_node"]) == (2 * (3 * 18 + 6 * 12 + 4 * 8), 0)


def test_folded_placement():
    assert method_placement(2, 8, 2).node_of_rank().tolist() == [0, 1, 2, 3, 3, 2, 1, 0]
    assert method_placement(0, 8, 2).node_of_rank().tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert method_placement(1, 7, 2).node_of_rank().tolist() == [0, 0, 1, 1, 2, 2, 3]


def test_halo_order_file_and_compare(tmp_path):
    order = tmp_path / "order"
    order.write_text(mpiopt("grid-order", "-c", "4,4", "-g", "64,64").stdout)
    rows = json.loads(mpiopt("halo-stats", "-g", "64,64", "--stencil", "5pt", "--bytes", "8",
                             "--ppn", "16", "--order", order, "--compare", "--json").stdout)
    names = [r["placement"] for r in rows]
    assert names[:3] == ["SMP", "round-robin", "folded"] and names[3].startswith("order")
    smp, blocks = rows[0], rows[3]
    # a 1x16 strip sends 34 faces off-node, a 4x4 block 16 (the design notes' figures)
    assert smp["max_node_off_node_bytes"] == 34 * 8 and blocks["max_node_off_node_bytes"] == 16 * 8
    assert blocks["messages_off_node"] == 3840 and smp["messages_off_node"] == 8448
    table = mpiopt("halo-stats", "-g", "64,64", "--stencil", "5pt", "--bytes", "8", "--ppn", "16",
                   "--order", order, "--compare")
    assert table.returncode == 0 and "folded" in table.stdout and "off-node" in table.stdout


@pytest.mark.parametrize("argv, message", [
    (["-g", "8,8,8", "--stencil", "5pt", "--bytes", "8", "--ppn", "8", "--method", "1"], "2-D grid"),
    (["-g", "8,8", "--stencil", "5pt", "--bytes", "8", "--ppn", "0", "--method", "1"], "--ppn"),
    (["-g", "8,8", "--stencil", "5pt", "--bytes", "8", "--ppn", "8"], "give a placement"),
    (["-g", "8,8", "--stencil", "3pt", "--bytes", "8", "--ppn", "8", "--method", "1"], "invalid choice"),
])
def test_halo_bad_options(argv, message):
    r = mpiopt("halo-stats", *argv)
    assert r.returncode == 2 and message in r.stderr and r.stdout == ""


# ---- order files ----

def test_order_parsing_ranges_comments_and_line_breaks():
    text = "# grid_order -C -Z -c 2,2 -g 4,2\n# Region 0: 0,0 (0..7)\n0-2, 5\n3,4\n6-7\n"
    assert parse_order(text).tolist() == [0, 1, 2, 5, 3, 4, 6, 7]


@pytest.mark.parametrize("text, message", [
    ("0,1,x,3", "'x' is not a rank"),
    ("0,1,1,2", "entry 2 repeats rank 1"),
    ("0,1,2,9", "entry 3 is rank 9, outside 0..3"),
    ("0,1,2", "rank 3 is missing"),
    ("0,3-1,2", "'3-1'"),
    ("", "no ranks"),
])
def test_bad_orders_name_the_first_bad_entry(tmp_path, text, message):
    path = tmp_path / "order"
    path.write_text(text)
    with pytest.raises(PlacementError, match=message.replace("(", r"\(")):
        read_order(path, 4)
    r = mpiopt("halo-stats", "-g", "2,2", "--stencil", "5pt", "--bytes", "8", "--ppn", "2",
               "--order", path)
    assert r.returncode == 2 and message in r.stderr


def test_order_without_size_must_be_a_permutation_of_its_length():
    check_permutation(np.array([2, 0, 1]))
    with pytest.raises(PlacementError, match="entry 2 is rank 3, outside 0..2"):
        check_permutation(np.array([1, 2, 3]))


# ---- converters and launch_args ----

def test_converters(tmp_path):
    order = tmp_path / "order"
    order.write_text("3,2\n1,0\n")
    rf = mpiopt("place", "convert", "--order", order, "--hosts", "n1,n2", "--ppn", "2", "--format", "rankfile")
    assert rf.stdout.splitlines() == ["rank 0=n2 slot=1", "rank 1=n2 slot=0",
                                      "rank 2=n1 slot=1", "rank 3=n1 slot=0"]
    mf = mpiopt("place", "convert", "--order", order, "--hosts", "n1,n2", "--ppn", "2",
                "--format", "machinefile")
    assert mf.stdout == "n2:1\nn2:1\nn1:1\nn1:1\n"
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# nodes\nalpha slots=2\nbeta:2\n")
    out = tmp_path / "smpi.txt"
    sm = mpiopt("place", "convert", "--method", "2", "--np", "4", "--hosts", hostfile, "--ppn", "2",
                "--format", "smpi", "-o", out)
    assert sm.returncode == 0 and out.read_text() == "alpha\nbeta\nbeta\nalpha\n"
    js = json.loads(mpiopt("place", "convert", "--method", "1", "--np", "4", "--hosts", "a,b",
                           "--ppn", "2", "--format", "smpi", "--json").stdout)
    assert js["nodes"] == 2 and js["text"] == "a\na\nb\nb\n"


@pytest.mark.parametrize("argv, message", [
    (["--order", "{bad}", "--hosts", "a,b", "--ppn", "2", "--format", "rankfile"], "repeats rank 1"),
    (["--order", "{good}", "--hosts", "a", "--ppn", "2", "--format", "rankfile"], "need 2 hosts"),
    (["--method", "1", "--hosts", "a", "--ppn", "2", "--format", "smpi"], "--np"),
    (["--order", "{good}", "--hosts", "a,,b", "--ppn", "2", "--format", "smpi"], "bad host list"),
])
def test_convert_bad_input_writes_nothing(tmp_path, argv, message):
    (tmp_path / "bad").write_text("0,1,1,2")
    (tmp_path / "good").write_text("0-3")
    out = tmp_path / "out"
    argv = [a.format(bad=tmp_path / "bad", good=tmp_path / "good") for a in argv]
    r = mpiopt("place", "convert", *argv, "-o", out)
    assert r.returncode == 2 and message in r.stderr
    assert not out.exists()


def test_launch_args_rejects_bad_order_and_writes_nothing(tmp_path):
    (tmp_path / "order").write_text("0,1,2,2")
    work = tmp_path / "work"
    with pytest.raises(PlacementError, match="entry 3 repeats rank 2"):
        launch_args("openmpi", str(tmp_path / "order"), ["localhost"], 4, work)
    assert not work.exists() or not any(work.iterdir())
    (tmp_path / "order").write_text("0-3")
    with pytest.raises(PlacementError, match="flavour"):
        launch_args("lam", str(tmp_path / "order"), ["localhost"], 4, work)


WHERE_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char line[256], cpus[256] = "?";
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Cpus_allowed_list: %255s", cpus) == 1) break;
    if (f) fclose(f);
    printf("rank %d cpus %s\n", rank, cpus);
    MPI_Finalize();
    return 0;
}
"""


def _compile(flavour, tmp_path, source, name):
    """source: C text, or the path of a C file."""
    if flavour not in mpi.available_flavours():
        pytest.skip(f"{flavour} is not installed")
    if isinstance(source, str):
        path = tmp_path / f"{name}.c"
        path.write_text(source)
        source = path
    exe = tmp_path / f"{name}-{flavour}"
    subprocess.run([f"mpicc.{flavour}", "-O2", "-o", exe, source], check=True)
    return exe


def test_openmpi_accepts_rankfile_and_binds_ranks_to_their_slots(tmp_path):
    exe = _compile("openmpi", tmp_path, WHERE_C, "where")
    order = tmp_path / "order"
    order.write_text("3,2,1,0")
    # two "nodes" that are both this machine, under two names the launcher accepts
    args = launch_args("openmpi", str(order), ["localhost", os.uname().nodename], 2, tmp_path / "w")
    assert args[0] == "--rankfile" and os.path.exists(args[1])
    r = mpi.run("openmpi", 4, [exe], launcher_args=args, timeout=120)
    assert r.returncode == 0, r.stderr
    cpus = dict(l.split()[1::2] for l in r.stdout.splitlines() if l.startswith("rank"))
    ncpu = len(os.sched_getaffinity(0))
    # slot of a rank on its node: order 3,2 | 1,0 -> rank 3 slot 0, rank 2 slot 1, …
    expected = {"3": 0, "2": 1, "1": 0, "0": 1}
    assert set(cpus) == set(expected)
    for rank, slot in expected.items():
        assert cpus[rank] == str(slot % ncpu), r.stdout


def test_mpich_accepts_machinefile(tmp_path):
    exe = _compile("mpich", tmp_path, WHERE_C, "where")
    order = tmp_path / "order"
    order.write_text("0,2\n1,3\n")
    args = launch_args("mpich", str(order), ["localhost", os.uname().nodename], 2, tmp_path / "w")
    assert args[0] == "-f"
    with open(args[1]) as f:
        assert f.read() == f"localhost:1\n{os.uname().nodename}:1\nlocalhost:1\n{os.uname().nodename}:1\n"
    r = mpi.run("mpich", 4, [exe], launcher_args=args, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(l.split()[1] for l in r.stdout.splitlines() if l.startswith("rank")) == ["0", "1", "2", "3"]


# ---- the halo exchange program: a real MPI run, checked against a reference ----

def reference_checksum(x, y, steps, periodic):
    """halo2d's arithmetic in numpy, rank = i*Y + j, summed in rank order."""
    v = np.arange(x * y, dtype=float).reshape(x, y) + 1.0

    def shifted(a, axis, d):
        if periodic:
            return np.roll(a, d, axis=axis)
        out = np.zeros_like(a)
        src = [slice(None)] * 2
        dst = [slice(None)] * 2
        src[axis], dst[axis] = (slice(None, -1), slice(1, None)) if d == 1 else (slice(1, None), slice(None, -1))
        out[tuple(dst)] = a[tuple(src)]
        return out

    for _ in range(steps):
        s = 0.0 + shifted(v, 0, 1) + shifted(v, 0, -1) + shifted(v, 1, 1) + shifted(v, 1, -1)
        v = 0.5 * v + 0.125 * s
    total = 0.0
    for value in v.ravel():
        total += float(value)
    return total


@pytest.fixture(scope="module")
def halo2d_openmpi(tmp_path_factory):
    return _compile("openmpi", tmp_path_factory.mktemp("halo2d"),
                    mpi.repo_root() / "examples" / "halo2d.c", "halo2d")


@pytest.mark.parametrize("periodic", [0, 1])
def test_halo2d_under_a_rank_order_with_open_mpi(tmp_path, periodic, halo2d_openmpi):
    exe = halo2d_openmpi
    order = tmp_path / "order"
    order.write_text(mpiopt("grid-order", "-R", "-c", "2,2", "-g", "2,4").stdout)
    args = launch_args("openmpi", str(order), ["localhost", "localhost"], 4, tmp_path / "w")
    r = mpi.run("openmpi", 8, [exe, 2, 4, 3, 64, periodic], launcher_args=args, timeout=120)
    assert r.returncode == 0, r.stderr
    checksum = float(r.stdout.split("checksum=")[1].split()[0])
    assert checksum == pytest.approx(reference_checksum(2, 4, 3, periodic), rel=1e-15)


# ---- place search ----

def test_search_64x64_halves_off_node_bytes_of_smp(tmp_path):
    r = mpiopt("place", "search", "-g", "64,64", "--stencil", "5pt", "--ppn", "16", "--json",
               cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    best = out["best"][0]
    assert best["off_node_bytes"] <= 0.5 * out["smp"]["off_node_bytes"]
    assert best["command"] == "grid_order -C -Z -c 4,4 -g 64,64"
    written = read_order(tmp_path / "MPICH_RANK_ORDER", 4096)
    node = order_placement(written, 16).node_of_rank()
    off, _ = HaloPattern(Grid((64, 64)), "5pt").off_node(node)
    assert off * 8 == best["off_node_bytes"]


def test_search_100000_ranks_is_fast():
    start = time.perf_counter()
    found, smp = search(Grid((400, 250)), "5pt", 16)
    seconds = time.perf_counter() - start
    assert found[0].off_node_messages < smp["off_node_messages"]
    assert seconds < 60    # a few seconds alone; generous for a loaded CI machine


def test_search_uneven_grid_beats_smp_and_ties_break_on_busiest_node():
    found, smp = search(Grid((10, 10), "R"), "5pt", 16)
    keys = [(c.off_node_messages, c.max_node_off_node_messages) for c in found]
    assert keys == sorted(keys)
    assert found[0].off_node_messages < smp["off_node_messages"]
    assert sorted(found[0].order.order.tolist()) == list(range(100))


def test_search_bad_input(tmp_path):
    r = mpiopt("place", "search", "-g", "8,8", "--stencil", "7pt", "--ppn", "4", cwd=tmp_path)
    assert r.returncode == 2 and "3-D grid" in r.stderr
    assert not (tmp_path / "MPICH_RANK_ORDER").exists()


# ---- simulated halo exchange (SimGrid SMPI) ----

smpi_missing = pytest.mark.skipif(not shutil.which("smpirun"), reason="SimGrid SMPI not installed")


@smpi_missing
def test_simulated_halo_searched_order_beats_smp_on_torus(tmp_path):
    assert mpiopt("place", "search", "-R", "-g", "32,32", "--stencil", "5pt", "--ppn", "16",
                  "-o", tmp_path / "order").returncode == 0
    r = mpiopt("simulate", "halo", "--grid", "32,32", "--ppn", "16", "--platform", "torus",
               "--order", tmp_path / "order", "--steps", "1", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["results"]
    assert [row["placement"] for row in rows] == ["order (order)", "SMP"]
    assert rows[0]["time_per_step"] < rows[1]["time_per_step"]
    assert rows[0]["checksum"] == rows[1]["checksum"] == pytest.approx(
        reference_checksum(32, 32, 1, 0), rel=1e-15)


@smpi_missing
def test_simulated_halo_method_and_bad_input():
    r = mpiopt("simulate", "halo", "--grid", "8,8", "--ppn", "4", "--platform", "fattree",
               "--method", "0", "--steps", "2", "--periodic", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["results"]
    assert rows[0]["placement"] == "round-robin" and rows[1]["placement"] == "SMP"
    assert rows[0]["checksum"] == pytest.approx(reference_checksum(8, 8, 2, 1), rel=1e-15)
    bad = mpiopt("simulate", "halo", "--grid", "8,8,8", "--ppn", "4", "--method", "1")
    assert bad.returncode == 2 and "X,Y" in bad.stderr
