/* Recursive doubling allreduce: at step i every process swaps its whole buffer with the process
 * 2^i away and both reduce (lower op higher), so both hold bitwise the same partial result. For p
 * not a power of two the surplus ranks fold in first (halving_doubling.c).
 *
 *   log2(p2)*(alpha + n*beta + n*gamma) + [p != p2] (2*alpha + 2*n*beta + n*gamma)
 *
 * Latency-optimal (fewest rounds), so the choice for small messages. Partners combine groups of
 * consecutive ranks, lower on the left: valid for non-commutative ops. */
#include "coll.h"

int mpiopt_allreduce_recursive_doubling(const mpiopt_coll *c, void *buf, size_t count)
{
    mpiopt_fold f;
    int rc = mpiopt_fold_begin(c, buf, count, &f);
    for (int i = 0; rc == MPI_SUCCESS && f.g >= 0 && i < f.levels; i++) {
        int partner = f.rank_of[f.g ^ (1 << i)];
        rc = PMPI_Sendrecv(buf, (int)count, c->datatype, partner, MPIOPT_TAG, f.tmp, (int)count,
                           c->datatype, partner, MPIOPT_TAG, c->comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            break;
        if ((f.g ^ (1 << i)) < f.g)
            rc = mpiopt_coll_reduce_left(c, f.tmp, buf, count);
        else
            rc = mpiopt_coll_reduce_right(c, buf, f.tmp, count);
    }
    if (rc == MPI_SUCCESS)
        rc = mpiopt_fold_out(c, buf, count);
    mpiopt_fold_end(&f);
    return rc;
}
