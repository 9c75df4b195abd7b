/* mpiopt — fast MPI reductions and collectives.
 *
 * Link with -lmpiopt (build/<flavour>/lib), built against the same MPI as the application, or
 * LD_PRELOAD the library to replace MPI_Reduce_local, MPI_Allreduce and MPI_Reduce in an
 * unmodified program. Every function returns an MPI error code (MPI_SUCCESS on success). What
 * mpiopt has no kernel or algorithm for (user-defined ops in local reductions, non-contiguous
 * derived datatypes, intercommunicators) is passed to the vendor's PMPI_* call unchanged. */
#ifndef MPIOPT_H
#define MPIOPT_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- local reductions (kernels) ---- */

/* inoutbuf[i] = inbuf[i] op inoutbuf[i], as MPI_Reduce_local. */
int mpiopt_reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                        MPI_Op op);
/* outbuf[i] = inbuf1[i] op inbuf2[i]; outbuf must not overlap either input. */
int mpiopt_reduce_local3(const void *inbuf1, const void *inbuf2, void *outbuf, int count,
                         MPI_Datatype datatype, MPI_Op op);
/* 1 if mpiopt has its own kernel for (datatype, op), 0 if it would call the vendor. */
int mpiopt_has_kernel(MPI_Datatype datatype, MPI_Op op);
/* The kernel target in use: "baseline", "avx2" or "avx512" (see MPIOPT_ISA). */
const char *mpiopt_kernel_isa(void);

/* ---- collectives ---- */

typedef enum {
    MPIOPT_ALG_AUTO = 0,          /* chosen per call from the cost model and tuning table */
    MPIOPT_ALG_VENDOR,            /* the MPI library's own PMPI_Allreduce / PMPI_Reduce */
    MPIOPT_ALG_BINOMIAL,
    MPIOPT_ALG_RECURSIVE_DOUBLING,
    MPIOPT_ALG_RING,
    MPIOPT_ALG_RABENSEIFNER,
    MPIOPT_ALG_BINARY_BLOCKS,
    MPIOPT_ALG_COUNT
} mpiopt_algorithm;

int mpiopt_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm);
int mpiopt_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm, mpiopt_algorithm algorithm);

#ifdef __cplusplus
}
#endif
#endif
