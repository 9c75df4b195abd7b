/* Fortran entry points for LD_PRELOAD.
 *
 * Open MPI's and MPICH's mpif.h and `use mpi` bindings are plain functions named after the MPI
 * call in gfortran's manglings (lower case with one or two trailing underscores, upper case,
 * plain lower case); defining the same names in a preloaded library puts mpiopt in front of
 * them. Handles arrive as MPI_Fint and are converted with PMPI_*_f2c. */
#ifndef MPIOPT_INTERPOSE_FORTRAN_H
#define MPIOPT_INTERPOSE_FORTRAN_H

#include <mpi.h>
#include "chain.h"

/* Defines every mangling of LOWER/UPPER as a call to IMPL: a tool's wrappers (the profiler's,
 * src/profile/fortran.c), which forward to the next definition themselves. */
#define MPIOPT_FORTRAN_SYMBOLS(IMPL, PARAMS, ARGS, LOWER, UPPER) \
    void LOWER##_ PARAMS { IMPL ARGS; }                          \
    void LOWER##__ PARAMS { IMPL ARGS; }                         \
    void LOWER PARAMS { IMPL ARGS; }                             \
    void UPPER PARAMS { IMPL ARGS; }

/* libmpiopt's: every mangling of LOWER/UPPER and its pmpi_ name (pmpi_wait_, PMPI_WAIT, …) as an
 * entry point of the chain (chain.h): IMPL unless a tool follows. */
#define MPIOPT_FORTRAN_ENTRY(IMPL, PARAMS, ARGS, LOWER, UPPER)                           \
    MPIOPT_FORTRAN_CHAIN_ONE(IMPL, PARAMS, ARGS, LOWER##_, p##LOWER##_)                  \
    MPIOPT_FORTRAN_CHAIN_ONE(IMPL, PARAMS, ARGS, LOWER##__, p##LOWER##__)                \
    MPIOPT_FORTRAN_CHAIN_ONE(IMPL, PARAMS, ARGS, LOWER, p##LOWER)                        \
    MPIOPT_FORTRAN_CHAIN_ONE(IMPL, PARAMS, ARGS, UPPER, P##UPPER)

/* Open MPI's `use mpi_f08` binding calls PMPI_* directly, past the names above (issue 27), so
 * its own names are defined too: LOWER_f08_. Its handles (TYPE(MPI_Comm), …) are one integer
 * passed by reference and its buffers plain addresses (gfortran's ignore-TKR form, Open MPI 4.1),
 * as in `use mpi`; an absent ierror arrives as NULL. MPICH's mpi_f08 calls the C MPI_* functions,
 * which mpiopt defines already, except for requests (below). */
#if defined(OMPI_MAJOR_VERSION)
#define MPIOPT_FORTRAN_F08_ENTRY(IMPL, PARAMS, ARGS, LOWER) \
    MPIOPT_FORTRAN_CHAIN_ONE(IMPL, PARAMS, ARGS, LOWER##_f08_, p##LOWER##_f08_)
#else
#define MPIOPT_FORTRAN_F08_ENTRY(IMPL, PARAMS, ARGS, LOWER)
#endif

/* The `use mpi_f08` names of the calls that complete, start and free requests, on both MPIs:
 * MPICH's f08 layer starts a nonblocking reduction through the C MPI_Iallreduce (mpiopt's) but
 * waits with PMPI_Wait, which would never complete mpiopt's request (the program hung). Its f08
 * handles are the C ints and its f08 status is the C MPI_Status; Open MPI's f08 calls share its
 * mpif.h code. So the mpif.h implementations serve, with MPICH's f08 MPI_STATUS_IGNORE
 * (MPI_F08_STATUS_IGNORE) known to them. */
#define MPIOPT_FORTRAN_F08_REQUEST_ENTRY(IMPL, PARAMS, ARGS, LOWER) \
    MPIOPT_FORTRAN_CHAIN_ONE(IMPL, PARAMS, ARGS, LOWER##_f08_, p##LOWER##_f08_)

/* A Fortran buffer argument as C sees it: MPI_IN_PLACE and MPI_BOTTOM are Fortran variables
 * whose addresses are the sentinels (different ones in each MPI), mapped here to the C values. */
void *mpiopt_fortran_buffer(void *addr);

#endif
