"""mpiopt scaling: efficiency arithmetic from fixed inputs (one study, and strong and weak in one
file), real runs, halo2d's compute phase, bad input."""
import json
import re
import subprocess

import pytest

from conftest import require_build
from mpiopt import mpi
from mpiopt.benchmarks.scaling import dims_create, fill_args, study_sizes
from mpiopt.simulation import smpi

HALO2D = mpi.repo_root() / "examples" / "halo2d.c"


def one_study(mode, times):
    return {"mode": mode, "runs": [
        {"ranks": p, "nodes": 1, "decomposition": dims_create(p, 2), "time_per_step": t}
        for p, t in times]}


def write(tmp_path, mode, times):
    """A one-study results file, the shape `scaling run` has always written for one study."""
    f = tmp_path / "r.json"
    f.write_text(json.dumps(one_study(mode, times)))
    return f


def test_strong_efficiency(mpiopt, tmp_path):
    # smallest run p1=2, T1=8: p=4 T=5 -> speed-up 1.6, efficiency 8*2/(5*4) = 0.8;
    # p=8 T=4 -> speed-up 2, efficiency 16/32 = 0.5
    r = mpiopt("scaling", "table", write(tmp_path, "strong", [(8, 4.0), (2, 8.0), (4, 5.0)]), "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["table"]
    assert [x["ranks"] for x in rows] == [2, 4, 8]
    assert [x["speedup"] for x in rows] == pytest.approx([1.0, 1.6, 2.0])
    assert [x["efficiency"] for x in rows] == pytest.approx([1.0, 0.8, 0.5])


def test_weak_efficiency(mpiopt, tmp_path):
    # weak: T1/Tp against the smallest run: 2/2.5 = 0.8, 2/4 = 0.5
    png = tmp_path / "w.png"
    r = mpiopt("scaling", "table", write(tmp_path, "weak", [(1, 2.0), (4, 2.5), (16, 4.0)]),
               "--json", "--png", png)
    rows = json.loads(r.stdout)["table"]
    assert [x["efficiency"] for x in rows] == pytest.approx([1.0, 0.8, 0.5])
    assert png.stat().st_size > 1000


def test_strong_and_weak_in_one_file(mpiopt, tmp_path):
    # the same numbers as above, the two studies in one file as `scaling run --strong --weak`
    # writes it; each table is against its own smallest run
    f = tmp_path / "both.json"
    f.write_text(json.dumps({"studies": [one_study("strong", [(8, 4.0), (2, 8.0), (4, 5.0)]),
                                         one_study("weak", [(1, 2.0), (4, 2.5), (16, 4.0)])]}))
    png = tmp_path / "both.png"
    r = mpiopt("scaling", "table", f, "--json", "--png", png)
    assert r.returncode == 0, r.stderr
    strong, weak = json.loads(r.stdout)["studies"]
    assert strong["mode"] == "strong" and weak["mode"] == "weak"
    assert [x["speedup"] for x in strong["table"]] == pytest.approx([1.0, 1.6, 2.0])
    assert [x["efficiency"] for x in strong["table"]] == pytest.approx([1.0, 0.8, 0.5])
    assert [x["efficiency"] for x in weak["table"]] == pytest.approx([1.0, 0.8, 0.5])
    # weak speed-up: p/p1 * efficiency = 4*0.8, 16*0.5
    assert [x["speedup"] for x in weak["table"]] == pytest.approx([1.0, 3.2, 8.0])
    assert png.stat().st_size > 1000
    text = mpiopt("scaling", "table", f)
    assert text.returncode == 0, text.stderr
    assert "strong scaling" in text.stdout and "weak scaling" in text.stdout
    assert "80.0%" in text.stdout and "50.0%" in text.stdout
    assert "\x1b[" not in text.stdout    # piped: plain text, no colour codes


def test_one_study_file_prints_one_table(mpiopt, tmp_path):
    r = mpiopt("scaling", "table", write(tmp_path, "strong", [(2, 8.0), (4, 5.0)]))
    assert r.returncode == 0, r.stderr
    assert "strong scaling" in r.stdout and "weak" not in r.stdout and "80.0%" in r.stdout


def test_sizes_of_both_studies():
    # alone: --size as given; both: weak local edge --size, strong global edge --size times the
    # last dimension of the smallest run (16 ranks: 4x4), so both start from 256x256 a rank
    assert study_sizes(["strong"], 256, [16, 64], 2) == {"strong": 256}
    assert study_sizes(["strong", "weak"], 256, [16, 64], 2) == {"strong": 1024, "weak": 256}
    assert study_sizes(["strong", "weak"], 256, [2, 4], 2) == {"strong": 256, "weak": 256}
    args = ["{d0}", "{d1}", "{local_bytes}", "{local0}", "{local1}", "{local}"]
    assert fill_args(args, 16, [4, 4], 1024, weak=False) == ["4", "4", "2048", "256", "256", "256"]
    assert fill_args(args, 2, [2, 1], 256, weak=False) == ["2", "1", "2048", "128", "256", "256"]
    assert fill_args(args, 2, [2, 1], 256, weak=True) == ["2", "1", "2048", "256", "256", "256"]


def test_dims_create_like_mpi():
    assert dims_create(12, 2) == [4, 3]
    assert dims_create(1024, 2) == [32, 32]
    assert dims_create(7, 2) == [7, 1]
    assert dims_create(8, 3) == [2, 2, 2]


def test_real_run(mpiopt, tmp_path):
    require_build()
    out = tmp_path / "s.json"
    flavour = mpi.built_flavours()[0]
    r = mpiopt("scaling", "run", "--ranks", "1,2,4", "--strong", "--size", "256", "--mpi", flavour,
               "-o", out, "--json", "--", mpi.repo_root() / "examples" / "halo2d.c",
               "{d0}", "{d1}", "5", "{local_bytes}")
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert [x["ranks"] for x in res["runs"]] == [1, 2, 4]
    assert res["runs"][2]["argv"] == ["2", "2", "5", str(8 * 256 // 2)]
    assert all(x["time_per_step"] > 0 for x in res["runs"])
    assert json.loads(r.stdout)["table"][0]["efficiency"] == pytest.approx(1.0)


def test_real_run_strong_and_weak(mpiopt, tmp_path):
    """Both studies from one command, with halo2d's compute phase: one file, two tables."""
    require_build()
    out, png = tmp_path / "both.json", tmp_path / "both.png"
    flavour = mpi.built_flavours()[0]
    r = mpiopt("scaling", "run", "--ranks", "1,2", "--strong", "--weak", "--size", "64",
               "--mpi", flavour, "-o", out, "--png", png, "--", HALO2D,
               "{d0}", "{d1}", "5", "{local_bytes}", "0", "{local0}", "{local1}")
    assert r.returncode == 0, r.stderr
    assert "strong scaling" in r.stdout and "weak scaling" in r.stdout
    strong, weak = json.loads(out.read_text())["studies"]
    assert (strong["mode"], strong["size"], weak["mode"], weak["size"]) == ("strong", 64, "weak", 64)
    # strong: the 64x64 grid split over 2x1; weak: 64x64 a rank
    assert strong["runs"][1]["argv"] == ["2", "1", "5", "512", "0", "32", "64"]
    assert weak["runs"][1]["argv"] == ["2", "1", "5", "512", "0", "64", "64"]
    # the 1-rank run is the same for both studies: made once, one T1 for both tables
    assert strong["runs"][0] == weak["runs"][0]
    assert all(x["time_per_step"] > 0 for s in (strong, weak) for x in s["runs"])
    assert png.stat().st_size > 1000
    again = mpiopt("scaling", "table", out, "--json")
    assert [s["table"][0]["efficiency"] for s in json.loads(again.stdout)["studies"]] == [1.0, 1.0]


def compile_halo2d(compiler, tmp_path):
    exe = tmp_path / f"halo2d-{compiler}"
    subprocess.run([compiler, "-O2", "-o", exe, HALO2D], check=True)
    return exe


def halo2d_line(stdout):
    line = [l for l in stdout.splitlines() if l.startswith("halo2d ")]
    assert len(line) == 1, stdout
    return dict(re.findall(r"(\w+)=(\S+)", line[0]))


def test_halo2d_compute_phase_leaves_the_checksum(tmp_path):
    """LOCAL_X LOCAL_Y add a Jacobi sweep a step: same checksum as without (the sweep is on its
    own block), its time reported; the old arguments print the old line, no new fields."""
    require_build()
    flavour = mpi.built_flavours()[0]
    exe = compile_halo2d(f"mpicc.{flavour}", tmp_path)
    plain = mpi.run(flavour, 4, [exe, 2, 2, 3, 64, 1], timeout=120)
    sweep = mpi.run(flavour, 4, [exe, 2, 2, 3, 64, 1, 96, 64], timeout=120)
    assert plain.returncode == 0 and sweep.returncode == 0, plain.stderr + sweep.stderr
    before, after = halo2d_line(plain.stdout), halo2d_line(sweep.stdout)
    assert list(before) == ["grid", "steps", "bytes", "periodic", "time_per_step", "checksum"]
    assert after["checksum"] == before["checksum"] == "10"
    assert after["local"] == "96x64"
    assert 0 < float(after["compute_per_step"]) <= float(after["time_per_step"])


@pytest.mark.skipif(not smpi.available(), reason="SimGrid SMPI not installed")
def test_halo2d_compute_phase_under_smpi(tmp_path):
    """Under SMPI the sweep is a modelled 1 ns a point on the simulated clock (deterministic)."""
    exe = compile_halo2d("smpicc", tmp_path)
    platform, hosts = smpi.write_machine(tmp_path, "torus", 4, 4)
    runs = [smpi.smpirun(exe, [2, 2, 3, 64, 0, *local], 4, platform, hosts,
                         config=["--cfg=smpi/privatization:no"], timeout=120)
            for local in ([], [256, 128])]
    plain, sweep = (halo2d_line(r.stdout) for r in runs)
    assert sweep["checksum"] == plain["checksum"] and "local" not in plain
    # 256*128 points at 1 ns, plus SMPI's few ns for each MPI_Wtime
    assert float(sweep["compute_per_step"]) == pytest.approx(256 * 128 * 1e-9, rel=1e-3)


@pytest.mark.skipif(not smpi.available(), reason="SimGrid SMPI not installed")
def test_simulated_run_takes_the_simulated_time(mpiopt, tmp_path):
    # --step-regex '': the time per step is SMPI's simulated time of the whole run
    r = mpiopt("scaling", "run", "--ranks", "1,4", "--weak", "--size", "16", "--simulate",
               "--step-regex", "", "--json", "--", HALO2D, "{d0}", "{d1}", "2", "{local_bytes}")
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert all(0 < x["time_per_step"] == x["wall"] < 1 for x in runs), runs


@pytest.mark.parametrize("args,needle", [
    (["run", "--ranks", "1,0", "--", "x.c"], "process counts"),
    (["run", "--ranks", "1,2"], "program"),
    (["run", "--ranks", "1", "--", "/nonexistent/app"], "does not exist"),
    (["run", "--ranks", "1", "--size", "0", "--", "x"], "--size"),
    (["run", "--ranks", "1,2", "--strong", "--weak", "--", str(HALO2D), "{d0}"], "needs --size"),
    (["run", "--ranks", "1,2", "--strong", "--weak", "--size", "8", "--", str(HALO2D), "{local7}"],
     "unknown placeholder"),
    (["run", "--ranks", "1,2", "--", str(HALO2D), "{local_bytes}"], "give --size"),
    (["run", "--ranks", "1,2", "--size", "8", "--", str(HALO2D), "{d0"], "brace"),
    (["table", "/nonexistent.json"], "cannot read"),
])
def test_bad_input(mpiopt, tmp_path, args, needle):
    out = tmp_path / "o.json"
    r = mpiopt("scaling", *args, *(["-o", out] if args[0] == "run" and "--" in args else []))
    assert r.returncode == 2 and needle in r.stderr, r.stderr
    assert not out.exists()


def test_bad_results_file(mpiopt, tmp_path):
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"mode": "strong", "runs": [{"ranks": 1, "time_per_step": 0}]}))
    r = mpiopt("scaling", "table", f)
    assert r.returncode == 2 and "time_per_step" in r.stderr
    f.write_text(json.dumps({"mode": "fast", "runs": []}))
    assert mpiopt("scaling", "table", f).returncode == 2
    for bad in ({"studies": []}, {"studies": [1, 2]}, [1, 2]):
        f.write_text(json.dumps(bad))
        r = mpiopt("scaling", "table", f)
        assert r.returncode == 2 and "results" in r.stderr, r.stderr
