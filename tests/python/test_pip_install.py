"""`pip install` of the tree's Python package as a user does it (docs/install.md, "pip"), by the
container recipe's own steps (packaging/container/Dockerfile), run without a container engine:
its COPY lines make the build context (only the files they name, so a file the build reads but
the recipe leaves out fails here), and its pip RUN step runs as written, with /src/mpiopt and
/opt/mpiopt mapped into a directory outside the tree (a fresh venv there), Debian's MPICH (the
recipe's default MPI) named by MPICC, the package built by scikit-build-core with the tree's
CMake, libmpiopt.so installed inside the package, the sources removed after it, and the
recipe's own check that the package found its build. Then, from that directory, `mpiopt run`
preloads it into a C program and into an mpi4py program (and runs the image's self-check,
packaging/container/check.py, as the recipe's "Use:" line does) and MPIOPT_REPORT shows mpiopt
taking their reductions, and `mpiopt profile` finds the packaged profiler. The recipe's apt step
is not run: its packages are Debian's, which `make deps` installs.

One MPI (Debian's MPICH: what the pip route adds over `make build` is the same for any), one
install. mpi4py is built from source against that MPICH (`--no-binary mpi4py`: its binary wheels
look for libmpi.so.12, which Debian's MPICH does not have). pip caches the wheel it builds, keyed
by the sdist alone, so the test keeps a pip cache of this MPI's own outside the tree
(~/.cache/mpiopt/pip-mpich-debian: CI's fresh clones share it; the recipe's --no-cache-dir is
dropped for that): later runs take mpi4py and the other dependencies from there and compile only
mpiopt. On a cold cache, CFLAGS=-O0 keeps mpi4py's one large C file from taking minutes; mpiopt's
CMake puts its own -O3 after it, so libmpiopt is built as a user's is. The install keeps pip's
build isolation (scikit-build-core from the same cache), as a user's does. Starts MPI jobs: not
in `make test-quick`."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REQUIRE_BUILD, report_rows, report_total
from mpiopt import mpi

ROOT = mpi.repo_root()
MPICC = "mpicc.mpich"
DOCKERFILE = ROOT / "packaging" / "container" / "Dockerfile"

C_PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x[1000], y[1000];
    long wrong = 0;
    for (int i = 0; i < 1000; i++) x[i] = rank + i;
    for (int it = 0; it < 10; it++) {
        MPI_Allreduce(x, y, 1000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < 1000; i++) wrong += y[i] != (double)size * i + size * (size - 1) / 2.0;
    }
    double s = rank, t = 0;
    MPI_Reduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("c check: %d ranks, %ld wrong, reduce %g\n", size, wrong, t);
    MPI_Finalize();
    return wrong != 0;
}
"""

PY_PROGRAM = r"""
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
x = np.arange(1000, dtype=np.float64) + comm.rank
y = np.empty_like(x)
wrong = 0
for _ in range(10):
    comm.Allreduce(x, y, op=MPI.SUM)
    wrong += int((y != comm.size * np.arange(1000) + comm.size * (comm.size - 1) / 2).sum())
total = comm.allreduce(comm.rank + 1, op=MPI.SUM)
if comm.rank == 0:
    print(f"py check: {comm.size} ranks, {wrong} wrong, total {total}, "
          f"{MPI.Get_library_version().splitlines()[0].strip()}")
"""

# pip's answers when the package registry cannot be reached (an offline machine): a skip there,
# as `make test-mpis` does, not a failure of mpiopt
OFFLINE = ("Could not find a version that satisfies", "No matching distribution found",
           "NewConnectionError", "Temporary failure in name resolution", "Network is unreachable")


def recipe_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    out, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip()[:-1] + " " if line.rstrip().endswith("\\") else line
        if not line.rstrip().endswith("\\"):
            word, _, rest = current.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            current = ""
    return out


