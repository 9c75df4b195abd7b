"""Where mpiopt's builds are, which MPI flavours exist, and how to launch with each.

Every command that runs MPI programs goes through here, so launcher quirks (Open MPI's refusal
to run as root, oversubscription, MPICH's Hydra) are handled once."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from . import jobs

FLAVOURS = ("openmpi", "mpich")


def repo_root() -> Path:
    """The source tree (this package is installed editable from python/)."""
    env = os.environ.get("MPIOPT_HOME")
    return Path(env) if env else Path(__file__).resolve().parents[2]


def in_checkout() -> bool:
    """Whether this package runs from a source tree (the editable install of `make venv`, or
    MPIOPT_HOME), as opposed to a package pip installed into site-packages."""
    root = repo_root()
    return (root / "CMakeLists.txt").is_file() and (root / "src").is_dir()


# `pip install ./python` builds libmpiopt with CMake and installs it here, inside the package, as
# a `cmake --install` prefix (lib/, bin/, include/) with mpiopt-build.json naming the MPI it was
# built for (python/pyproject.toml, cmake/MpioptPython.cmake). An editable install has none.
PACKAGE_PREFIX = Path(__file__).resolve().parent / "_install"


@dataclasses.dataclass(frozen=True)
class PackagedBuild:
    """The libmpiopt.so (with the profiler and benchmark programs) built into this package by pip,
    for one MPI: `flavour` (ABI family), `mpi` (what its mpi.h says, e.g. "MPICH 4.0.2"), and the
    mpicc and mpiexec CMake found for it."""
    prefix: Path
    flavour: str
    mpi: str
    mpicc: str
    mpiexec: str

    @property
    def library(self) -> Path:
        return self.prefix / "lib" / "libmpiopt.so"

    @property
    def profile_library(self) -> Path:
        return self.prefix / "lib" / "libmpiopt-profile.so"

    def binary(self, name: str) -> Path:
        return self.prefix / "bin" / name

    @functools.cached_property
    def mpi_library(self) -> Path | None:
        """The MPI library libmpiopt.so resolves to (ldd), to match a program's against."""
        return linked_mpi(self.library)[1]

    def system_mpi(self) -> bool:
        """Built for the system's MPI of its flavour (Debian's mpicc.<flavour>, started by
        mpirun.<flavour>), not for one installed elsewhere (a module, Spack, pip)."""
        return own_launcher(self.mpi_library) is None

    def serves(self, flavour: str) -> bool:
        """Whether it is the library for the system's `flavour` (Debian's Open MPI or MPICH)."""
        return self.flavour == flavour and self.library.exists() and self.system_mpi()

    def built_for_prefix(self, prefix: Path) -> bool:
        """Whether it was built for the MPI installed under `prefix` (an Installation's)."""
        mine = self.mpi_library
        return bool(mine) and Path(prefix).resolve() in mine.resolve().parents

    def built_for(self, mpi_library: Path | None) -> bool:
        """Whether it was built for the MPI whose library is `mpi_library` (the same file)."""
        mine = self.mpi_library
        return bool(mine and mpi_library and mine.resolve() == Path(mpi_library).resolve())


@functools.lru_cache(maxsize=None)
def packaged_build() -> PackagedBuild | None:
    """This package's own libmpiopt build (pip install), or None (an editable install, or a
    package installed with the CMake step skipped)."""
    import json
    try:
        info = json.loads((PACKAGE_PREFIX / "mpiopt-build.json").read_text())
    except (OSError, ValueError):
        return None
    build = PackagedBuild(PACKAGE_PREFIX, info.get("flavour", ""), info.get("mpi", ""),
                          info.get("mpicc", ""), info.get("mpiexec", ""))
    return build if build.library.exists() else None


