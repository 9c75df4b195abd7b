/* Rabenseifner's algorithm: reduce-scatter by recursive halving, then allgather by recursive
 * doubling (allreduce) or a binomial gather (reduce). For p not a power of two, p2 = 2^floor(log2 p)
 * and the r = p - p2 surplus ranks first fold into a partner and get the result back at the end.
 *
 *   allreduce: 2*log2(p2)*alpha + 2*(p2-1)/p2*n*beta + (p2-1)/p2*n*gamma
 *              + [p != p2] (2*alpha + 2*n*beta + n*gamma)
 *   reduce:    the same, the allgather replaced by a gather to the root (the fold-out becomes
 *              one send to the root when it sat out): same terms, one alpha + n*beta less.
 *
 * Rank order is kept (see halving_doubling.c), so it also serves non-commutative ops. The
 * allreduce reads its input from the caller's sendbuf (c->src) in the fold and the first halving
 * step: no up-front copy into the result buffer. */
#include "coll/algorithms/algorithms.h"

int mpiopt_allreduce_rabenseifner(const mpiopt_coll *c, void *buf, size_t count)
{
    mpiopt_fold f;
    int rc = mpiopt_fold_begin(c, buf, count, &f);
    if (rc == MPI_SUCCESS && f.g >= 0) {
        rc = mpiopt_reduce_scatter_halving(c, buf, f.tmp, count, f.mine, f.rank_of, f.levels,
                                           f.g);
        if (rc == MPI_SUCCESS)
            rc = mpiopt_allgather_doubling(c, buf, count, f.rank_of, f.levels, f.g);
    }
    if (rc == MPI_SUCCESS)
        rc = mpiopt_fold_out(c, buf, count);
    mpiopt_fold_end(&f);
    return rc;
}

int mpiopt_reduce_rabenseifner(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    mpiopt_fold f;
    int rc = mpiopt_fold_begin(c, buf, count, &f);
    if (rc == MPI_SUCCESS) {
        /* Gather to the root's group member, or, when the root sat out, to its odd partner,
         * which then forwards the result. */
        int surplus = c->size - (1 << f.levels);
        int via = (root < 2 * surplus && root % 2 == 0) ? root + 1 : root;
        int dst = via < 2 * surplus ? via / 2 : via - surplus;
        if (f.g >= 0) {
            rc = mpiopt_reduce_scatter_halving(c, buf, f.tmp, count, f.mine, f.rank_of,
                                               f.levels, f.g);
            if (rc == MPI_SUCCESS)
                rc = mpiopt_gather_halving(c, buf, count, f.rank_of, f.levels, f.g, dst);
        }
        if (rc == MPI_SUCCESS)
            rc = mpiopt_forward_result(c, buf, count, via, root);
    }
    mpiopt_fold_end(&f);
    return rc;
}

double mpiopt_cost_rabenseifner(const mpiopt_cost_call *x, int is_reduce)
{
    /* halving then doubling (or the gather): 2 messages at step k, of n / 2^(k+1) bytes; the
     * reduce needs no way back from the fold */
    return mpiopt_cost_steps(x, x->levels, 2, 1, x->latency_hd) +
           (x->p2 - 1) / x->p2 * x->n * x->params->gamma + (is_reduce ? x->fold_in : x->fold);
}
