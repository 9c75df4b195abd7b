/* mpiopt_allreduce: argument handling, then the algorithm select.c names, with the result in
 * recvbuf. Recursive doubling, ring and Rabenseifner read the sendbuf where it is (c->src): the
 * usual up-front copy into recvbuf costs n bytes read + written, 10-15% of a large allreduce on
 * two cores. Binomial and binary blocks start from that copy. */
#include "coll.h"
#include "collective_args.h"

/* Each algorithm's function, and whether it starts from c->src itself. */
static const struct {
    int (*run)(const mpiopt_coll *, void *, size_t);
    int reads_src;
} algorithms[MPIOPT_ALG_COUNT] = {
    [MPIOPT_ALG_BINOMIAL] = {mpiopt_allreduce_binomial, 0},
    [MPIOPT_ALG_RECURSIVE_DOUBLING] = {mpiopt_allreduce_recursive_doubling, 1},
    [MPIOPT_ALG_RING] = {mpiopt_allreduce_ring, 1},
    [MPIOPT_ALG_RABENSEIFNER] = {mpiopt_allreduce_rabenseifner, 1},
    [MPIOPT_ALG_BINARY_BLOCKS] = {mpiopt_allreduce_binary_blocks, 0},
};

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
                                       !mpiopt_vendor_result_wrong(datatype, op) &&
                                           !mpiopt_vendor_allreduce_ranks_differ(datatype, op),
                                       rank);
    if (!algorithms[a].run || !mpiopt_coll_supported(comm, count, datatype, &p, &bytes) ||
        mpiopt_vendor_takes(datatype, op))
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    if (count == 0)
        return MPI_SUCCESS;
    mpiopt_coll c;
    int rc = mpiopt_coll_init(&c, comm, datatype, op);
    if (rc != MPI_SUCCESS)
        return rc;
    c.src = sendbuf == MPI_IN_PLACE ? NULL : sendbuf;
    if (p == 1 || !algorithms[a].reads_src)
        mpiopt_coll_take_input(&c, recvbuf, (size_t)count);
    return p == 1 ? MPI_SUCCESS : algorithms[a].run(&c, recvbuf, (size_t)count);
}
