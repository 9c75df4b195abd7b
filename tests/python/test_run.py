"""`mpiopt run`: picks the launcher of the MPI a program links and really preloads libmpiopt."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from mpiopt import mpi
from conftest import BUILT_FLAVOURS, needs_build, report_rows, run_mpiopt as mpiopt

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    double one = 1, sum = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const char *preload = getenv("LD_PRELOAD");
    printf("rank %d of %d sum %g preload %s\n", rank, size, sum, preload ? preload : "none");
    MPI_Finalize();
    return 0;
}
"""

BUILT = BUILT_FLAVOURS




@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """The same C program built with each MPI's compiler wrapper."""
    d = tmp_path_factory.mktemp("run")
    (d / "allreduce.c").write_text(PROGRAM)
    out = {}
    for f in BUILT:
        exe = d / f"allreduce-{f}"
        subprocess.run([f"mpicc.{f}", str(d / "allreduce.c"), "-o", str(exe)], check=True)
        out[f] = exe
    return out


@needs_build
@pytest.mark.parametrize("flavour", BUILT)
def test_picks_the_launcher_and_preloads(programs, flavour):
    env = dict(os.environ, MPIOPT_VERBOSE="1")
    r = mpiopt("run", "-np", "2", "--json", "--", str(programs[flavour]), env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    info = json.loads(lines[-1])
    assert info["flavour"] == flavour
    assert info["command"][0] == f"mpirun.{flavour}"
    assert info["ld_preload"] == str(mpi.library(flavour))
    ranks = [line for line in lines if line.startswith("rank ")]
    assert len(ranks) == 2
    for line in ranks:
        assert "sum 2 " in line
        assert line.endswith(str(mpi.library(flavour)))  # LD_PRELOAD as the program sees it
    # libmpiopt's MPI_Allreduce ran: with MPIOPT_VERBOSE=1 rank 0 names the algorithm it chose
    assert "mpiopt" in r.stderr and "allreduce" in r.stderr


@needs_build
@pytest.mark.parametrize("flavour", BUILT)
def test_report_option_prints_what_mpiopt_took(programs, flavour):
    r = mpiopt("run", "-np", "2", "--report", "--", str(programs[flavour]))
    assert r.returncode == 0, r.stderr
    assert "mpiopt report (MPIOPT_REPORT): reduction calls of all 2 ranks" in r.stderr, r.stderr
    assert report_rows(r.stderr)["MPI_Allreduce"][:3] == (2, 2, 0), r.stderr


@needs_build
def test_no_preload_and_launcher_options(programs):
    flavour = BUILT[0]
    opt = ["--bind-to", "none"] if flavour == "openmpi" else ["-bind-to", "none"]
    r = mpiopt("run", "-np", "2", "--no-preload", *opt, "--", str(programs[flavour]))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("preload none") == 2


@pytest.mark.skipif("openmpi" not in BUILT, reason="Open MPI build missing")
def test_mpi4py_program_uses_mpi4pys_mpi(tmp_path):
    probe = subprocess.run([sys.executable, "-c", "import mpi4py.MPI as m; print(m.__file__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("mpi4py not installed")
    flavour = mpi.linked_flavour(probe.stdout.strip())
    if flavour not in BUILT:
        pytest.skip(f"mpi4py uses {flavour}, not built")
    script = tmp_path / "app.py"
    # one write per line: the launcher interleaves the ranks' output at write boundaries
    script.write_text("import os, sys\nfrom mpi4py import MPI\n"
                      "s = MPI.COMM_WORLD.allreduce(1.0)\n"
                      "sys.stdout.write(f\"sum {s} preload {os.environ.get('LD_PRELOAD')}\\n\")\n"
                      "sys.stdout.flush()\n")
    r = mpiopt("run", "-np", "2", "--json", "--", sys.executable, str(script))
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.strip().splitlines()[-1])
    assert info["flavour"] == flavour and "mpi4py" in info["detected_from"]
    assert r.stdout.count(f"sum 2.0 preload {mpi.library(flavour)}") == 2, r.stdout


@pytest.mark.parametrize("args, message", [
    (["--", "/bin/true"], "links no MPI library"),
    (["--", "/no/such/program"], "program not found"),
    ([], "no program to run"),
    (["--unknown-thing", "/bin/true"], "unknown option"),
])
def test_bad_input_is_a_usage_error(args, message):
    r = mpiopt("run", "-np", "2", *args)
    assert r.returncode == 2
    assert message in r.stderr


@needs_build
def test_unbuilt_library_is_a_clear_error(programs, tmp_path):
    env = dict(os.environ, MPIOPT_HOME=str(tmp_path))  # a source tree with no build/
    r = mpiopt("run", "-np", "2", "--", str(programs[BUILT[0]]), env=env)
    assert r.returncode == 2 and "is not built" in r.stderr and "rank 0" not in r.stdout


@needs_build
def test_rank_order_needs_hosts_and_ppn(programs, tmp_path):
    order = tmp_path / "order"
    order.write_text("0,1\n")
    r = mpiopt("run", "-np", "2", "--rank-order", str(order), "--", str(programs[BUILT[0]]))
    assert r.returncode == 2 and "--ppn" in r.stderr


@needs_build
def test_rank_order_places_ranks(programs, tmp_path):
    pytest.importorskip("mpiopt.placement")
    order = tmp_path / "order"
    order.write_text("1,0\n")
    flavour = BUILT[0]
    r = mpiopt("run", "-np", "2", "--rank-order", str(order), "--hosts", "localhost", "--ppn", "2",
               "--json", "--", str(programs[flavour]))
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.strip().splitlines()[-1])
    assert ("--rankfile" in info["command"]) if flavour == "openmpi" else ("-f" in info["command"])


def test_help_has_an_example():
    r = mpiopt("run", "--help")
    assert r.returncode == 0 and "examples:" in r.stdout and "--no-preload" in r.stdout


# ---- which libmpiopt.so, which launcher: the MPI the program links (issue 22) ----

def test_mpi_of_ldd_names_the_abi():
    assert mpi.mpi_of_ldd("\tlibmpi.so.40 => /usr/lib/x86_64-linux-gnu/libmpi.so.40 (0x7f)\n") == \
        ("openmpi", mpi.Path("/usr/lib/x86_64-linux-gnu/libmpi.so.40"))
    # the MPICH ABI's own name (MPICH 4.1+, Intel MPI, pip wheels) is MPICH's, not Open MPI's
    assert mpi.mpi_of_ldd("\tlibmpi.so.12 => /opt/mpich/lib/libmpi.so.12 (0x7f)\n") == \
        ("mpich", mpi.Path("/opt/mpich/lib/libmpi.so.12"))
    assert mpi.mpi_of_ldd("\tlibmpich.so.12 => not found\n") == ("mpich", None)
    assert mpi.mpi_of_ldd("\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)\n") == (None, None)
    assert mpi.own_launcher(mpi.Path("/usr/lib/x86_64-linux-gnu/libmpi.so.40")) is None


@needs_build
@pytest.mark.skipif(len(BUILT) < 2, reason="needs both MPIs built")
def test_library_built_for_another_mpi_is_a_clear_error(programs):
    r = mpiopt("run", "-np", "1", "--lib", str(mpi.library("mpich")), "--",
               str(programs["openmpi"]))
    assert r.returncode == 2 and "is built for mpich" in r.stderr and "rank 0" not in r.stdout, \
        r.stderr
    r = mpiopt("run", "-np", "1", "--prefix", "/no/such/prefix", "--", str(programs["openmpi"]))
    assert r.returncode == 2 and "/no/such/prefix/lib/libmpiopt.so does not exist" in r.stderr


@needs_build
def test_an_mpi_of_its_own_installation_gets_its_own_launcher(tmp_path):
    """A program built with a pip-installed MPICH (make mpis; make test installs one) is
    started with that installation's mpiexec, and needs the libmpiopt.so built for it."""
    root = mpi.repo_root() / "build" / "mpis" / "mpich"
    if not (root / "bin" / "mpicc").exists() or "mpich" not in BUILT:
        pytest.skip("no PyPI MPICH in build/mpis/mpich (make mpis)")
    exe = tmp_path / "allreduce"
    (tmp_path / "allreduce.c").write_text(PROGRAM)
    subprocess.run([str(root / "bin" / "mpicc"), str(tmp_path / "allreduce.c"), "-o", str(exe)],
                   check=True)
    r = mpiopt("run", "-np", "2", "--", str(exe))
    assert r.returncode == 2 and "--lib" in r.stderr and "not Debian's mpich" in r.stderr, r.stderr
    # the same ABI family: accepted, and launched by that MPI's own mpiexec
    r = mpiopt("run", "-np", "2", "--dry-run", "--lib", str(mpi.library("mpich")), "--", str(exe))
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.strip().splitlines()[-1])
    assert info["flavour"] == "mpich"
    assert mpi.Path(info["command"][0]).resolve() == (root / "bin" / "mpiexec").resolve()
    # the vendor alone, really run
    r = mpiopt("run", "-np", "2", "--no-preload", "--", str(exe))
    assert r.returncode == 0 and r.stdout.count("sum 2 preload none") == 2, r.stdout + r.stderr
