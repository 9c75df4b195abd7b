/* mpiopt_reduce: argument handling, then the algorithm select.c names. Non-root ranks reduce in a
 * scratch copy of their sendbuf; the root in its recvbuf (a copy of its sendbuf first, unless in
 * place): the reduce algorithms all start in place. */
#include <stdlib.h>
#include "coll.h"
#include "collective_args.h"

typedef int (*reduce_fn)(const mpiopt_coll *, void *, size_t, int);

/* Recursive doubling as a reduce: the allreduce, and the root keeps the result (fewest rounds
 * for small messages). */
static int reduce_recursive_doubling(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    return mpiopt_allreduce_recursive_doubling(c, buf, count);
}

static reduce_fn algorithm_fn(mpiopt_algorithm a)
{
    switch (a) {
    case MPIOPT_ALG_BINOMIAL: return mpiopt_reduce_binomial;
    case MPIOPT_ALG_RECURSIVE_DOUBLING: return reduce_recursive_doubling;
    case MPIOPT_ALG_RING: return mpiopt_reduce_ring;
    case MPIOPT_ALG_RABENSEIFNER: return mpiopt_reduce_rabenseifner;
    case MPIOPT_ALG_BINARY_BLOCKS: return mpiopt_reduce_binary_blocks;
    default: return NULL;
    }
}

/* The vendor's reduce, except that MPI_IN_PLACE at a non-zero root is replaced by a copy of the
 * root's data: MPICH 4.0.2 crashes on it. The copy goes through MPI so any datatype works. */
static int vendor_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, int root, MPI_Comm comm)
{
    int rank, inter = 0;
    if (sendbuf != MPI_IN_PLACE || root == 0 || comm == MPI_COMM_NULL || count <= 0 ||
        PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
        PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || rank != root)
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    MPI_Aint lb, extent, true_lb, true_extent;
    PMPI_Type_get_extent(datatype, &lb, &extent);
    PMPI_Type_get_true_extent(datatype, &true_lb, &true_extent);
    char *copy = malloc((size_t)true_extent + (size_t)(count - 1) * (size_t)extent);
    if (!copy)
        return MPI_ERR_NO_MEM;
    char *copy_buf = copy - true_lb;
    int rc = PMPI_Sendrecv(recvbuf, count, datatype, 0, 0, copy_buf, count, datatype, 0, 0,
                           MPI_COMM_SELF, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Reduce(copy_buf, recvbuf, count, datatype, op, root, comm);
    free(copy);
    return rc;
}

int mpiopt_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm, mpiopt_algorithm algorithm)
{
    int p, rank, commutative;
    size_t bytes;
    if ((int)algorithm < 0 || algorithm >= MPIOPT_ALG_COUNT)
        return MPI_ERR_ARG;
    if (algorithm == MPIOPT_ALG_VENDOR || !mpiopt_coll_shape(comm, count, datatype, &p, &bytes)
        || root < 0 || root >= p || PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS)
        return vendor_reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    PMPI_Comm_rank(comm, &rank);
    mpiopt_algorithm a = mpiopt_select(1, algorithm, p, bytes, commutative,
                                       !mpiopt_vendor_result_wrong(datatype, op), rank);
    reduce_fn run = algorithm_fn(a);
    if (!run || !mpiopt_coll_supported(comm, count, datatype, &p, &bytes) ||
        mpiopt_vendor_takes(datatype, op))
        return vendor_reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    if (count == 0)
        return MPI_SUCCESS;
    mpiopt_coll c;
    int rc = mpiopt_coll_init(&c, comm, datatype, op);
    if (rc != MPI_SUCCESS)
        return rc;
    void *buf = recvbuf;
    if (rank != root && !(buf = mpiopt_coll_scratch(&c, (size_t)count)))
        return MPI_ERR_NO_MEM;
    c.src = sendbuf == MPI_IN_PLACE ? NULL : sendbuf;
    mpiopt_coll_take_input(&c, buf, (size_t)count);
    if (p > 1)
        rc = run(&c, buf, (size_t)count, root);
    if (buf != recvbuf)
        mpiopt_scratch_free(buf);
    return rc;
}
