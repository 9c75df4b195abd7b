"""`mpiopt transform` as a user meets it: outputs (-o, --in-place, --diff, stdout), the report
(--report, --json schema), bad input (exit 2, nothing written), compiler flags after `--`,
and the speed on a 5 000-line file."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_mpiopt

CASES = Path(__file__).resolve().parents[1] / "transform_cases"
pytestmark = pytest.mark.skipif(not shutil.which("mpicc.openmpi"), reason="needs Open MPI's headers")

SMALL = """#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int a = 1, b = 0, c = 5;   /* a comment that must survive */
    MPI_Init(&argc, &argv);
    MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    c = c * 2;
    printf("%d %d\\n", b, c);
    MPI_Finalize();
    return 0;
}
"""


def transform(*args, cwd=None):
    """`mpiopt transform ARGS…`"""
    return run_mpiopt("transform", *args, cwd=cwd, timeout=300)


@pytest.fixture
def small(tmp_path):
    p = tmp_path / "small.c"
    p.write_text(SMALL)
    return p


def test_help_shows_an_example():
    r = transform("--help")
    assert r.returncode == 0
    assert "examples:" in r.stdout and "mpiopt transform cg.c --diff" in r.stdout


def test_stdout_keeps_everything_outside_the_changed_lines(small):
    r = transform(small)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    orig = SMALL.splitlines()
    assert "    MPI_Iallreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &mpiopt_reqs[0]);" in out
    # the wait moved past the independent statement, up to the read of b
    assert out[out.index("    c = c * 2;") + 1] == "    MPI_Wait(&mpiopt_reqs[0], &mpiopt_stats[0]);"
    kept = [ln for ln in out if not ln.strip().startswith(("MPI_Request", "MPI_Status", "MPI_Wait"))
            and "MPI_Iallreduce" not in ln]
    assert kept == [ln for ln in orig if "MPI_Allreduce" not in ln]


def test_output_file_in_place_and_diff(small, tmp_path):
    out = tmp_path / "out.c"
    r = transform(small, "-o", out)
    assert r.returncode == 0 and r.stdout == ""
    assert "MPI_Iallreduce" in out.read_text() and small.read_text() == SMALL

    d = transform(small, "--diff")
    assert d.returncode == 0 and small.read_text() == SMALL
    assert d.stdout.startswith(f"--- {small}\n+++ {small} (transformed)\n")
    assert "-    MPI_Allreduce(&a" in d.stdout and "+    MPI_Iallreduce(&a" in d.stdout

    assert transform(small, "--in-place").returncode == 0
    assert small.read_text() == out.read_text()
    again = transform(small, "--diff")                       # a fixpoint: nothing more to do
    assert again.returncode == 0 and again.stdout == ""


def test_several_files_into_a_directory(small, tmp_path):
    other = tmp_path / "other.c"
    other.write_text(SMALL.replace("MPI_SUM", "MPI_MAX"))
    assert transform(small, other).returncode == 2                  # where would two sources go?
    r = transform(small, other, "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "MPI_MAX, MPI_COMM_WORLD, &mpiopt_reqs[0]" in (tmp_path / "out" / "other.c").read_text()


def test_json_report_schema(small):
    r = transform(small, "--json", "--mode", "persistent")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == 1
    assert doc["summary"] == {"sites": 1, "nonblocking": 1, "persistent": 0, "unchanged": 0,
                              "across_functions": 0}
    f = doc["files"][0]
    assert f["file"] == str(small) and f["changed"] is True and f["output"] is None
    site = f["sites"][0]
    assert set(site) == {"file", "line", "column", "function", "call", "action", "reason",
                         "request", "waits"}
    assert (site["line"], site["column"], site["call"], site["action"]) == (8, 5, "MPI_Allreduce", "nonblocking")
    assert "not directly in a loop body" in site["reason"]
    (w,) = site["waits"]
    assert set(w) == {"line", "guard", "flag", "moved_past", "blocked_by", "blocked_line"}
    assert (w["line"], w["guard"], w["moved_past"], w["blocked_line"]) == (10, "all", 1, 10)
    assert "reads `b`" in w["blocked_by"]


def test_report_table_lists_every_site():
    r = transform(CASES / "negatives.c", "--report")
    assert r.returncode == 0, r.stderr
    assert "unchanged" in r.stdout and "nonblocking" in r.stdout
    assert "call sites:" in r.stdout


def test_missing_file_and_parse_error_exit_2_and_write_nothing(small, tmp_path):
    out = tmp_path / "never.c"
    r = transform(tmp_path / "missing.c", "-o", out)
    assert r.returncode == 2 and "no such file" in r.stderr and not out.exists()

    bad = tmp_path / "bad.c"
    bad.write_text(SMALL.replace("c = c * 2;", "c = c * ;"))
    before = bad.read_text()
    for extra in (["-o", out], ["--in-place"], ["--json"]):
        r = transform(bad, *extra)
        assert r.returncode == 2, extra
        assert r.stderr.startswith("mpiopt: error: ") and "bad.c:9:" in r.stderr
        assert not out.exists() and bad.read_text() == before
    # one bad file among good ones: nothing is written at all
    r = transform(small, bad, "--in-place")
    assert r.returncode == 2 and small.read_text() == SMALL


def test_compiler_flags_after_double_dash(tmp_path):
    src = tmp_path / "sized.c"
    src.write_text(SMALL.replace("int a = 1", "int a = N"))
    assert transform(src).returncode == 2
    r = transform(src, "--", "-DN=3")
    assert r.returncode == 0, r.stderr
    assert "int a = N" in r.stdout
    # options may also come after the file, before `--` and several flags
    r = transform(src, "--json", "--mode", "persistent", "--", "-DN=3", "-DUNUSED=1")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["nonblocking"] == 1
    bad = transform(src, "--bogus", "--", "-DN=3")
    assert bad.returncode == 2 and "unrecognized arguments: --bogus" in bad.stderr
    both = transform(src, "--diff", "--in-place", "--", "-DN=3")
    assert both.returncode == 2 and "not allowed" in both.stderr


def test_mpi_version_3_without_mpix_stays_nonblocking():
    if not shutil.which("mpicc.mpich"):
        pytest.skip("needs MPICH")
    r = transform(CASES / "fig05_cg.c", "--mode", "persistent", "--mpi", "mpich", "--mpi-version", "3", "--json")
    doc = json.loads(r.stdout)
    assert doc["summary"]["persistent"] == 0 and doc["summary"]["nonblocking"] == 2
    r4 = json.loads(transform(CASES / "fig05_cg.c", "--mode", "persistent", "--mpi", "mpich", "--json").stdout)
    assert r4["summary"]["persistent"] == 1           # Allreduce; MPICH 4.0's Allgather_init is broken


def generate_large_file(path: Path, functions: int = 180) -> int:
    """A C file of ~5 000 lines: many functions with collectives, loops, helpers and branches."""
    parts = ["#include <mpi.h>", "#include <stdio.h>", "#include <stdlib.h>", "",
             "static double g_total;", ""]
    for k in range(functions):
        parts += [
            f"static double helper_{k}(const double *v, int n)",
            "{",
            "    double s = 0;",
            "    for (int i = 0; i < n; i++)",
            "        s += v[i] * (i + 1);",
            "    return s;",
            "}",
            "",
            f"static void step_{k}(double *in, double *out, int n, int rank)",
            "{",
            "    double local = 0, global = 0;",
            "    int iter = 0;",
            "    for (int i = 0; i < n; i++)",
            "        in[i] = rank + i * 0.5;",
            "    MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);",
            f"    local = helper_{k}(in, n);",
            "    while (iter < 3) {",
            "        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);",
            "        local = local * 0.5 + global;",
            "        iter++;",
            "    }",
            "    if (rank == 0) {",
            "        MPI_Bcast(in, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);",
            "        in[0] += 1.0;",
            "    } else {",
            "        MPI_Bcast(in, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);",
            "    }",
            "    g_total += out[0] + global;",
            "}",
            "",
        ]
    parts += ["int main(int argc, char **argv)", "{", "    int rank;", "    double a[8], b[8];",
              "    MPI_Init(&argc, &argv);", "    MPI_Comm_rank(MPI_COMM_WORLD, &rank);"]
    parts += [f"    step_{k}(a, b, 8, rank);" for k in range(functions)]
    parts += ['    printf("%g\\n", g_total);', "    MPI_Finalize();", "    return 0;", "}", ""]
    path.write_text("\n".join(parts))
    return len(parts)


def test_a_5000_line_file_is_fast(tmp_path):
    big = tmp_path / "big.c"
    n = generate_large_file(big)
    assert n >= 5000
    t0 = time.perf_counter()
    r = transform(big, "--json", "--mode", "persistent")
    wall = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    seconds, cpu = doc["files"][0]["seconds"], doc["files"][0]["cpu_seconds"]
    print(f"\n{n} lines, {doc['summary']['sites']} call sites: transform {seconds:.2f} s wall, "
          f"{cpu:.2f} s CPU (command {wall:.2f} s wall)")
    assert doc["summary"]["sites"] == 4 * 180 and doc["summary"]["unchanged"] == 0
    assert cpu < 5               # the bar; CPU time, since wall time on a shared machine is noise
    assert seconds < 60
