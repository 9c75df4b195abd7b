/* Ring allreduce and reduce: reduce-scatter around a ring, then allgather around it (allreduce)
 * or a gather of the p blocks at the root (reduce). Every process sends and reduces the same
 * amount at every step, the optimum for bandwidth, but latency grows with p.
 *
 *   reduce-scatter: (p-1)*alpha + (p-1)/p*n*(beta + gamma)
 *   allgather:      (p-1)*alpha + (p-1)/p*n*beta
 *   allreduce:      2*(p-1)*alpha + 2*(p-1)/p*n*beta + (p-1)/p*n*gamma
 *   reduce:         2*(p-1)*alpha + 2*(p-1)/p*n*beta + (p-1)/p*n*gamma   (the gather is linear)
 *
 * Large blocks are sent in segments so that reducing one segment overlaps receiving the next.
 * Each block is reduced in a rotated rank order: commutative ops only.
 *
 * In the reduce-scatter a rank reduces each block but its own exactly once, so it reads its input
 * where the caller left it (c->src): the first send comes from there, and each received block is
 * reduced with it straight into buf (3-buffer kernel). The allreduce thus needs no up-front copy
 * of its input (n bytes read + written); the allgather fills the rest of buf. */
#include <stdlib.h>
#include "coll/algorithms/algorithms.h"

/* Small enough that a segment stays in L2 while it is reduced, big enough that the per-message
 * cost is small against its transfer. */
#define RING_SEGMENT_BYTES (128 * 1024)

void mpiopt_ring_block(size_t count, int p, int b, size_t *lo, size_t *hi)
{
    size_t base = count / (size_t)p, rem = count % (size_t)p, ub = (size_t)b;
    *lo = ub * base + (ub < rem ? ub : rem);
    *hi = *lo + base + (ub < rem ? 1 : 0);
}

/* Block b's elements: [displs[b], displs[b + 1]), or mpiopt_ring_block's equal split. */
static void block_range(size_t count, int p, const size_t *displs, int b, size_t *lo, size_t *hi)
{
    if (!displs) {
        mpiopt_ring_block(count, p, b, lo, hi);
        return;
    }
    *lo = displs[b];
    *hi = displs[b + 1];
}

int mpiopt_reduce_scatter_ring_blocks(const mpiopt_coll *c, void *buf, void *tmp, size_t count,
                                      const size_t *displs, void *own_out)
{
    int p = c->size, r = c->rank, rc = MPI_SUCCESS;
    int right = (r + 1) % p, left = (r - 1 + p) % p;
    /* ending on block r + 1 (the allreduce's) or on this rank's own block r: one step earlier in
     * the rotation */
    int shift = own_out ? 1 : 0;
    size_t seg = RING_SEGMENT_BYTES / (c->extent ? c->extent : 1);
    if (seg == 0)
        seg = 1;
    size_t max_block = displs ? 0 : count / (size_t)p + 1;  /* the equal split's, or the largest */
    for (int b = 0; displs && b < p; b++)
        if (displs[b + 1] - displs[b] > max_block)
            max_block = displs[b + 1] - displs[b];
    int max_segs = (int)((max_block + seg - 1) / seg) + 1;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)max_segs);
    if (!reqs)
        return MPI_ERR_NO_MEM;
    /* this rank's data: the block it sends first is only ever sent (at step 0), every other
     * block is reduced once, into buf, and sent on from there */
    const void *mine = c->src ? c->src : buf;
    for (int s = 0; rc == MPI_SUCCESS && s < p - 1; s++) {
        size_t slo, shi, rlo, rhi;
        block_range(count, p, displs, (r - s - shift + 2 * p) % p, &slo, &shi);
        block_range(count, p, displs, (r - s - 1 - shift + 2 * p) % p, &rlo, &rhi);
        /* the last block reduced is the result: where the caller wants it */
        char *out = own_out && s == p - 2 ? (char *)own_out - rlo * c->extent
                                          : mpiopt_at(c, buf, 0);
        int nrecv = 0, nsend = 0;
        for (size_t lo = rlo; lo < rhi; lo += seg) {
            size_t n = rhi - lo < seg ? rhi - lo : seg;
            mpiopt_irecv(c, mpiopt_at(c, tmp, lo), n, left, &reqs[nrecv++]);
        }
        for (size_t lo = slo; lo < shi; lo += seg) {
            size_t n = shi - lo < seg ? shi - lo : seg;
            mpiopt_isend(c, mpiopt_at(c, s == 0 ? mine : buf, lo), n, right,
                         &reqs[max_segs + nsend++]);
        }
        /* segments of one sender arrive in order: reduce each as soon as it is in */
        int i = 0;
        for (size_t lo = rlo; lo < rhi && rc == MPI_SUCCESS; lo += seg, i++) {
            size_t n = rhi - lo < seg ? rhi - lo : seg;
            char *dst = mpiopt_at(c, out, lo), *theirs = mpiopt_at(c, tmp, lo);
            rc = mpiopt_waitall(c, 1, &reqs[i]);
            /* the 3-buffer kernel may write over its right operand, not its left: where the
             * result goes to tmp itself (buf == tmp), theirs is the right one (the op
             * commutes) */
            if (rc == MPI_SUCCESS)
                rc = dst == theirs
                         ? mpiopt_coll_reduce3(c, mpiopt_at(c, mine, lo), theirs, dst, n)
                         : mpiopt_coll_reduce3(c, theirs, mpiopt_at(c, mine, lo), dst, n);
        }
        if (rc == MPI_SUCCESS && nsend)
            rc = mpiopt_waitall(c, nsend, &reqs[max_segs]);
    }
    free(reqs);
    return rc;
}

