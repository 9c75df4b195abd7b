"""The EasyBuild easyconfig (packaging/easybuild/mpiopt-0.1.0-openmpi.eb), run for real: EasyBuild
5.4 from PyPI (the test extra of python/pyproject.toml), offline, from a source tarball of this
tree (its `git ls-files`, as mpiopt-0.1.0/…), into a temporary prefix, with Lmod modules (Debian
12's lmod, in `make deps`). Then, in a login-like environment with nothing of this tree on it,
`module load mpiopt` gives the installed `mpiopt` command, whose `run` preloads the installed
libmpiopt.so into an MPI program at np 2: its allreduces exact, the report counting mpiopt's
calls. About 40 s (the library's CMake build).

CI runs as root; EasyBuild refuses root unless told to accept it, which the test does (a site
installs as a normal user)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REQUIRE_BUILD

ROOT = Path(__file__).resolve().parents[2]
EASYCONFIG = ROOT / "packaging" / "easybuild" / "mpiopt-0.1.0-openmpi.eb"
LMOD = Path("/usr/share/lmod/lmod")
CHECK_PROGRAM = ROOT / "packaging" / "spack" / "allreduce_check.c"


def _missing() -> str | None:
    if not shutil.which("mpicc.openmpi"):
        return "no Open MPI (mpicc.openmpi)"
    if not (LMOD / "libexec" / "lmod").exists():
        return "no Lmod (/usr/share/lmod; Debian's lmod package, in make deps)"
    if not (Path(sys.executable).parent / "eb").exists():
        return "no EasyBuild in this Python (the test extra: pip install -e 'python[test]')"
    if not (ROOT / ".git").exists():
        return "not a git checkout: the source tarball is made from `git ls-files`"
    return None


def _source_tarball(directory: Path) -> Path:
    """mpiopt-0.1.0.tar.gz of the tree's tracked files as they are in the working tree."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    out = directory / "mpiopt-0.1.0.tar.gz"
    subprocess.run(["tar", "--null", "-T", "-", "--transform", "s,^,mpiopt-0.1.0/,", "-czf", out],
                   cwd=ROOT, input=files, check=True)
    return out


def test_easyconfig_installs_and_the_module_runs_mpiopt(tmp_path):
    why = _missing()
    if why:
        if REQUIRE_BUILD:
            pytest.fail(f"{why}; MPIOPT_REQUIRE_BUILD=1 makes this a failure")
        pytest.skip(why)
    sources = tmp_path / "sources"
    sources.mkdir()
    _source_tarball(sources)
    bindir = Path(sys.executable).parent
    env = {"HOME": str(tmp_path), "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
           "LMOD_CMD": str(LMOD / "libexec" / "lmod"), "MPIOPT_EB_PYTHON": sys.executable,
           "LANG": "C.UTF-8"}
    install = tmp_path / "install"
    r = subprocess.run(
        [str(bindir / "eb"), str(EASYCONFIG), f"--prefix={tmp_path / 'eb'}",
         f"--sourcepath={sources}", f"--installpath={install}", f"--buildpath={tmp_path / 'build'}",
         f"--tmpdir={tmp_path / 'tmp'}", "--modules-tool=Lmod", "--module-syntax=Lua",
         "--parallel=2", "--allow-use-as-root-and-accept-consequences"],
        capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert r.returncode == 0 and "[SUCCESS] mpiopt/0.1.0-openmpi" in r.stdout, \
        r.stdout[-4000:] + r.stderr[-2000:]
    prefix = install / "software" / "mpiopt" / "0.1.0-openmpi"
    assert (prefix / "lib" / "libmpiopt.so").is_file() and (prefix / "bin" / "mpiopt").is_file()
    assert (install / "modules" / "all" / "mpiopt" / "0.1.0-openmpi.lua").is_file()

    exe = tmp_path / "allreduce_check"
    subprocess.run(["mpicc.openmpi", "-O2", "-o", exe, CHECK_PROGRAM], check=True)
    # a login's environment: no venv, nothing of this tree; the module gives everything
    script = f"""
source {LMOD}/init/bash
module use {install}/modules/all
module load mpiopt
command -v mpiopt
mpiopt run -np 2 --dry-run -- {exe}
mpiopt run -np 2 --report -- {exe}
"""
    login = {"HOME": str(tmp_path), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
             **{k: v for k, v in os.environ.items() if k.startswith("OMPI_MCA_")}}
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=login,
                       timeout=300, cwd=tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert r.stdout.splitlines()[0] == str(prefix / "bin" / "mpiopt"), out
    # the installed library is the one preloaded, not this tree's build
    assert f'"LD_PRELOAD": "{prefix / "lib" / "libmpiopt.so"}"' in r.stdout, out
    assert "allreduce check: ok" in r.stdout and "0 wrong elements" in r.stdout, out
    assert "mpiopt: " in r.stderr and " reduction calls ran mpiopt's algorithms" in r.stderr, out
