/* Reduce-scatter (MPI_Reduce_scatter_block, MPI_Reduce_scatter): rank r ends with block r,
 * elements [displs[r], displs[r + 1]), of the reduction of every rank's displs[p] elements, at the
 * start of recvbuf. This rank's input is at c->src, never NULL and never written: in place, the
 * entry (entry/reduce_scatter.c) reads it from the caller's recvbuf and hands the algorithm other
 * memory for the block, so that the rest of the caller's buffer stays as it was. recvbuf here is
 * written with the block alone.
 *
 *   ring      any p and blocks, commutative ops: the allreduce's ring phase (ring.c), turned to
 *             end on each rank's own block:   (p-1)*alpha + (p-1)/p*n*(beta + gamma)
 *   halving   every call; p a power of two and equal blocks: the recursive halving of
 *             halving_doubling.c:             log2(p)*alpha + (p-1)/p*n*(beta + gamma)
 *             It leaves rank g holding block bitreverse(g). For a commutative op the ranks take
 *             part in bit-reversed order, so each ends on its own block; for any other op they
 *             keep rank order (rank-ordered results) and swap blocks at the end:
 *                                             + alpha + n/p*beta
 *             Any other p or blocks (halving_folded): the surplus ranks fold in, the p2 members
 *             halve at their blocks' boundaries, and each block goes to its rank:
 *             alpha + n*(beta + gamma) + log2(p2)*alpha + (p2-1)/p2*n*(beta + gamma)
 *                                             + alpha + 2n/p*beta
 *   binomial  any p, blocks and op: a binomial reduce to rank 0 (rank order), then rank 0 sends
 *             each rank its block:            log2(p)*(alpha + n*(beta + gamma)) + (p-1)*alpha
 *                                             + (p-1)/p*n*beta
 *   shared_memory  any call: every rank copies its input into the node's window (in pieces of
 *             a window buffer) and reduces its own block of the p inputs (shared_memory.c: no
 *             message; one copy in, n/p*p elements read). Where the ranks share no window or a
 *             schedule records the call, the shared-memory allreduce's fallback (recursive
 *             doubling, Rabenseifner) of the whole buffer, of which each rank keeps its block
 * The ring needs count elements of scratch (none more for the blocks in between: they stay in
 * it), halving count more, binomial count. */
#include <stdlib.h>
#include "coll/algorithms/algorithms.h"

/* p = 1: the block is the input. */
static int alone(const mpiopt_coll *c, void *recvbuf, const size_t *displs)
{
    if (displs[1] == 0)
        return MPI_SUCCESS;
    return mpiopt_coll_copy(c, recvbuf, c->src, displs[1] * c->extent);
}

int mpiopt_reduce_scatter_blocks_ring(const mpiopt_coll *c, void *recvbuf, const size_t *displs)
{
    if (c->size == 1)
        return alone(c, recvbuf, displs);
    size_t count = displs[c->size];
    void *tmp = mpiopt_coll_scratch(c, count);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    /* the blocks in between stay in tmp (the input is not touched); the own block's result goes
     * straight to recvbuf */
    int rc = mpiopt_reduce_scatter_ring_blocks(c, tmp, tmp, count, displs, recvbuf);
    mpiopt_scratch_free(tmp);
    return rc;
}

static unsigned bit_reverse(unsigned x, int levels)
{
    unsigned y = 0;
    for (int i = 0; i < levels; i++)
        y |= ((x >> i) & 1u) << (levels - 1 - i);
    return y;
}

/* Halving for any p and blocks: the ranks beyond a power of two fold in (rank 2m's input to rank
 * 2m + 1, which reduces it: Rabenseifner's non-power-of-two step), the p2 members halve at the
 * boundaries of the blocks they stand for (member m: ranks 2m and 2m + 1 while m < surplus, else
 * rank m + surplus), and the member holding each rank's block sends it there. The input is read
 * where it is, the results kept in scratch until then. */
