"""`mpiopt advise` end to end on the examples, with real runs of both MPIs: every step runs (or
says why not), the report's figures come from the runs (a program whose MPI time is known by
construction), a step that changes the program's output is caught, a build that fails is
reported and the other steps go on. The runs are tiny: these tests check what the report says,
not how fast anything is."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import require_build, run_mpiopt
from mpiopt import mpi
from mpiopt.advise import measure
from mpiopt.simulation import smpi

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FLAVOURS = mpi.available_flavours()


def _build(src: Path, flavour: str, out: Path) -> Path:
    exe = out / src.stem
    subprocess.run([f"mpicc.{flavour}", "-O2", "-g", "-o", str(exe), str(src), "-lm"], check=True)
    return exe


def _advise(tmp_path: Path, *args) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "advice"
    r = run_mpiopt("advise", "--json", "--repeat", "2", "-o", out, *args)
    data = json.loads(r.stdout) if r.stdout.startswith("{") else {}
    return r, data


def _step(data: dict, name: str) -> dict:
    return next(s for s in data["steps"] if s["name"] == name)


def test_mpi_time_known_by_construction(tmp_path):
    """examples/imbalance.c --ramp -s at 2 ranks: rank 1 sleeps a unit a step outside MPI, rank 0
    none, then both reduce. Rank 0 spends the whole run in MPI_Allreduce, rank 1 almost nothing:
    MPI is half the time on average, rank 0 the maxPE, rank 1 the minPE."""
    flavour = FLAVOURS[0]
    require_build(flavour)
    exe = _build(EXAMPLES / "imbalance.c", flavour, tmp_path)
    steps_, unit_ms = 25, 8
    r, data = _advise(tmp_path, "-np", "2", "--", exe, "-i", steps_, "-u", unit_ms, "-s", "--ramp")
    assert r.returncode == 0, r.stderr[-3000:]
    prof = data["profile"]
    assert 0.35 < prof["mpi_share"] < 0.65, prof
    imb = prof["imbalance"]
    assert imb["max_pe"] == 0 and imb["min_pe"] == 1, imb
    assert imb["max"] > 0.8 * steps_ * unit_ms / 1e3 and imb["min"] < 0.3 * imb["max"], imb
    assert [x["call"] for x in prof["reductions"]] == ["MPI_Allreduce"]
    base, dropin = _step(data, "baseline"), _step(data, "dropin")
    for s in (base, dropin):
        assert s["runs"] == "2/2" and s["wall"]["median"] > steps_ * unit_ms / 1e3, s
    assert dropin["check"]["ok"] is True, dropin["check"]
    assert "verdict" in dropin["change"] and dropin["change"]["against"] == "baseline"
    rows = {x["entry"]: x for x in data["dropin_report"]["rows"]}
    assert rows["MPI_Allreduce"]["by_mpiopt"] == rows["MPI_Allreduce"]["calls"] == 2 * steps_, rows
    assert _step(data, "placement")["status"] == "skipped"
    assert "no --source" in _step(data, "transformed")["status_line"]
    for f in ("report.md", "report.html", "report.json", "steps.png", "ranks.png", "mpi-calls.png"):
        assert (tmp_path / "advice" / f).stat().st_size > 0, f
    md = (tmp_path / "advice" / "report.md").read_text()
    assert "| + drop-in |" in md and "MPI_Allreduce" in md


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_cg_every_step(tmp_path, flavour):
    """CG at 2 ranks with its source: the profile's costly sites rewritten in a copy, rebuilt with
    the user's command, run under the drop-in and checked against the baseline's output."""
    require_build(flavour)
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(EXAMPLES / "cg.c", src)
    exe = _build(src / "cg.c", flavour, src)
    before = (src / "cg.c").read_text()
    r, data = _advise(tmp_path, "-np", "2", "--source", src,
                      "--build", f"mpicc.{flavour} -O2 -g -o cg cg.c -lm", "--", exe, "-n", "96", "-i", "40")
    assert r.returncode == 0, r.stderr[-3000:]
    tr = _step(data, "transformed")
    assert tr["status"] == "ran" and tr["runs"] == "2/2", tr
    assert tr["check"]["ok"] is True, tr["check"]
    assert tr["change"]["against"] == "dropin"
    assert data["transform"]["sites_changed"] >= 1
    # the copy's files are the profiled tree's: matched by path, not by file name alone
    assert "nonblocking: costly" in data["transform"]["summary"]
    assert "matched by file name" not in data["transform"]["summary"], data["transform"]["summary"]
    diff = Path(data["transform"]["diff"]).read_text()
    assert "+" in diff and "MPI_I" in diff, diff[:2000]
    assert (src / "cg.c").read_text() == before      # the user's tree is never written


def test_fortran_every_step(tmp_path):
    """examples/heat_f.f90 (free form, `use mpi`) at 2 ranks with its source: the profile finds its
    Fortran call sites, the transformation rewrites them in a copy (its MPI_ALLREDUCE's wait moves
    past the copy loop), the copy builds with the user's mpif90 command, and its output is the
    baseline's."""
    flavour = FLAVOURS[0]
    require_build(flavour)
    if not shutil.which(f"mpif90.{flavour}"):
        pytest.skip(f"no mpif90.{flavour}")
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(EXAMPLES / "heat_f.f90", src)
    build = f"mpif90.{flavour} -O2 -g -o heat_f heat_f.f90"
    subprocess.run(build.split(), cwd=src, check=True)
    before = (src / "heat_f.f90").read_text()
    r, data = _advise(tmp_path, "-np", "2", "--source", src, "--build", build, "--",
                      src / "heat_f", "60", "20000")
    assert r.returncode == 0, r.stderr[-3000:]
    tr = _step(data, "transformed")
    assert tr["status"] == "ran" and tr["runs"] == "2/2", tr
    assert tr["check"]["ok"] is True, tr["check"]
    assert data["transform"]["sites_changed"] >= 1, data["transform"]
    diff = Path(data["transform"]["diff"]).read_text()
    assert "+" in diff and "MPI_IALLREDUCE" in diff.upper(), diff[:2000]
    assert (src / "heat_f.f90").read_text() == before      # the user's tree is never written


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_halo_placement(tmp_path, flavour):
    """The halo stencil at 4 ranks on this 2-core node: nodes of 2, an order from the measured
    matrix written as MPICH_RANK_ORDER, the placement simulated (one node here) or said why not."""
    require_build(flavour)
    exe = _build(EXAMPLES / "halo2d.c", flavour, tmp_path)
    r, data = _advise(tmp_path, "-np", "4", "--ppn", "2", "--check", r"checksum=\S+", "--",
                      exe, "4", "1", "20", "4096")
    assert r.returncode == 0, r.stderr[-3000:]
    pl = data["placement"]
    assert pl["ppn"] == 2 and pl["total_bytes"] > 0 and pl["off_node_bytes"] <= pl["smp_off_node_bytes"]
    # a 4 x 1 line: SMP order keeps neighbours 0-1 and 2-3 together; one pair crosses
    assert sorted(pl["order"]) == [0, 1, 2, 3]
    order = Path(pl["order_file"]).read_text().splitlines()
    assert order[0].startswith("#") and len(order) == 3
    if smpi.available():     # the order found against SMP order, replayed under SMPI
        rows = {x["placement"]: x for x in pl["simulated"]}
        assert rows["order found"]["seconds"] <= rows["SMP (ranks in order)"]["seconds"] * 1.001, rows
    else:
        assert any("no simulation" in n for n in pl["notes"]), pl
    assert _step(data, "placement")["status"] == "simulated"
    assert _step(data, "dropin")["check"]["ok"] is True   # halo2d prints its timing: --check needed


