"""`mpiopt transform --profile`: a real run first — a C program with the same MPI_Allreduce at four
call sites (one costly: a loop of 2 MiB reductions written over three lines; two cheap: one
double, once; one never called), built with -g, profiled with `mpiopt profile --sites` on 2 ranks
— then the transformer rewrites only the costly call, the result compiles and prints the same.
Then --top N against the threshold, the reports, bad profiles (exit 2, nothing written), and a
hand-written profile for what a real run cannot show reliably (a site line on the last line of a
call, PMPI_ / _c names, --stack rows summed, a site in another file)."""
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

pytestmark = pytest.mark.skipif(not shutil.which("mpicc.openmpi"), reason="needs Open MPI's headers")
PROFILED = [f for f in BUILT_FLAVOURS if mpi.profile_library(f).exists()]
needs_profiler = pytest.mark.skipif(not PROFILED, reason="libmpiopt-profile not built (make build)")

HOT = r"""/* The same MPI_Allreduce at four call sites: one costly, two cheap, one never called. */
#include <mpi.h>
#include <stdio.h>

#define N (1 << 18)
/* The cheap sites' single calls also carry the ranks' skew at the end of the loop (a rank that
 * was descheduled for a few ms on a loaded machine): enough calls here keep that under 5 %. */
#define ITERS 200
static double big_in[N], big_out[N], other[4096];

static void cheap(double *x, double *y)
{
    MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* site:CHEAP1 */
}

static void never(double *x, double *y)
{
    MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD); /* site:NEVER */
}

int main(int argc, char **argv)
{
    int rank;
    double a = 1, b = 0, c = 2, d = 0, check = 0, work = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < N; i++)
        big_in[i] = rank + i % 7;
    for (int it = 0; it < ITERS; it++) {
        MPI_Allreduce(big_in, big_out, N,
                      MPI_DOUBLE, MPI_SUM,
                      MPI_COMM_WORLD); /* site:HOT */
        for (int k = 0; k < 4096; k++)
            other[k] = other[k] * 0.5 + it;
        work += other[it];
        check += big_out[it] + big_out[N - 1 - it];
        big_in[it] += 1;
    }
    cheap(&a, &b);
    c += rank;
    MPI_Allreduce(&c, &d, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); /* site:CHEAP2 */
    if (argc > 99)
        never(&a, &b);
    if (rank == 0)
        printf("check %.1f work %.6f b %.1f d %.1f\n", check, work, b, d);
    MPI_Finalize();
    return 0;
}
"""


def markers(text: str) -> dict[str, int]:
    return {m.group(1): i for i, line in enumerate(text.splitlines(), 1)
            for m in [re.search(r"site:([A-Z0-9]+)", line)] if m}


HOT_LINES = markers(HOT)
HOT_FIRST = HOT_LINES["HOT"] - 2            # the call starts two lines above its marker


def transform(*args, cwd=None):
    # wide: the report's reasons on one line each
    return run_mpiopt("transform", *args, cwd=cwd, timeout=300, env=dict(os.environ, COLUMNS="300"))


