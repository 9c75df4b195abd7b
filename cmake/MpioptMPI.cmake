# Which MPI this tree builds against, found from the MPI itself, never from a Debian name.
#
# Sets, for the rest of CMakeLists.txt:
#   MPIOPT_MPI_TARGET  "" when the C compiler is an MPI wrapper (mpicc: the usual case), else
#                      MPI::MPI_C from CMake's FindMPI (MPI_HOME, or the mpicc on PATH)
#   MPI_FLAVOUR        openmpi | mpich | abi | smpi | unknown: -DMPI_FLAVOUR=... when given (an
#                      override: `mpiopt simulate` passes smpi), else detected from mpi.h; `abi`
#                      is the MPI standard ABI (MPI 5.0's mpi_abi.h, e.g. MPICH's mpicc_abi): a
#                      header of no vendor, whose one build runs on any MPI's libmpi_abi.so
#   MPIOPT_MPI_NAME    what the MPI calls itself, e.g. "Open MPI 5.0.11", "Intel MPI 2021.15"
#   MPIOPT_MPIEXEC     the launcher of that same MPI (for ctest)
#
# The flavour matters to mpiopt because Open MPI and the MPICH family have different ABIs and
# different run-time quirks (src/coll/select/select.c); Intel MPI, MVAPICH and Cray MPICH are MPICH
# underneath, so they build and behave as flavour `mpich`. The standard ABI's header names no
# vendor (the library is chosen at run time): flavour `abi`, with no vendor's tuning or workarounds.

include(CheckCSourceCompiles)

# ---- can the C compiler compile MPI code by itself? ----
# Checked once per build tree (the compiler of a tree never changes). A plain compiler falls back
# to FindMPI, whose imported target then carries the include and link flags.
check_c_source_compiles("#include <mpi.h>
int main(int argc, char **argv) { MPI_Init(&argc, &argv); return MPI_Finalize(); }"
  MPIOPT_CC_IS_MPI)
