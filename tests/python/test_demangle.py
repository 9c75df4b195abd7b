"""C++ programs read as C++ (issue 57): the profiler names a call site's function by its C++ name
(`ExchangeHalo(SparseMatrix_STRUCT const&, Vector_STRUCT&)`, not the symbol
`_Z12ExchangeHaloRK19SparseMatrix_STRUCTR13Vector_STRUCT`), and so do `mpiopt profile`,
`mpiopt report` and `mpiopt advise`, on a real C++ MPI program (tests/cxx/halo_sites.cpp: a
function taking references, a function template in a namespace, both calling MPI_Allreduce),
built with each MPI's mpicxx. The mangled names are read from the binary's own symbol table
(nm), and must appear in none of the outputs."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BUILT_FLAVOURS, run_mpiopt
from mpiopt import mpi
from mpiopt.profile.demangle import cxx_name

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests/cxx/halo_sites.cpp"
PROFILED = [f for f in BUILT_FLAVOURS if mpi.profile_library(f).exists()
            and shutil.which(f"mpicxx.{f}")]
pytestmark = pytest.mark.skipif(not PROFILED, reason="libmpiopt-profile or mpicxx missing")

HALO = "ExchangeHalo(SparseMatrix_STRUCT const&, Vector_STRUCT&)"
DOT = "double cg::Dot<double>(std::vector<double, std::allocator<double> > const&, " \
      "std::vector<double, std::allocator<double> > const&)"
COUNTS = {"H": 3, "D": 2}          # calls a rank at each marked line (the program's defaults)
MANGLED = re.compile(r"\b_Z[A-Za-z0-9_.]+")


def marker_lines() -> dict[str, int]:
    return {m.group(1): i for i, line in enumerate(SOURCE.read_text().splitlines(), 1)
            for m in [re.search(r"// site:([A-Z])", line)] if m}


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """{flavour: (executable, its mangled symbols of ExchangeHalo and cg::Dot)}."""
    d = tmp_path_factory.mktemp("cxx")
    out = {}
    for f in PROFILED:
        exe = d / f"halo_sites-{f}"
        subprocess.run([f"mpicxx.{f}", "-O2", "-g", "-o", str(exe), str(SOURCE)], check=True)
        nm = subprocess.run(["nm", "--defined-only", str(exe)], capture_output=True, text=True,
                            check=True).stdout
        symbols = {w for line in nm.splitlines() for w in line.split()[2:3]
                   if w.startswith("_Z") and ("ExchangeHalo" in w or "3Dot" in w)}
        assert len(symbols) == 2, symbols      # the test needs both names to be mangled
        out[f] = (exe, symbols)
    return out


def assert_no_mangled(text: str, symbols: set[str], what: str) -> None:
    for s in symbols:
        assert s not in text, f"{what} has the mangled {s}"


def profile(tmp_path: Path, exe: Path, flavour: str, *extra):
    out = tmp_path / "prof"
    r = run_mpiopt("profile", "-np", 2, "-o", out, "--flavour", flavour, "--sites", *extra, "--",
                   exe, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    return r, out


@pytest.mark.parametrize("flavour", PROFILED)
def test_profile_names_cxx_sites_as_cxx(tmp_path, programs, flavour):
    exe, symbols = programs[flavour]
    r, out = profile(tmp_path, exe, flavour, "--stack", "1")
    data = json.loads((out / "mpiopt-profile.json").read_text())
    lines = marker_lines()
    by_line = {s["line"]: s for s in data["sites"]["list"] if Path(s["file"]).name == SOURCE.name}
    halo, dot = by_line[lines["H"]], by_line[lines["D"]]
    assert halo["function"] == HALO, halo
    # -O2 may clone the template (`[clone .isra.0]`): the C++ name, and the clone said after it
    assert dot["function"] == DOT or dot["function"].startswith(DOT + " [clone "), dot
    assert (halo["count"]["min"], dot["count"]["min"]) == (COUNTS["H"], COUNTS["D"])
    assert all(f["function"] == "main" for s in (halo, dot) for f in s["stack"]), (halo, dot)
    # the JSON as written by rank 0, its text report and the table printed
    text_report = (out / "mpiopt-profile.txt").read_text()
    assert HALO in text_report and HALO in r.stdout
    assert "double cg::Dot<double>(std::vector<double," in r.stdout
    if "[clone " in dot["function"]:      # rich would take "[clone .isra.0]" for markup
        assert "[clone" in r.stdout, r.stdout
    for what, text in (("the profile", json.dumps(data)), ("the text report", text_report),
                       ("the printed table", r.stdout)):
        assert_no_mangled(text, symbols, what)


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_report_reads_cxx_names(tmp_path, programs, flavour):
    exe, symbols = programs[flavour]
    _, out = profile(tmp_path, exe, flavour, "--json")
    path = out / "mpiopt-profile.json"
    r = run_mpiopt("report", path, "--sites")
    assert r.returncode == 0 and HALO in r.stdout, r.stdout + r.stderr
    assert_no_mangled(r.stdout, symbols, "report --sites")
    r = run_mpiopt("report", path, "--sites", "--json")
    assert r.returncode == 0, r.stderr
    assert HALO in r.stdout
    assert_no_mangled(r.stdout, symbols, "report --sites --json")
    # two profiles side by side: the same sites matched by their C++ names
    r = run_mpiopt("report", path, path, "--sites")
    assert r.returncode == 0 and HALO in r.stdout and "1.00" in r.stdout, r.stdout


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_report_demangles_what_the_profiler_left_mangled(tmp_path, programs, flavour):
    """A profile with the symbols as the profiler found them (one of an older profiler, or of a
    program whose libstdc++ exports no demangler): `mpiopt report` reads them as C++."""
    exe, symbols = programs[flavour]
    _, out = profile(tmp_path, exe, flavour, "--json")
    data = json.loads((out / "mpiopt-profile.json").read_text())
    back = {cxx_name(s): s for s in symbols}
    assert HALO in back, back            # the test's own demangler agrees with the profiler's
    for site in data["sites"]["list"]:
        site["function"] = back.get(site["function"], site["function"])
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    assert any(s in old.read_text() for s in symbols)
    r = run_mpiopt("report", old, "--sites", "--json")
    assert r.returncode == 0 and HALO in r.stdout, r.stdout + r.stderr
    assert_no_mangled(r.stdout, symbols, "report of a mangled profile")


def test_demangler_leaves_other_names_alone():
    assert cxx_name("_Z12ExchangeHaloRK19SparseMatrix_STRUCTR13Vector_STRUCT") == HALO
    for name in ("main", "first_part.1", "MAIN__", "_Zgarbage", "__pyx_pw_6mpi4py_3MPI"):
        assert cxx_name(name) == name


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_advise_shows_cxx_sites(tmp_path, programs, flavour):
    exe, symbols = programs[flavour]
    out = tmp_path / "advice"
    r = run_mpiopt("advise", "-np", 2, "--repeat", 1, "--no-plots", "-o", out, "--", exe,
                   timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    data = json.loads((out / "report.json").read_text())
    functions = [s["function"] for s in data["profile"]["top_sites"]]
    assert functions[:2] == [HALO, functions[1]] and functions[1].startswith(DOT), functions
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    assert HALO in md and HALO.replace("&", "&amp;") in html
    # Markdown: `<` escaped, so that `std::vector<double, ...>` is not read as an HTML tag
    assert r"cg::Dot\<double>(std::vector\<double," in md, md
    assert "costliest call sites" in r.stdout and HALO in r.stdout, r.stdout
    if "[clone " in functions[1]:         # printed as text, not read as rich markup
        assert "[clone" in r.stdout, r.stdout
    for what, text in (("report.json", json.dumps(data)), ("report.md", md), ("report.html", html),
                       ("the printed report", r.stdout)):
        assert_no_mangled(text, symbols, what)