def compile_c(flavour: str, src: Path, exe: Path):
    r = subprocess.run([f"mpicc.{flavour}", "-g", "-O0", str(src), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def run_2(flavour: str, exe: Path) -> str:
    r = subprocess.run(mpi.launcher(flavour, 2) + [str(exe)], capture_output=True, text=True,
                       env=mpi.launch_env(flavour), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    return r.stdout


@pytest.fixture(scope="module", params=PROFILED or [None])
def profiled(request, tmp_path_factory):
    """(flavour, source, profile path, the original program's output) of one real profiled run."""
    flavour = request.param
    if flavour is None:
        pytest.skip("libmpiopt-profile not built (make build)")
    d = tmp_path_factory.mktemp(f"hot-{flavour}")
    src, exe = d / "hot.c", d / "hot"
    src.write_text(HOT)
    compile_c(flavour, src, exe)
    r = run_mpiopt("profile", "-np", 2, "--sites", "-o", d / "prof", "--flavour", flavour,
                   "--", exe, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    prof = d / "prof" / "mpiopt-profile.json"
    return flavour, src, prof, run_2(flavour, exe)


def sites_by_line(report: dict) -> dict[int, dict]:
    return {s["line"]: s for f in report["files"] for s in f["sites"]}


def changed_lines(before: str, after: str) -> set[int]:
    """Original line numbers the transformation touched (from a diff of the two texts)."""
    import difflib
    out = set()
    sm = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    for tag, i1, i2, _j1, _j2 in sm.get_opcodes():
        if tag in ("replace", "delete"):
            out.update(range(i1 + 1, i2 + 1))
    return out


@needs_profiler
def test_real_run_rewrites_only_the_costly_site(profiled, tmp_path):
    flavour, src, prof, expected = profiled
    data = json.loads(prof.read_text())
    # the profile saw the costly site on a line of its call, and the two cheap ones
    lines = {s["line"] for s in data["sites"]["list"] if s["file"].endswith("hot.c")}
    assert lines & set(range(HOT_FIRST, HOT_LINES["HOT"] + 1))
    assert {HOT_LINES["CHEAP1"], HOT_LINES["CHEAP2"]} <= lines

    out = tmp_path / "hot_nb.c"
    r = transform(src, "--profile", prof, "-o", out, "--json", "--mpi", flavour)
    assert r.returncode == 0, r.stderr
    rep = sites_by_line(json.loads(r.stdout))
    hot, c1, c2, nv = (rep[HOT_FIRST], rep[HOT_LINES["CHEAP1"]], rep[HOT_LINES["CHEAP2"]],
                       rep[HOT_LINES["NEVER"]])
    assert hot["action"] == "nonblocking" and hot["profile"]["selected"]
    assert hot["profile"]["rank"] == 1 and hot["profile"]["percent"] > 90
    assert hot["profile"]["count"] == 200 and hot["reason"].startswith("wait moved past")
    for s in (c1, c2):
        assert s["action"] == "unchanged" and not s["profile"]["selected"]
        assert re.fullmatch(r"below threshold: [0-9.e-]+ % of MPI time \(threshold 5 %\)", s["reason"])
        assert s["profile"]["count"] == 1
    assert nv["action"] == "unchanged" and nv["reason"] == "not in profile: never called in the profiled run"

    # the output source: only the costly call changed (and its wait, and the request arrays)
    text = out.read_text()
    assert text.count("MPI_Iallreduce(") == 1 and text.count("MPI_Allreduce(") == 3
    assert "MPI_Iallreduce(big_in, big_out, N," in text
    assert "MPI_COMM_WORLD, &mpiopt_reqs[0]); /* site:HOT */" in text
    touched = changed_lines(HOT, text)
    assert touched == {HOT_FIRST, HOT_LINES["HOT"]}, touched
    # it still compiles and prints the same
    compile_c(flavour, out, tmp_path / "hot_nb")
    assert run_2(flavour, tmp_path / "hot_nb") == expected


@needs_profiler
def test_top_n_against_the_threshold(profiled, tmp_path):
    flavour, src, prof, expected = profiled

    def actions(*opts) -> dict[str, tuple]:
        r = transform(src, "--profile", prof, "--json", *opts)
        assert r.returncode == 0, r.stderr
        rep = sites_by_line(json.loads(r.stdout))
        first = {m: (HOT_FIRST if m == "HOT" else line) for m, line in HOT_LINES.items()}
        return {m: (rep[line]["action"], rep[line]["reason"]) for m, line in first.items()}

    top1 = actions("--top", "1")
    assert top1["HOT"][0] == "nonblocking"
    assert top1["CHEAP1"][0] == top1["CHEAP2"][0] == "unchanged"
    assert {top1["CHEAP1"][1].split(":")[0], top1["CHEAP2"][1].split(":")[0]} == {"not in top 1"}
    assert re.fullmatch(r"not in top 1: #[23] by time \([0-9.e-]+ % of MPI time\)", top1["CHEAP1"][1])
    assert top1["NEVER"] == ("unchanged", "not in profile: never called in the profiled run")
    # --top alone sets no threshold: the three called sites, not the one never called
    top3 = actions("--top", "3")
    assert [top3[m][0] for m in ("HOT", "CHEAP1", "CHEAP2", "NEVER")] == \
        ["nonblocking", "nonblocking", "nonblocking", "unchanged"]
    # both: each must hold
    both = actions("--top", "3", "--min-percent", "5")
    assert both["HOT"][0] == "nonblocking" and both["CHEAP1"][1].startswith("below threshold")
    everything = actions("--min-percent", "0")
    assert [everything[m][0] for m in ("HOT", "CHEAP1", "CHEAP2")] == ["nonblocking"] * 3
    # the source itself (no report flag): the transformed program on stdout, the reasons on stderr
    r = transform(src, "--profile", prof, "--top", "1", "--mpi", flavour)
    assert r.returncode == 0 and r.stdout.count("MPI_Iallreduce(") == 1
    assert f"hot.c:{HOT_LINES['CHEAP2']} MPI_Allreduce in main: skipped: not in top 1" in r.stderr
    assert f"hot.c:{HOT_FIRST} MPI_Allreduce in main: nonblocking: costly: #1 by time" in r.stderr
    # the table
    r = transform(src, "--profile", prof, "--report")
    assert r.returncode == 0, r.stderr
    for words in ("skipped", "below threshold", "not in profile", "#1 ", "% of MPI", "200 calls",
                  "1 nonblocking", "3 skipped by the profile"):
        assert words in r.stdout, (words, r.stdout)


@needs_profiler
def test_other_paths_and_other_files(profiled, tmp_path):
    flavour, src, prof, _ = profiled
    # a copy elsewhere: matched by file name, and the report says so
    (tmp_path / "elsewhere").mkdir()
    copy = tmp_path / "elsewhere" / "hot.c"
    shutil.copy(src, copy)
    r = transform(copy, "--profile", prof, "--json")
    rep = sites_by_line(json.loads(r.stdout))
    assert rep[HOT_FIRST]["action"] == "nonblocking"
    assert rep[HOT_FIRST]["profile"]["note"].startswith(f"matched by file name: the profile has {src}")
    # another file: its call is not in the profile, and hot.c's sites are listed as unmatched
    other = tmp_path / "other.c"
    other.write_text(HOT.replace("site:", "other:"))
    r = transform(other, "--profile", prof, "--json")
    doc = json.loads(r.stdout)
    assert not doc["files"][0]["changed"]
    assert sites_by_line(doc)[HOT_FIRST]["reason"].startswith(
        "not in profile: the profiled run called nothing in other.c")
    unmatched = {u["line"]: u for u in doc["profile"]["unmatched"]}
    assert set(unmatched) >= {HOT_LINES["CHEAP1"], HOT_LINES["CHEAP2"]}
    assert all(u["reason"] == f"in another file: {src} (not given)" for u in unmatched.values())
    r = transform(other, "--profile", prof, "--report")
    assert "match no call in the files given" in r.stdout and "in another file" in r.stdout


def test_bad_profiles_exit_2_and_write_nothing(tmp_path):
    src = tmp_path / "hot.c"
    src.write_text(HOT)
    out = tmp_path / "out.c"
    plain = {"format": "mpiopt-profile", "version": 1, "ranks": 2, "sites": {"enabled": False}}
    cases = {"missing": None, "text": "not json {", "list": "[1, 2]",
             "foreign": json.dumps({"sites": {"enabled": True, "list": []}}),
             "nosites": json.dumps(plain)}
    for name, content in cases.items():
        p = tmp_path / f"{name}.json"
        if content is not None:
            p.write_text(content)
        r = transform(src, "--profile", p, "-o", out)
        assert r.returncode == 2, (name, r.stderr)
        assert "mpiopt profile --sites" in r.stderr, (name, r.stderr)
        assert not out.exists(), name
    assert "no such file" in transform(src, "--profile", tmp_path / "missing.json").stderr
    assert "not JSON" in transform(src, "--profile", tmp_path / "text.json").stderr
    assert "without --sites" in transform(src, "--profile", tmp_path / "nosites.json").stderr
    for opts in (["--top", "2"], ["--min-percent", "1"]):
        r = transform(src, *opts, "-o", out)
        assert r.returncode == 2 and "give --profile" in r.stderr and not out.exists()
    good = tmp_path / "good.json"
    good.write_text(json.dumps(dict(plain, sites={"enabled": True, "list": []})))
    for opts in (["--top", "0"], ["--min-percent", "120"]):
        r = transform(src, "--profile", good, *opts, "-o", out)
        assert r.returncode == 2 and not out.exists(), r.stderr


# ---- a hand-written profile: in addition to the real run, for the cases a run cannot pin down ----

MULTI = """#include <mpi.h>

static double v[8], w[8];

void step(int n)
{
    MPI_Allreduce(v, w,
                  n, MPI_DOUBLE,
                  MPI_SUM,
                  MPI_COMM_WORLD);
    MPI_Bcast(v, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Bcast(w, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    v[0] += w[0];
}
"""


def stat(avg, mx=None):
    return {"min": avg, "max": mx if mx is not None else avg, "avg": avg, "min_pe": 0, "max_pe": 1}


def row(call, file, line, seconds, share, count=10, function="step"):
    return {"call": call, "function": function, "file": file, "line": line, "module": "a.out",
            "offset": 0, "debug_info": True, "stack": [], "count": stat(count),
            "bytes": stat(64 * count), "time": stat(seconds), "share_of_mpi_time": share}


def write_profile(path: Path, rows: list) -> Path:
    path.write_text(json.dumps({"format": "mpiopt-profile", "version": 1, "complete": True,
                                "ranks": 2, "sites": {"enabled": True, "frames": 1,
                                                      "resolver": "libdw", "overflow": 0,
                                                      "list": rows}}))
    return path


def test_hand_written_profile_names_lines_and_stacks(tmp_path):
    src = tmp_path / "multi.c"
    src.write_text(MULTI)
    f = str(src)
    prof = write_profile(tmp_path / "p.json", [
        # the Allreduce spans lines 7-10: the site on its last line still matches; the profile
        # names it by its PMPI and MPI-4 large-count names, split by callers (--stack): summed
        row("PMPI_Allreduce", f, 10, 0.30, 0.30),
        row("MPI_Allreduce_c", f, 10, 0.20, 0.20, function="step"),
        row("MPI_Bcast", f, 11, 0.004, 0.004),            # 0.4 %: below the threshold
        row("MPI_Bcast", f, 12, 0.06, 0.06),              # 6 %
        row("MPI_Bcast", "/elsewhere/io.c", 40, 0.40, 0.40, function="write_out"),
        row("MPI_Send", f, 3, 0.01, 0.01),                # not a collective: not considered
    ])
    r = transform(src, "--profile", prof, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rep = sites_by_line(doc)
    assert rep[7]["action"] == "nonblocking"
    assert rep[7]["profile"]["lines"] == [10] and rep[7]["profile"]["count"] == 20
    assert abs(rep[7]["profile"]["percent"] - 50) < 1e-9 and rep[7]["profile"]["rank"] == 1
    assert abs(rep[7]["profile"]["seconds"] - 1.0) < 1e-9          # 0.5 s avg a rank x 2 ranks
    assert rep[11]["action"] == "unchanged"
    assert rep[11]["reason"] == "below threshold: 0.4 % of MPI time (threshold 5 %)"
    assert rep[12]["action"] == "nonblocking"
    # io.c's Bcast is the costliest collective (#1 is the Allreduce's 0.5 s, then io.c's 0.4 s)
    assert [(u["file"], u["line"], u["rank"]) for u in doc["profile"]["unmatched"]] == \
        [("/elsewhere/io.c", 40, 2)]
    assert doc["profile"]["other_sites"] == 1 and doc["summary"]["skipped_by_profile"] == 1
    # --top 2 ranks over the whole profile: the Allreduce and io.c's Bcast, so line 12 is #3
    rep = sites_by_line(json.loads(transform(src, "--profile", prof, "--json", "--top", "2").stdout))
    assert rep[7]["action"] == "nonblocking" and rep[12]["action"] == "unchanged"
    assert rep[12]["reason"] == "not in top 2: #3 by time (6 % of MPI time)"
    # a line outside every call matches nothing: the site is listed, the call is not in the profile
    prof2 = write_profile(tmp_path / "q.json", [row("MPI_Allreduce", f, 13, 0.5, 0.5)])
    doc = json.loads(transform(src, "--profile", prof2, "--json").stdout)
    assert sites_by_line(doc)[7]["reason"] == "not in profile: never called in the profiled run"
    assert doc["profile"]["unmatched"][0]["reason"].startswith("no MPI_Allreduce at line 13 of multi.c")


def test_call_names_are_normalised():
    from mpiopt.transform.costs import normalise_call
    for name in ("MPI_Allreduce", "PMPI_Allreduce", "MPI_Allreduce_c", "PMPI_Allreduce_c",
                 "mpi_allreduce_", "MPI_ALLREDUCE", "MPI_Allreduce (Fortran)"):
        assert normalise_call(name) == "MPI_Allreduce", name
    assert normalise_call("PMPI_Reduce_scatter_block") == "MPI_Reduce_scatter_block"
    assert normalise_call("PMPI_Send") == "MPI_Send" and normalise_call("MPI_Isend_c") == "MPI_Isend"


def test_help_shows_the_profile_example():
    r = run_mpiopt("transform", "--help")
    assert r.returncode == 0 and "--profile mpiopt-profile.json" in r.stdout and "--top" in r.stdout
    from mpiopt.transform.costs import DEFAULT_MIN_PERCENT
    assert f"default {DEFAULT_MIN_PERCENT:g} unless --top" in " ".join(r.stdout.split())