def enclosing_prefix() -> Path | None:
    """The installation prefix this package sits in, when it was installed into one beside the
    library (PREFIX/lib*/pythonX.Y/site-packages/mpiopt, with PREFIX/lib/libmpiopt.so: the Spack
    recipe's +python, or pip --prefix next to `cmake --install`), else None."""
    package = Path(__file__).resolve().parent
    if package.parent.name not in ("site-packages", "dist-packages"):
        return None
    prefix = package.parents[3]          # PREFIX / lib / pythonX.Y / site-packages / mpiopt
    return prefix if (prefix / "lib" / "libmpiopt.so").is_file() else None


def _checkout_or_packaged(flavour: str, in_build: Path, in_package) -> Path:
    """A file of the build for `flavour`: the checkout's build/<flavour>/ first (as always from a
    source tree), else the package's own (pip install) when that was built for the system's
    `flavour` or, for a registered installation's name, for that installation's MPI; the
    checkout's path when neither has it (for the error messages)."""
    if in_build.exists():
        return in_build
    packaged, inst = packaged_build(), _installed(flavour)
    if packaged and (packaged.built_for_prefix(inst.prefix) if inst else packaged.serves(flavour)):
        path = in_package(packaged)
        if path.exists():
            return path
    return in_build


@dataclasses.dataclass(frozen=True)
class Installation:
    """An MPI installed outside Debian's packages (a module, a Spack or pip prefix): PREFIX/bin/mpicc
    and PREFIX/bin/mpiexec, its ABI flavour, and the mpiopt build made for it (build/NAME). Once
    registered (`installation`), NAME stands for it wherever a flavour is asked for."""
    name: str           # e.g. intel-mpi-2021.15.0, openmpi-5.0.11: a label and a directory name
    prefix: Path
    flavour: str        # ABI family: openmpi or mpich (MPICH, Intel MPI, MVAPICH, Cray MPICH)
    env: tuple = ()     # (name, value) pairs every build and run of it needs

    @property
    def mpicc(self) -> Path:
        return self.prefix / "bin" / "mpicc"

    @property
    def mpiexec(self) -> Path:
        return self.prefix / "bin" / "mpiexec"

    def environ(self, base: dict | None = None) -> dict:
        out = dict(os.environ if base is None else base)
        # the prefix's bin first: Open MPI's mpiexec starts its daemons (prted) by name
        out["PATH"] = f"{self.prefix / 'bin'}:{out.get('PATH', '')}"
        for k, v in self.env:
            out.setdefault(k, v)
        return out


_installations: dict[str, Installation] = {}


def describe_mpi_header(text: str) -> tuple[str, str] | None:
    """(flavour, name) from an mpi.h's version macros: Intel MPI, Open MPI or MPICH."""
    def macro(name: str) -> str | None:
        m = re.search(rf'^#define\s+{name}\s+"?([^"\s]+)"?', text, re.M)
        return m.group(1) if m else None
    if macro("I_MPI_VERSION"):
        return "mpich", f"intel-mpi-{macro('I_MPI_VERSION')}"
    if macro("OMPI_MAJOR_VERSION"):
        version = ".".join(macro(f"OMPI_{p}_VERSION") or "0" for p in ("MAJOR", "MINOR", "RELEASE"))
        return "openmpi", f"openmpi-{version}"
    if macro("MVAPICH2_VERSION") or macro("MVAPICH_VERSION"):
        return "mpich", f"mvapich-{macro('MVAPICH2_VERSION') or macro('MVAPICH_VERSION')}"
    if macro("MPICH_VERSION"):
        return "mpich", f"mpich-{macro('MPICH_VERSION')}"
    return None


