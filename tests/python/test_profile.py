"""libmpiopt-profile (src/profile/) and the commands on top of it: `mpiopt profile`, `mpiopt
report`, `mpiopt place search --matrix`. Real runs with both MPIs; every expected figure is
known by construction: rank r sleeps r units before each collective (so the slowest and fastest
ranks of compute, MPI and sync time are known), exchanges of known sizes give exact byte counts
and matrices (ring, 2-D halo, persistent requests), with C, Fortran and mpi4py programs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import BUILT_FLAVOURS, mpi4py_flavour, run_mpiopt
from mpiopt import mpi
from mpiopt.placement import off_node_bytes, order_placement, partition, method_placement

ROOT = Path(__file__).resolve().parents[2]
needs_profiler = pytest.mark.skipif(
    not any(mpi.profile_library(f).exists() for f in BUILT_FLAVOURS),
    reason="libmpiopt-profile not built (make build)")
pytestmark = needs_profiler
PROFILED = [f for f in BUILT_FLAVOURS if mpi.profile_library(f).exists()]


def profile(tmp_path: Path, np_: int, program: list, env_extra: dict | None = None,
            flavour: str | None = None, no_preload: bool = False) -> dict:
    out = tmp_path / "prof"
    env = dict(os.environ, **(env_extra or {}))
    args = ["profile", "-np", np_, "-o", out, "--json"]
    args += ["--flavour", flavour] if flavour else []
    args += ["--no-preload"] if no_preload else []
    r = run_mpiopt(*args, "--", *program, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    summary = json.loads(r.stdout[r.stdout.index("{\n"):])
    assert summary["ranks"] == np_ and summary["exit_status"] == 0
    data = json.loads((out / "mpiopt-profile.json").read_text())
    assert data["complete"] is True and data["ranks"] == np_
    data["_stdout"], data["_stderr"] = r.stdout, r.stderr
    return data


def matrix_of(data: dict) -> Counter:
    """{(source, destination): (bytes, messages)}"""
    return {(s, d): (b, m) for s, d, b, m in data["matrix"]["entries"]}


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    """examples/imbalance.c and shuffled_halo.c built with each MPI."""
    out = tmp_path_factory.mktemp("profile-examples")
    built = {}
    for f in PROFILED:
        for name in ("imbalance", "shuffled_halo"):
            exe = out / f"{name}-{f}"
            subprocess.run([f"mpicc.{f}", "-O2", "-o", exe, ROOT / "examples" / f"{name}.c"],
                           check=True)
            built[name, f] = exe
    return built


# ---- imbalance by construction ----

@pytest.mark.parametrize("flavour", PROFILED)
@pytest.mark.parametrize("nranks", [2, 4, 8])
def test_imbalance_min_max_pe(tmp_path, examples, flavour, nranks):
    steps, unit = 3, 40
    data = profile(tmp_path, nranks, [examples["imbalance", flavour], "--ramp", "-s", "-i", steps,
                                      "-u", unit], {"MPIOPT_PROFILE_SYNC": "1"})
    last = nranks - 1
    mpi_ = data["mpi"]
    assert (mpi_["compute_time"]["min_pe"], mpi_["compute_time"]["max_pe"]) == (0, last)
    assert (mpi_["mpi_time"]["min_pe"], mpi_["mpi_time"]["max_pe"]) == (last, 0)
    assert (mpi_["collective_sync_time"]["min_pe"], mpi_["collective_sync_time"]["max_pe"]) == (last, 0)
    assert data["sync_timing"] is True
    # rank r sleeps r units a step: compute time at least that, sync time of rank 0 about all of it
    assert mpi_["compute_time"]["max"] >= steps * unit * last / 1000 * 0.95
    assert mpi_["collective_sync_time"]["max"] >= steps * unit * last / 1000 * 0.8
    region = data["regions"]["physics"]
    assert (region["time"]["min_pe"], region["time"]["max_pe"]) == (0, last)
    assert region["count"]["min"] == region["count"]["max"] == steps
    allreduce = data["calls"]["MPI_Allreduce"]
    assert allreduce["calls"]["min"] == allreduce["calls"]["max"] == steps
    assert allreduce["bytes"]["min"] == allreduce["bytes"]["max"] == 8 * steps
    per_rank = np.array(data["per_rank"]["compute_time"])
    assert list(np.argsort(per_rank)) == list(range(nranks))


@pytest.mark.parametrize("flavour", PROFILED[:1])
@pytest.mark.parametrize("clock", ["tsc-if-trusted", "monotonic"])
def test_times_are_seconds_with_either_clock(tmp_path, examples, flavour, clock):
    steps, unit = 2, 50
    data = profile(tmp_path, 2, [examples["imbalance", flavour], "--ramp", "-s", "-i", steps, "-u", unit],
                   {"MPIOPT_PROFILE_CLOCK": clock})
    slept = steps * unit / 1000       # rank 1, in region "physics"
    physics = data["regions"]["physics"]["time"]
    assert physics["max_pe"] == 1 and slept <= physics["max"] < slept + 0.05
    wall = data["system"]["wall_time"]
    assert physics["max"] <= wall["max"] and wall["max"] < slept + 5


@pytest.mark.parametrize("flavour", PROFILED)
def test_sync_off_by_default_and_single_rank(tmp_path, examples, flavour):
    data = profile(tmp_path, 1, [examples["imbalance", flavour], "--ramp", "-s", "-i", "2", "-u", "1"])
    assert data["sync_timing"] is False
    assert data["mpi"]["collective_sync_time"]["max"] == 0
    assert data["calls"]["MPI_Allreduce"]["calls"]["max"] == 2
    assert data["papi"]["available"] is False and data["papi"]["reason"]


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_papi_counters_or_the_reason(tmp_path, mpiopt, flavour):
    data = profile(tmp_path, 2, [plain(flavour), "ring", 10, 1])
    papi = data["papi"]
    assert papi["available"] or papi["reason"]          # a VM without a PMU: the reason
    # a software event of perf_event needs no PMU: where libpapi loads, it is counted
    data = profile(tmp_path / "sw", 2, [plain(flavour), "ring", 10, 1],
                   {"MPIOPT_PROFILE_PAPI": "perf::TASK-CLOCK"})
    papi = data["papi"]
    if not papi["available"] and ("built without PAPI" in papi["reason"] or "libpapi" in papi["reason"]
                                  or "perf_event component is disabled" in papi["reason"]):
        pytest.skip(f"PAPI not usable here: {papi['reason']}")
    assert papi["available"], papi
    assert papi["counters"]["perf::TASK-CLOCK"]["min"] > 0
    r = mpiopt("report", tmp_path / "sw/prof/mpiopt-profile.json")
    assert r.returncode == 0 and "PAPI summary" in r.stdout and "TASK-CLOCK" in r.stdout


# ---- exact bytes and matrices ----

def plain(flavour: str) -> Path:
    return mpi.binary(flavour, "test-plain_profile_check")


@pytest.mark.parametrize("flavour", PROFILED)
@pytest.mark.parametrize("nranks", [1, 3, 8])
def test_ring_bytes_and_matrix(tmp_path, flavour, nranks):
    nbytes, iters = 1000, 5
    data = profile(tmp_path, nranks, [plain(flavour), "ring", nbytes, iters])
    call = data["calls"]["MPI_Sendrecv"]
    assert call["calls"]["min"] == call["calls"]["max"] == iters
    assert call["bytes"]["min"] == call["bytes"]["max"] == nbytes * iters
    assert call["avg_bytes"]["avg"] == nbytes
    assert matrix_of(data) == {(r, (r + 1) % nranks): (nbytes * iters, iters) for r in range(nranks)}


@pytest.mark.parametrize("flavour", PROFILED)
@pytest.mark.parametrize("px,py", [(2, 2), (3, 2), (4, 2)])
def test_halo2d_matrix(tmp_path, flavour, px, py):
    nbytes = 96
    data = profile(tmp_path, px * py, [plain(flavour), "halo2d", px, py, nbytes])
    want = Counter()
    for r in range(px * py):
        x, y = r % px, r // px
        for nx_, ny_ in (((x + 1) % px, y), ((x - 1) % px, y), (x, (y + 1) % py), (x, (y - 1) % py)):
            want[r, ny_ * px + nx_] += 1
    assert matrix_of(data) == {k: (nbytes * m, m) for k, m in want.items()}
    assert data["calls"]["MPI_Isend"]["bytes"]["max"] == 4 * nbytes
    assert data["calls"]["MPI_Irecv"]["bytes"]["min"] == 4 * nbytes
    assert data["calls"]["MPI_Waitall"]["calls"]["max"] == 1
    assert data["mpi"]["wait_probe_time"]["max"] > 0


@pytest.mark.parametrize("flavour", PROFILED)
def test_persistent_requests_count_when_started(tmp_path, flavour):
    nbytes, iters, n = 256, 4, 3
    data = profile(tmp_path, n, [plain(flavour), "persistent", nbytes, iters])
    assert data["calls"]["MPI_Startall"]["calls"]["max"] == iters
    assert data["calls"]["MPI_Startall"]["bytes"]["min"] == 2 * nbytes * iters   # send + receive
    assert data["calls"]["MPI_Send_init"]["bytes"]["max"] == 0
    assert data["calls"]["MPI_Bcast"]["bytes"]["max"] == nbytes
    assert matrix_of(data) == {(r, (r + 1) % n): (nbytes * iters, iters) for r in range(n)}


@pytest.mark.parametrize("flavour", PROFILED)
def test_other_communicators_nonblocking_and_persistent_collectives(tmp_path, flavour):
    nbytes, iters, n = 40, 3, 4
    data = profile(tmp_path, n, [plain(flavour), "misc", nbytes, iters])
    assert data["regions"] == {}                       # MPI_Pcontrol(1) / (0) carry no name
    assert data["calls"]["MPI_Iallreduce"]["bytes"]["min"] == 32
    # the ring on the reversed communicator, in world ranks: r sends to r - 1
    assert matrix_of(data) == {(r, (r - 1) % n): (nbytes, 1) for r in range(n)}
    if "persistent collectives: no" in data["_stdout"]:
        return
    init = [c for c in data["calls"] if c.endswith("Allreduce_init")]
    assert init == ["MPI_Allreduce_init" if flavour == "mpich" else "MPIX_Allreduce_init"]
    assert data["calls"][init[0]]["bytes"]["max"] == 0
    assert data["calls"]["MPI_Start"]["calls"]["min"] == iters
    assert data["calls"]["MPI_Start"]["bytes"]["min"] == data["calls"]["MPI_Start"]["bytes"]["max"] == 8 * iters


C_REGIONS = r"""
#include <mpi.h>
#include <time.h>
#include "mpiopt_profile.h"
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct timespec ts = {0, 10000000L * rank};
    for (int i = 0; i < 2; i++) {
        mpiopt_region_begin("outer");
        mpiopt_region_begin("inner");
        nanosleep(&ts, NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        mpiopt_region_end("inner");
        mpiopt_region_end("outer");
    }
    MPI_Finalize();
    return 0;
}
"""


def build_linked(tmp_path: Path, compiler: str, source: str, suffix: str) -> Path:
    """A program linked with libmpiopt-profile (for the region API). --no-as-needed: the library
    defines mpi_init_ & co., so the linker would otherwise drop the MPI's Fortran library they
    forward to (docs/profiling.md)."""
    src = tmp_path / f"regions{suffix}"
    src.write_text(source)
    lib = mpi.profile_library(compiler.split(".")[-1]).parent
    exe = tmp_path / f"regions{suffix.replace('.', '-')}"
    try:
        subprocess.run([compiler, "-o", exe, src, f"-I{ROOT / 'include'}", "-Wl,--no-as-needed",
                        f"-L{lib}", "-lmpiopt-profile", f"-Wl,-rpath,{lib}"], check=True)
    except FileNotFoundError:
        pytest.skip(f"no {compiler}")
    return exe


@pytest.mark.parametrize("flavour", PROFILED)
def test_region_api_linked(tmp_path, flavour):
    exe = build_linked(tmp_path, f"mpicc.{flavour}", C_REGIONS, ".c")
    data = profile(tmp_path, 3, [exe])
    for name in ("outer", "inner"):
        region = data["regions"][name]
        assert region["count"]["min"] == region["count"]["max"] == 2
        assert region["mpi_time"]["min"] > 0                  # the barrier is inside
        assert (region["mpi_time"]["min_pe"], region["mpi_time"]["max_pe"]) == (2, 0)
    assert data["calls"]["MPI_Barrier"]["calls"]["max"] == 2


F_REGIONS = """
program regions
  use mpi
  implicit none
  integer :: ierr, i
  call MPI_Init(ierr)
  do i = 1, 3
    call mpiopt_region_begin('solver   ')
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call mpiopt_region_end('solver')
  end do
  call MPI_Finalize(ierr)
