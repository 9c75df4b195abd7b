"""The reduction family through mpiopt's other tools (issue 39): examples/prefix_offsets.c, whose
loop calls MPI_Exscan, MPI_Scan, MPI_Reduce_scatter_block and MPI_Reduce_scatter, is profiled
(every call counted with its bytes), and transformed into nonblocking and persistent versions
that run mpiopt's schedules under the drop-in and print exactly what the original prints (integer
data: any summation order gives the same numbers)."""
from __future__ import annotations

import json
import os

import pytest

import difftest
from conftest import report_rows, require_build, run_mpiopt
from mpiopt import mpi

SOURCE = mpi.repo_root() / "examples" / "prefix_offsets.c"
STEPS, RANKS = 6, 3
ARGS = ["-i", str(STEPS), "-n", "64"]
LONG = 8
# bytes a call, as the profiler counts them at 3 ranks: one long; NBINS (8) longs a rank of the
# whole histogram; the uneven blocks' sum (0 + 1 + 2 longs)
BYTES = {"MPI_Exscan": LONG, "MPI_Scan": LONG, "MPI_Reduce_scatter_block": 8 * RANKS * LONG,
         "MPI_Reduce_scatter": 3 * LONG}
FORMS = {"nonblocking": ("MPI_Iexscan", "MPI_Iscan", "MPI_Ireduce_scatter_block", "MPI_Ireduce_scatter"),
         "persistent": ("MPI_Exscan_init", "MPI_Scan_init", "MPI_Reduce_scatter_block_init",
                        "MPI_Reduce_scatter_init")}


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_profile_counts_the_family(flavour, tmp_path):
    require_build(flavour)
    exe = difftest.build(SOURCE, flavour, tmp_path).executable
    r = run_mpiopt("profile", "-np", RANKS, "--no-preload", "-o", tmp_path / "prof", "--json",
                   "--", exe, *ARGS)
    assert r.returncode == 0, r.stderr[-3000:]
    calls = json.loads((tmp_path / "prof" / "mpiopt-profile.json").read_text())["calls"]
    for name, nbytes in BYTES.items():
        assert calls[name]["calls"]["min"] == calls[name]["calls"]["max"] == STEPS, (name, calls[name])
        assert calls[name]["bytes"]["max"] == STEPS * nbytes, (name, calls[name]["bytes"])


@pytest.mark.parametrize("mode", FORMS)
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_transformed_family_runs_mpiopt_schedules(flavour, mode, tmp_path):
    require_build(flavour)
    original = difftest.build(SOURCE, flavour, tmp_path, "prefix_offsets.original")
    transformed = difftest.transform(SOURCE, mode, tmp_path, flavour)
    built = difftest.build(transformed.path, flavour, tmp_path)
    assert not built.warnings, built.warnings
    expected = difftest.run(original.executable, flavour, RANKS, ARGS)
    r = mpi.run(flavour, RANKS, [built.executable, *ARGS], preload=True,
                env=dict(os.environ, MPIOPT_REPORT="1"), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert difftest.compare_outputs(expected, r.stdout) == [], (expected, r.stdout)
    rows = report_rows(r.stderr)
    # the report counts a persistent collective once, at its _init (a rank's), whose plan every
    # MPI_Start then runs; a nonblocking one at every call
    made = RANKS if mode == "persistent" else STEPS * RANKS
    for kind in FORMS[mode]:
        calls, by_mpiopt, _, _ = rows[kind]
        assert calls == by_mpiopt == made, (kind, rows)