def installation(prefix: str | Path) -> Installation:
    """The MPI installed under PREFIX, registered under its name; ValueError saying what is
    missing when PREFIX is not an MPI installation."""
    prefix = Path(prefix).expanduser().resolve()
    for need in ("bin/mpicc", "bin/mpiexec", "include/mpi.h"):
        if not (prefix / need).exists():
            raise ValueError(f"{prefix} is not an MPI installation: no {need}")
    found = describe_mpi_header((prefix / "include" / "mpi.h").read_text(errors="replace"))
    if found is None:
        raise ValueError(f"{prefix / 'include/mpi.h'}: not Open MPI, MPICH, Intel MPI or MVAPICH")
    flavour, name = found
    env: tuple = ()
    if name.startswith("intel-mpi"):
        # Intel MPI's wrappers from a relocated package (pip, a copied tree) need I_MPI_ROOT; one
        # machine needs no fabric provider (I_MPI_FABRICS=shm)
        env = (("I_MPI_ROOT", str(prefix)), ("I_MPI_FABRICS", "shm"))
    if name in FLAVOURS or (name in _installations and _installations[name].prefix != prefix):
        # the same version twice (or a clash): tell them apart by where they are
        name += "-" + hashlib.sha1(str(prefix).encode()).hexdigest()[:6]
    inst = Installation(name, prefix, flavour, env)
    _installations[name] = inst
    return inst


def installations() -> list[Installation]:
    return list(_installations.values())


def ensure_built(inst: Installation, log=None) -> Path:
    """build/NAME: mpiopt's library, profiler and benchmarks configured with the installation's
    mpicc (CMake detects the flavour from its mpi.h) once, and brought up to date (an incremental
    build: nothing to do when nothing changed); the library path. RuntimeError with the tail of
    the log on failure."""
    build = build_dir(inst.name)
    stamp = build / "mpi-prefix"
    logfile = build.parent / f"{inst.name}.build.log"
    env = inst.environ()
    steps = [["cmake", "--build", str(build), "-j2"]]
    if not (stamp.exists() and stamp.read_text() == str(inst.prefix) and (build / "CMakeCache.txt").exists()):
        build.mkdir(parents=True, exist_ok=True)
        steps.insert(0, ["cmake", "-S", str(repo_root()), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                         f"-DCMAKE_C_COMPILER={inst.mpicc}", "-DMPIOPT_FORTRAN=OFF", "-DMPIOPT_TESTS=OFF"])
    with logfile.open("w") as out:
        for cmd in steps:
            if log:
                log(" ".join(cmd))
            r = subprocess.run(["flock", str(build.parent / f".lock-{inst.name}")] + cmd,
                               stdout=out, stderr=subprocess.STDOUT, env=env)
            if r.returncode != 0:
                tail = "\n".join(logfile.read_text(errors="replace").splitlines()[-15:])
                raise RuntimeError(f"building mpiopt for {inst.name} ({inst.prefix}) failed "
                                   f"(log: {logfile}):\n{tail}")
    stamp.write_text(str(inst.prefix))
    return build / "lib" / "libmpiopt.so"


def _installed(flavour: str) -> Installation | None:
    return _installations.get(flavour)


def abi_flavour(flavour: str) -> str:
    """openmpi or mpich: the ABI family of a Debian flavour or a registered installation."""
    inst = _installed(flavour)
    return inst.flavour if inst else flavour


def build_dir(flavour: str) -> Path:
    return repo_root() / "build" / flavour


def library(flavour: str) -> Path:
    """libmpiopt.so for `flavour`: build/<flavour>/lib/ of the checkout, else the one pip built
    into this package for it (packaged_build)."""
    return _checkout_or_packaged(flavour, build_dir(flavour) / "lib" / "libmpiopt.so",
                                 lambda p: p.library)


def profile_library(flavour: str) -> Path:
    """libmpiopt-profile.so, the PMPI profiler (docs/profiling.md)."""
    return _checkout_or_packaged(flavour, build_dir(flavour) / "lib" / "libmpiopt-profile.so",
                                 lambda p: p.profile_library)


def binary(flavour: str, name: str) -> Path:
    return _checkout_or_packaged(flavour, build_dir(flavour) / "bin" / name,
                                 lambda p: p.binary(name))


