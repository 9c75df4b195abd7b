/* mpiopt_allreduce: argument handling, then the algorithm select.c names, in place on recvbuf. */
#include <string.h>
#include "coll.h"
#include "collective_args.h"

typedef int (*allreduce_fn)(const mpiopt_coll *, void *, size_t);

static allreduce_fn algorithm_fn(mpiopt_algorithm a)
{
    switch (a) {
    case MPIOPT_ALG_BINOMIAL: return mpiopt_allreduce_binomial;
    case MPIOPT_ALG_RECURSIVE_DOUBLING: return mpiopt_allreduce_recursive_doubling;
    case MPIOPT_ALG_RING: return mpiopt_allreduce_ring;
    case MPIOPT_ALG_RABENSEIFNER: return mpiopt_allreduce_rabenseifner;
    case MPIOPT_ALG_BINARY_BLOCKS: return mpiopt_allreduce_binary_blocks;
    default: return NULL;
    }
}

int mpiopt_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm)
{
    int p, rank, commutative;
    size_t bytes;
    if ((int)algorithm < 0 || algorithm >= MPIOPT_ALG_COUNT)
        return MPI_ERR_ARG;
    /* select first, from the cheap facts: when the vendor is chosen (small messages) the call
     * should cost next to nothing more than the vendor's own */
    if (algorithm == MPIOPT_ALG_VENDOR || !mpiopt_coll_shape(comm, count, datatype, &p, &bytes)
        || PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS)
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    PMPI_Comm_rank(comm, &rank);
    mpiopt_algorithm a = mpiopt_select(0, algorithm, p, bytes, commutative,
                                       !mpiopt_vendor_result_wrong(datatype, op), rank);
    allreduce_fn run = algorithm_fn(a);
    if (!run || !mpiopt_coll_supported(comm, count, datatype, &p, &bytes))
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(datatype, &lb, &extent);
    if (sendbuf != MPI_IN_PLACE && count > 0)
        memcpy(recvbuf, sendbuf, (size_t)count * (size_t)extent);
    if (count == 0 || p == 1)
        return MPI_SUCCESS;
    mpiopt_coll c;
    int rc = mpiopt_coll_init(&c, comm, datatype, op);
    if (rc != MPI_SUCCESS)
        return rc;
    return run(&c, recvbuf, (size_t)count);
}
