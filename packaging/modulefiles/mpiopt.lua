-- Lmod modulefile template for an installed mpiopt (cmake --install BUILD --prefix PREFIX).
--
-- Copy it into the site's module tree, e.g. <modulepath>/mpiopt/0.1.0-openmpi-5.0.lua, and set
-- `prefix` below. One mpiopt build serves one MPI (Open MPI and the MPICH family have different
-- ABIs): install one prefix per MPI and tie each modulefile to its MPI's module, for example in
-- a hierarchy under that MPI's modulepath, or with the prereq() line.

local version = "0.1.0"
local prefix  = "/opt/mpiopt/" .. version .. "-openmpi-5.0"    -- edit: the install prefix
local mpi     = "openmpi"                                        -- edit: the MPI it was built for

-- prereq("openmpi/5.0")            -- edit: the MPI module this build needs, if not hierarchical

whatis("Name: mpiopt")
whatis("Version: " .. version)
whatis("Description: fast MPI reductions; LD_PRELOAD drop-in for MPI_Allreduce/Reduce/Reduce_local")

help([[
mpiopt ]] .. version .. [[, built for ]] .. mpi .. [[ (installed in ]] .. prefix .. [[).

Speed up an unmodified MPI program (C, Fortran, mpi4py) by preloading the library under the
MPI's own launcher:
    mpiexec -n 4 env LD_PRELOAD=$MPIOPT_PREFIX/lib/libmpiopt.so ./my_app
  or, with Open MPI:  mpiexec -n 4 -x LD_PRELOAD=$MPIOPT_PREFIX/lib/libmpiopt.so ./my_app
  MPIOPT_VERBOSE=1 makes rank 0 name the algorithm it chose per size class.
Profile MPI time the same way with $MPIOPT_PREFIX/lib/libmpiopt-profile.so.

Build against it (with this MPI's mpicc):
    CMake:      find_package(mpiopt REQUIRED)  +  target_link_libraries(app mpiopt::mpiopt)
    pkg-config: mpicc app.c $(pkg-config --cflags --libs mpiopt)
Documentation: $MPIOPT_PREFIX/share/doc/mpiopt
]])

setenv("MPIOPT_PREFIX", prefix)
prepend_path("PATH", pathJoin(prefix, "bin"))
prepend_path("LD_LIBRARY_PATH", pathJoin(prefix, "lib"))
prepend_path("CMAKE_PREFIX_PATH", prefix)
prepend_path("PKG_CONFIG_PATH", pathJoin(prefix, "lib", "pkgconfig"))