static int halving_folded(const mpiopt_coll *c, void *recvbuf, const size_t *displs)
{
    int p = c->size, me = c->rank, rc, levels, p2 = mpiopt_pow2_floor(p, &levels);
    int surplus = p - p2;
    size_t count = displs[p], lo = displs[me], n = displs[me + 1] - lo;
    mpiopt_coll in = *c;
    void *buf = mpiopt_coll_scratch(c, count);
    size_t *cuts = malloc(sizeof *cuts * ((size_t)p2 + 1));
    mpiopt_fold f = {.tmp = NULL, .rank_of = NULL};
    if (!buf || !cuts) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    for (int m = 0; m < p2; m++)
        cuts[m] = displs[m < surplus ? 2 * m : m + surplus];
    cuts[p2] = count;
    if ((rc = mpiopt_fold_begin(&in, buf, count, &f)) != MPI_SUCCESS)
        goto out;
    MPI_Request reqs[3];
    int nreqs = 0;
    if (f.g >= 0) {
        rc = mpiopt_reduce_scatter_halving_cuts(&in, buf, f.tmp, cuts, f.mine, f.rank_of, levels,
                                                f.g);
        if (rc != MPI_SUCCESS)
            goto out;
        int held = (int)bit_reverse((unsigned)f.g, levels);   /* its blocks' member index */
        int from = held < surplus ? 2 * held : held + surplus;
        int to = held < surplus ? from + 1 : from;
        for (int r = from; r <= to && rc == MPI_SUCCESS; r++) {
            size_t r_n = displs[r + 1] - displs[r];
            if (r != me && r_n > 0)
                rc = mpiopt_isend(c, mpiopt_at(c, buf, displs[r]), r_n, r, &reqs[nreqs++]);
            else if (r == me)
                rc = mpiopt_coll_copy(c, recvbuf, mpiopt_at(c, buf, lo), n * c->extent);
        }
    }
    int member = me < 2 * surplus ? me / 2 : me - surplus;
    int holder = f.rank_of[bit_reverse((unsigned)member, levels)];
    if (holder != me && n > 0 && rc == MPI_SUCCESS)
        rc = mpiopt_irecv(c, recvbuf, n, holder, &reqs[nreqs++]);
    int wait_rc = nreqs ? mpiopt_waitall(c, nreqs, reqs) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS)
        rc = wait_rc;
out:
    mpiopt_fold_end(&f);
    mpiopt_scratch_free(buf);
    free(cuts);
    return rc;
}

int mpiopt_reduce_scatter_blocks_halving(const mpiopt_coll *c, void *recvbuf,
                                         const size_t *displs)
{
    int p = c->size, levels = 0;
    if (p == 1)
        return alone(c, recvbuf, displs);
    for (int r = 1; r < p; r++)
        if (displs[r + 1] - displs[r] != displs[1])
            return halving_folded(c, recvbuf, displs);
    if (p & (p - 1))
        return halving_folded(c, recvbuf, displs);
    while ((1 << levels) < p)
        levels++;
    size_t count = displs[p], block = displs[1];    /* equal blocks: count = p * block */
    int *rank_of = malloc(sizeof(int) * (size_t)p);
    void *tmp = mpiopt_coll_scratch(c, count);
    void *buf = mpiopt_coll_scratch(c, count);
    int rc = MPI_ERR_NO_MEM;
    if (!rank_of || !tmp || !buf)
        goto out;
    /* member g of the halving holds block bitreverse(g) at the end */
    for (int g = 0; g < p; g++)
        rank_of[g] = c->commutative ? (int)bit_reverse((unsigned)g, levels) : g;
    int g = c->commutative ? (int)bit_reverse((unsigned)c->rank, levels) : c->rank;
    rc = mpiopt_reduce_scatter_halving(c, buf, tmp, count, c->src, rank_of, levels, g);
    if (rc != MPI_SUCCESS)
        goto out;
    int held = (int)bit_reverse((unsigned)g, levels);   /* the block this rank has reduced */
    void *result = mpiopt_at(c, buf, (size_t)held * block);
    if (held == c->rank)
        rc = mpiopt_coll_copy(c, recvbuf, result, block * c->extent);
    else    /* rank order kept: the holder of this rank's block is rank `held` (an involution) */
        rc = mpiopt_sendrecv(c, result, block, held, recvbuf, block, held);
out:
    mpiopt_scratch_free(buf);
    mpiopt_scratch_free(tmp);
    free(rank_of);
    return rc;
}