def available_flavours() -> list[str]:
    """Flavours whose mpicc and launcher are installed."""
    return [f for f in FLAVOURS if shutil.which(f"mpicc.{f}") and shutil.which(f"mpirun.{f}")]


def built_flavours() -> list[str]:
    return [f for f in available_flavours() if library(f).exists()]


def launcher(flavour: str, np: int, extra: list[str] | None = None, bind_none: bool = False,
             mpiexec: Path | None = None) -> list[str]:
    """The command prefix that starts `np` ranks with `flavour`'s launcher on this machine
    (Debian's, or `mpiexec`: that of another installation of the flavour; a registered
    installation's name: its own mpiexec)."""
    inst = _installed(flavour)
    if inst:
        flavour, mpiexec = inst.flavour, mpiexec or inst.mpiexec
    if flavour == "openmpi":
        cmd = [str(mpiexec or "mpirun.openmpi"), "--oversubscribe", "-np", str(np)]
        if os.geteuid() == 0:
            cmd.insert(1, "--allow-run-as-root")
        if bind_none:
            cmd[1:1] = ["--bind-to", "none"]
    elif flavour == "mpich":
        cmd = [str(mpiexec or "mpirun.mpich"), "-np", str(np)]
        if bind_none:
            cmd[1:1] = ["-bind-to", "none"]
    else:
        raise ValueError(f"unknown MPI flavour {flavour!r} (expected one of {', '.join(FLAVOURS)})")
    return cmd + list(extra or [])


def preload_entries(value: str | None) -> list[str]:
    """The libraries of an LD_PRELOAD value, in order (ld.so splits it at colons and spaces)."""
    return [x for x in re.split(r"[: ]+", value or "") if x]


def preload_order(inherited: str | None, tools=(), mpiopt_libs=()) -> list[str]:
    """LD_PRELOAD for a launch, the one order `mpiopt run`, `profile` and `advise` use: the
    LD_PRELOAD already set (`inherited`, as it was), then the user's `tools` (--preload, in the
    order given), then mpiopt's own libraries (the profiler, then the drop-in). The user's come
    first because some must (ASan's runtime refuses to start unless it is the first library),
    and so that a tool that wraps MPI calls sees the program's calls first, as it would without
    mpiopt. A library named twice keeps its first place only: ld.so loads it
    once, there, so the list says what the process gets."""
    out, seen = [], set()
    for entry in [*preload_entries(inherited), *map(str, tools), *map(str, mpiopt_libs)]:
        key = os.path.realpath(entry) if os.sep in entry else entry
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


def launch_env(flavour: str, preload: bool = False, env: dict | None = None,
               profile: bool = False, lib: Path | None = None,
               profile_lib: Path | None = None, tools=()) -> dict:
    """Environment for a launch: quiet Open MPI as root, and LD_PRELOAD in preload_order: what
    `env` had, the user's `tools`, then optionally the profiler (in front of the drop-in, so
    that it times the drop-in's MPI_Allreduce too) and libmpiopt (this build tree's for the
    flavour, or `lib`)."""
    out = dict(os.environ if env is None else env)
    inst = _installed(flavour)
    if inst:
        out = inst.environ(out)
    if abi_flavour(flavour) == "openmpi":
        out.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
        if not cross_memory_attach_works():
            # Open MPI's shared-memory transport would fail its single-copy reads (a container
            # without ptrace rights): the copy through its buffers instead
            out.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
            out.setdefault("OMPI_MCA_btl_sm_single_copy_mechanism", "none")
    libs = ([str(profile_lib or profile_library(flavour))] if profile else []) + \
        ([str(lib or library(flavour))] if preload else [])
    order = preload_order(out.get("LD_PRELOAD"), tools, libs)
    if order:
        out["LD_PRELOAD"] = ":".join(order)
    return out


