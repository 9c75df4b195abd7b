# Spack recipe for mpiopt, kept in mpiopt's own repository (packaging/spack/mpiopt/package.py).
#
# To use it, put it in a Spack package repository of your own:
#   spack repo create ~/spack-repo mysite          # once
#   cp -r packaging/spack/mpiopt <that repo's packages directory>/
#   spack repo add ~/spack-repo
# then, against the site's MPI (an external in packages.yaml, or one Spack builds):
#   spack install mpiopt ^openmpi          # or ^mpich, ^intel-oneapi-mpi, ^cray-mpich, ^mvapich
#   spack install mpiopt~fortran~profiler ^mpich
# From a checkout instead of a fetch, in a Spack environment:
#   spack develop --path $PWD mpiopt@=main && spack add mpiopt@=main && spack install
#
# Written for Spack 0.23 and 1.x (the import below covers both layouts).
import os

try:        # Spack 1.x: build systems live in the builtin repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
except ImportError:
    pass
from spack.package import *


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

    depends_on("c", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.18:", type="build")
    depends_on("mpi")
    # the profiler's call sites (resolved with libdw) and timeline (written as OTF2); both
    # optional in CMakeLists.txt, wanted here
    depends_on("elfutils", when="+profiler")
    depends_on("otf2", when="+profiler")
    depends_on("pkgconfig", type="build", when="+profiler")

    # GNU C: target attributes, per-target kernel flags (-march=x86-64-v3/v4), GCC's
    # vectorizer parameters
    requires("%gcc", msg="mpiopt's kernels are built with GCC-specific flags")

    def cmake_args(self):
        mpi = self.spec["mpi"]
        args = [
            # the MPI's own wrapper: mpiopt detects the flavour (Open MPI or the MPICH family)
            # from its mpi.h and finds that MPI's mpiexec next to it
            self.define("CMAKE_C_COMPILER", mpi.mpicc),
            self.define_from_variant("MPIOPT_FORTRAN", "fortran"),
            self.define_from_variant("MPIOPT_PROFILER", "profiler"),
            # test programs are never installed; build them only for `spack install --test`
            self.define("MPIOPT_TESTS", self.run_tests),
        ]
        if self.spec.satisfies("+fortran"):
            args.append(self.define("CMAKE_Fortran_COMPILER", mpi.mpifc))
        return args

    def setup_run_environment(self, env):
        # `mpiopt run --prefix` / MPIOPT_PREFIX: where the command line finds this build
        env.set("MPIOPT_PREFIX", self.prefix)