PRELOAD_SPY = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    double x = 1.0, sum;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const char *p = getenv("LD_PRELOAD");
    if (rank == 0)   /* a result that changes under the drop-in: what --check must catch */
        printf("sum=%g preloaded=%d elapsed=%f\n", sum, p && strstr(p, "libmpiopt.so") != NULL,
               MPI_Wtime());
    MPI_Finalize();
    return 0;
}
"""


def test_output_change_caught_and_failed_build_reported(tmp_path):
    """A program whose output changes under the drop-in: --check (which leaves its timing out)
    catches it and advise exits 1; the build command fails: the transformation says so in one
    line and the other steps still ran."""
    flavour = FLAVOURS[0]
    require_build(flavour)
    src = tmp_path / "src"
    src.mkdir()
    (src / "spy.c").write_text(PRELOAD_SPY)
    exe = _build(src / "spy.c", flavour, src)
    r, data = _advise(tmp_path, "-np", "2", "--source", src, "--build", "echo broken >&2; exit 3",
                      "--check", r"sum=\S+ preloaded=\d", "--", exe)
    assert r.returncode == 1, r.stderr[-3000:]
    dropin = _step(data, "dropin")
    assert dropin["check"]["ok"] is False and "differs" in dropin["check"]["message"], dropin
    tr = _step(data, "transformed")
    assert tr["status"] == "skipped" and "build command failed (exit 3: broken" in tr["status_line"], tr
    assert _step(data, "baseline")["runs"] == "2/2"


PYPI_MPICH = mpi.repo_root() / "build" / "mpis" / "mpich"


@pytest.mark.skipif(not (PYPI_MPICH / "bin" / "mpicc").exists(),
                    reason="no PyPI MPICH in build/mpis (make test-mpis)")
def test_program_of_another_mpi(tmp_path):
    """A program built with an MPI that has no libmpiopt: the drop-in step says why and how
    (--mpi), and the transformed program still runs, compared with the program as it is."""
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(EXAMPLES / "cg.c", src)
    mpicc = PYPI_MPICH / "bin" / "mpicc"
    subprocess.run([mpicc, "-O2", "-g", "-o", src / "cg", src / "cg.c", "-lm"], check=True)
    r, data = _advise(tmp_path, "-np", "2", "--no-plots", "--source", src, "--build",
                      f"{mpicc} -O2 -g -o cg cg.c -lm", "--", src / "cg", "-n", "64", "-i", "20")
    assert r.returncode == 0, r.stderr[-3000:]
    dropin = _step(data, "dropin")
    assert dropin["status"] == "skipped" and "--mpi PREFIX" in dropin["status_line"], dropin
    tr = _step(data, "transformed")
    assert tr["status"] == "ran" and tr["check"]["ok"] is True and tr["change"]["against"] == "baseline", tr


def test_bad_arguments(tmp_path):
    r = run_mpiopt("advise", "-np", "2", "--source", tmp_path, "--", "/bin/true")
    assert r.returncode == 2 and "--source DIR and --build CMD go together" in r.stderr
    r = run_mpiopt("advise", "-np", "2", "--check", "(", "--", "/bin/true")
    assert r.returncode == 2 and "not a regular expression" in r.stderr
    r = run_mpiopt("advise", "-np", "2", "--", tmp_path / "missing")
    assert r.returncode == 2 and "program not found" in r.stderr
    r = run_mpiopt("advise", "--help")
    assert r.returncode == 0 and "examples:" in r.stdout


def test_verdicts():
    f = measure.Figures
    assert measure.Change(f([1.0, 1.1]), f([0.5, 0.55])).verdict == "50 % faster"
    assert measure.Change(f([1.0, 1.1]), f([1.05, 1.2])).verdict.startswith("no measurable change")
    assert measure.Change(f([1.0, 1.1]), f([1.3, 1.4])).verdict == "29 % slower"
    assert measure.Change(f([1.0]), f([0.5])).verdict.startswith("one run each")
    assert measure.result_text("e=1.5 t=3\ne=2 t=4\n", r"e=(\S+)") == "1.5\n2"


def test_output_check_needs_a_stable_baseline():
    """A program that prints its timing cannot be checked on its whole stdout: advise says so
    (and how to fix it) instead of calling every step wrong."""
    from mpiopt.advise.launches import RunRecord
    runs = [RunRecord("baseline", i, 0, 1.0, f"x=1 t=0.{i}\n", "", Path(".")) for i in range(2)]
    ref, why = measure.baseline_reference(runs, None)
    assert ref is None and "--check REGEX" in why
    check = measure.check_output(ref, why, runs, None)
    assert check.ok is None and check.message.startswith("not checked")
    ref, why = measure.baseline_reference(runs, r"x=\d")
    assert ref == "x=1"
    assert measure.check_output(ref, why, [RunRecord("dropin", 0, 0, 1.0, "x=2\n", "", Path("."))],
                                r"x=\d").ok is False