def run_container_steps(base: Path, venv: Path, env: dict, log: Path) -> subprocess.CompletedProcess:
    """The recipe's COPY lines and its pip RUN step, as written, with /src/mpiopt → base/src/mpiopt
    and /opt/mpiopt → venv (made by the step itself)."""
    steps = recipe_instructions(DOCKERFILE.read_text())
    default_mpi = next(a.split("=", 1)[1] for w, a in steps if w == "ARG" and a.startswith("MPI="))
    assert default_mpi == "mpich" == MPICC.split(".")[1], default_mpi

    def mapped(path: str) -> Path:
        for inside, outside in (("/src/mpiopt", base / "src" / "mpiopt"), ("/opt/mpiopt", venv)):
            if path.startswith(inside):
                return Path(str(outside) + path[len(inside):])
        raise AssertionError(f"the recipe copies to {path}: map it here")

    copies = [a.split() for w, a in steps if w == "COPY"]
    assert copies, "no COPY in the recipe"
    for *sources, dest in copies:
        target = mapped(dest)
        for src in sources:
            from_tree = ROOT / src.rstrip("/")
            if from_tree.is_dir():          # COPY dir/ dest/: the directory's contents
                shutil.copytree(from_tree, target, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            else:
                where = target / from_tree.name if dest.endswith("/") else target
                where.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(from_tree, where)
    pip_step = next(a for w, a in steps if w == "RUN" and "pip install" in a)
    script = pip_step.replace("/src/mpiopt", str(base / "src" / "mpiopt")).replace("/opt/mpiopt", str(venv))
    script = script.replace("--no-cache-dir ", "")      # the test's own cache (PIP_CACHE_DIR)
    with log.open("w") as out:
        return subprocess.run(["bash", "-c", script], cwd=base, env=dict(env, MPI=default_mpi),
                              stdout=out, stderr=subprocess.STDOUT, timeout=900)


def _missing(reason: str):
    if REQUIRE_BUILD:
        pytest.fail(f"{reason}; MPIOPT_REQUIRE_BUILD=1 makes this a failure")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, work directory): the package pip-installed into a fresh venv outside the tree."""
    if not (shutil.which(MPICC) and shutil.which("mpirun.mpich")):
        _missing("Debian's MPICH (mpicc.mpich, mpirun.mpich) is not installed")
    if not (ROOT / "CMakeLists.txt").exists():
        pytest.skip("not run from a source tree")
    base = tmp_path_factory.mktemp("pip-install")
    assert ROOT.resolve() not in base.resolve().parents, "the venv must be outside the tree"
    venv, work = base / "venv", base / "work"
    work.mkdir()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mpiopt" / "pip-mpich-debian"
    cache.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MPICC=MPICC, PIP_CACHE_DIR=str(cache), PIP_DISABLE_PIP_VERSION_CHECK="1",
               CFLAGS="-O0")
    env.pop("MPIOPT_HOME", None)
    env.pop("PYTHONPATH", None)
    # python3 -m venv in the recipe: this interpreter's (the tests' venv is not inherited)
    env["PATH"] = f"{Path(sys.executable).resolve().parent}:{env.get('PATH', '')}"
    env.pop("VIRTUAL_ENV", None)
    log = base / "pip.log"
    r = run_container_steps(base, venv, env, log)
    text = log.read_text(errors="replace")
    if r.returncode != 0:
        if any(s in text for s in OFFLINE):
            pytest.skip("pip could not reach the package registry: " +
                        next(line for line in text.splitlines() if any(s in line for s in OFFLINE)))
        pytest.fail(f"the recipe's pip step failed (log {log}):\n" + "\n".join(text.splitlines()[-40:]))
    assert "mpiopt built for MPICH" in text, text[-3000:]        # the recipe's own check
    assert not (base / "src" / "mpiopt").exists()               # its sources removed
    return venv, work


def _site_prefix(venv: Path) -> Path:
    out = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import mpiopt, os; print(os.path.dirname(mpiopt.__file__))"],
                         capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip()) / "_install"


def test_the_library_is_inside_the_installed_package(installed):
    venv, work = installed
    prefix = _site_prefix(venv)
    assert venv.resolve() in prefix.resolve().parents       # site-packages, not the tree
    for f in ("lib/libmpiopt.so", "lib/libmpiopt-profile.so", "bin/mpiopt-allreduce",
              "include/mpiopt.h"):
        assert (prefix / f).is_file(), f
    info = json.loads((prefix / "mpiopt-build.json").read_text())
    assert info["flavour"] == "mpich" and info["mpi"].startswith("MPICH"), info
    assert info["mpicc"].endswith(MPICC), info
    assert mpi.linked_flavour(prefix / "lib" / "libmpiopt.so") == "mpich"
    # the installed command line finds its own build, not a source tree's
    out = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "from mpiopt import mpi; print(mpi.in_checkout()); "
                          "print(mpi.library('mpich')); print(mpi.binary('mpich', 'mpiopt-allreduce')); "
                          "print(mpi.built_flavours())"],
                         capture_output=True, text=True, timeout=120, cwd=work)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert lines[0] == "False"
    assert Path(lines[1]) == prefix / "lib" / "libmpiopt.so"
    assert Path(lines[2]) == prefix / "bin" / "mpiopt-allreduce"
    assert "mpich" in lines[3]


def _mpiopt(venv: Path, work: Path, *args, env=None) -> subprocess.CompletedProcess:
    e = dict(os.environ if env is None else env)
    e.pop("MPIOPT_HOME", None)
    return subprocess.run([str(venv / "bin" / "mpiopt"), *map(str, args)], capture_output=True,
                          text=True, cwd=work, env=e, timeout=300)


def _taken(stderr: str, entry: str) -> tuple[int, int]:
    """(calls, calls mpiopt ran) of one entry point in the MPIOPT_REPORT table."""
    rows = report_rows(stderr)
    assert entry in rows, stderr
    calls, ours, _, _ = rows[entry]
    return calls, ours


def test_mpiopt_run_preloads_the_packaged_library_into_a_c_program(installed):
    venv, work = installed
    src = work / "check.c"
    src.write_text(C_PROGRAM)
    subprocess.run([MPICC, "-o", str(work / "check"), str(src)], check=True, timeout=120)
    r = _mpiopt(venv, work, "run", "--json", "-np", "2", "--", "./check",
                env=dict(os.environ, MPIOPT_REPORT="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "c check: 2 ranks, 0 wrong, reduce 1" in r.stdout
    launched = json.loads(r.stdout.strip().splitlines()[-1])
    assert launched["flavour"] == "mpich"
    assert Path(launched["ld_preload"]) == _site_prefix(venv) / "lib" / "libmpiopt.so"
    # the report counts the calls of both ranks
    assert _taken(r.stderr, "MPI_Allreduce") == (20, 20)
    assert _taken(r.stderr, "MPI_Reduce") == (2, 2)
    assert report_total(r.stderr) == (22, 22), r.stderr


def test_mpiopt_run_preloads_the_packaged_library_into_mpi4py(installed):
    venv, work = installed
    prog = work / "check.py"
    prog.write_text(PY_PROGRAM)
    r = _mpiopt(venv, work, "run", "-np", "2", "--", venv / "bin" / "python", prog,
                env=dict(os.environ, MPIOPT_REPORT="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "py check: 2 ranks, 0 wrong, total 3, MPICH Version:" in r.stdout, r.stdout
    # mpi4py 4 on an MPI-4 library calls the large-count form; the buffer Allreduce 10 times a
    # rank, all of them mpiopt's (the pickled allreduce goes through the same entry point or none)
    rows = {k: v for k, v in report_rows(r.stderr).items() if k.startswith("MPI_Allreduce")}
    assert sum(v[0] for v in rows.values()) >= 20, r.stderr
    assert all(calls == ours for calls, ours, _, _ in rows.values()), r.stderr
    ran, calls = report_total(r.stderr)
    assert ran == calls >= 20, r.stderr


def test_mpiopt_profile_uses_the_packaged_profiler(installed):
    venv, work = installed
    if not (work / "check").exists():
        src = work / "check.c"
        src.write_text(C_PROGRAM)
        subprocess.run([MPICC, "-o", str(work / "check"), str(src)], check=True, timeout=120)
    out = work / "profile"
    r = _mpiopt(venv, work, "profile", "-np", "2", "-o", out, "--", "./check")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((out / "mpiopt-profile.json").read_text())
    assert "MPI_Allreduce" in json.dumps(doc), doc


def test_the_container_self_check_runs_under_the_drop_in(installed):
    """The recipe's "Use:" line: `mpiopt run --report -np 2 -- python3 /opt/mpiopt/share/check.py`
    (the COPY put check.py there)."""
    venv, work = installed
    check = venv / "share" / "check.py"
    assert check.is_file()
    r = _mpiopt(venv, work, "run", "--report", "-np", "2", "--", venv / "bin" / "python", check)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^check: 2 ranks, 0 wrong, MPICH Version:", r.stdout, re.M), r.stdout
    ran, calls = report_total(r.stderr)
    assert ran == calls >= 20, r.stderr
