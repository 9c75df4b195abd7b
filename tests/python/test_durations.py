"""tests/durations.py, the suite's account of its own time, and the launches log conftest writes:
a made-up JUnit file and logs give the tables it prints; the log's program names come from real
command lines (the launcher, `python -m mpiopt COMMAND`, a path). Starts no MPI job."""
import subprocess
import sys
from pathlib import Path

from conftest import launched_program as _program

DURATIONS = Path(__file__).resolve().parents[1] / "durations.py"

JUNIT = """<?xml version="1.0"?>
<testsuites><testsuite>
<testcase classname="tests.python.test_a" name="test_x[1]" time="3.0"/>
<testcase classname="tests.python.test_a" name="test_y" time="1.5"><failure/></testcase>
<testcase classname="tests.python.test_b" name="test_z" time="10.0"/>
</testsuite></testsuites>
"""
LAUNCHES = "".join(f"{t}\t{p}\t{n}\t{s}\t{rc}\n" for t, p, n, s, rc in [
    ("tests/python/test_a.py::test_x[1]", "mpirun.openmpi", "2", "0.5", "0"),
    ("tests/python/test_a.py::test_x[1]", "mpirun.openmpi", "3", "1.0", "0"),
    ("tests/python/test_a.py::test_y", "mpiopt bench", "", "2.6", "1"),
    ("tests/python/test_b.py::test_z", "mpirun.mpich", "5", "9.0", "raised"),
])
CHECKS = "tests/python/test_b.py::test_z\t1200\tcoll_check: 1200 checks, 0 failures\n"


def test_program_names_the_launcher_the_command_and_the_ranks():
    assert _program(["mpirun.openmpi", "--oversubscribe", "-np", "3", "./x"]) == ("mpirun.openmpi", "3")
    assert _program(["/usr/bin/python3", "-m", "mpiopt", "bench", "allreduce"]) == ("mpiopt bench", "")
    assert _program([sys.executable, "-m", "mpiopt.cli", "transform", "a.c"]) == ("mpiopt transform", "")
    assert _program(["/opt/x/bin/mpiexec", "-n", "4", "a"]) == ("mpiexec", "4")
    assert _program("make -C build") == ("make", "")
    assert _program([Path("/usr/bin/cmake"), "--build", "b"]) == ("cmake", "")


def test_tables_per_file_per_test_and_per_program(tmp_path):
    (tmp_path / "j.xml").write_text(JUNIT)
    (tmp_path / "l.tsv").write_text(LAUNCHES)
    (tmp_path / "c.tsv").write_text(CHECKS)
    r = subprocess.run([sys.executable, DURATIONS, tmp_path / "j.xml", "--checks", tmp_path / "c.tsv",
                        "--launches", tmp_path / "l.tsv"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "| test_b.py | 10 | 1 | 1200 |" in out and "| test_a.py | 4 | 1 | 0 |" in out, out
    assert "| **all** | 14 | 2 | 1200 |" in out, out
    assert "| 1.5 | test_a.py::test_y (failure) |" in out, out
    # per file: launches, their seconds, the costliest programs first
    assert "| test_b.py | 1 | 9 | mpirun.mpich 1 / 9 |" in out, out
    assert "| test_a.py | 3 | 4 | mpiopt bench 1 / 3, mpirun.openmpi 2 / 2 |" in out, out
    assert "| mpirun.openmpi | 2 | 2 | 0.75 |" in out, out