end program regions
"""


@pytest.mark.parametrize("flavour", PROFILED)
def test_region_api_fortran(tmp_path, flavour):
    exe = build_linked(tmp_path, f"mpif90.{flavour}", F_REGIONS, ".f90")
    data = profile(tmp_path, 2, [exe])
    region = data["regions"]["solver"]                    # trailing blanks dropped
    assert region["count"]["min"] == region["count"]["max"] == 3
    assert data["calls"]["MPI_Barrier"]["calls"]["min"] == 3


# ---- other languages, and with the drop-in ----

@pytest.mark.parametrize("flavour", PROFILED)
def test_fortran_program(tmp_path, flavour):
    exe = mpi.binary(flavour, "ftest-profile_ring")
    if not exe.exists():
        pytest.skip("no Fortran compiler: ftest-profile_ring not built")
    n = 3
    data = profile(tmp_path, n, [exe])
    assert "fprofile:    3.0" in data["_stdout"]
    calls = data["calls"]
    assert calls["MPI_Sendrecv"]["calls"]["max"] == 3 and calls["MPI_Sendrecv"]["bytes"]["min"] == 24000
    assert calls["MPI_Isend"]["bytes"]["max"] == 8000
    assert calls["MPI_Allreduce"]["calls"]["min"] == calls["MPI_Allreduce"]["calls"]["max"] == 1
    assert matrix_of(data) == {(r, (r + 1) % n): (32000, 4) for r in range(n)}
    assert data["regions"]["pcontrol"]["count"]["max"] == 1


MPI4PY_PROGRAM = """
from mpi4py import MPI
import numpy as np
c = MPI.COMM_WORLD
r, p = c.Get_rank(), c.Get_size()
a = np.zeros(100, dtype='d'); b = np.empty_like(a)
for _ in range(2):
    c.Sendrecv(a, dest=(r + 1) % p, recvbuf=b, source=(r - 1) % p)
