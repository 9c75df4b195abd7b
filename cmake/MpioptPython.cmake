# The Python package's build (python/pyproject.toml: scikit-build-core runs this tree's CMake with
# -DMPIOPT_PYTHON_PACKAGE=ON and installs into mpiopt/_install/ inside the package). Adds one file
# to that prefix, mpiopt-build.json: the MPI the library was built for, which the command line
# (python/mpiopt/mpi.py, packaged_build) reads to tell whether a program's MPI is this one.
# Written at configure time; no source or build path of this tree goes in, only the MPI's own.
set(_mpiopt_build_json ${CMAKE_BINARY_DIR}/mpiopt-build.json)
file(WRITE ${_mpiopt_build_json} "{\n"
  "  \"version\": \"${PROJECT_VERSION}\",\n"
  "  \"flavour\": \"${MPI_FLAVOUR}\",\n"
  "  \"mpi\": \"${MPIOPT_MPI_NAME}\",\n"
  "  \"mpicc\": \"${CMAKE_C_COMPILER}\",\n"
  "  \"mpiexec\": \"${MPIOPT_MPIEXEC}\"\n"
  "}\n")
install(FILES ${_mpiopt_build_json} DESTINATION .)
message(STATUS "mpiopt: Python package build for ${MPI_FLAVOUR} (${CMAKE_C_COMPILER})")
