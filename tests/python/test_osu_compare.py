"""bench/osu_compare.py's pure parts: OSU's table parser, the vendor ÷ drop-in ratio of the
medians with its minimum and median over sizes, the spreads, and the MPIOPT_REPORT check. No OSU
and no MPI needed: the outputs below were recorded from a smoke run on this machine
(`bench/osu_compare.py --only openmpi-debian,impi --osu-args='-T mpi_float -m 4:65536 -i 20 -x 5'
--repeat 2`, Debian's Open MPI 4.1.4, p = 2), trimmed to their first sizes where noted."""
import importlib.util
import sys
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "osu_compare", Path(__file__).resolve().parents[2] / "bench" / "osu_compare.py")
osu_compare = importlib.util.module_from_spec(spec)
sys.modules["osu_compare"] = osu_compare      # its dataclasses look their module up
spec.loader.exec_module(osu_compare)

# run 1, vendor alone: the whole output
VENDOR_1 = """
# OSU MPI Allreduce Latency Test v7.4
# Datatype: MPI_FLOAT.
# Size       Avg Latency(us)
4                       0.68
8                       0.24
16                      0.24
32                      0.24
64                      0.24
128                     0.25
256                     0.45
512                     0.46
1024                    0.55
2048                    0.80
4096                    1.39
8192                    5.84
16384                  12.62
32768                  13.98
65536                  19.52
"""
# the others trimmed to 4..64 B
DROPIN_1 = """
# OSU MPI Allreduce Latency Test v7.4
# Datatype: MPI_FLOAT.
# Size       Avg Latency(us)
4                       0.24
8                       0.13
16                      0.13
32                      0.13
64                      0.15
"""
VENDOR_2 = """
# OSU MPI Allreduce Latency Test v7.4
# Datatype: MPI_FLOAT.
# Size       Avg Latency(us)
4                       0.63
8                       0.24
16                      0.26
32                      0.25
64                      0.24
"""
DROPIN_2 = """
# OSU MPI Allreduce Latency Test v7.4
# Datatype: MPI_FLOAT.
# Size       Avg Latency(us)
4                       0.29
8                       0.13
16                      0.13
32                      0.13
64                      0.15
"""
# osu_reduce_scatter -f (full statistics), Debian's Open MPI, p = 2
FULL_STATS = """
# OSU MPI Reduce_scatter Latency Test v7.4
# Datatype: MPI_FLOAT.
# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations
4                       0.62              0.59              0.65          20
8                       0.25              0.19              0.31          20
16                      0.24              0.22              0.26          20
"""
# MPIOPT_REPORT=1's table (stderr of the check run), Intel MPI 2021.15, osu_allreduce
REPORT = """mpiopt report (MPIOPT_REPORT): reduction calls of all 2 ranks
  entry point                     calls  by mpiopt  by vendor  mpiopt's algorithms | why the vendor's
  MPI_Allreduce                     750        688         62  recursive_doubling 64, rabenseifner 60, shared_memory 564 | vendor faster in auto's trials 62
  MPI_Reduce                         90         90          0  shared_memory 90
mpiopt: 778 of 840 reduction calls ran mpiopt's algorithms
"""


def test_parse_whole_table():
    t = osu_compare.parse_osu(VENDOR_1)
    assert list(t) == [4 << i for i in range(15)]
    assert t[4] == 0.68 and t[8192] == 5.84 and t[65536] == 19.52


def test_parse_full_statistics_takes_the_average_column():
    assert osu_compare.parse_osu(FULL_STATS) == {4: 0.62, 8: 0.25, 16: 0.24}
    assert osu_compare.parse_osu(FULL_STATS, "Max Latency(us)") == {4: 0.65, 8: 0.31, 16: 0.26}


def test_parse_skips_noise_and_finds_no_table():
    noisy = "warning: something\n" + DROPIN_1 + REPORT + "\n[1,0]<stderr>: 12 x\n"
    assert osu_compare.parse_osu(noisy) == osu_compare.parse_osu(DROPIN_1)
    assert osu_compare.parse_osu("mpirun: error, nothing ran\n") == {}
    assert osu_compare.parse_osu("") == {}


