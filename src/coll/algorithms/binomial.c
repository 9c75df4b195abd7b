/* Binomial tree reduce, and allreduce as binomial reduce + binomial broadcast (MPICH-1's
 * algorithm: half the processes idle at every step).
 *
 *   reduce:    ceil(log2 p)*(alpha + n*beta + n*gamma)
 *   bcast:     ceil(log2 p)*(alpha + n*beta)
 *   allreduce: ceil(log2 p)*(2*alpha + 2*n*beta + n*gamma)
 *
 * Non-commutative ops: the tree is built on ranks 0..p-1 (subtrees are runs of consecutive
 * ranks, lower on the left), reduced to rank 0 and sent on to the root. Commutative ops root
 * the tree at the root itself. */
#include <stdlib.h>
#include "coll/algorithms/algorithms.h"

int mpiopt_bcast_binomial(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    int p = c->size, vr = (c->rank - root + p) % p, mask = 1, rc = MPI_SUCCESS;
    while (mask < p) {
        if (vr & mask) {
            rc = mpiopt_recv(c, buf, count, (vr - mask + root) % p);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; rc == MPI_SUCCESS && mask > 0; mask >>= 1)
        if (vr + mask < p)
            rc = mpiopt_send(c, buf, count, (vr + mask + root) % p);
    return rc;
}

/* Reduces to tree_root (rank order when the op is not commutative: then tree_root is 0). This
 * rank's contribution is read where the caller left it (c->src, if set, else buf): a leaf sends
 * it from there, an inner node reduces it with its first child's data straight into buf. That
 * saves a copy of the whole input on every rank, which at p = 2 was a third of a large reduce. */
static int reduce_tree(const mpiopt_coll *c, void *buf, size_t count, int tree_root)
{
    int p = c->size, vr = (c->rank - tree_root + p) % p, rc = MPI_SUCCESS;
    const void *mine = c->src ? c->src : buf;
    void *tmp = NULL;
    for (int mask = 1; mask < p; mask <<= 1) {
        if (vr & mask) {
            rc = mpiopt_send(c, mine, count, (vr - mask + tree_root) % p);
            break;
        }
        if (vr + mask >= p)
            continue;
        if (!tmp && !(tmp = mpiopt_coll_scratch(c, count)))
            return MPI_ERR_NO_MEM;
        rc = mpiopt_recv(c, tmp, count, (vr + mask + tree_root) % p);
        if (rc == MPI_SUCCESS)    /* buf = mine op child's */
            rc = mine == buf ? mpiopt_coll_reduce_right(c, buf, tmp, count)
                             : mpiopt_coll_reduce3(c, mine, tmp, buf, count);
        mine = buf;
        if (rc != MPI_SUCCESS)
            break;
    }
    mpiopt_scratch_free(tmp);
    return rc;
}

int mpiopt_reduce_binomial(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    int tree_root = c->commutative ? root : 0;
    int rc = reduce_tree(c, buf, count, tree_root);
    if (rc != MPI_SUCCESS)
        return rc;
    return mpiopt_forward_result(c, buf, count, tree_root, root);
}

double mpiopt_cost_binomial(const mpiopt_cost_call *x, int is_reduce)
{
    /* reduce up the tree (and, for allreduce, broadcast down it) */
    return mpiopt_cost_steps(x, x->lc, is_reduce ? 1 : 2, 0, 0) + x->lc * x->n * x->params->gamma;
}

int mpiopt_allreduce_binomial(const mpiopt_coll *c, void *buf, size_t count)
{
    int rc = reduce_tree(c, buf, count, 0);
    if (rc == MPI_SUCCESS)
        rc = mpiopt_bcast_binomial(c, buf, count, 0);
    return rc;
}
