/* Recursive doubling allreduce: at step i every process swaps its whole buffer with the process
 * 2^i away and both reduce (lower op higher), so both hold bitwise the same partial result. For p
 * not a power of two the surplus ranks fold in first (halving_doubling.c).
 *
 *   log2(p2)*(alpha + n*beta + n*gamma) + [p != p2] (2*alpha + 2*n*beta + n*gamma)
 *
 * Latency-optimal (fewest rounds), so the choice for small messages. Partners combine groups of
 * consecutive ranks, lower on the left: valid for non-commutative ops. */
#include <stdlib.h>
#include "coll.h"

int mpiopt_allreduce_recursive_doubling(const mpiopt_coll *c, void *buf, size_t count)
{
    int levels, g, rc;
    void *tmp = malloc(count * c->extent + 1);
    int *rank_of = malloc(sizeof(int) * (size_t)c->size);
    if (!tmp || !rank_of) {
        free(tmp);
        free(rank_of);
        return MPI_ERR_NO_MEM;
    }
    rc = mpiopt_fold_in(c, buf, tmp, count, rank_of, &levels, &g);
    for (int i = 0; rc == MPI_SUCCESS && g >= 0 && i < levels; i++) {
        int partner = g ^ (1 << i);
        rc = PMPI_Sendrecv(buf, (int)count, c->datatype, rank_of[partner], MPIOPT_TAG, tmp,
                           (int)count, c->datatype, rank_of[partner], MPIOPT_TAG, c->comm,
                           MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            break;
        if (partner < g)
            rc = mpiopt_coll_reduce_left(c, tmp, buf, count);
        else
            rc = mpiopt_coll_reduce_right(c, buf, tmp, count);
    }
    if (rc == MPI_SUCCESS)
        rc = mpiopt_fold_out(c, buf, count);
    free(tmp);
    free(rank_of);
    return rc;
}
