"""A user's own preloaded tools under `mpiopt run`, `mpiopt profile` and `mpiopt advise` (issue
57): an LD_PRELOAD already set is kept in its own order, each --preload LIB follows it in the
order given, and mpiopt's libraries come last (the profiler, then the drop-in); --json names the
final LD_PRELOAD; a --preload file that is not there is an error that writes and launches
nothing.

The tools are two tiny shared libraries of the test's own (liba.so, libb.so, one source): a
constructor that writes, per process, the executable, LD_PRELOAD as the process sees it and
the libraries in its link map, in the order ld.so loaded them (dl_iterate_phdr). The ranks'
files show what each rank really got; files of the launcher's own processes (mpirun, orted,
Hydra's proxy, which inherit the environment too) are told apart by the executable."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import BUILT_FLAVOURS, needs_build, run_mpiopt
from mpiopt import mpi

TOOL = r"""
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int add(struct dl_phdr_info *info, size_t size, void *f)
{
    (void)size;
    if (info->dlpi_name && info->dlpi_name[0])
        fprintf(f, "map %s\n", info->dlpi_name);
    return 0;
}
__attribute__((constructor)) static void mark(void)
{
    const char *dir = getenv("PRELOAD_MARKERS");
    if (!dir)
        return;
    char path[4096], exe[4096] = "";
    snprintf(path, sizeof path, "%s/%s.%d", dir, TOOL_NAME, (int)getpid());
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0)
        exe[n] = 0;
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    const char *p = getenv("LD_PRELOAD");
    fprintf(f, "exe %s\npreload %s\n", exe, p ? p : "");
    dl_iterate_phdr(add, f);
    fclose(f);
}
"""

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    double one = 1, sum = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    /* one line, rank 0's: advise compares each step's output with the baseline's, and the
     * ranks' lines came in either order */
    double all = 0;
    MPI_Reduce(&sum, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("sums %g\n", all);
    MPI_Finalize();
    return 0;
}
"""

NP = 2


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """{"a": liba.so, "b": libb.so, flavour: the program built with that MPI}."""
    d = tmp_path_factory.mktemp("preload")
    (d / "tool.c").write_text(TOOL)
    (d / "prog.c").write_text(PROGRAM)
    out = {}
    for name in ("a", "b"):
        out[name] = d / f"lib{name}.so"
        subprocess.run(["gcc", "-shared", "-fPIC", f'-DTOOL_NAME="{name}"', "-o", str(out[name]),
                        str(d / "tool.c")], check=True)
    for f in BUILT_FLAVOURS:
        out[f] = d / f"prog-{f}"
        subprocess.run([f"mpicc.{f}", "-o", str(out[f]), str(d / "prog.c")], check=True)
    return out


def rank_markers(markers: Path, exe: Path) -> list[dict]:
    """What each tool's constructor wrote in the processes of `exe` (the ranks): tool, pid,
    preload (LD_PRELOAD as the rank saw it), maps (its link map, in load order)."""
    out = []
    for f in sorted(markers.iterdir()):
        lines = f.read_text().splitlines()
        said = dict(line.split(" ", 1) for line in lines[:2])
        if Path(said["exe"]) != exe.resolve():
            continue
        tool, pid = f.name.split(".")
        out.append({"tool": tool, "pid": pid, "preload": said.get("preload", ""),
                    "maps": [line[4:] for line in lines[2:] if line.startswith("map ")]})
    return out


def launch(tmp_path: Path, *args, inherited: str | None = None, timeout=300):
    """`mpiopt ARGS` with the tools' marker directory set (and LD_PRELOAD=inherited if given)."""
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    env = dict(os.environ, PRELOAD_MARKERS=str(markers))
    env.pop("LD_PRELOAD", None)
    if inherited is not None:
        env["LD_PRELOAD"] = inherited
    r = run_mpiopt(*args, env=env, timeout=timeout)
    return r, markers


def check_ranks(markers: Path, exe: Path, expected: list[str], processes: int = NP) -> None:
    """Every rank loaded both tools, saw LD_PRELOAD = expected, and has the expected libraries
    in its link map in that order (ld.so's own order, not only the variable's text)."""
    seen = rank_markers(markers, exe)
    assert sorted(m["tool"] for m in seen) == ["a"] * processes + ["b"] * processes, seen
    resolved = [str(Path(x).resolve()) for x in expected]
    for m in seen:
        assert m["preload"] == ":".join(expected), m
        maps = [str(Path(x).resolve()) for x in m["maps"]]
        assert all(x in maps for x in resolved), (resolved, maps)
        assert [maps.index(x) for x in resolved] == sorted(maps.index(x) for x in resolved), \
            (resolved, maps)


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