set(MPIOPT_MPI_TARGET "")
if(NOT MPIOPT_CC_IS_MPI)
  find_package(MPI REQUIRED COMPONENTS C)
  set(MPIOPT_MPI_TARGET MPI::MPI_C)
  # the configure checks below (and check_symbol_exists in CMakeLists.txt) must see mpi.h too
  list(APPEND CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
  list(APPEND CMAKE_REQUIRED_LIBRARIES ${MPI_C_LIBRARIES})
endif()

# ---- the MPI's name and version, from mpi.h's own macros ----
# The source is compiled (never run, so cross builds work) into a static library holding one
# string; file(STRINGS) reads it back, as CMake itself identifies compilers. The MPICH family test
# goes from the most specific member to the least: they all define MPICH_VERSION.
function(_mpiopt_identify_mpi out_flavour out_name)
  set(dir ${CMAKE_BINARY_DIR}${CMAKE_FILES_DIRECTORY}/mpiopt-mpi-id)
  file(WRITE ${dir}/mpi_id.c [=[
#include <mpi.h>
#define MPIOPT_STR_(x) #x
#define MPIOPT_STR(x) MPIOPT_STR_(x)
#if defined(OPEN_MPI)
#  define ID "openmpi:Open MPI " MPIOPT_STR(OMPI_MAJOR_VERSION) "." MPIOPT_STR(OMPI_MINOR_VERSION) "." MPIOPT_STR(OMPI_RELEASE_VERSION)
#elif defined(I_MPI_VERSION)
#  define ID "mpich:Intel MPI " I_MPI_VERSION
#elif defined(MVAPICH2_VERSION)
#  define ID "mpich:MVAPICH2 " MVAPICH2_VERSION
#elif defined(MVAPICH_VERSION)
#  define ID "mpich:MVAPICH " MVAPICH_VERSION
#elif defined(CRAY_MPICH_VERSION)
#  define ID "mpich:Cray MPICH " MPIOPT_STR(CRAY_MPICH_VERSION)
#elif defined(MPICH_VERSION)
#  define ID "mpich:MPICH " MPICH_VERSION
#elif defined(MPI_ABI_VERSION)
#  define ID "abi:the MPI standard ABI " MPIOPT_STR(MPI_ABI_VERSION) "." MPIOPT_STR(MPI_ABI_SUBVERSION) " (mpi_abi.h, MPI " MPIOPT_STR(MPI_VERSION) "." MPIOPT_STR(MPI_SUBVERSION) ")"
#elif defined(MPICH)
#  define ID "mpich:MPICH (version unknown)"
#else
#  define ID "unknown:an MPI of unknown make, MPI " MPIOPT_STR(MPI_VERSION) "." MPIOPT_STR(MPI_SUBVERSION)
#endif
const char mpiopt_mpi_id[] = "MPIOPT_MPI_ID[" ID "]";
int mpiopt_mpi_id_byte(int i) { return mpiopt_mpi_id[i]; }
]=])
  set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
  try_compile(ok ${dir}/build ${dir}/mpi_id.c
    CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${CMAKE_REQUIRED_INCLUDES}"
    OUTPUT_VARIABLE log
    COPY_FILE ${dir}/libmpi_id.a)
  set(flavour unknown)
  set(name "")
  if(ok)
    file(STRINGS ${dir}/libmpi_id.a id REGEX "MPIOPT_MPI_ID\\[[^]]*\\]" LIMIT_COUNT 1)
    if(id MATCHES "MPIOPT_MPI_ID\\[([a-z]+):([^]]*)\\]")
      set(flavour ${CMAKE_MATCH_1})
      set(name "${CMAKE_MATCH_2}")
    endif()
  else()
    set(name "mpi.h did not compile")
    file(WRITE ${dir}/try_compile.log "${log}")
  endif()
  set(${out_flavour} ${flavour} PARENT_SCOPE)
  set(${out_name} "${name}" PARENT_SCOPE)
endfunction()

if(MPI_FLAVOUR STREQUAL "smpi")
  # SimGrid's mpi.h: nothing to detect, and `mpiopt simulate` configures often
  set(MPIOPT_MPI_NAME "SimGrid SMPI")
else()
  if(NOT DEFINED MPIOPT_DETECTED_FLAVOUR)
    _mpiopt_identify_mpi(_flavour _name)
    set(MPIOPT_DETECTED_FLAVOUR ${_flavour} CACHE INTERNAL "MPI flavour found in mpi.h")
    set(MPIOPT_DETECTED_NAME "${_name}" CACHE INTERNAL "the MPI found in mpi.h")
  endif()
  set(MPIOPT_MPI_NAME "${MPIOPT_DETECTED_NAME}")
  if(MPI_FLAVOUR STREQUAL "")
    set(MPI_FLAVOUR ${MPIOPT_DETECTED_FLAVOUR})
  elseif(NOT MPI_FLAVOUR STREQUAL MPIOPT_DETECTED_FLAVOUR)
    # the override wins (it is how a tree is forced), but a wrong one is a different ABI's
    # run-time choices: say so
    message(WARNING "mpiopt: -DMPI_FLAVOUR=${MPI_FLAVOUR} overrides the flavour found in mpi.h "
                    "(${MPIOPT_DETECTED_FLAVOUR}: ${MPIOPT_DETECTED_NAME})")
  endif()
endif()
if(MPI_FLAVOUR STREQUAL "unknown")
  message(WARNING "mpiopt: could not tell which MPI mpi.h belongs to (${MPIOPT_MPI_NAME}); "
                  "building with flavour `unknown` (no flavour-specific tuning). "
                  "Pass -DMPI_FLAVOUR=openmpi or -DMPI_FLAVOUR=mpich if you know it.")
endif()
message(STATUS "mpiopt: MPI flavour ${MPI_FLAVOUR} (${MPIOPT_MPI_NAME})")

# ---- the launcher of the same MPI ----
# Next to the compiler first: Debian's mpicc.mpich sits beside mpiexec.mpich while /usr/bin/mpiexec
# may be the other MPI (update-alternatives); a PyPI or module MPI keeps both in one bin/. FindMPI's
# MPIEXEC_EXECUTABLE and PATH come after.
# (with a plain compiler: next to the mpicc FindMPI asked, when it asked one)
set(_mpiopt_cc "${CMAKE_C_COMPILER}")
if(MPIOPT_MPI_TARGET AND MPI_C_COMPILER)
  set(_mpiopt_cc "${MPI_C_COMPILER}")
endif()
get_filename_component(_mpiopt_cc_dir "${_mpiopt_cc}" DIRECTORY)
get_filename_component(_mpiopt_cc_name "${_mpiopt_cc}" NAME)
set(_mpiopt_exec_names)
if(_mpiopt_cc_name MATCHES "^mpicc(\\..+)$")        # mpicc.mpich → mpiexec.mpich
  list(APPEND _mpiopt_exec_names mpiexec${CMAKE_MATCH_1} mpirun${CMAKE_MATCH_1})
endif()
list(APPEND _mpiopt_exec_names mpiexec.${MPI_FLAVOUR} mpiexec mpirun)
if(NOT MPIOPT_MPIEXEC)
  find_program(MPIOPT_MPIEXEC NAMES ${_mpiopt_exec_names} HINTS ${_mpiopt_cc_dir} NO_DEFAULT_PATH
               DOC "the launcher of the MPI this tree is built for")
  if(NOT MPIOPT_MPIEXEC AND MPIEXEC_EXECUTABLE)
    set(MPIOPT_MPIEXEC ${MPIEXEC_EXECUTABLE} CACHE FILEPATH "the launcher of the MPI this tree is built for" FORCE)
  endif()
  find_program(MPIOPT_MPIEXEC NAMES ${_mpiopt_exec_names})
endif()
if(NOT MPIOPT_MPIEXEC)
  message(STATUS "mpiopt: no mpiexec found next to ${_mpiopt_cc}: ctest's unit tests will not run")
  set(MPIOPT_MPIEXEC mpiexec)
endif()

# ---- the Fortran wrapper of the same MPI ----
# Unless one is named (CMAKE_Fortran_COMPILER, FC), the MPI's own next to its mpicc, with the same
# suffix (mpicc.mpich → mpif90.mpich): a bare gfortran finds no mpi.mod.
if(NOT CMAKE_Fortran_COMPILER AND NOT DEFINED ENV{FC} AND NOT MPI_FLAVOUR STREQUAL "smpi")
  set(_suffix "")
  if(_mpiopt_cc_name MATCHES "^mpicc(\\..+)$")
    set(_suffix ${CMAKE_MATCH_1})
  endif()
  find_program(MPIOPT_MPIFORT NAMES mpifort${_suffix} mpif90${_suffix} HINTS ${_mpiopt_cc_dir}
               NO_DEFAULT_PATH DOC "the Fortran wrapper of the MPI this tree is built for")
  if(MPIOPT_MPIFORT)
    # through FC, so that check_language() still tries it and a broken wrapper is a skip, not
    # a configure error
    set(ENV{FC} ${MPIOPT_MPIFORT})
  endif()
endif()