def test_ratio_of_medians_min_and_median():
    p = osu_compare.parse_osu
    c = osu_compare.compare([p(VENDOR_1), p(VENDOR_2)], [p(DROPIN_1), p(DROPIN_2)])
    # only the sizes every run printed: VENDOR_1's 128 B..64 KiB are not in the others
    assert [r["bytes"] for r in c["sizes"]] == [4, 8, 16, 32, 64]
    by = {r["bytes"]: r for r in c["sizes"]}
    # medians of two runs: their means
    assert by[4]["vendor_us"] == pytest.approx(0.655) and by[4]["dropin_us"] == pytest.approx(0.265)
    assert by[4]["ratio"] == pytest.approx(0.655 / 0.265)
    assert by[16]["ratio"] == pytest.approx(0.25 / 0.13)
    # ratios 2.47, 1.85, 1.92, 1.88, 1.60: min at 64 B, median the 32 B one
    assert c["min_ratio"] == pytest.approx(0.24 / 0.15) and c["min_ratio_bytes"] == 64
    assert c["median_ratio"] == pytest.approx(0.245 / 0.13)
    assert c["repetitions"] == 2
    # spreads: max / min over the runs of one side at one size
    assert by[4]["vendor_spread"] == pytest.approx(0.68 / 0.63)
    assert by[4]["dropin_spread"] == pytest.approx(0.29 / 0.24)
    assert by[8]["vendor_spread"] == pytest.approx(1.0)
    assert by[16]["vendor_spread"] == pytest.approx(0.26 / 0.24)


def test_median_of_odd_count_is_the_middle_run():
    runs = [{8: 1.0}, {8: 5.0}, {8: 2.0}]
    c = osu_compare.compare(runs, [{8: 1.0}, {8: 1.0}, {8: 1.0}])
    assert c["sizes"][0]["vendor_us"] == 2.0 and c["median_ratio"] == 2.0
    assert c["sizes"][0]["vendor_spread"] == 5.0


def test_paired_ratio_follows_each_repetition():
    """A slow stretch of the machine that hits a repetition's two runs alike moves the ratio of
    the medians (a fast vendor run against a slow drop-in one) but not the paired ratio, the
    median of each repetition's own vendor / drop-in."""
    vendor = [{8: 1.0}, {8: 1.0}, {8: 10.0}, {8: 10.0}, {8: 1.0}]
    dropin = [{8: 0.5}, {8: 5.0}, {8: 5.0}, {8: 5.0}, {8: 0.5}]
    c = osu_compare.compare(vendor, dropin)
    assert c["sizes"][0]["ratio"] == pytest.approx(1.0 / 5.0)
    assert c["sizes"][0]["paired_ratio"] == pytest.approx(2.0)     # 2, 0.2, 2, 2, 2
    assert (c["paired_min_ratio"], c["paired_min_ratio_bytes"]) == (pytest.approx(2.0), 8)
    assert c["paired_median_ratio"] == pytest.approx(2.0)


def test_no_figures_from_a_run_without_a_table():
    p = osu_compare.parse_osu
    with pytest.raises(ValueError):
        osu_compare.compare([p(VENDOR_1), p("")], [p(DROPIN_1), p(DROPIN_2)])
    with pytest.raises(ValueError):
        osu_compare.compare([], [p(DROPIN_1)])


def test_report_check():
    ok, text = osu_compare.verify_report(REPORT, "osu_allreduce")
    assert ok and "688 of 750" in text and "62 handed to the vendor" in text
    ok, _ = osu_compare.verify_report(REPORT, "osu_reduce")
    assert ok
    # the benchmark's entry point absent: its calls did not reach mpiopt
    ok, text = osu_compare.verify_report(REPORT, "osu_reduce_scatter")
    assert not ok and "MPI_Reduce_scatter" in text
    # no report at all: the drop-in was not loaded
    ok, text = osu_compare.verify_report(DROPIN_1, "osu_allreduce")
    assert not ok and "not loaded" in text
    # loaded, but every call handed to the vendor
    handed = REPORT.replace("750        688         62  recursive_doubling 64, rabenseifner 60, "
                            "shared_memory 564 | vendor faster", "750          0        750  vendor faster")
    ok, _ = osu_compare.verify_report(handed, "osu_allreduce")
    assert not ok


def test_size_labels():
    assert [osu_compare.size_label(n) for n in (4, 1000, 1024, 65536, 4194304)] == \
        ["4 B", "1000 B", "1 KiB", "64 KiB", "4 MiB"]
