# Fortran is optional: the drop-in's Fortran entry points (mpi_allreduce_ & co.) are C
# (src/interpose/) and need no Fortran compiler. Only the `mpiopt` module (include/mpiopt.f90)
# and the Fortran test programs (tests/fortran/) do, and those are for an MPI whose Fortran
# wrapper works and has its `mpi` module: several MPIs (PyPI's wheels, some site builds) ship
# mpicc without a usable mpif90 or mpi.mod.
#
# Sets MPIOPT_HAVE_FORTRAN (the module and tests are built), MPIOPT_HAVE_MPI_F08 (`use mpi_f08`
# compiles too) and, when Fortran is on, enables the language and OpenMP::OpenMP_Fortran.
# Either way one configure line says which, and why not.

set(MPIOPT_HAVE_FORTRAN OFF)
set(MPIOPT_HAVE_MPI_F08 OFF)
set(_why "")
if(NOT MPIOPT_FORTRAN)
  set(_why "MPIOPT_FORTRAN=OFF")
elseif(MPI_FLAVOUR STREQUAL "smpi")
  set(_why "not for SimGrid SMPI")
elseif(NOT MPIOPT_HAVE_MPI_FINT)
  set(_why "this MPI's C interface has no Fortran handles (MPI_Fint; the MPI standard ABI has none)")
else()
  include(CheckLanguage)
  check_language(Fortran)       # tries the compiler in a separate project: a broken one is NOTFOUND
  if(NOT CMAKE_Fortran_COMPILER)
    set(_why "no working Fortran compiler (set CMAKE_Fortran_COMPILER or FC to the MPI's mpifort)")
  endif()
endif()

if(NOT _why)
  enable_language(Fortran)
  include(CheckFortranSourceCompiles)
  # linked too, not only compiled: a wrapper whose mpi.mod exists but whose library does not
  # (or belongs to another MPI) fails here rather than in the build
  set(CMAKE_REQUIRED_QUIET ON)
  check_fortran_source_compiles("
program mpiopt_use_mpi
  use mpi
  implicit none
  integer :: ierr
  call MPI_Init(ierr)
  call MPI_Finalize(ierr)
end program mpiopt_use_mpi
" MPIOPT_FORTRAN_USE_MPI SRC_EXT F90)
  check_fortran_source_compiles("
program mpiopt_use_mpi_f08
  use mpi_f08
  implicit none
  call MPI_Init()
  call MPI_Finalize()
end program mpiopt_use_mpi_f08
" MPIOPT_FORTRAN_USE_MPI_F08 SRC_EXT F90)
  unset(CMAKE_REQUIRED_QUIET)
  find_package(OpenMP COMPONENTS Fortran QUIET)
  if(NOT MPIOPT_FORTRAN_USE_MPI)
    set(_why "`use mpi` does not compile with ${CMAKE_Fortran_COMPILER} (no mpi.mod for this compiler?)")
    if(DEFINED MPIOPT_MPIFORT AND NOT MPIOPT_MPIFORT)
      string(APPEND _why "; no mpifort or mpif90 next to ${_mpiopt_cc}")
    endif()
  elseif(NOT OpenMP_Fortran_FOUND)
    set(_why "${CMAKE_Fortran_COMPILER} has no OpenMP")
  else()
    set(MPIOPT_HAVE_FORTRAN ON)
    set(MPIOPT_HAVE_MPI_F08 ${MPIOPT_FORTRAN_USE_MPI_F08})
  endif()
endif()

if(MPIOPT_HAVE_FORTRAN)
  if(MPIOPT_HAVE_MPI_F08)
    set(_f08 "with mpi_f08")
  else()
    set(_f08 "without mpi_f08: its tests skipped")
  endif()
  message(STATUS "mpiopt: Fortran ${CMAKE_Fortran_COMPILER} (${_f08})")
else()
  message(STATUS "mpiopt: Fortran skipped: ${_why}")
endif()