c.Allreduce(a, b)
"""


def test_mpi4py_program(tmp_path):
    flavour = mpi4py_flavour(PROFILED)
    script = tmp_path / "prog.py"
    script.write_text(MPI4PY_PROGRAM)
    data = profile(tmp_path, 3, [sys.executable, script])
    assert data["calls"]["MPI_Sendrecv"]["bytes"]["min"] == 1600
    assert data["calls"]["MPI_Allreduce"]["bytes"]["max"] == 800
    assert matrix_of(data) == {(r, (r + 1) % 3): (1600, 2) for r in range(3)}


@pytest.mark.parametrize("flavour", PROFILED)
def test_drop_in_still_runs_under_the_profiler(tmp_path, examples, flavour):
    data = profile(tmp_path, 2, [examples["imbalance", flavour], "--ramp", "-s", "-i", "2", "-u", "1"],
                   {"MPIOPT_VERBOSE": "1"})
    assert "mpiopt: allreduce" in data["_stderr"], data["_stderr"][-2000:]   # mpiopt's algorithm ran
    assert data["calls"]["MPI_Allreduce"]["calls"]["max"] == 2                # and was timed
    alone = profile(tmp_path / "vendor", 2, [examples["imbalance", flavour], "--ramp", "-s", "-i", "2",
                                             "-u", "1"], {"MPIOPT_VERBOSE": "1"}, no_preload=True)
    assert "mpiopt: allreduce" not in alone["_stderr"]
    assert alone["calls"]["MPI_Allreduce"]["calls"]["max"] == 2


# ---- failures ----

@pytest.mark.parametrize("flavour", PROFILED)
def test_aborted_program_leaves_no_profile(tmp_path, mpiopt, flavour):
    out = tmp_path / "prof"
    out.mkdir()
    (out / "mpiopt-profile.json").write_text('{"format": "mpiopt-profile"}')   # an older run's
    r = mpiopt("profile", "-np", 2, "-o", out, "--", plain(flavour), "abort", timeout=300)
    assert r.returncode == 2
    assert "no profile written" in r.stderr and "MPI_Finalize" in r.stderr
    assert not list(out.glob("*mpiopt-profile*"))


def test_report_bad_files(tmp_path, mpiopt):
    r = mpiopt("report", tmp_path / "missing.json")
    assert r.returncode == 2 and "no such file" in r.stderr
    bad = tmp_path / "cut.json"
    bad.write_text('{"format": "mpiopt-profile", "version": 1, "ranks": 2, "system": {')
    r = mpiopt("report", bad)
    assert r.returncode == 2 and "not valid JSON" in r.stderr
    bad.write_text('{"something": "else"}')
    r = mpiopt("report", bad)
    assert r.returncode == 2 and "not an mpiopt profile" in r.stderr
    r = mpiopt("place", "search", "--matrix", bad, "--ppn", "2")
    assert r.returncode == 2 and "not an mpiopt profile" in r.stderr


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_report_views(tmp_path, mpiopt, flavour):
    a = profile(tmp_path / "a", 4, [plain(flavour), "ring", 100, 2])
    b = profile(tmp_path / "b", 4, [plain(flavour), "ring", 100, 6])
    pa, pb = tmp_path / "a/prof/mpiopt-profile.json", tmp_path / "b/prof/mpiopt-profile.json"
    r = mpiopt("report", pa, pb, "--json", "--top", "2", "--png", tmp_path / "pic")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ratio_b_over_a"]["MPI summary: Sendrecv calls"] == 3.0
    assert doc["ratio_b_over_a"]["MPI summary: Sendrecv total bytes"] == 3.0
    assert doc["profiles"][0]["top_calls"][0]["call"] in a["calls"]
    assert (tmp_path / "pic-ranks.png").stat().st_size > 0 and (tmp_path / "pic-matrix.png").exists()
    r = mpiopt("report", pa)
    assert r.returncode == 0 and "System summary" in r.stdout and "Sendrecv" in r.stdout
    assert "unavailable" in r.stdout
    assert "imb% = 100 (max - avg) / max * N / (N - 1)" in (tmp_path / "a/prof/mpiopt-profile.txt").read_text()
    for line in doc["profiles"][0]["sections"]["MPI summary"]:
        mx, avg = line["max"], line["avg"]
        assert line["imbalance"] == pytest.approx(mx - avg)
        assert line["imbalance_pct"] == pytest.approx(100 * (mx - avg) / mx * 4 / 3 if mx > 0 else 0)
    assert b["calls"]["MPI_Sendrecv"]["calls"]["max"] == 6


# ---- placement from the matrix ----

def test_partition_keeps_ppn_and_never_loses_to_smp():
    rng = np.random.default_rng(3)
    for n, ppn in ((12, 4), (10, 4), (16, 16), (9, 1)):
        m = rng.integers(0, 100, (n, n)).astype(float) * (rng.random((n, n)) < 0.3)
        found = partition(m, ppn)
        assert sorted(found.order.tolist()) == list(range(n))
        node = order_placement(found.order, ppn).node_of_rank()
        assert np.bincount(node).tolist() == [ppn] * (n // ppn) + ([n % ppn] if n % ppn else [])
        assert found.off_node_bytes == off_node_bytes(m, node)[0] <= found.smp_off_node_bytes
        assert found.smp_off_node_bytes == off_node_bytes(m, method_placement(1, n, ppn).node_of_rank())[0]


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_place_search_matrix_beats_smp_on_shuffled_halo(tmp_path, mpiopt, examples, flavour):
    # the bar: 64 ranks (oversubscribed here), 16 a node, at most half SMP's off-node bytes
    profile(tmp_path, 64, [examples["shuffled_halo", flavour], 8, 8, 1, 1024])
    order = tmp_path / "ORDER"
    r = mpiopt("place", "search", "--matrix", tmp_path / "prof/mpiopt-profile.json", "--ppn", 16,
               "-o", order, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["best"]["off_node_bytes"] <= 0.5 * doc["smp"]["off_node_bytes"]
    listed = [int(x) for line in order.read_text().splitlines() if not line.startswith("#")
              for x in line.split(",")]
    assert sorted(listed) == list(range(64))
