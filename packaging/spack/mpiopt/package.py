# Spack recipe for mpiopt, kept in mpiopt's own repository (packaging/spack/mpiopt/package.py).
#
# Spack versions: written for the Spack of before the language virtuals ("c", "fortran"; there
# compilers are node attributes, `%gcc`): 0.22 and the 0.23 development series of mid-2024. On
# Spack 1.x (compilers as dependencies) it declares the two language dependencies; not run there.
# Run with: Spack 0.23.0.dev0 (commit e8f8cf8543, June 2024), by
# `make spack-check SPACK=<checkout>` (packaging/spack/check.sh), offline, against the
# external Open MPI 4.1.4 and MPICH 4.0.2 of Debian 12. Not run with any other Spack.
#
# To use it, put it in a Spack package repository of your own:
#   spack repo create ~/spack-repo mysite          # once
#   cp -r packaging/spack/mpiopt <that repo's packages directory>/
#   spack repo add ~/spack-repo
# (check.sh makes such a repository in a temporary directory, with a link to this directory).
# There is no release to fetch: build from a checkout, in a Spack environment:
#   spack env create -d myenv && spack -e myenv add mpiopt@=main ^openmpi
#   spack -e myenv develop --path $PWD mpiopt@=main && spack -e myenv install
# or fetch a git clone (MPIOPT_GIT=file:///path/to/mpiopt, branch main): spack install mpiopt ^mpich
#
# What an install holds: lib/libmpiopt.so (the LD_PRELOAD drop-in), lib/libmpiopt-profile.so
# (+profiler), the headers, CMake package and mpiopt.pc, the benchmark programs, and (+python)
# the `mpiopt` command, installed from python/ into the prefix with the Python this spec
# depends on. `spack load mpiopt` sets PATH, PYTHONPATH and MPIOPT_PREFIX, so that
# `mpiopt run -np 4 -- ./app` preloads this install's libmpiopt.so (the command also finds it
# without MPIOPT_PREFIX: the lib/ of the prefix its package is installed in).
#
# The Python side is built by python/pyproject.toml's backend, scikit-build-core, told to skip
# CMake (`-C wheel.cmake=false`): CMakePackage has already built and installed the library into
# this prefix, so pip installs the pure-Python command only. pip and scikit-build-core are build
# dependencies of +python (tests/python/test_spack_recipe.py runs this exact step with only them).
#
# The command's own Python dependencies (rich, matplotlib and numpy, networkx, libclang; mpi4py
# only for mpi4py programs, which bring their own) are NOT Spack dependencies here: offline, Spack
# cannot build matplotlib's tree, so they come with the Python this spec is concretized against
# (an external Python or a venv that has them; check.sh makes one with pip). Where a site's Spack
# has py-rich, py-matplotlib, py-networkx and py-libclang, a py-mpiopt PythonPackage depending on
# them and on this package would be the Spack-native split.
import glob
import os

import spack

try:        # Spack 1.x: build systems live in the builtin repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
except ImportError:
    pass
from spack.package import *

# the language virtuals ("c", "fortran") exist from the end of the 0.23 series; needed on 1.x
_LANGUAGE_DEPENDENCIES = spack.spack_version_info[:1] >= (1,)


