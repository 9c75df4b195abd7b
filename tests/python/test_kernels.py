"""Issue 2 end to end: the MPI_Reduce_local drop-in under both MPIs (C and Fortran programs that
are not linked with mpiopt), the mpiopt-reduce-local benchmark's interface, ISA forcing and the
vectorization report. The kernels themselves are tested op by op in tests/c/unit_reduce_local.c
(ctest)."""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import needs_build
from mpiopt import mpi

FLAVOURS = mpi.built_flavours()
pytestmark = needs_build
# A run expected to fail: Open MPI 4.1's mpirun waits odls_base_sigkill_timeout (1 s, twice: 2.4 s
# a launch) after a rank exits non-zero before it exits itself; 0 ends it at once (0.4 s), the
# same exit code and messages
FAILING_RUN_ENV = {"OMPI_MCA_odls_base_sigkill_timeout": "0"}

# What mpiopt computes (and documents) for the cases in tests/c/plain_reduce_local.c
C_EXPECTED = {"int8_sum": "-56", "ulong_max": "18446744073709551615", "uint_max": "3000000000",
              "max_nan_in": "nan", "max_nan_inout": "nan"}
F_EXPECTED = {"int1_sum": "-56", "max_nan_in": "T", "max_nan_inout": "T", "real16_sum": "2.750",
              "ierr": "0"}


def parse_pairs(stdout):
    return dict(line.split(None, 1) for line in stdout.strip().splitlines())


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("program,expected", [("test-plain_reduce_local", C_EXPECTED),
                                              ("ftest-reduce_local_dropin", F_EXPECTED)])
def test_dropin_fixes_vendor_results(flavour, program, expected):
    exe = mpi.binary(flavour, program)
    if not exe.exists():
        pytest.skip(f"{exe} not built (no Fortran compiler?)")
    vendor = mpi.run(flavour, 1, [exe], timeout=120)
    preloaded = mpi.run(flavour, 1, [exe], preload=True, timeout=120)
    assert vendor.returncode == 0, vendor.stderr
    assert preloaded.returncode == 0, preloaded.stderr
    assert parse_pairs(preloaded.stdout) == expected
    # The programs print cases where Open MPI 4.1.4 and MPICH 4.0.2 differ from mpiopt, so the
    # same program without LD_PRELOAD must print something else: proof the preload took effect.
    assert parse_pairs(vendor.stdout) != expected


