/* Finding the kernel for an MPI (datatype, op) pair: the bridge between MPI handles and the
 * MPI-free kernel layer. Used by the local-reduction API and by the collective algorithms. */
#ifndef MPIOPT_OP_KERNEL_H
#define MPIOPT_OP_KERNEL_H

#include <mpi.h>
#include "kernels/kernels.h"

typedef struct {
    mpiopt_kernel2_fn k2;
    mpiopt_kernel3_fn k3;
    size_t elem_size;      /* bytes between consecutive elements (the datatype's extent) */
} mpiopt_op_kernel;

/* Fills *k and returns 1 if mpiopt has a kernel for this predefined (datatype, op) pair allowed
 * by the MPI standard; returns 0 otherwise (user-defined ops or datatypes, an op not defined for
 * the type, a type whose representation mpiopt does not know), leaving the call to the vendor. */
int mpiopt_find_kernel(MPI_Datatype datatype, MPI_Op op, mpiopt_op_kernel *k);

/* 1 if a collective with this (datatype, op) should go to the vendor whole rather than run
 * mpiopt's algorithms: a predefined op on a type mpiopt has no kernel for (a type outside the
 * op's category, MPI_REAL16, a derived type, …). Running the algorithms with the vendor's
 * PMPI_Reduce_local at every step would be slower than the vendor's own collective and would
 * give its result anyway, or fail partway on an op the vendor rejects. User-defined ops give 0:
 * mpiopt's algorithms apply them through PMPI_Reduce_local. */
int mpiopt_vendor_takes(MPI_Datatype datatype, MPI_Op op);

/* 1 where combining the ranks' contributions in any order and grouping gives the same bits: a
 * predefined op on an integer, logical or byte type (any op: sums wrap), MINLOC / MAXLOC of an
 * integer value. 0 for floating point, whose sums and products round by order, and whose MAX /
 * MIN of +0.0 and -0.0, or of NaNs, depends on the order too. Which algorithm, or library, runs
 * such a call never changes its result. */
int mpiopt_result_order_free(MPI_Datatype datatype, MPI_Op op);

/* 1 for the ops the standard predefines (never freed). */
int mpiopt_predefined_op(MPI_Op op);

#endif