class Mpiopt(CMakePackage):
    """Fast MPI reductions and collectives: vectorized reduction kernels, allreduce/reduce
    algorithms chosen by a cost model, and an LD_PRELOAD drop-in library that speeds up
    MPI_Allreduce, MPI_Reduce and MPI_Reduce_local in unmodified C, Fortran and mpi4py programs."""

    # No public release yet: the git address comes from the environment (MPIOPT_GIT) when
    # fetching; `spack develop --path` (above) needs none.
    git = os.environ.get("MPIOPT_GIT", "https://example.invalid/mpiopt.git")

    version("main", branch="main")

    variant("fortran", default=True,
            description="the `mpiopt` Fortran module (mpiopt.mod, libmpiopt_fortran.a); needs the "
                        "MPI's Fortran wrapper and its mpi.mod. The drop-in's Fortran entry "
                        "points are C and are always built")
    variant("profiler", default=True,
            description="libmpiopt-profile.so, the PMPI profiler (`mpiopt profile`)")
    variant("python", default=True,
            description="the `mpiopt` command (python/), installed into this prefix")

    if _LANGUAGE_DEPENDENCIES:
        depends_on("c", type="build")
        depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.18:", type="build")
    depends_on("mpi")
    # the drop-in's MPI_* entry points are generated at build time (src/interpose/bindings.py)
    depends_on("python@3.9:", type="build")
    depends_on("python@3.9:", type=("build", "run"), when="+python")
    # the Python side's build (install_command): pip, and python/pyproject.toml's backend
    depends_on("py-pip@23.1:", type="build", when="+python")
    depends_on("py-scikit-build-core@1.1:", type="build", when="+python")
    # the profiler's call sites (resolved with libdw) and timeline (written as OTF2); both
    # optional in CMakeLists.txt, wanted here
    depends_on("elfutils", when="+profiler")
    depends_on("otf2", when="+profiler")
    depends_on("pkgconfig", type="build", when="+profiler")

    # GNU C: target attributes, per-target kernel flags (-march=x86-64-v3/v4), GCC's
    # vectorizer parameters
    requires("%gcc", msg="mpiopt's kernels are built with GCC-specific flags")

    def _mpi_wrapper(self, attribute):
        """The MPI's compiler wrapper (attribute: mpicc or mpifc), or None. An MPI installed as a
        system package shares /usr/bin/mpicc with the other MPIs through alternatives (Debian:
        it may be either); its own wrapper then carries its name (mpicc.openmpi, mpif90.mpich)."""
        mpi = self.spec["mpi"]
        path = getattr(mpi, attribute, None)
        if not path:
            return None
        own = f"{path}.{mpi.name}"
        return own if os.path.exists(own) else path

    def cmake_args(self):
        args = [
            # the MPI's own wrapper: mpiopt detects the flavour (Open MPI or the MPICH family)
            # from its mpi.h and finds that MPI's mpiexec next to it
            self.define("CMAKE_C_COMPILER", self._mpi_wrapper("mpicc")),
            self.define("Python3_EXECUTABLE", self.spec["python"].command.path),
            self.define_from_variant("MPIOPT_PROFILER", "profiler"),
            # test programs are never installed; build them only for `spack install --test`
            self.define("MPIOPT_TESTS", self.run_tests),
        ]
        mpifc = self._mpi_wrapper("mpifc")
        if self.spec.satisfies("+fortran") and mpifc:
            args.append(self.define("CMAKE_Fortran_COMPILER", mpifc))
            args.append(self.define("MPIOPT_FORTRAN", True))
        else:
            args.append(self.define("MPIOPT_FORTRAN", False))
        return args

    @run_after("install")
    def install_command(self):
        """python/ into this prefix: PREFIX/bin/mpiopt and PREFIX/lib/pythonX.Y/site-packages/
        mpiopt. pip with no index and no build isolation: the backend (scikit-build-core) is a
        build dependency, nothing is downloaded; wheel.cmake=false, since the library this
        package's CMake build installed is already in the prefix (a second CMake build would put
        another copy inside the Python package)."""
        if not self.spec.satisfies("+python"):
            return
        python = self.spec["python"].command
        with working_dir(join_path(self.stage.source_path, "python")):
            python("-m", "pip", "install", "--no-deps", "--no-index", "--no-build-isolation",
                   "--no-warn-script-location", "--disable-pip-version-check",
                   "--config-settings=wheel.cmake=false",
                   f"--prefix={self.prefix}", ".")

    def _site_packages(self):
        found = glob.glob(join_path(self.prefix, "lib*", "python*", "site-packages"))
        return found[0] if found else None

    def setup_run_environment(self, env):
        # `mpiopt run --prefix` / MPIOPT_PREFIX: where the command line finds this build
        env.set("MPIOPT_PREFIX", self.prefix)
        site = self._site_packages() if self.spec.satisfies("+python") else None
        if site:
            env.prepend_path("PYTHONPATH", site)
