"""The drop-in beside PMPI tools (src/interpose/chain.h; docs/collectives.md, "Other tools").

A small PMPI tool of the tests' own (tests/chain/pmpi_tool.c: counts calls and bytes per kind,
writes a file a rank at its MPI_Finalize) runs with programs that know nothing of either
(tests/chain/chain_program.c, .f90: blocking, nonblocking and persistent reductions, waits, a
communicator made and freed, point-to-point), in every order: the tool preloaded in front of
libmpiopt, behind it, linked into the program, two tools around libmpiopt, and a C-only tool
with the Fortran program. Each order is run without libmpiopt too; with it:
  * the results are exact (the programs check every element);
  * each tool's report is what it is without libmpiopt, count for count and byte for byte (so
    its MPI_Init and MPI_Finalize ran, and it sees none of mpiopt's inner messages);
  * MPIOPT_REPORT shows libmpiopt ran every reduction, the same number in every order.
Before libmpiopt defined PMPI_*, a tool in front made mpiopt run nothing, and a tool behind it
made the job fail in MPI_Finalize (its MPI_Init never ran).

A tool built as Darshan builds its MPI part (TOOL_DEFINES_PMPI: each wrapper is PMPI_X too, the
next PMPI_X found with dlsym(RTLD_NEXT); MPI_Init, MPI_Finalize and point-to-point) runs in front
of libmpiopt and behind it with the C program: libmpiopt took such a tool behind it for the MPI
library itself (its object defines PMPI_X) and called past it, so its MPI_Init never ran and it
wrote no record (init 0), as Darshan wrote no log (issue 67)."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from mpiopt import dropin_report, mpi
from conftest import require_build

ROOT = mpi.repo_root()
NP = 2
# the algorithms forced, so that "mpiopt ran every reduction" does not hang on auto's choice
FORCED = {"MPIOPT_ALLREDUCE": "recursive_doubling", "MPIOPT_REDUCE": "binomial"}

# name: (program variant, the preloads in order: M is libmpiopt, A and B the tool's two copies,
# C the C-only copy); "linked" programs carry tool A in the executable
ORDERS = {
    "tool-first": ("plain", "A:M"),
    "mpiopt-first": ("plain", "M:A"),
    "two-tools-around": ("plain", "A:M:B"),
    "linked": ("linked", "M"),
    "linked-and-behind": ("linked", "M:B"),
}
FORTRAN_C_ONLY = {"c-only-tool-first": ("plain", "C:M"), "c-only-tool-behind": ("plain", "M:C")}
# D: the tool with its own PMPI_* names (C only)
PMPI_DEFINING = {"pmpi-tool-first": ("plain", "D:M"), "pmpi-tool-behind": ("plain", "M:D"),
                 "pmpi-tool-behind-a-tool-in-front": ("plain", "A:M:D")}


@pytest.fixture(scope="module", params=mpi.FLAVOURS)
def programs(request, tmp_path_factory):
    """{(language, variant): executable} and {tool: library} for one flavour, built with the
    plain mpicc / mpif90."""
    flavour = request.param
    require_build(flavour)
    d = tmp_path_factory.mktemp(f"chain-{flavour}")
    tool = ROOT / "tests/chain/pmpi_tool.c"
    run = lambda cmd: subprocess.run([str(c) for c in cmd], check=True, capture_output=True)
    tools = {}
    for name, extra in (("A", []), ("B", []), ("C", ["-DTOOL_C_ONLY"]), ("D", ["-DTOOL_DEFINES_PMPI"])):
        tools[name] = d / f"libtool{name}.so"
        run([f"mpicc.{flavour}", "-O2", "-shared", "-fPIC", f'-DTOOL_NAME="{name}"', *extra,
             "-o", tools[name], tool])
    run([f"mpicc.{flavour}", "-O2", "-c", "-fPIC", '-DTOOL_NAME="A"', "-o", d / "toolA.o", tool])
    exes = {}
    exes["c", "plain"] = d / "chain"
    run([f"mpicc.{flavour}", "-O2", "-o", exes["c", "plain"], ROOT / "tests/chain/chain_program.c"])
    exes["c", "linked"] = d / "chain-linked"
    run([f"mpicc.{flavour}", "-O2", "-o", exes["c", "linked"], ROOT / "tests/chain/chain_program.c",
         d / "toolA.o"])
    fsrc = ROOT / "tests/chain/chain_program.f90"
    exes["fortran", "plain"] = d / "fchain"
    run([f"mpif90.{flavour}", "-O2", "-w", "-o", exes["fortran", "plain"], fsrc])
    exes["fortran", "linked"] = d / "fchain-linked"
    run([f"mpif90.{flavour}", "-O2", "-w", "-o", exes["fortran", "linked"], fsrc, d / "toolA.o"])
    for exe in exes.values():     # really unmodified: only the vendor's MPI (and a linked tool)
        assert "mpiopt" not in subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    return flavour, exes, tools


def launch(flavour, exe, preloads: list[str], out_dir) -> subprocess.CompletedProcess:
    env = dict(os.environ, PMPI_TOOL_DIR=str(out_dir), MPIOPT_REPORT="1", **FORCED)
    env.pop("LD_PRELOAD", None)
    if preloads:
        env["LD_PRELOAD"] = ":".join(map(str, preloads))
    r = mpi.run(flavour, NP, [exe], env=env, timeout=120)
    return r


def tool_reports(out_dir) -> dict[str, str]:
    """{tool name: rank 0's report} of the tools whose MPI_Finalize ran."""
    return {p.name.split(".")[0]: p.read_text() for p in sorted(out_dir.glob("*.0"))}


def without_tests(report: str) -> str:
    """A report less its MPI_Test line: how many MPI_Test calls the program's loop takes depends
    on timing (the program prints its own count, checked apart)."""
    return re.sub(r"^test \d+ \d+\n", "", report, flags=re.M)


def program_test_calls(stdout: str) -> int | None:
    m = re.search(r"^chain: rank 0 made (\d+) MPI_Test calls$", stdout, re.M)
    return int(m.group(1)) if m else None


def check_order(programs, tmp_path, language, variant, order, front_reports=True):
    flavour, exes, tools = programs
    exe = exes[language, variant]
    lib = mpi.library(flavour)
    names = order.split(":")
    ok = "chain: ok" if language == "c" else "fchain: ok"
    with_mpiopt = [lib if n == "M" else tools[n] for n in names]
    alone = [tools[n] for n in names if n != "M"]
    runs = {}
    for label, preloads in (("without", alone), ("with", with_mpiopt)):
        out = tmp_path / label
        out.mkdir()
        r = launch(flavour, exe, preloads, out)
        assert r.returncode == 0 and ok in r.stdout, (label, r.stdout, r.stderr[-3000:])
        runs[label] = (r, tool_reports(out))
    (r_without, tools_without), (r_with, tools_with) = runs["without"], runs["with"]
    # the tools: the same reports, and the first tool of the chain has one (its MPI_Init and
    # MPI_Finalize ran) where it wraps what the program calls
    assert tools_with.keys() == tools_without.keys(), (tools_without, tools_with)
    first = "A" if variant == "linked" else next(n for n in names if n != "M")
    assert first in tools_with or not front_reports, (order, tools_with.keys())
    for name, report in tools_with.items():
        assert re.search(r"^init 1 0$", report, re.M) and re.search(r"^finalize 1 0$", report, re.M), report
        assert without_tests(report) == without_tests(tools_without[name]), (name, tools_without[name], report)
        if language == "c" and name != "D":   # its MPI_Test count is the program's own (D wraps none)
            for r, reports in ((r_without, tools_without), (r_with, tools_with)):
                m = re.search(r"^test (\d+) 0$", reports[name], re.M)
                assert m and int(m.group(1)) == program_test_calls(r.stdout), (name, reports[name], r.stdout)
    # mpiopt: every reduction, and none without it
    assert dropin_report.total(r_without.stderr) is None
    total = dropin_report.total(r_with.stderr)
    assert total and total[0] == total[1] > 0, r_with.stderr[-3000:]
    return total[1]


# the reduction calls each program makes, as MPIOPT_REPORT counts them (summed over its ranks);
# the same in every order
REDUCTIONS = {}


@pytest.mark.parametrize("order", list(ORDERS))
@pytest.mark.parametrize("language", ["c", "fortran"])
def test_tool_and_mpiopt_in_every_order(programs, tmp_path, language, order):
    variant, preloads = ORDERS[order]
    calls = check_order(programs, tmp_path, language, variant, preloads)
    key = (programs[0], language)
    assert REDUCTIONS.setdefault(key, calls) == calls, (key, REDUCTIONS[key], calls)


@pytest.mark.parametrize("order", list(FORTRAN_C_ONLY))
def test_c_only_tool_with_a_fortran_program(programs, tmp_path, order):
    """A tool that wraps only the C names sees a Fortran program's calls where the MPI's Fortran
    layer calls the C MPI_* names (MPICH) and not where it calls PMPI_* (Open MPI): the same with
    libmpiopt in front of it or behind it, whose Fortran entry points then hand the call to the
    vendor's Fortran layer (chain.c)."""
    variant, preloads = FORTRAN_C_ONLY[order]
    # Open MPI's Fortran layer calls PMPI_Init/PMPI_Finalize: such a tool never runs
    check_order(programs, tmp_path, "fortran", variant, preloads,
                front_reports=programs[0] == "mpich")


@pytest.mark.parametrize("order", list(PMPI_DEFINING))
def test_tool_with_its_own_pmpi_names_in_every_order(programs, tmp_path, order):
    """Its MPI_Init and MPI_Finalize run (its report says init 1, finalize 1) and it counts the
    program's messages as without libmpiopt, in front of libmpiopt and behind it; libmpiopt still
    runs every reduction (the tool wraps none) and its report, set up at MPI_Init, is printed."""
    variant, preloads = PMPI_DEFINING[order]
    calls = check_order(programs, tmp_path, "c", variant, preloads)
    key = (programs[0], "c")
    assert REDUCTIONS.setdefault(key, calls) == calls, (key, REDUCTIONS[key], calls)


def test_pmpi_names_are_defined_for_every_entry_point(programs):
    """Every MPI_* libmpiopt defines has its PMPI_* (C, _c, MPIX_, Fortran manglings)."""
    flavour = programs[0]
    nm = subprocess.run(["nm", "-D", "--defined-only", str(mpi.library(flavour))],
                        capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1] for line in nm.splitlines() if line.split()[1:2] in (["T"], ["W"])}
    mpi_names = {n for n in names if re.match(r"(MPIX?_|mpix?_)", n)}
    assert {"MPI_Allreduce", "MPI_Wait", "MPI_Init", "mpi_allreduce_"} <= mpi_names
    missing = sorted(n for n in mpi_names if ("P" + n if n[0] == "M" else "p" + n) not in names)
    assert not missing, missing
