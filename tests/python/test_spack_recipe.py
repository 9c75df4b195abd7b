"""The Spack recipe's Python step, where no Spack is: CI has no Spack checkout, so test_spack.py
(the whole `make spack-check`) skips there, and the recipe once broke unseen. This test loads
packaging/spack/mpiopt/package.py itself, with a stand-in for the few names it takes from
`spack.package`, and runs its exact `install_command` (the `+python` step) with a Python that has
only what the recipe declares for it: a venv holding the pip packages of its `py-*` build
dependencies. The library comes from this tree's build by `cmake --install`, as the recipe's
CMake step would put it in the prefix; then the command installed in that prefix runs a preloaded
allreduce at np 2, from outside the tree, with the environment the recipe's
`setup_run_environment` sets (and once without MPIOPT_PREFIX: the command finds the prefix's
library itself)."""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import require_build

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "packaging" / "spack" / "mpiopt" / "package.py"
CHECK_PROGRAM = ROOT / "packaging" / "spack" / "allreduce_check.c"
# Spack's names of Python packages → pip's (the ones the recipe may declare)
PIP_NAMES = {"py-pip": "pip", "py-scikit-build-core": "scikit-build-core", "py-setuptools": "setuptools",
             "py-wheel": "wheel"}


class Dependency:
    def __init__(self, spec, type=("build", "link"), when=None, **_):
        self.name, _, self.versions = spec.partition("@")
        self.types = (type,) if isinstance(type, str) else tuple(type)
        self.when = when


class FakeSpec:
    """What the recipe asks of self.spec: satisfies('+variant'), spec['python'].command."""

    def __init__(self, variants: set[str], python: Path):
        self.variants, self.python = variants, python

    def satisfies(self, constraint: str) -> bool:
        return all(v in self.variants for v in re.findall(r"\+(\w+)", constraint)) and \
            not any(v in self.variants for v in re.findall(r"~(\w+)", constraint))

    def __getitem__(self, name):
        assert name == "python", name
        return types.SimpleNamespace(command=Executable(self.python))


class Executable:
    """Spack's Executable as the recipe uses it: call with arguments, fail on a non-zero exit."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __call__(self, *args):
        r = subprocess.run([self.path, *args], capture_output=True, text=True, timeout=600)
        if r.returncode:
            raise RuntimeError(f"{self.path} {' '.join(args)} failed ({r.returncode}):\n"
                               f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


class FakeEnv:
    """Spack's EnvironmentModifications, applied to a dict."""

    def __init__(self, base: dict):
        self.env = dict(base)

    def set(self, name, value):
        self.env[name] = str(value)

    def prepend_path(self, name, value):
        self.env[name] = os.pathsep.join([str(value)] + ([self.env[name]] if self.env.get(name) else []))


