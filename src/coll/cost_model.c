/* The one cost model (Hockney / Rabenseifner): a message of m bytes costs alpha + m*beta,
 * reducing m bytes costs m*gamma. `auto` selection (select.c) and `mpiopt model` (Python, through
 * ctypes) both call mpiopt_cost_seconds, so what is predicted is what is picked. Pure C: no MPI
 * calls, usable before MPI_Init. Each formula is the one at the top of the algorithm's file. */
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

double mpiopt_cost_seconds(mpiopt_algorithm algorithm, int is_reduce, int p, double bytes,
                           const mpiopt_cost_params *params)
{
    if (p < 1 || bytes < 0 || !params)
        return -1;
    if (p == 1)
        return 0;
    double a = params->alpha, b = params->beta, g = params->gamma, n = bytes;
    double p2 = (double)(1 << (int)log2_floor(p)), l2 = log2_floor(p), lc = log2_ceil(p);
    double fold = p2 != p ? 2 * a + 2 * n * b + n * g : 0;
    switch (algorithm) {
    case MPIOPT_ALG_BINOMIAL:
        return is_reduce ? lc * (a + n * b + n * g) : lc * (2 * a + 2 * n * b + n * g);
    case MPIOPT_ALG_RECURSIVE_DOUBLING:
        /* reduce: the allreduce, the root keeps the result */
        return l2 * (a + n * b + n * g) + fold;
    case MPIOPT_ALG_RING:
        return 2 * (p - 1) * a + 2.0 * (p - 1) / p * n * b + (double)(p - 1) / p * n * g;
    case MPIOPT_ALG_RABENSEIFNER: {
        double t = 2 * l2 * a + 2 * (p2 - 1) / p2 * n * b + (p2 - 1) / p2 * n * g;
        if (p2 != p)
            t += is_reduce ? a + n * b + n * g : fold;
        return t;
    }
    case MPIOPT_ALG_BINARY_BLOCKS:
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
