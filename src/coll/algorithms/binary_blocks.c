/* Rabenseifner's binary-blocks halving + doubling (2003) for any p, commutative ops.
 *
 * p is split into blocks of 2^k1 > 2^k2 > … processes (its binary digits), the biggest at the
 * lowest ranks. Each block runs the recursive-halving reduce-scatter on its own; then every
 * process of a smaller block of size s sends its range, cut into the S/s finer ranges of the
 * biggest block (size S), to the biggest block, which reduces them in. The biggest block sends
 * the finished ranges back the same way, and every block runs its own doubling allgather. Unlike
 * Rabenseifner's fold, no process sits idle holding a whole vector; it loses where a tiny block
 * must talk to a big one (p = 17, 33, 65, …: the lone process sends S messages).
 *
 * With S the biggest block, s_j the others (L = log2 S):
 *   allreduce: 2*L*alpha + 2*(S-1)/S*n*beta + (S-1)/S*n*gamma
 *              + sum_j [ 2*(S/s_j)*alpha + 2*n/s_j*beta + n/S*gamma ]
 *   reduce:    the allgather replaced by a gather in the biggest block (+ alpha + n*beta when
 *              the root is outside it).
 *
 * Every range is reduced by one process and then copied, so all ranks get identical bits. The
 * input is copied into buf first (c->src is not read): a block of one process has no halving
 * step that could read it where it is, and sends buf on as it is. */
#include <stdlib.h>
#include "coll/algorithms/algorithms.h"

typedef struct {
    int start, levels;      /* my block: ranks [start, start + 2^levels) */
    int g;                  /* my rank in it */
    int big_levels;         /* log2 of the biggest block (ranks [0, 2^big_levels)) */
    int nblocks;
    int starts[32], sizes[32];
    int *rank_of;           /* group rank -> rank, for my block */
} blocks;

static int blocks_init(const mpiopt_coll *c, blocks *b)
{
    int start = 0;
    b->nblocks = 0;
    for (int k = 30; k >= 0; k--) {
        if (!(c->size & (1 << k)))
            continue;
        if (b->nblocks == 0)
            b->big_levels = k;
        b->starts[b->nblocks] = start;
        b->sizes[b->nblocks++] = 1 << k;
        if (c->rank >= start && c->rank < start + (1 << k)) {
            b->start = start;
            b->levels = k;
            b->g = c->rank - start;
        }
        start += 1 << k;
    }
    b->rank_of = malloc(sizeof(int) << b->levels);
    if (!b->rank_of)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < (1 << b->levels); i++)
        b->rank_of[i] = b->start + i;
    return MPI_SUCCESS;
}

/* Smaller blocks hand their reduced ranges to the biggest block, which reduces them in. */
static int to_biggest(const mpiopt_coll *c, const blocks *b, void *buf, void *tmp, size_t count)
{
    int big = 1 << b->big_levels, rc = MPI_SUCCESS;
    size_t lo, hi;
    if (b->start != 0) {
        int s = 1 << b->levels;
        for (int t = b->g; rc == MPI_SUCCESS && t < big; t += s) {
            mpiopt_halving_range(count, (unsigned)t, b->big_levels, &lo, &hi);
            rc = mpiopt_send(c, mpiopt_at(c, buf, lo), hi - lo, t);
        }
        return rc;
    }
    mpiopt_halving_range(count, (unsigned)b->g, b->big_levels, &lo, &hi);
    for (int j = 1; rc == MPI_SUCCESS && j < b->nblocks; j++) {
        rc = mpiopt_recv(c, mpiopt_at(c, tmp, lo), hi - lo, b->starts[j] + b->g % b->sizes[j]);
        if (rc == MPI_SUCCESS)
            rc = mpiopt_coll_reduce_left(c, mpiopt_at(c, tmp, lo), mpiopt_at(c, buf, lo), hi - lo);
    }
    return rc;
}

/* The reverse: the biggest block sends the finished ranges to the smaller blocks. */
static int from_biggest(const mpiopt_coll *c, const blocks *b, void *buf, size_t count)
{
    int big = 1 << b->big_levels, rc = MPI_SUCCESS;
    size_t lo, hi;
    if (b->start == 0) {
        mpiopt_halving_range(count, (unsigned)b->g, b->big_levels, &lo, &hi);
        for (int j = 1; rc == MPI_SUCCESS && j < b->nblocks; j++)
            rc = mpiopt_send(c, mpiopt_at(c, buf, lo), hi - lo, b->starts[j] + b->g % b->sizes[j]);
        return rc;
    }
    int s = 1 << b->levels;
    for (int t = b->g; rc == MPI_SUCCESS && t < big; t += s) {
        mpiopt_halving_range(count, (unsigned)t, b->big_levels, &lo, &hi);
        rc = mpiopt_recv(c, mpiopt_at(c, buf, lo), hi - lo, t);
    }
    return rc;
}

static int reduce_to_biggest(const mpiopt_coll *c, blocks *b, void *buf, size_t count)
{
    void *tmp = mpiopt_coll_scratch(c, count);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    int rc = mpiopt_reduce_scatter_halving(c, buf, tmp, count, buf, b->rank_of, b->levels, b->g);
    if (rc == MPI_SUCCESS)
        rc = to_biggest(c, b, buf, tmp, count);
    mpiopt_scratch_free(tmp);
    return rc;
}

int mpiopt_allreduce_binary_blocks(const mpiopt_coll *c, void *buf, size_t count)
{
    blocks b;
    int rc = blocks_init(c, &b);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = reduce_to_biggest(c, &b, buf, count);
    if (rc == MPI_SUCCESS)
        rc = from_biggest(c, &b, buf, count);
    if (rc == MPI_SUCCESS)
        rc = mpiopt_allgather_doubling(c, buf, count, b.rank_of, b.levels, b.g);
    free(b.rank_of);
    return rc;
}

int mpiopt_reduce_binary_blocks(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    blocks b;
    int rc = blocks_init(c, &b);
    if (rc != MPI_SUCCESS)
        return rc;
    int big = 1 << b.big_levels;
    int via = root < big ? root : 0;    /* the biggest block's member that gathers */
    rc = reduce_to_biggest(c, &b, buf, count);
    if (rc == MPI_SUCCESS && b.start == 0)
        rc = mpiopt_gather_halving(c, buf, count, b.rank_of, b.levels, b.g, via);
    if (rc == MPI_SUCCESS)
        rc = mpiopt_forward_result(c, buf, count, via, root);
    free(b.rank_of);
    return rc;
}

/* The terms in the top comment: Rabenseifner's on the biggest block, plus each smaller block's
 * exchange with it. */
double mpiopt_cost_binary_blocks(const mpiopt_cost_call *x, int is_reduce)
{
    if (x->p2 == x->p)    /* one block: Rabenseifner's halving and doubling */
        return mpiopt_cost_rabenseifner(x, is_reduce);
    double a = x->params->alpha, b = x->params->beta, g = x->params->gamma, n = x->n;
    double big = x->p2;
    double t = 2 * x->levels * a + 2 * (big - 1) / big * n * b + (big - 1) / big * n * g;
    for (int k = x->levels - 1; k >= 0; k--) {
        if (!(x->p & (1 << k)))
            continue;
        double s = (double)(1 << k);
        t += (big / s) * a + n / s * b + n / big * g;        /* to the biggest block */
        if (!is_reduce)
            t += (big / s) * a + n / s * b;                  /* and back */
    }
    return t;
}
