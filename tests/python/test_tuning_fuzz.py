"""Bad tuning files cost a warning, never the program: MPIOPT_TUNING_FILE is read inside the
user's process, in its first collective. A file nested 200,000 deep overflowed the stack of the
recursive reader and killed MPI_Init on both MPIs; the reader now bounds the depth. libFuzzer
(Debian's clang) runs the reader for a fixed time on mutations of real and broken tables, and a
control build without the bound shows that the deep file does crash it."""
import os
import shutil
import subprocess

import pytest

from mpiopt import mpi
from conftest import require_build
from test_coll import run_with_tuning_file

ROOT = mpi.repo_root()
CLANG = shutil.which("clang-14") or shutil.which("clang")
# the fuzzing budget: the reader's edge coverage is complete (149 edges) within 5 s here, with
# 440,000 executions (10 s: 710,000; 30 s: 1.55 million, 6% more features, the same edges; 2 cores
# under load 11-20), against the 10,000 the test asks for
FUZZ_SECONDS = 10
DEEP = '{"version":1,"x":' + "[" * 200_000 + "]" * 200_000 + "}"


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_deeply_nested_tuning_file_warns_and_the_program_finishes(flavour):
    r = run_with_tuning_file(flavour, 2, DEEP, ["--algorithms", "auto", "--cases", "minimal",
                                               "--counts", "5", "--comms", "world"])
    assert r.returncode == 0, r.stderr[-2000:]
    warnings = [l for l in r.stderr.splitlines() if "mpiopt: warning" in l]
    assert len(warnings) == 1 and "nested too deep" in warnings[0], r.stderr[-2000:]


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_oversized_tuning_file_warns_and_the_program_finishes(flavour):
    big = '{"version": 1, "flavour": "' + "x" * (17 << 20) + '"}'
    r = run_with_tuning_file(flavour, 2, big, ["--algorithms", "auto", "--cases", "minimal",
                                              "--counts", "5", "--comms", "world"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "more than a tuning table can be" in r.stderr, r.stderr[-2000:]


def _fuzzer(tmp_path, *defines) -> str:
    """tests/fuzz/tuning_file_fuzz.c and the reader, built with clang for libFuzzer, ASan and
    UBSan; the algorithm names come from libmpiopt itself."""
    if not CLANG:
        pytest.skip("clang not installed (Debian: clang-14 libfuzzer-14-dev; `make deps`)")
    require_build("openmpi")
    lib = ROOT / "build" / "openmpi" / "lib"
    mpi_flags = subprocess.run(["mpicc.openmpi", "--showme:compile"], capture_output=True,
                               text=True, check=True).stdout.split()
    exe = tmp_path / "tuning_file_fuzz"
    cmd = [CLANG, "-g", "-O1", "-fsanitize=fuzzer,address,undefined",
           "-fno-sanitize-recover=undefined", *defines, *mpi_flags,
           f"-I{ROOT / 'include'}", f"-I{ROOT / 'src'}", f"-I{ROOT / 'src' / 'coll' / 'select'}",
           str(ROOT / "tests" / "fuzz" / "tuning_file_fuzz.c"),
           str(ROOT / "src" / "coll" / "select" / "tuning_file.c"),
           f"-L{lib}", f"-Wl,-rpath,{lib}", "-lmpiopt", "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return str(exe)


def test_fuzzing_the_reader_finds_nothing(tmp_path):
    exe = _fuzzer(tmp_path)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    r = subprocess.run([exe, f"-max_total_time={FUZZ_SECONDS}", "-max_len=65536", "-seed=1",
                        "-print_final_stats=1", str(corpus), str(ROOT / "tests" / "fuzz" /
                                                                 "tuning_seeds")],
                       capture_output=True, text=True, timeout=FUZZ_SECONDS + 120)
    assert r.returncode == 0, r.stderr[-4000:]
    runs = [l for l in r.stderr.splitlines() if l.startswith("stat::number_of_executed_units")]
    assert runs and int(runs[0].split()[-1]) > 10_000, r.stderr[-2000:]
    # and the deep file, given as one input, is a clean refusal
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    assert subprocess.run([exe, str(deep)], capture_output=True, timeout=120).returncode == 0


def test_control_without_the_bound_the_deep_file_crashes(tmp_path):
    """The same target with the depth bound lifted: the 200,000-deep file overflows the stack
    (what MPI_Init died of), so the tests above can fail."""
    exe = _fuzzer(tmp_path, "-DMPIOPT_TUNING_MAX_DEPTH=100000000")
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    r = subprocess.run([exe, str(deep)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "stack-overflow" in r.stderr, r.stderr[-2000:]
