/* Phases shared by recursive doubling, Rabenseifner and binary blocks, for allreduce and reduce.
 *
 * On a group of q = 2^L processes holding n bytes each:
 *   reduce-scatter by recursive halving:  L*alpha + (q-1)/q*n*(beta + gamma)
 *   allgather by recursive doubling:      L*alpha + (q-1)/q*n*beta
 *   binomial gather of the halves:        L*alpha + (q-1)/q*n*beta
 *   fold of p - q surplus ranks:          alpha + n*(beta + gamma)   (and alpha + n*beta back)
 *
 * Halving starts with the nearest partner (distance 1, 2, 4, …): after step i a process holds
 * the reduction over 2^(i+1) consecutive group members, lower members on the left, so the result
 * is in rank order and non-commutative ops are safe.
 *
 * The fold and the first halving step read this rank's data where the caller left it (c->src)
 * and reduce it straight into buf with the 3-buffer kernel, so an allreduce needs no up-front
 * copy of its input into the result buffer (n bytes read + written, which the terms above do
 * not count). */
#include <stdlib.h>
#include <string.h>
#include "coll/algorithms/algorithms.h"

/* Both forms below: the range halves by elements (cuts NULL) or at the member boundaries of
 * cuts (2^levels + 1 element offsets: member index k's range is [cuts[k], cuts[k + 1])). */
static int halving(const mpiopt_coll *c, void *buf, void *tmp, size_t count, const size_t *cuts,
                   const void *mine, const int *rank_of, int levels, int g)
{
    size_t lo = 0, hi = count;
    unsigned first = 0, last = 1u << levels;    /* the member indices of [lo, hi) with cuts */
    if (levels == 0 && mine != buf && count > 0)    /* a group of one: the range is all of it */
        mpiopt_coll_copy(c, buf, mine, count * c->extent);
    for (int i = 0; i < levels; i++, mine = buf) {
        int partner = g ^ (1 << i);
        unsigned middle = first + (last - first) / 2;
        size_t mid = cuts ? cuts[middle] : lo + (hi - lo) / 2;
        int upper = (g >> i) & 1;
        size_t keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
        size_t send_lo = upper ? lo : mid, send_hi = upper ? mid : hi;
        size_t keep_n = keep_hi - keep_lo;
        int peer = rank_of[partner];
        int rc = mpiopt_sendrecv(c, mpiopt_at(c, mine, send_lo), send_hi - send_lo, peer,
                                 mpiopt_at(c, tmp, keep_lo), keep_n, peer);
        if (rc != MPI_SUCCESS)
            return rc;
        rc = mpiopt_coll_reduce_mine(c, mpiopt_at(c, mine, keep_lo), mpiopt_at(c, tmp, keep_lo),
                                     mpiopt_at(c, buf, keep_lo), keep_n, partner > g);
        if (rc != MPI_SUCCESS)
            return rc;
        lo = keep_lo;
        hi = keep_hi;
        if (upper)
            first = middle;
        else
            last = middle;
    }
    return MPI_SUCCESS;
}

int mpiopt_reduce_scatter_halving(const mpiopt_coll *c, void *buf, void *tmp, size_t count,
                                  const void *mine, const int *rank_of, int levels, int g)
{
    return halving(c, buf, tmp, count, NULL, mine, rank_of, levels, g);
}

int mpiopt_reduce_scatter_halving_cuts(const mpiopt_coll *c, void *buf, void *tmp,
                                       const size_t *cuts, const void *mine, const int *rank_of,
                                       int levels, int g)
{
    return halving(c, buf, tmp, cuts[1u << levels], cuts, mine, rank_of, levels, g);
}

int mpiopt_allgather_doubling(const mpiopt_coll *c, void *buf, size_t count, const int *rank_of,
                              int levels, int g)
{
    for (int i = levels - 1; i >= 0; i--) {
        int partner = g ^ (1 << i);
        size_t mlo, mhi, plo, phi;
        mpiopt_halving_range(count, (unsigned)g, i + 1, &mlo, &mhi);
        mpiopt_halving_range(count, (unsigned)partner, i + 1, &plo, &phi);
        int peer = rank_of[partner];
        int rc = mpiopt_sendrecv(c, mpiopt_at(c, buf, mlo), mhi - mlo, peer,
                                 mpiopt_at(c, buf, plo), phi - plo, peer);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int mpiopt_gather_halving(const mpiopt_coll *c, void *buf, size_t count, const int *rank_of,
                          int levels, int g, int dst)
{
    int relative = g ^ dst;
    for (int i = levels - 1; i >= 0; i--) {
        int partner = g ^ (1 << i);
        size_t lo, hi;
        int rc;
        if (relative & (1 << i)) {
            mpiopt_halving_range(count, (unsigned)g, i + 1, &lo, &hi);
            return mpiopt_send(c, mpiopt_at(c, buf, lo), hi - lo, rank_of[partner]);
        }
        mpiopt_halving_range(count, (unsigned)partner, i + 1, &lo, &hi);
        rc = mpiopt_recv(c, mpiopt_at(c, buf, lo), hi - lo, rank_of[partner]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int mpiopt_fold_in(const mpiopt_coll *c, void *buf, size_t count, mpiopt_fold *f)
{
    int p2 = mpiopt_pow2_floor(c->size, &f->levels);
    int surplus = c->size - p2;
    for (int m = 0; m < p2; m++)
        f->rank_of[m] = m < surplus ? 2 * m + 1 : m + surplus;
    f->mine = c->src ? c->src : buf;
    if (c->rank >= 2 * surplus) {
        f->g = c->rank - surplus;
        return MPI_SUCCESS;
    }
    if (c->rank % 2 == 0) {
        f->g = -1;
        int rc = mpiopt_send(c, f->mine, count, c->rank + 1);
        f->mine = buf;  /* sits out: fold_out brings the result into buf */
        return rc;
    }
    f->g = c->rank / 2;
    int rc = mpiopt_recv(c, f->tmp, count, c->rank - 1);
    if (rc == MPI_SUCCESS)
        rc = mpiopt_coll_reduce_mine(c, f->mine, f->tmp, buf, count, 0);
    f->mine = buf;
    return rc;
}

int mpiopt_fold_out(const mpiopt_coll *c, void *buf, size_t count)
{
    int surplus = c->size - mpiopt_pow2_floor(c->size, NULL);
    if (c->rank >= 2 * surplus)
        return MPI_SUCCESS;
    if (c->rank % 2 == 1)
        return mpiopt_send(c, buf, count, c->rank - 1);
    return mpiopt_recv(c, buf, count, c->rank + 1);
}

int mpiopt_fold_begin(const mpiopt_coll *c, void *buf, size_t count, mpiopt_fold *f)
{
    f->g = -1;
    f->levels = 0;
    f->mine = buf;
    f->tmp = mpiopt_coll_scratch(c, count);
    f->rank_of = malloc(sizeof(int) * (size_t)c->size);
    if (!f->tmp || !f->rank_of)
        return MPI_ERR_NO_MEM;
    return mpiopt_fold_in(c, buf, count, f);
}

void mpiopt_fold_end(mpiopt_fold *f)
{
    mpiopt_scratch_free(f->tmp);
    free(f->rank_of);
    f->tmp = NULL;
    f->rank_of = NULL;
}
