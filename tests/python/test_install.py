"""Issue 22: mpiopt built against an MPI the way a user or an HPC site does it, and installed.

For each MPI found here (Debian's Open MPI and MPICH by their Debian names, and every MPI from PyPI
that `make mpis` put in build/mpis/<name>/), once per module:
  plain `cmake -S . -B DIR -DCMAKE_C_COMPILER=<that mpicc>` (no MPI_FLAVOUR: detected),
  build, `cmake --install DIR --prefix P`,
then checks the installed files, that none of them names the build tree, that a program outside
the tree builds against P with find_package(mpiopt) and with pkg-config and runs at np 2 under
that MPI's own launcher, that an unmodified MPI program answers under LD_PRELOAD=P/lib/libmpiopt.so,
and that the prefix still works after it is moved."""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpiopt import mpi
from conftest import REQUIRE_BUILD, report_rows, report_total

ROOT = mpi.repo_root()
CONSUMER = ROOT / "tests" / "install"


@dataclasses.dataclass
class MPI:
    name: str                 # test id: debian-openmpi, pypi-mpich, …
    mpicc: str
    flavour: str              # what configure must detect
    launcher: list[str]       # the command before "-np N"
    env: dict                 # added to the environment of every step (build and run)

    def environ(self, **extra) -> dict:
        out = mpi.launch_env(self.flavour, env=dict(os.environ, **self.env))
        out.update(extra)
        return out

    def launch(self, np: int, argv, env=None, timeout=180) -> subprocess.CompletedProcess:
        return subprocess.run(self.launcher + ["-np", str(np)] + [str(a) for a in argv],
                              capture_output=True, text=True, timeout=timeout,
                              env=env or self.environ())


def debian_mpis() -> list[MPI]:
    out = []
    for f in mpi.FLAVOURS:
        if shutil.which(f"mpicc.{f}") and shutil.which(f"mpirun.{f}"):
            launcher = mpi.launcher(f, 1)[:-2]           # without its "-np 1"
            out.append(MPI(f"debian-{f}", f"mpicc.{f}", f, launcher, {}))
    return out


def pypi_mpis() -> list[MPI]:
    """MPIs installed from PyPI wheels into build/mpis/<name>/ (a venv each: `make mpis`)."""
    out = []
    base = ROOT / "build" / "mpis"
    for venv in sorted(base.iterdir()) if base.is_dir() else []:
        mpicc, mpiexec = venv / "bin" / "mpicc", venv / "bin" / "mpiexec"
        if not (mpicc.exists() and mpiexec.exists()):
            continue
        # the venv's bin first: Open MPI's mpiexec starts its daemons (prted) by name
        env = {"PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}"}
        launcher = [str(mpiexec)]
        if venv.name.startswith("openmpi"):
            flavour = "openmpi"
            launcher += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        else:
            flavour = "mpich"
        if venv.name.startswith("impi"):
            # the wheel's wrappers keep an unsubstituted prefix; one machine, no fabric
            env.update(I_MPI_ROOT=str(venv), I_MPI_FABRICS="shm")
        out.append(MPI(f"pypi-{venv.name}", str(mpicc), flavour, launcher, env))
    return out


MPIS = debian_mpis() + pypi_mpis()


def run(cmd, env, cwd=None, timeout=1800) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, cwd=cwd,
                       timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@dataclasses.dataclass
class Installed:
    mpi: MPI
    build: Path
    prefix: Path
    configure_output: str


@pytest.fixture(scope="module", params=MPIS, ids=[m.name for m in MPIS])
def installed(request, tmp_path_factory) -> Installed:
    """One configure, build and install per MPI, shared by this module's tests (a Debian MPI's
    build: this tree's own, see below)."""
    m: MPI = request.param
    if not shutil.which("cmake"):
        (pytest.fail if REQUIRE_BUILD else pytest.skip)("cmake not installed (make deps)")
    work = tmp_path_factory.mktemp(m.name)
    build, prefix = work / "build", work / "prefix"
    env = m.environ()
    # the library, its profiler and benchmarks only: test programs are never installed
    conf = run(["cmake", "-S", ROOT, "-B", build, f"-DCMAKE_C_COMPILER={m.mpicc}",
                "-DCMAKE_BUILD_TYPE=Release", "-DMPIOPT_TESTS=OFF"], env)
    own = ROOT / "build" / m.flavour
    if m.name.startswith("debian-") and m.flavour in mpi.built_flavours() and \
            (own / "cmake_install.cmake").exists():
        # this tree's `make build` of the same MPI and sources is the build: it is installed
        # (install rules, relocatability, consumers), not built again (18 s each here; a build
        # from a fresh configure is test_pip_install's, test_easybuild's and the PyPI MPIs'
        # here); the configure above gives what configure says
        build = own
    else:
        run(["cmake", "--build", build, "-j2"], env)
    run(["cmake", "--install", build, "--prefix", prefix], env)
    return Installed(m, build, prefix, conf.stdout + conf.stderr)