# (the --preload options, the inherited LD_PRELOAD, the order expected before mpiopt's) with the
# tools named a and b: given order not sorted order; the environment's before --preload; an
# LD_PRELOAD of two libraries, separated by a space as ld.so allows, kept in its order
CASES = {
    "preload b then a": (["b", "a"], None, ["b", "a"]),
    "inherited b, preload a": (["a"], ["b"], ["b", "a"]),
    "inherited b a": ([], ["b", "a"], ["b", "a"]),
}


@needs_build
@pytest.mark.parametrize("flavour", BUILT_FLAVOURS)
@pytest.mark.parametrize("case", list(CASES))
def test_run_keeps_the_users_tools_in_order(tmp_path, built, flavour, case):
    preloads, inherited, tools = CASES[case]
    args = [a for t in preloads for a in ("--preload", built[t])]
    r, markers = launch(tmp_path, "run", "-np", NP, "--json", *args, "--", built[flavour],
                        inherited=" ".join(str(built[t]) for t in inherited) if inherited else None)
    assert r.returncode == 0, r.stderr[-3000:]
    assert re.search(rf"^sums {NP * NP}$", r.stdout, re.M), r.stdout   # every rank summed NP
    expected = [str(built[t]) for t in tools] + [str(mpi.library(flavour))]
    info = last_json(r.stdout)
    assert info["ld_preload"] == ":".join(expected), info
    assert info["drop_in"] == str(mpi.library(flavour))
    check_ranks(markers, built[flavour], expected)


PROFILED = [f for f in BUILT_FLAVOURS if mpi.profile_library(f).exists()]


@pytest.mark.parametrize("flavour", PROFILED)
@pytest.mark.parametrize("drop_in", [True, False], ids=["drop-in", "vendor"])
def test_profile_puts_the_profiler_after_the_users_tools(tmp_path, built, flavour, drop_in):
    out = tmp_path / "prof"
    r, markers = launch(tmp_path, "profile", "-np", NP, "-o", out, "--json", "--preload", built["a"],
                        *([] if drop_in else ["--no-preload"]), "--", built[flavour],
                        inherited=str(built["b"]))
    assert r.returncode == 0, r.stderr[-3000:]
    expected = [str(built["b"]), str(built["a"]), str(mpi.profile_library(flavour))]
    expected += [str(mpi.library(flavour))] if drop_in else []
    summary = json.loads(r.stdout[r.stdout.index("{"):])
    assert summary["ld_preload"] == ":".join(expected), summary
    check_ranks(markers, built[flavour], expected)
    # the profiler still saw the program's call, behind the user's tools
    prof = json.loads((out / "mpiopt-profile.json").read_text())
    assert prof["calls"]["MPI_Allreduce"]["calls"]["min"] == 1, prof["calls"]


@pytest.mark.skipif(not PROFILED, reason="libmpiopt-profile not built (make build)")
@pytest.mark.parametrize("inherit_a", [False, True], ids=["preload a b", "inherited a, preload b"])
def test_advise_runs_every_step_with_the_users_tools(tmp_path, built, inherit_a):
    flavour = PROFILED[0]
    out = tmp_path / "advice"
    given = ["--preload", built["b"]] if inherit_a else ["--preload", built["a"], "--preload", built["b"]]
    r, markers = launch(tmp_path, "advise", "-np", NP, "--repeat", "1", "--no-plots", "--json",
                        "-o", out, *given, "--", built[flavour],
                        inherited=str(built["a"]) if inherit_a else None)
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads(r.stdout)
    tools = [str(built["a"]), str(built["b"])]
    profiler, drop_in = str(mpi.profile_library(flavour)), str(mpi.library(flavour))
    assert data["ld_preload"] == {"baseline": ":".join(tools + [profiler]),
                                  "dropin": ":".join(tools + [profiler, drop_in])}, data["ld_preload"]
    assert json.loads((out / "report.json").read_text())["ld_preload"] == data["ld_preload"]
    # the profile run and one round: baseline (twice) and drop-in, NP ranks each, both tools
    seen = rank_markers(markers, built[flavour])
    assert len(seen) == 3 * NP * 2, seen
    by_pid: dict[str, list] = {}
    for m in seen:
        by_pid.setdefault(m["pid"], []).append(m)
    with_dropin = [pid for pid, ms in by_pid.items() if ms[0]["preload"].endswith(drop_in)]
    assert len(with_dropin) == NP, by_pid
    for pid, ms in by_pid.items():
        expected = ms[0]["preload"].split(":")
        assert expected in (tools + [profiler], tools + [profiler, drop_in]), expected
        check_ranks_one(ms, expected)


