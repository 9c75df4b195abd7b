"""mpiopt scaling: efficiency arithmetic from fixed inputs, one real run, bad input."""
import json

import pytest

from conftest import require_build
from mpiopt import mpi
from mpiopt.benchmarks.scaling import dims_create


def write(tmp_path, mode, times):
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"mode": mode, "runs": [
        {"ranks": p, "nodes": 1, "decomposition": dims_create(p, 2), "time_per_step": t}
        for p, t in times]}))
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


@pytest.mark.parametrize("args,needle", [
    (["run", "--ranks", "1,0", "--", "x.c"], "process counts"),
    (["run", "--ranks", "1,2"], "program"),
    (["run", "--ranks", "1", "--", "/nonexistent/app"], "does not exist"),
    (["run", "--ranks", "1", "--size", "0", "--", "x"], "--size"),
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
