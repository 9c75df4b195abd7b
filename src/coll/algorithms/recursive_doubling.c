/* Recursive doubling allreduce: at step i every process swaps its whole buffer with the process
 * 2^i away and both reduce (lower op higher), so both hold bitwise the same partial result. For p
 * not a power of two the surplus ranks fold in first (halving_doubling.c).
 *
 *   log2(p2)*(alpha + n*beta + n*gamma) + [p != p2] (2*alpha + 2*n*beta + n*gamma)
 *
 * Latency-optimal (fewest rounds), so the choice for small messages. Partners combine groups of
 * consecutive ranks, lower on the left: valid for non-commutative ops. The first exchange (or the
 * fold) sends from the caller's sendbuf (c->src) and reduces it with the partner's data straight
 * into a work buffer: no up-front copy of the input (n bytes read + written); the result ends in
 * buf or, on some ranks, in the scratch buffer, copied once at the end. */
#include <string.h>
#include "coll/algorithms/algorithms.h"

int mpiopt_allreduce_recursive_doubling(const mpiopt_coll *c, void *buf, size_t count)
{
    mpiopt_fold f;
    int rc = mpiopt_fold_begin(c, buf, count, &f);
    /* Both partners must compute lower op higher with the operands in that order: a swapped
     * order gives other bits where an op is commutative in value only (max of +0.0 and -0.0,
     * sums of two NaNs). inout = in op inout has the received (left) operand in place for the
     * higher partner; the lower one reduces into the buffer it received into, and the two
     * buffers swap roles. `mine` is the partial result: c->src until the first reduction. */
    const void *mine = f.mine;
    for (int i = 0; rc == MPI_SUCCESS && f.g >= 0 && i < f.levels; i++) {
        int partner = f.rank_of[f.g ^ (1 << i)];
        void *theirs = mine == f.tmp ? buf : f.tmp;
        rc = mpiopt_sendrecv(c, mine, count, partner, theirs, count, partner);
        if (rc != MPI_SUCCESS)
            break;
        if ((f.g ^ (1 << i)) > f.g) {               /* I am the lower: theirs = mine op theirs */
            rc = mpiopt_coll_reduce_left(c, mine, theirs, count);
            mine = theirs;
        } else if (mine != c->src) {                /* mine = theirs op mine */
            rc = mpiopt_coll_reduce_left(c, theirs, (void *)mine, count);
        } else {                                    /* mine is c->src: into the other buffer */
            void *out = theirs == f.tmp ? buf : f.tmp;
            rc = mpiopt_coll_reduce3(c, theirs, mine, out, count);
            mine = out;
        }
    }
    if (rc == MPI_SUCCESS && f.g >= 0 && mine != buf && count > 0)
        mpiopt_coll_copy(c, buf, mine, count * c->extent);
    if (rc == MPI_SUCCESS)
        rc = mpiopt_fold_out(c, buf, count);
    mpiopt_fold_end(&f);
    return rc;
}

/* Recursive doubling as a reduce: the allreduce, and the root keeps the result (fewest rounds for
 * small messages). */
int mpiopt_reduce_recursive_doubling(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    return mpiopt_allreduce_recursive_doubling(c, buf, count);
}

double mpiopt_cost_recursive_doubling(const mpiopt_cost_call *x, int is_reduce)
{
    return mpiopt_cost_steps(x, x->levels, 1, 0, x->latency_rd) +
           x->levels * x->n * x->params->gamma + x->fold;
}