int mpiopt_reduce_scatter_blocks_shared_memory(const mpiopt_coll *c, void *recvbuf,
                                                const size_t *displs)
{
    if (c->size == 1)
        return alone(c, recvbuf, displs);
    size_t count = displs[c->size], lo = displs[c->rank], n = displs[c->rank + 1] - lo;
    int done, rc = mpiopt_reduce_scatter_shared_memory(c, recvbuf, displs, &done);
    if (rc != MPI_SUCCESS || done)
        return rc;
    /* no window here (or a schedule records the call): the allreduce's fallback, recursive
     * doubling, of the whole buffer in scratch, of which this rank keeps its block */
    void *buf = mpiopt_coll_scratch(c, count);
    rc = buf ? mpiopt_allreduce_shared_memory(c, buf, count) : MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS && n > 0)
        rc = mpiopt_coll_copy(c, recvbuf, mpiopt_at(c, buf, lo), n * c->extent);
    mpiopt_scratch_free(buf);
    return rc;
}

int mpiopt_reduce_scatter_blocks_binomial(const mpiopt_coll *c, void *recvbuf,
                                          const size_t *displs)
{
    int p = c->size, rc;
    if (p == 1)
        return alone(c, recvbuf, displs);
    size_t count = displs[p];
    void *buf = mpiopt_coll_scratch(c, count);    /* the reduce's */
    if (!buf)
        return MPI_ERR_NO_MEM;
    rc = mpiopt_reduce_binomial(c, buf, count, 0);
    if (rc == MPI_SUCCESS && c->rank != 0) {
        size_t n = displs[c->rank + 1] - displs[c->rank];
        if (n)
            rc = mpiopt_recv(c, recvbuf, n, 0);
    } else if (rc == MPI_SUCCESS) {
        MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)p);
        int nreq = 0;
        if (!reqs)
            rc = MPI_ERR_NO_MEM;
        for (int r = 1; reqs && r < p; r++)
            if (displs[r + 1] > displs[r])
                mpiopt_isend(c, mpiopt_at(c, buf, displs[r]), displs[r + 1] - displs[r], r,
                             &reqs[nreq++]);
        if (reqs) {
            if (displs[1] > 0)
                rc = mpiopt_coll_copy(c, recvbuf, buf, displs[1] * c->extent);
            int wrc = mpiopt_waitall(c, nreq, reqs);
            rc = rc != MPI_SUCCESS ? rc : wrc;
            free(reqs);
        }
    }
    mpiopt_scratch_free(buf);
    return rc;
}

/* The formulas of the top comment (n: the whole buffer's bytes). */
double mpiopt_cost_reduce_scatter_rabenseifner(const mpiopt_cost_call *x)
{
    double halving = mpiopt_cost_steps(x, x->levels, 1, 1, 0) +
                     (x->p2 - 1) / x->p2 * x->n * x->params->gamma;
    if (x->p2 == x->p)
        return halving;
    mpiopt_link_cost last = mpiopt_cost_ring_link(x);    /* each block to its rank */
    return x->fold_in + halving + last.alpha + 2 * x->n / x->p * last.beta;
}

double mpiopt_cost_reduce_scatter_ring(const mpiopt_cost_call *x)
{
    mpiopt_link_cost r = mpiopt_cost_ring_link(x);
    return (x->p - 1) * (r.alpha + x->n / x->p * r.beta) +
           (double)(x->p - 1) / x->p * x->n * x->params->gamma;
}

double mpiopt_cost_reduce_scatter_binomial(const mpiopt_cost_call *x)
{
    mpiopt_link_cost r = mpiopt_cost_ring_link(x);
    return mpiopt_cost_steps(x, x->lc, 1, 0, 0) + x->lc * x->n * x->params->gamma +
           (x->p - 1) * r.alpha + (double)(x->p - 1) / x->p * x->n * r.beta;
}
