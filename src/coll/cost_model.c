/* The one cost model (Hockney / Rabenseifner): a message of m bytes costs alpha + m*beta,
 * reducing m bytes costs m*gamma; with measured patterns (mpiopt.h), each step of an algorithm
 * is priced by the pattern it sends in. `auto` selection (select.c) and `mpiopt model` (Python,
 * through ctypes) both call mpiopt_cost_seconds, so what is predicted is what is picked. Pure C:
 * no MPI calls, usable before MPI_Init. Each formula is the one at the top of the algorithm's
 * file. */
#include "mpiopt.h"

static const char *const names[MPIOPT_ALG_COUNT] = {
    "auto", "vendor", "binomial", "recursive_doubling", "ring", "rabenseifner", "binary_blocks",
};

const char *mpiopt_algorithm_name(mpiopt_algorithm algorithm)
{
    if ((int)algorithm < 0 || algorithm >= MPIOPT_ALG_COUNT)
        return "unknown";
    return names[algorithm];
}

static double log2_floor(int p)
{
    int l = 0;
    while ((2 << l) <= p)
        l++;
    return l;
}

static double log2_ceil(int p)
{
    int l = 0;
    while ((1 << l) < p)
        l++;
    return l;
}

/* Binary blocks: the extra terms of the smaller blocks (see binary_blocks.c). */
static double binary_blocks_seconds(int is_reduce, int p, double n, double a, double b, double g)
{
    int big_levels = (int)log2_floor(p);
    double big = (double)(1 << big_levels);
    double t = 2 * big_levels * a + 2 * (big - 1) / big * n * b + (big - 1) / big * n * g;
    for (int k = big_levels - 1; k >= 0; k--) {
        if (!(p & (1 << k)))
            continue;
        double s = (double)(1 << k);
        t += (big / s) * a + n / s * b + n / big * g;        /* to the biggest block */
        if (!is_reduce)
            t += (big / s) * a + n / s * b;                  /* and back */
    }
    return t;
}

/* The cost of one message of each pattern on p processes: measured (mpiopt-exchange) when the
 * parameters hold measurements for p, else alpha + m*beta for all. */
typedef struct {
    const mpiopt_cost_params *params;
    int measured;
} pricing;

static mpiopt_link_cost step_link(const pricing *pr, int k)
{
    const mpiopt_cost_params *P = pr->params;
    if (pr->measured && P->exchange_steps > 0) {
        int last = P->exchange_steps - 1;
        return P->step[k < last ? k : last];    /* binomial's extra step for p != 2^L */
    }
    return (mpiopt_link_cost){P->alpha, P->beta};
}

static mpiopt_link_cost pattern_link(const pricing *pr, const mpiopt_link_cost *measured)
{
    if (pr->measured)
        return *measured;
    return (mpiopt_link_cost){pr->params->alpha, pr->params->beta};
}

/* Steps 0 … levels-1 at distance 2^k, `times` messages each of bytes_at(k) bytes: the bandwidth
 * terms, plus the latency terms unless a measured latency of the whole sequence replaces them. */
static double steps_seconds(const pricing *pr, int levels, int times, double n, int halving,
                            double sequence_latency)
{
    double t = 0;
    for (int k = 0; k < levels; k++) {
        mpiopt_link_cost l = step_link(pr, k);
        double m = halving ? n / (double)(2 << k) : n;
        t += times * (m * l.beta + (sequence_latency > 0 ? 0 : l.alpha));
    }
    return t + (sequence_latency > 0 ? sequence_latency : 0);
}

double mpiopt_cost_seconds(mpiopt_algorithm algorithm, int is_reduce, int p, double bytes,
                           const mpiopt_cost_params *params)
{
    if (p < 1 || bytes < 0 || !params)
        return -1;
    if (p == 1)
        return 0;
    double a = params->alpha, b = params->beta, g = params->gamma, n = bytes;
    int levels = (int)log2_floor(p), lc = (int)log2_ceil(p);
    double p2 = (double)(1 << levels);
    pricing pr = {params, params->exchange_ranks == p && params->exchange_steps == levels};
    mpiopt_link_cost f = pattern_link(&pr, &params->fold);
    /* the surplus fold, and the result sent back (Rabenseifner's reduce needs no way back) */
    double fold_in = p2 == p ? 0 : f.alpha + n * f.beta + n * g;
    double fold = p2 == p ? 0 : fold_in + f.alpha + n * f.beta;
    double latency_rd = pr.measured ? params->doubling_latency : 0;
    double latency_hd = pr.measured ? params->halving_doubling_latency : 0;
    switch (algorithm) {
    case MPIOPT_ALG_BINOMIAL:
        /* reduce up the tree (and, for allreduce, broadcast down it) */
        return steps_seconds(&pr, lc, is_reduce ? 1 : 2, n, 0, 0) + lc * n * g;
    case MPIOPT_ALG_RECURSIVE_DOUBLING:
        /* reduce: the allreduce, the root keeps the result */
        return steps_seconds(&pr, levels, 1, n, 0, latency_rd) + levels * n * g + fold;
    case MPIOPT_ALG_RING: {
        mpiopt_link_cost r = pattern_link(&pr, &params->ring);
        return 2 * (p - 1) * (r.alpha + n / p * r.beta) + (double)(p - 1) / p * n * g;
    }
    case MPIOPT_ALG_RABENSEIFNER:
        /* halving then doubling (or the gather): 2 messages at step k, of n / 2^(k+1) bytes */
        return steps_seconds(&pr, levels, 2, n, 1, latency_hd) + (p2 - 1) / p2 * n * g +
               (is_reduce ? fold_in : fold);
    case MPIOPT_ALG_BINARY_BLOCKS:
        if (p2 == p)    /* one block: Rabenseifner's halving and doubling */
            return mpiopt_cost_seconds(MPIOPT_ALG_RABENSEIFNER, is_reduce, p, bytes, params);
        return binary_blocks_seconds(is_reduce, p, n, a, b, g);
    case MPIOPT_ALG_AUTO: {
        double best = -1;
        for (int alg = MPIOPT_ALG_BINOMIAL; alg < MPIOPT_ALG_COUNT; alg++) {
            double t = mpiopt_cost_seconds((mpiopt_algorithm)alg, is_reduce, p, bytes, params);
            if (t >= 0 && (best < 0 || t < best))
                best = t;
        }
        return best;
    }
    default:
        return -1;    /* the vendor's algorithm is not modelled */
    }
}
