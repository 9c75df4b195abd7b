"""Call sites of libmpiopt-profile (`mpiopt profile --sites`, `mpiopt report --sites`): a C and
a Fortran program with the same MPI_Allreduce at several lines and depths (two functions, one
helper called from both), on both MPIs, with and without the drop-in. Each line's count per
rank is known by construction (the programs' comments); the lines are found by the markers
`site:X` in their sources, so the test holds when the programs are edited."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conftest import BUILT_FLAVOURS, mpi4py_flavour, run_mpiopt
from mpiopt import mpi

ROOT = Path(__file__).resolve().parents[2]
PROFILED = [f for f in BUILT_FLAVOURS if mpi.profile_library(f).exists()]
pytestmark = pytest.mark.skipif(not PROFILED, reason="libmpiopt-profile not built (make build)")

C_SOURCE = ROOT / "tests/c/plain_sites.c"
F_SOURCE = ROOT / "tests/fortran/profile_sites.f90"
# site marker -> (call, count a rank)
EXPECTED = {"A": ("MPI_Allreduce", 3), "B": ("MPI_Allreduce", 5), "H": ("MPI_Allreduce", 3),
            "M": ("MPI_Allreduce", 1)}


def marker_lines(source: Path) -> dict[str, int]:
    return {m.group(1): i for i, line in enumerate(source.read_text().splitlines(), 1)
            for m in [re.search(r"site:([A-Z])", line)] if m and not line.lstrip().startswith(("*", "!"))}


def run_profile(tmp_path: Path, exe: Path, flavour: str, *extra, no_preload=False) -> dict:
    out = tmp_path / "prof"
    args = ["profile", "-np", 2, "-o", out, "--flavour", flavour, "--json", *extra]
    args += ["--no-preload"] if no_preload else []
    r = run_mpiopt(*args, "--", exe, env=dict(os.environ, MPIOPT_VERBOSE="1"), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    data = json.loads((out / "mpiopt-profile.json").read_text())
    data["_stdout"], data["_stderr"], data["_dir"] = r.stdout, r.stderr, out
    return data


def counts_by_line(data: dict, source: Path) -> dict[tuple, dict]:
    """{(call, line, (caller lines...)): count stat} of the sites in `source`."""
    out = {}
    for s in data["sites"]["list"]:
        if Path(s["file"]).name == source.name:
            stack = tuple(f["line"] for f in s["stack"] if Path(f["file"]).name == source.name)
            out[s["call"], s["line"], stack] = s["count"]
    return out


def program(flavour: str, language: str) -> tuple[Path, Path]:
    exe = mpi.binary(flavour, "test-plain_sites" if language == "c" else "ftest-profile_sites")
    if not exe.exists():
        pytest.skip(f"{exe.name} not built (no Fortran compiler?)")
    return exe, C_SOURCE if language == "c" else F_SOURCE


@pytest.mark.parametrize("flavour", PROFILED)
@pytest.mark.parametrize("language", ["c", "fortran"])
@pytest.mark.parametrize("drop_in", [True, False], ids=["drop-in", "vendor"])
def test_each_line_with_its_exact_count(tmp_path, flavour, language, drop_in):
    exe, source = program(flavour, language)
    data = run_profile(tmp_path, exe, flavour, "--sites", no_preload=not drop_in)
    if drop_in:    # the call went on to mpiopt's algorithm, and was still counted at its line
        assert "mpiopt: allreduce" in data["_stderr"], data["_stderr"][-2000:]
    lines = marker_lines(source)
    got = counts_by_line(data, source)
    want = {(call, lines[m], ()): n for m, (call, n) in EXPECTED.items()}
    if language == "c":
        want["MPI_Barrier", lines["R"], ()] = 1
    assert {k: (v["min"], v["max"]) for k, v in got.items()} == {k: (n, n) for k, n in want.items()}
    sites = data["sites"]
    assert sites["enabled"] and sites["overflow"] == 0 and sites["resolver"] == "libdw"
    by_line = {s["line"]: s for s in sites["list"] if Path(s["file"]).name == source.name}
    assert by_line[lines["H"]]["function"].startswith("helper")
    assert by_line[lines["A"]]["bytes"]["min"] == 3 * 8 and by_line[lines["A"]]["debug_info"]
    # the sites add up to the per-call totals
    total = sum(s["count"]["avg"] for s in sites["list"] if s["call"] == "MPI_Allreduce")
    assert total == data["calls"]["MPI_Allreduce"]["calls"]["avg"] == 12
    # the summary printed by `mpiopt profile --json` has the same rows
    summary = json.loads(data["_stdout"][data["_stdout"].index("{\n"):])
    assert len(summary["sites"]) == len(sites["list"])
    text = (data["_dir"] / "mpiopt-profile.txt").read_text()
    assert "Top call sites" in text and f"{source.name}:{lines['B']}" in text


@pytest.mark.parametrize("flavour", PROFILED)
@pytest.mark.parametrize("language", ["c", "fortran"])
def test_stack_tells_the_helpers_callers_apart(tmp_path, flavour, language):
    exe, source = program(flavour, language)
    data = run_profile(tmp_path, exe, flavour, "--sites", "--stack", 1)
    lines = marker_lines(source)
    got = {k: v["max"] for k, v in counts_by_line(data, source).items()
           if k[0] == "MPI_Allreduce" and k[1] == lines["H"]}
    assert got == {("MPI_Allreduce", lines["H"], (lines["F"],)): 2,
                   ("MPI_Allreduce", lines["H"], (lines["S"],)): 1}
    assert data["sites"]["frames"] == 2


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_report_sites_and_comparison(tmp_path, flavour):
    exe, source = program(flavour, "c")
    a = run_profile(tmp_path / "a", exe, flavour, "--sites")
    b = run_profile(tmp_path / "b", exe, flavour, "--sites", no_preload=True)
    pa, pb = a["_dir"] / "mpiopt-profile.json", b["_dir"] / "mpiopt-profile.json"
    lines = marker_lines(source)
    r = run_mpiopt("report", pa, "--sites")
    assert r.returncode == 0 and "top call sites" in r.stdout and f"plain_sites.c:{lines['B']}" in r.stdout
    r = run_mpiopt("report", pa, "--sites", "--json")
    rows = json.loads(r.stdout)["profiles"][0]["sites"]
    assert {(x["where"], x["count"]["max"]) for x in rows} >= {(f"plain_sites.c:{lines['B']}", 5)}
    r = run_mpiopt("report", pa, pb, "--sites", "--json")
    pairs = json.loads(r.stdout)["sites_b_over_a"]
    assert len(pairs) == 5 and all(p["a"] and p["b"] for p in pairs)
    r = run_mpiopt("report", pa, pb, "--sites")
    assert r.returncode == 0 and "B/A" in r.stdout and "helper" in r.stdout
    # a profile without sites says how to get them
    plain = run_profile(tmp_path / "c", exe, flavour)
    assert plain["sites"] == {"enabled": False}
    r = run_mpiopt("report", plain["_dir"] / "mpiopt-profile.json", "--sites")
    assert r.returncode == 0 and "mpiopt profile --sites" in r.stdout
    r = run_mpiopt("profile", "--stack", 99, "--", exe)
    assert r.returncode == 2 and "--stack" in r.stderr


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_no_debug_info_gives_function_and_offset(tmp_path, flavour):
    """A copy of the program stripped of its debug info: function+offset, and it says so."""
    exe, _ = program(flavour, "c")
    stripped = tmp_path / "stripped"
    import shutil
    import subprocess
    shutil.copy(exe, stripped)
    subprocess.run(["strip", "--strip-debug", stripped], check=True)
    data = run_profile(tmp_path, stripped, flavour, "--sites")
    mine = [s for s in data["sites"]["list"] if s["module"].endswith("stripped")]
    assert len(mine) == 5 and not any(s["debug_info"] or s["line"] for s in mine)
    assert {s["function"] for s in mine} == {"first", "second", "helper", "main"}
    assert "(no debug info)" in (data["_dir"] / "mpiopt-profile.txt").read_text()


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_relative_source_names_become_absolute(tmp_path, flavour):
    """A program compiled as `mpicc -g sub/x.c` from its tree records the file as `sub/x.c`:
    the site names it joined to the directory it was compiled in, so that `mpiopt transform
    --profile` (and advise) match the file by its path, not by its name alone."""
    import shutil
    import subprocess
    (tmp_path / "sub").mkdir()
    shutil.copy(C_SOURCE, tmp_path / "sub" / C_SOURCE.name)
    subprocess.run([f"mpicc.{flavour}", "-g", "-O0", "-o", "relative", f"sub/{C_SOURCE.name}"],
                   cwd=tmp_path, check=True)
    data = run_profile(tmp_path, tmp_path / "relative", flavour, "--sites", no_preload=True)
    files = {s["file"] for s in data["sites"]["list"] if Path(s["file"]).name == C_SOURCE.name}
    assert files == {str(tmp_path / "sub" / C_SOURCE.name)}, files


MPI4PY_PROGRAM = """
from mpi4py import MPI
import numpy as np
a = np.ones(4); b = np.empty_like(a)
for _ in range(3):
    MPI.COMM_WORLD.Allreduce(a, b)
"""


def test_mpi4py_sites_are_in_mpi4py(tmp_path):
    """An mpi4py program's MPI calls are made by mpi4py's compiled MPI module: the site is its
    function (+offset: the wheel has no debug info), with the exact count."""
    import importlib.util
    import sys
    flavour = mpi4py_flavour(PROFILED)
    spec = importlib.util.find_spec("mpi4py.MPI")
    script = tmp_path / "prog.py"
    script.write_text(MPI4PY_PROGRAM)
    out = tmp_path / "prof"
    r = run_mpiopt("profile", "-np", 2, "-o", out, "--sites", "--", sys.executable, script, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads((out / "mpiopt-profile.json").read_text())
    (site,) = [s for s in data["sites"]["list"] if s["call"] == "MPI_Allreduce"]
    assert Path(site["module"]).name == Path(spec.origin).name and "Allreduce" in site["function"]
    assert site["count"]["min"] == site["count"]["max"] == 3
    assert "mpi4py" in r.stdout and "no debug info" in r.stdout