@functools.lru_cache(maxsize=None)
def cross_memory_attach_works() -> bool:
    """Whether one process may read another's memory (process_vm_readv), as the MPIs' single-copy
    transports and mpiopt's single_copy.c do: a forked child reads a word of this process."""
    import ctypes
    import struct
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        readv = libc.process_vm_readv
    except (OSError, AttributeError):
        return False
    word = ctypes.c_uint64(0x6d70696f70742121)
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        got = ctypes.c_uint64(0)
        local = struct.pack("PN", ctypes.addressof(got), 8)
        remote = struct.pack("PN", ctypes.addressof(word), 8)
        n = readv(parent, ctypes.c_char_p(local), 1, ctypes.c_char_p(remote), 1, 0)
        os._exit(0 if n == 8 and got.value == word.value else 1)
    _, status = os.waitpid(child, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def binding_args(flavour: str, bind: str) -> list[str]:
    """The launcher's options that bind each rank to a core (bind "core"), or none ("launcher":
    its default, "none": see launcher's bind_none)."""
    if bind != "core":
        return []
    return ["-bind-to", "core"] if abi_flavour(flavour) == "mpich" else ["--bind-to", "core"]


def run(flavour: str, np: int, argv: list[str], preload: bool = False, timeout: float | None = 600,
        env: dict | None = None, launcher_args: list[str] | None = None,
        bind_none: bool = False) -> subprocess.CompletedProcess:
    """Runs an MPI program and captures its output (text). The job ends whole on a timeout or
    when mpiopt is stopped (jobs.run)."""
    cmd = launcher(flavour, np, launcher_args, bind_none=bind_none) + [str(a) for a in argv]
    return jobs.run(cmd, capture_output=True, text=True, timeout=timeout,
                    env=launch_env(flavour, preload, env))


def mpi_of_ldd(ldd_output: str) -> tuple[str | None, Path | None]:
    """(flavour, resolved path of the MPI library) from `ldd` output, by the library's ABI name:
    libmpi.so.40 is Open MPI's; libmpich.so.12 and libmpi.so.12 are MPICH's ABI (MPICH, Intel
    MPI, MVAPICH, Cray MPICH). The path is None where ldd found no file."""
    for line in ldd_output.splitlines():
        words = line.split()
        if not words:
            continue
        name = words[0]
        path = Path(words[2]) if len(words) > 2 and words[1] == "=>" and words[2].startswith("/") else None
        if name.startswith(("libmpich.so", "libmpi.so.12")):
            return "mpich", path
        if name.startswith(("libmpi.so.40", "libopen-")) or name == "libmpi.so":
            return "openmpi", path
    return None, None


def linked_mpi(executable: str | Path) -> tuple[str | None, Path | None]:
    """(flavour, MPI library path) an executable (or mpi4py's extension module) links."""
    # without the user's LD_PRELOAD: ldd lists preloaded libraries too, and a tool linked with
    # an MPI would pass for the program's
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    try:
        out = subprocess.run(["ldd", str(executable)], capture_output=True, text=True, timeout=30,
                             env=env).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return mpi_of_ldd(out)


def linked_flavour(executable: str | Path) -> str | None:
    """Which MPI an executable (or a Python interpreter with mpi4py, via its extension) links."""
    return linked_mpi(executable)[0]


def own_launcher(mpi_library: Path | None) -> Path | None:
    """The mpiexec of the MPI installation a library belongs to (PREFIX/lib/libmpi… →
    PREFIX/bin/mpiexec), for an MPI outside the system's own directories (a module, a Spack or pip
    install); None for Debian's, whose launchers have flavour names (mpirun.openmpi, …)."""
    if mpi_library is None:
        return None
    prefix = mpi_library.resolve().parent.parent
    if prefix in (Path("/usr"), Path("/")) or str(prefix).startswith("/usr/lib"):
        return None
    for name in ("mpiexec", "mpirun"):
        if (prefix / "bin" / name).exists():
            return prefix / "bin" / name
    return None
