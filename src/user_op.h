/* Threaded user-defined reduction ops (mpiopt_op_create_threaded, the MPIOPT_USER_OP_THREADS
 * drop-in). See user_op.c for how the vendor's context-free callback finds the user's function. */
#ifndef MPIOPT_USER_OP_H
#define MPIOPT_USER_OP_H

#include <stddef.h>
#include <mpi.h>

/* Creates an MPI_Op that runs fn (C calling convention, or Fortran's when fortran is nonzero)
 * in chunks across `threads` threads (0: the process's affinity mask, as for predefined ops). */
int mpiopt_user_op_create(void (*fn)(void), int fortran, int commute, int threads, MPI_Op *op);
/* Forgets op if it is one of ours; 1 if it was. The caller frees the MPI handle. */
int mpiopt_user_op_forget(MPI_Op op);
/* inout = in op inout over n elements: the threaded path when op is one of ours (no int limit,
 * no trip through the vendor), PMPI_Reduce_local otherwise. The reduction algorithms call this. */
int mpiopt_user_op_reduce_local(const void *in, void *inout, size_t n, MPI_Datatype datatype,
                                MPI_Op op);

#endif