def check_ranks_one(ms: list[dict], expected: list[str]) -> None:
    """One rank's markers (one a tool): both tools, the link map in LD_PRELOAD's order."""
    assert sorted(m["tool"] for m in ms) == ["a", "b"], ms
    maps = [str(Path(x).resolve()) for x in ms[0]["maps"]]
    idx = [maps.index(str(Path(x).resolve())) for x in expected]
    assert idx == sorted(idx), (expected, maps)


# ---- a --preload that is not there: an error, nothing written, nothing launched ----

@needs_build
@pytest.mark.parametrize("command", ["run", "profile", "advise"])
def test_missing_preload_writes_and_launches_nothing(tmp_path, built, command):
    flavour = BUILT_FLAVOURS[0]
    missing = tmp_path / "no-such-tool.so"
    out = tmp_path / "out"                     # profile and advise would make it
    existing = tmp_path / "old"                # profile would empty it of an older profile
    existing.mkdir()
    (existing / "mpiopt-profile.json").write_text("{}")
    outdir = {"run": [], "profile": ["-o", out], "advise": ["-o", out]}[command]
    # liba.so is good and comes first: had anything started, its constructor would have written
    r, markers = launch(tmp_path, command, "-np", NP, *outdir, "--preload", built["a"],
                        "--preload", missing, "--", built[flavour])
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"--preload {missing}: no such file" in r.stderr, r.stderr
    assert list(markers.iterdir()) == [] and "sum" not in r.stdout
    assert not out.exists()
    if command == "profile":
        r, _ = launch(tmp_path, "profile", "-np", NP, "-o", existing, "--preload", missing, "--",
                      built[flavour])
        assert r.returncode == 2 and (existing / "mpiopt-profile.json").read_text() == "{}"


@needs_build
def test_preload_that_is_not_a_library_is_refused(tmp_path, built):
    text = tmp_path / "notes.txt"
    text.write_text("not a library\n")
    r, markers = launch(tmp_path, "run", "-np", NP, "--preload", text, "--", built[BUILT_FLAVOURS[0]])
    assert r.returncode == 2 and "not a shared library (no ELF header)" in r.stderr, r.stderr
    assert list(markers.iterdir()) == []


def test_preload_order_rule():
    """mpi.preload_order: the environment's, the tools, mpiopt's; a library named twice keeps
    its first place (ld.so loads it once, there)."""
    assert mpi.preload_order("/t/x.so:/t/y.so", ["/t/z.so"], ["/m/libmpiopt.so"]) == \
        ["/t/x.so", "/t/y.so", "/t/z.so", "/m/libmpiopt.so"]
    assert mpi.preload_order("/m/libmpiopt.so /t/x.so", ["/t/x.so"], ["/m/libmpiopt.so"]) == \
        ["/m/libmpiopt.so", "/t/x.so"]
    assert mpi.preload_order(None, [], []) == []
    env = mpi.launch_env("mpich", env={"LD_PRELOAD": "libasan.so.8"}, preload=True,
                         lib=Path("/m/libmpiopt.so"), tools=["/t/tool.so"])
    assert env["LD_PRELOAD"] == "libasan.so.8:/t/tool.so:/m/libmpiopt.so"


@pytest.mark.parametrize("command", ["run", "profile", "advise"])
def test_help_tells_the_order_with_an_example(command):
    r = run_mpiopt(command, "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "--preload LIB" in text and "--preload ./libtool.so" in text
    assert "LD_PRELOAD of the ranks, in this order: the LD_PRELOAD already set" in text
    assert ("then libmpiopt-profile.so" in text) == (command != "run")