def fortran_on(inst: Installed) -> bool:
    return "mpiopt: Fortran skipped:" not in inst.configure_output


def test_configure_detects_flavour(installed):
    out = installed.configure_output
    lines = [l for l in out.splitlines() if "mpiopt: MPI flavour" in l]
    assert len(lines) == 1, out[-3000:]
    assert f"mpiopt: MPI flavour {installed.mpi.flavour} (" in lines[0], lines[0]
    # Fortran: one line, either the compiler used or why it was skipped
    assert len([l for l in out.splitlines() if "mpiopt: Fortran " in l]) == 1, out[-3000:]


def test_installed_files(installed):
    p = installed.prefix
    want = ["lib/libmpiopt.so", "lib/libmpiopt-profile.so", "include/mpiopt.h",
            "include/mpiopt_algorithms.h", "include/mpiopt_profile.h",
            "lib/cmake/mpiopt/mpioptConfig.cmake", "lib/cmake/mpiopt/mpioptConfigVersion.cmake",
            "lib/cmake/mpiopt/mpioptTargets.cmake", "lib/pkgconfig/mpiopt.pc",
            "bin/mpiopt-allreduce", "bin/mpiopt-reduce-local",
            "share/doc/mpiopt/README.md", "share/doc/mpiopt/collectives.md"]
    if fortran_on(installed):
        want += ["lib/libmpiopt_fortran.a", "include/mpiopt.mod"]
    missing = [w for w in want if not (p / w).exists()]
    assert not missing, missing
    programs = sorted(x.name for x in (p / "bin").iterdir())
    assert programs and all(x.startswith("mpiopt-") for x in programs), programs


def test_no_build_paths_installed(installed):
    """Relocatable: no installed text file names the build tree (or the source tree)."""
    build, src = str(installed.build).encode(), str(ROOT).encode()
    bad = []
    for f in installed.prefix.rglob("*"):
        if not f.is_file():
            continue
        data = f.read_bytes()
        if b"\0" in data[:8192]:
            continue                      # binaries: debug info names its sources, as usual
        if build in data or src in data:
            bad.append(str(f.relative_to(installed.prefix)))
    assert not bad, bad


def test_find_package_consumer(installed, tmp_path):
    m = installed.mpi
    env = m.environ()
    conf = run(["cmake", "-S", CONSUMER, "-B", tmp_path, f"-DCMAKE_C_COMPILER={m.mpicc}",
                f"-DCMAKE_PREFIX_PATH={installed.prefix}"], env)
    assert f"(flavour {m.flavour})" in conf.stdout, conf.stdout[-2000:]
    run(["cmake", "--build", tmp_path], env)
    r = m.launch(2, [tmp_path / "consumer"])
    assert r.returncode == 0 and "consumer: ok 2" in r.stdout, r.stdout + r.stderr[-2000:]