int mpiopt_reduce_scatter_ring(const mpiopt_coll *c, void *buf, void *tmp, size_t count)
{
    return mpiopt_reduce_scatter_ring_blocks(c, buf, tmp, count, NULL, NULL);
}

int mpiopt_allgather_ring(const mpiopt_coll *c, void *buf, size_t count)
{
    int p = c->size, r = c->rank;
    int right = (r + 1) % p, left = (r - 1 + p) % p;
    for (int s = 0; s < p - 1; s++) {
        size_t slo, shi, rlo, rhi;
        mpiopt_ring_block(count, p, (r + 1 - s + p) % p, &slo, &shi);
        mpiopt_ring_block(count, p, (r - s + p) % p, &rlo, &rhi);
        int rc = mpiopt_sendrecv(c, mpiopt_at(c, buf, slo), shi - slo, right,
                                 mpiopt_at(c, buf, rlo), rhi - rlo, left);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int mpiopt_allreduce_ring(const mpiopt_coll *c, void *buf, size_t count)
{
    void *tmp = mpiopt_coll_scratch(c, count);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    int rc = mpiopt_reduce_scatter_ring(c, buf, tmp, count);
    mpiopt_scratch_free(tmp);
    if (rc == MPI_SUCCESS)
        rc = mpiopt_allgather_ring(c, buf, count);
    return rc;
}

int mpiopt_reduce_ring(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    int p = c->size, rc;
    void *tmp = mpiopt_coll_scratch(c, count);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    rc = mpiopt_reduce_scatter_ring(c, buf, tmp, count);
    mpiopt_scratch_free(tmp);
    if (rc != MPI_SUCCESS)
        return rc;
    size_t lo, hi;
    if (c->rank != root) {
        mpiopt_ring_block(count, p, (c->rank + 1) % p, &lo, &hi);
        return mpiopt_send(c, mpiopt_at(c, buf, lo), hi - lo, root);
    }
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)p);
    if (!reqs)
        return MPI_ERR_NO_MEM;
    int n = 0;
    for (int r = 0; r < p; r++) {
        if (r == root)
            continue;
        mpiopt_ring_block(count, p, (r + 1) % p, &lo, &hi);
        mpiopt_irecv(c, mpiopt_at(c, buf, lo), hi - lo, r, &reqs[n++]);
    }
    rc = mpiopt_waitall(c, n, reqs);
    free(reqs);
    return rc;
}

double mpiopt_cost_ring(const mpiopt_cost_call *x, int is_reduce)
{
    mpiopt_link_cost r = mpiopt_cost_ring_link(x);
    return 2 * (x->p - 1) * (r.alpha + x->n / x->p * r.beta) +
           (double)(x->p - 1) / x->p * x->n * x->params->gamma;
}