def load_recipe():
    """(the recipe's class, its declared dependencies), packaging/spack/mpiopt/package.py loaded
    with stand-ins for `spack` and `spack.package` (directives record, decorators pass through)."""
    dependencies: list[Dependency] = []
    package = types.ModuleType("spack.package")
    package.CMakePackage = type("CMakePackage", (), {})
    package.depends_on = lambda *a, **k: dependencies.append(Dependency(*a, **k))
    for directive in ("version", "variant", "requires", "conflicts", "maintainers", "license"):
        setattr(package, directive, lambda *a, **k: None)
    package.run_after = lambda *a, **k: (lambda f: f)
    package.join_path = os.path.join
    package.working_dir = contextlib.chdir
    spack = types.ModuleType("spack")
    spack.spack_version_info = (0, 23, 0)
    spack.package = package
    saved = {k: sys.modules.get(k) for k in ("spack", "spack.package")}
    sys.modules.update({"spack": spack, "spack.package": package})
    try:
        spec = importlib.util.spec_from_file_location("mpiopt_spack_recipe", RECIPE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module.Mpiopt, dependencies


def python_build_requirements(dependencies) -> list[str]:
    """pip requirements for the recipe's py-* build dependencies of +python."""
    reqs = []
    for d in dependencies:
        if not d.name.startswith("py-") or "build" not in d.types or d.when not in (None, "+python"):
            continue
        assert d.name in PIP_NAMES, f"the recipe declares {d.name}: add its pip name to PIP_NAMES"
        low = d.versions.split(":")[0] if d.versions else ""
        reqs.append(PIP_NAMES[d.name] + (f">={low}" if low else ""))
    return reqs


def test_recipe_declares_what_its_python_step_imports():
    """Without Spack or a network: the build backend python/pyproject.toml names is one of the
    recipe's build dependencies, so `pip --no-build-isolation` finds it."""
    _, dependencies = load_recipe()
    declared = {d.name for d in dependencies if "build" in d.types}
    text = (ROOT / "python" / "pyproject.toml").read_text()
    backend = re.search(r'^build-backend = "([\w.]+)"', text, re.M).group(1).split(".")[0]
    assert "py-" + backend.replace("_", "-") in declared, (backend, declared)
    assert "py-pip" in declared


def test_recipe_python_step_installs_a_command_that_preloads_the_prefix_library(tmp_path):
    require_build("openmpi")
    recipe, dependencies = load_recipe()
    # the spec's Python, with only the recipe's declared Python build dependencies
    venv = tmp_path / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    reqs = python_build_requirements(dependencies)
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", *reqs], capture_output=True, text=True,
                       timeout=600) if reqs else subprocess.CompletedProcess([], 0, "", "")
    if r.returncode and re.search(r"No matching distribution|Could not find a version|"
                                  r"Failed to establish|Temporary failure", r.stderr):
        pytest.skip(f"PyPI unreachable for {reqs}: {r.stderr.strip()[-300:]}")
    assert r.returncode == 0, r.stderr[-3000:]

    # the stage: a copy of the tree's files, as Spack stages a checkout
    stage = tmp_path / "stage"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src = ROOT / name
        if src.is_file():
            (stage / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, stage / name)
    prefix = tmp_path / "prefix"
    # the recipe's CMake step, from this tree's Open MPI build
    subprocess.run(["cmake", "--install", str(ROOT / "build" / "openmpi"), "--prefix", str(prefix)],
                   check=True, capture_output=True, timeout=300)
    package = types.SimpleNamespace(spec=FakeSpec({"python", "fortran", "profiler"}, venv / "bin" / "python"),
                                    prefix=str(prefix), stage=types.SimpleNamespace(source_path=str(stage)))
    recipe.install_command(package)
    command = prefix / "bin" / "mpiopt"
    assert command.is_file()
    assert not list(prefix.glob("lib/python*/site-packages/mpiopt/_install")), \
        "the Python step built libmpiopt a second time"

    # `spack load`: the recipe's run environment. The command's own dependencies (rich,
    # matplotlib, ...) come with the spec's Python (the recipe says so): here, this Python's
    # site-packages, put after the prefix's on PYTHONPATH and read with -S, so that this venv's
    # editable mpiopt (a .pth import hook) does not stand in for the prefix's.
    env = FakeEnv({k: v for k, v in os.environ.items() if k not in ("MPIOPT_PREFIX", "PYTHONPATH",
                                                                   "MPIOPT_HOME")})
    package.spec.python = Path(sys.executable)
    package._site_packages = lambda: recipe._site_packages(package)
    recipe.setup_run_environment(package, env)
    assert env.env["MPIOPT_PREFIX"] == str(prefix)
    site = env.env["PYTHONPATH"].split(os.pathsep)[0]
    assert Path(site, "mpiopt", "cli.py").is_file()
    env.env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.env["PYTHONPATH"] = os.pathsep.join([site] + [p for p in sys.path if p.endswith("-packages")])
    where = subprocess.run([sys.executable, "-S", "-c", "import mpiopt; print(mpiopt.__file__)"],
                           env=env.env, capture_output=True, text=True, check=True).stdout.strip()
    assert where == str(Path(site, "mpiopt", "__init__.py")), where

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    subprocess.run(["mpicc.openmpi", "-O2", "-o", str(run_dir / "check"), str(CHECK_PROGRAM)],
                   check=True, timeout=120)
    for without_prefix_variable in (False, True):
        run_env = dict(env.env)
        if without_prefix_variable:
            del run_env["MPIOPT_PREFIX"]
        r = subprocess.run([sys.executable, "-S", str(command), "run", "--report", "--json", "-np", "2", "--",
                            "./check"], cwd=run_dir, env=run_env, capture_output=True, text=True, timeout=300)
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-4000:]
        assert "allreduce check: ok" in out, out[-4000:]
        launch = json.loads([line for line in r.stdout.splitlines() if line.startswith("{")][-1])
        assert launch["ld_preload"] == str(prefix / "lib" / "libmpiopt.so"), launch
        taken = re.search(r"^mpiopt: (\d+) of (\d+) reduction calls ran mpiopt's algorithms$", out, re.M)
        assert taken and int(taken.group(1)) == int(taken.group(2)) > 0, out[-3000:]