def test_pkg_config_consumer(installed, tmp_path):
    if not shutil.which("pkg-config"):
        (pytest.fail if REQUIRE_BUILD else pytest.skip)("pkg-config not installed (make deps)")
    m = installed.mpi
    env = m.environ(PKG_CONFIG_PATH=str(installed.prefix / "lib" / "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "mpiopt"], env).stdout.split()
    assert f"-I{installed.prefix}/lib/pkgconfig/../../include" in flags, flags
    assert run(["pkg-config", "--variable=mpi_flavour", "mpiopt"], env).stdout.strip() == m.flavour
    exe = tmp_path / "consumer"
    run([m.mpicc, "-O2", "-o", exe, CONSUMER / "consumer.c", *flags], env)
    # as a module sets it: the library found through LD_LIBRARY_PATH
    env["LD_LIBRARY_PATH"] = f"{installed.prefix / 'lib'}:{env.get('LD_LIBRARY_PATH', '')}"
    r = m.launch(2, [exe], env=env)
    assert r.returncode == 0 and "consumer: ok 2" in r.stdout, r.stdout + r.stderr[-2000:]


@pytest.fixture(scope="module")
def plain_program(installed, tmp_path_factory):
    """tests/c/dropin_allreduce.c built with the MPI's mpicc alone: it knows nothing of mpiopt."""
    m = installed.mpi
    exe = tmp_path_factory.mktemp(f"{m.name}-plain") / "dropin_allreduce"
    run([m.mpicc, "-O2", "-o", exe, ROOT / "tests/c/dropin_allreduce.c"], m.environ())
    return exe


def test_preload_installed_library(installed, plain_program):
    m = installed.mpi
    env = m.environ(MPIOPT_VERBOSE="1", LD_PRELOAD=str(installed.prefix / "lib" / "libmpiopt.so"))
    r = m.launch(2, [plain_program], env=env)
    assert r.returncode == 0 and "dropin: ok" in r.stdout, r.stdout + r.stderr[-2000:]
    said = [l for l in r.stderr.splitlines() if l.startswith(("mpiopt: allreduce ", "mpiopt: reduce "))]
    assert said, r.stderr[-2000:]


def test_mpi4py_under_installed_library(installed):
    """mpi4py (this environment's 4.x wheel, which picks its MPI at run time) on a PyPI MPI under
    the libmpiopt.so installed for it: exact, and every reduction call mpiopt's (issue 27).
    Debian's two are tests/python/test_mpi4py.py's."""
    m = installed.mpi
    if not m.name.startswith("pypi-"):
        pytest.skip("Debian's MPIs: test_mpi4py.py")
    if subprocess.run([sys.executable, "-c", "import mpi4py"], capture_output=True).returncode:
        pytest.skip("mpi4py not installed")
    lib = Path(m.mpicc).resolve().parent.parent / "lib"
    env = m.environ(MPIOPT_REPORT="1", MPIOPT_ALLREDUCE="ring", MPIOPT_REDUCE="binomial",
                    LD_PRELOAD=str(installed.prefix / "lib" / "libmpiopt.so"),
                    LD_LIBRARY_PATH=f"{lib}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    r = m.launch(2, [sys.executable, ROOT / "tests/python/mpi4py_reductions.py"], env=env,
                 timeout=600)
    assert r.returncode == 0 and " 0 failures" in r.stdout, r.stdout + r.stderr[-3000:]
    took = report_total(r.stderr)
    assert took and took[0] == took[1] > 0, r.stderr[-3000:]


FAMILY = {"plain_reduce_scatter": ("MPI_Reduce_scatter_block", "MPI_Reduce_scatter",
                                    "MPI_Ireduce_scatter_block", "MPI_Ireduce_scatter",
                                    "MPI_Reduce_scatter_block_init", "MPI_Reduce_scatter_init"),
          "plain_scan": ("MPI_Scan", "MPI_Exscan", "MPI_Iscan", "MPI_Iexscan", "MPI_Scan_init",
                         "MPI_Exscan_init")}


@pytest.mark.parametrize("program", FAMILY)
def test_reduction_family_under_installed_library(installed, program, tmp_path):
    """The reduce-scatters and scans of a plain program (blocking, nonblocking, persistent;
    every op and type against a rank-order reference) on a PyPI MPI under the libmpiopt.so
    installed for it, at 2 and 3 ranks: exact, every call mpiopt's (issue 39). Debian's two are
    test_reduce_scatter.py's and test_scan.py's."""
    m = installed.mpi
    if not m.name.startswith("pypi-"):
        pytest.skip("Debian's MPIs: test_reduce_scatter.py, test_scan.py")
    exe = tmp_path / program
    run([m.mpicc, "-O2", f"-I{ROOT / 'tests/c'}", "-o", exe, ROOT / f"tests/c/{program}.c"], m.environ())
    env = m.environ(MPIOPT_REPORT="1", LD_PRELOAD=str(installed.prefix / "lib" / "libmpiopt.so"))
    for np_, args in ((2, ["3001"]), (3, ["1001", "few"])):
        r = m.launch(np_, [exe, *args], env=env, timeout=600)
        assert r.returncode == 0 and " 0 failures" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
        rows = report_rows(r.stderr)
        for kind in FAMILY[program]:
            if kind.endswith("_init") and kind not in rows:
                continue        # an MPI without persistent collectives
            calls, by_mpiopt, _, _ = rows[kind]
            assert calls > 0 and by_mpiopt == calls, (np_, kind, rows)


def test_moved_prefix(installed, tmp_path):
    """A prefix copied elsewhere (a module tree, a container) still finds its library."""
    moved = tmp_path / "elsewhere"
    shutil.copytree(installed.prefix, moved, symlinks=True)
    ldd = subprocess.run(["ldd", str(moved / "bin" / "mpiopt-allreduce")], capture_output=True,
                         text=True, env=installed.mpi.environ()).stdout
    line = next(l for l in ldd.splitlines() if "libmpiopt.so" in l)
    assert str(moved / "bin" / ".." / "lib" / "libmpiopt.so") in line or \
        str(moved / "lib" / "libmpiopt.so") in line, line
    env = dict(os.environ, PKG_CONFIG_PATH=str(moved / "lib" / "pkgconfig"))
    if shutil.which("pkg-config"):
        libs = run(["pkg-config", "--libs", "mpiopt"], env).stdout
        assert str(moved) in libs and str(installed.prefix) not in libs, libs


@pytest.mark.parametrize("m", debian_mpis(), ids=lambda m: m.name)
def test_configure_only_detects_flavour(m, tmp_path):
    """The quick form (configure only): the flavour comes from mpi.h, and an
    -DMPI_FLAVOUR that contradicts it is kept (an override) but warned about."""
    env = m.environ()
    base = ["cmake", "-S", ROOT, f"-DCMAKE_C_COMPILER={m.mpicc}", "-DMPIOPT_TESTS=OFF",
            "-DMPIOPT_FORTRAN=OFF"]
    r = run(base + ["-B", tmp_path / "detected"], env)
    assert f"mpiopt: MPI flavour {m.flavour} (" in r.stdout, r.stdout[-2000:]
    assert "mpiopt: Fortran skipped: MPIOPT_FORTRAN=OFF" in r.stdout
    other = "mpich" if m.flavour == "openmpi" else "openmpi"
    r = run(base + ["-B", tmp_path / "forced", f"-DMPI_FLAVOUR={other}"], env)
    assert f"mpiopt: MPI flavour {other} (" in r.stdout, r.stdout[-2000:]
    assert f"-DMPI_FLAVOUR={other} overrides the flavour found in mpi.h" in r.stderr, r.stderr[-2000:]


LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")


def test_modulefile_loads_the_prefix(installed, plain_program, tmp_path):
    """packaging/modulefiles/mpiopt.lua, edited as its comments say (prefix, MPI), loaded by Lmod
    (Debian's lmod, installed by `make deps`) in a plain bash: the variables it sets point into
    the prefix, pkg-config finds mpiopt there, and the preload line of its help text runs a plain
    program under the drop-in."""
    if not LMOD_INIT.exists():
        (pytest.fail if REQUIRE_BUILD else pytest.skip)("Lmod not installed (make deps)")
    m = installed.mpi
    template = (ROOT / "packaging" / "modulefiles" / "mpiopt.lua").read_text()
    edited, n = re.subn(r'^local prefix  = .*$', f'local prefix  = "{installed.prefix}"', template, flags=re.M)
    edited, k = re.subn(r'^local mpi     = .*$', f'local mpi     = "{m.flavour}"', edited, flags=re.M)
    assert n == k == 1, "the template's `edit:` lines changed: update this test and the docs"
    tree = tmp_path / "modules"
    (tree / "mpiopt").mkdir(parents=True)
    (tree / "mpiopt" / f"0.1.0-{m.name}.lua").write_text(edited)
    preload = next(l.strip() for l in template.splitlines() if l.strip().startswith("mpiexec -n 4 env"))
    # the help text's command, with this MPI's launcher and 2 ranks
    launch = " ".join(m.launcher) + " -np 2 " + preload.split(" ", 3)[3].replace("./my_app", str(plain_program))
    script = f"""
set -e
source {LMOD_INIT}
module use {tree}
module load mpiopt/0.1.0-{m.name}
module help mpiopt 2>&1 | grep -q "built for {m.flavour}"
echo "MPIOPT_PREFIX=$MPIOPT_PREFIX"
echo "PATH=$PATH"
echo "CMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
echo "PKG=$(pkg-config --libs mpiopt)"
MPIOPT_VERBOSE=1 {launch}
"""
    env = {k: v for k, v in m.environ().items() if not k.startswith(("LMOD", "MODULE", "_ModuleTable"))}
    r = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    got = dict(l.split("=", 1) for l in r.stdout.splitlines() if re.match(r"^[A-Z_]+=", l))
    p = str(installed.prefix)
    assert got["MPIOPT_PREFIX"] == p
    assert got["PATH"].split(":")[0] == f"{p}/bin"
    assert got["CMAKE_PREFIX_PATH"].split(":")[0] == p
    assert got["LD_LIBRARY_PATH"].split(":")[0] == f"{p}/lib"
    assert f"-L{p}/lib" in got["PKG"], got["PKG"]
    assert "dropin: ok" in r.stdout, r.stdout[-2000:]
    assert any(l.startswith(("mpiopt: allreduce ", "mpiopt: reduce ")) for l in r.stderr.splitlines()), \
        r.stderr[-2000:]