LINE = re.compile(r"^MPI_(SUM|MAX|MIN|PROD) +MPI_\w+ +\d+ +count  \d+ +time \(seconds\) \d+\.\d{8} seconds$")


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_benchmark_classic_output_and_check(flavour):
    r = mpi.run(flavour, 1, [mpi.binary(flavour, "mpiopt-reduce-local"), "-o", "sum,max,min,prod",
                             "-t", "iufd", "-s", "16", "-l", "1", "-u", "300", "-r", "2", "-i", "2",
                             "-1", "1", "-2", "3"], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines and all(LINE.match(l) for l in lines), lines[:5]
    assert "First error" not in r.stdout
    # counts double from -l to -u; -i 2 adds a line shifted by one element
    counts = sorted(int(l.split()[4]) for l in lines if l.startswith("MPI_SUM    MPI_DOUBLE"))
    assert counts == sorted([2 ** k for k in range(9)] + [2 ** k - 1 for k in range(1, 9)])


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_benchmark_compare_json(flavour):
    r = mpi.run(flavour, 1, [mpi.binary(flavour, "mpiopt-reduce-local"), "--compare", "--json",
                             "-o", "sum,bxor", "-t", "di", "-s", "32", "-l", "1000", "-u", "4000", "-r", "3"],
                timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert {(x["op"], x["type"]) for x in rows} == {("MPI_SUM", "MPI_DOUBLE"), ("MPI_SUM", "MPI_INT32_T"),
                                                    ("MPI_BXOR", "MPI_INT32_T")}
    for x in rows:
        for v in ("vendor", "mpiopt_1t", "mpiopt_mt", "stream_add_1t", "stream_add_mt"):
            assert x[f"{v}_seconds"] > 0 and x[f"{v}_gbs"] > 0
        assert x["bytes"] == x["count"] * (8 if x["type"] == "MPI_DOUBLE" else 4)


@pytest.mark.parametrize("args,message", [(["-s", "12"], "element size"), (["-o", "plus"], "unknown op"),
                                          (["-t", "x"], "types"), (["-t", "ciq"], "types"), (["-l", "10", "-u", "5"], "above")])
def test_benchmark_rejects_bad_options(args, message):
    flavour = FLAVOURS[0]
    r = mpi.run(flavour, 1, [mpi.binary(flavour, "mpiopt-reduce-local"), *args], timeout=60,
                env=dict(os.environ, **FAILING_RUN_ENV))
    assert r.returncode != 0
    assert message in r.stderr


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
def test_isa_can_be_forced(isa):
    flavour = FLAVOURS[0]
    env = dict(mpi.launch_env(flavour), MPIOPT_ISA=isa)
    r = mpi.run(flavour, 1, [mpi.binary(flavour, "mpiopt-reduce-local"), "--compare", "-o", "sum",
                             "-t", "d", "-l", "64", "-u", "64"], env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    cpu = open("/proc/cpuinfo").read()
    supported = {"baseline": True, "avx2": " avx2" in cpu, "avx512": " avx512bw" in cpu}[isa]
    if supported:
        assert f"# isa {isa}," in r.stdout
    else:
        assert "not supported" in r.stderr


def test_unknown_isa_warns_and_falls_back():
    flavour = FLAVOURS[0]
    env = dict(mpi.launch_env(flavour), MPIOPT_ISA="sse9")
    r = mpi.run(flavour, 1, [mpi.binary(flavour, "mpiopt-reduce-local"), "--compare", "-o", "sum",
                             "-t", "d", "-l", "64", "-u", "64"], env=env, timeout=60)
    assert r.returncode == 0
    assert "MPIOPT_ISA=sse9 unknown" in r.stderr


def test_vec_report_covers_every_kernel_but_long_double():
    r = subprocess.run([sys.executable, "-m", "mpiopt.cli", "vec-report", "--json"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    rows = {x["target"]: x for x in json.loads(r.stdout)}
    for target in ("avx2", "avx512"):
        row = rows[target]
        assert row["functions"] == 176      # 88 op × type functions, 2- and 3-buffer forms
        # x87 long double has no vector unit, binary128 is software; everything else is vectorized
        assert all("ldbl" in f or "128" in f for f in row["functions_scalar"]), row["functions_scalar"]
        assert row["loops_vectorized"] >= row["functions_vectorized"]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_benchmark_checks_mpi_char(flavour):
    """MPI_CHAR (`-t c`), OSU's default type: mpiopt's kernel is checked against the scalar
    reference at odd counts and shifted buffers, every op."""
    r = mpi.run(flavour, 1, [mpi.binary(flavour, "mpiopt-reduce-local"), "-o", "all", "-t", "c",
                             "-l", "1", "-u", "300", "-i", "3", "-1", "1", "-2", "2"], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines and all(" MPI_CHAR " in l for l in lines) and "First error" not in r.stdout
    assert {l.split()[0] for l in lines} == {"MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN", "MPI_LAND",
                                            "MPI_LOR", "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR"}


def test_kernel_report_has_mpi_char_rows(mpiopt, tmp_path):
    r = mpiopt("bench", "kernels", "--ops", "sum", "--counts", "1000", "--repeats", "3", "--json",
               "--results", tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(r.stdout)["rows"]
    char = [x for x in rows if x["type"] == "MPI_CHAR"]
    assert {x["vendor"] for x in char} == {x["vendor"] for x in rows}
    assert all(x["op"] == "MPI_SUM" and x["bytes"] == 1000 and x["mpiopt_1t_gbs"] > 0 for x in char)
    # the bar is set on doubles: one line per double row at 1000 elements, none for MPI_CHAR
    assert len(json.loads(r.stdout)["bar"]) == len(rows) - len(char)
