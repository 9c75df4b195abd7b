/* Inclusive and exclusive scan (MPI_Scan, MPI_Exscan) by recursive doubling: at step k every
 * rank swaps the reduction of its group so far (the 2^k ranks it has heard from, itself included)
 * with the rank 2^k away; a message from a lower rank extends the prefix on the left (theirs op
 * mine), one from a higher rank only the group's total on the right (total op theirs). Every
 * reduction keeps rank order, so non-commutative ops are exact.
 *
 *   ceil(log2 p) * (alpha + n*beta + 2*n*gamma)
 *
 * No rank waits for all the others (rank 0 is done after one step on its own side), and p need
 * not be a power of two: a partner past the last rank is skipped. The exclusive scan is the same
 * exchange with the prefix started empty: rank 0's result is left as it was, as the standard
 * allows; rank 1's is rank 0's input. */
#include "coll/algorithms/algorithms.h"

int mpiopt_scan_recursive_doubling(const mpiopt_coll *c, void *buf, size_t count, int exclusive)
{
    size_t bytes = count * c->extent;
    const void *input = c->src ? c->src : buf;
    if (count == 0)
        return MPI_SUCCESS;
    if (c->size == 1)
        return exclusive || !c->src ? MPI_SUCCESS : mpiopt_coll_copy(c, buf, c->src, bytes);
    void *total = mpiopt_coll_scratch(c, count), *theirs = mpiopt_coll_scratch(c, count);
    int rc = total && theirs ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    int have_prefix = !exclusive;   /* buf holds a prefix (an inclusive scan starts with mine) */
    if (rc == MPI_SUCCESS)
        rc = mpiopt_coll_copy(c, total, input, bytes);
    if (rc == MPI_SUCCESS && !exclusive && c->src)
        rc = mpiopt_coll_copy(c, buf, c->src, bytes);
    for (int mask = 1; rc == MPI_SUCCESS && mask < c->size; mask <<= 1) {
        int partner = c->rank ^ mask;
        if (partner >= c->size)
            continue;
        rc = mpiopt_sendrecv(c, total, count, partner, theirs, count, partner);
        if (rc != MPI_SUCCESS)
            break;
        if (partner < c->rank) {        /* theirs are the ranks just below this group */
            if (have_prefix)
                rc = mpiopt_coll_reduce_left(c, theirs, buf, count);   /* buf = theirs op buf */
            else
                rc = mpiopt_coll_copy(c, buf, theirs, bytes);
            have_prefix = 1;
            if (rc == MPI_SUCCESS)
                rc = mpiopt_coll_reduce_left(c, theirs, total, count); /* total = theirs op total */
        } else {                        /* the ranks just above: total = total op theirs */
            rc = mpiopt_coll_reduce_right(c, total, theirs, count);
        }
    }
    mpiopt_scratch_free(theirs);
    mpiopt_scratch_free(total);
    return rc;
}

double mpiopt_cost_scan_recursive_doubling(const mpiopt_cost_call *x)
{
    return x->lc * (mpiopt_cost_steps(x, 1, 1, 0, 0) + 2 * x->n * x->params->gamma);
}
