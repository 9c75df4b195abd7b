/* Inclusive and exclusive scan (MPI_Scan, MPI_Exscan) by recursive doubling: at step k every
 * rank swaps the reduction of its group so far (the 2^k ranks it has heard from, itself included)
 * with the rank 2^k away; a message from a lower rank extends the prefix on the left (theirs op
 * mine), one from a higher rank only the group's total on the right (total op theirs). Every
 * reduction keeps rank order, so non-commutative ops are exact.
 *
 *   ceil(log2 p) * (alpha + n*beta + 2*n*gamma)       (at most; fewer where no one needs a total)
 *
 * No rank waits for all the others (rank 0 is done after one step on its own side), and p need
 * not be a power of two: a partner past the last rank is skipped. The exclusive scan is the same
 * exchange with the prefix started empty: rank 0's result is left as it was, as the standard
 * allows; rank 1's is rank 0's input. */
#include "coll/algorithms/algorithms.h"

/* 1 if rank q's total after the step of `mask` is still wanted: a later step sends it to a
 * higher rank (for its prefix) or to a lower one whose own total is wanted in turn. A total no
 * one wants is neither kept nor sent: at p = 2 rank 0 only sends and rank 1 only receives, as
 * in the vendors' linear scans. */
static int total_wanted(int q, int mask, int size)
{
    for (int m = mask << 1; m > 0 && m < size; m <<= 1) {
        int r = q ^ m;
        if (r < size && (r > q || total_wanted(r, m, size)))
            return 1;
    }
    return 0;
}

int mpiopt_scan_recursive_doubling(const mpiopt_coll *c, void *buf, size_t count, int exclusive)
{
    size_t bytes = count * c->extent;
    const void *input = c->src ? c->src : buf;
    if (count == 0)
        return MPI_SUCCESS;
    if (c->size == 1)
        return exclusive || !c->src ? MPI_SUCCESS : mpiopt_coll_copy(c, buf, c->src, bytes);
    void *theirs = NULL, *kept = NULL;     /* scratch, taken when first needed */
    int rc = MPI_SUCCESS;
    /* where this rank's prefix is (none yet in an exscan) and its group's total: the input until
     * the first reduction writes them (so no up-front copy), then buf and `kept` */
    const void *prefix = exclusive ? NULL : input, *total = input;
    for (int mask = 1; rc == MPI_SUCCESS && mask < c->size; mask <<= 1) {
        int partner = c->rank ^ mask;
        if (partner >= c->size)
            continue;
        int lower = partner < c->rank, keep = total_wanted(c->rank, mask, c->size);
        int give = !lower || total_wanted(partner, mask, c->size);
        int take = lower || keep;
        /* the first prefix of an exscan is the lower group's total itself: straight into buf,
         * unless buf still holds this rank's total (MPI_IN_PLACE) */
        void *in = lower && !prefix && total != buf ? buf : theirs;
        if ((take && in == NULL && !(in = theirs = mpiopt_coll_scratch(c, count))) ||
            (take && keep && !kept && !(kept = mpiopt_coll_scratch(c, count)))) {
            rc = MPI_ERR_NO_MEM;
            break;
        }
        if (give && take)
            rc = mpiopt_sendrecv(c, total, count, partner, in, count, partner);
        else if (give)
            rc = mpiopt_send(c, total, count, partner);
        else if (take)
            rc = mpiopt_recv(c, in, count, partner);
        if (rc != MPI_SUCCESS || !take)
            continue;
        if (keep) {     /* the total first: it may still be read from buf (in place) */
            if (total == kept)
                rc = lower ? mpiopt_coll_reduce_left(c, in, kept, count)      /* in op total */
                           : mpiopt_coll_reduce_right(c, kept, in, count);    /* total op in */
            else
                rc = lower ? mpiopt_coll_reduce3(c, in, total, kept, count)
                           : mpiopt_coll_reduce3(c, total, in, kept, count);
            total = kept;
        }
        if (rc == MPI_SUCCESS && lower) {   /* prefix = theirs op prefix, into buf */
            if (!prefix)                    /* an exscan's first: theirs alone */
                rc = in == buf ? MPI_SUCCESS : mpiopt_coll_copy(c, buf, in, bytes);
            else if (prefix == buf)
                rc = mpiopt_coll_reduce_left(c, in, buf, count);
            else
                rc = mpiopt_coll_reduce3(c, in, prefix, buf, count);
            prefix = buf;
        }
    }
    if (rc == MPI_SUCCESS && prefix && prefix != buf)    /* rank 0 of an inclusive scan */
        rc = mpiopt_coll_copy(c, buf, prefix, bytes);
    mpiopt_scratch_free(kept);
    mpiopt_scratch_free(theirs);
    return rc;
}

double mpiopt_cost_scan_recursive_doubling(const mpiopt_cost_call *x)
{
    /* the formula above: at most ceil(log2 p) steps, each reducing twice */
    return mpiopt_cost_steps(x, x->lc, 1, 0, 0) + 2 * x->lc * x->n * x->params->gamma;
}
