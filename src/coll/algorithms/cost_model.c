/* The one cost model (Hockney / Rabenseifner): a message of m bytes costs alpha + m*beta,
 * reducing m bytes costs m*gamma; with measured patterns (mpiopt.h), each step of an algorithm
 * is priced by the pattern it sends in. `auto` selection (select.c) and `mpiopt model` (Python,
 * through ctypes) both call mpiopt_cost_seconds, so what is predicted is what is picked. Each
 * algorithm's formula is mpiopt_cost_<name> in its own file, under the formula in its top
 * comment; this file holds what they share. Pure C: no MPI calls, usable before MPI_Init. */
#include "coll/algorithms/algorithms.h"

static int log2_ceil(int p)
{
    int l = 0;
    while ((1 << l) < p)
        l++;
    return l;
}

/* The cost of one message of each pattern on p processes: measured (mpiopt-exchange) when the
 * parameters hold measurements for p, else alpha + m*beta for all. */
static mpiopt_link_cost step_link(const mpiopt_cost_call *x, int k)
{
    const mpiopt_cost_params *P = x->params;
    if (x->measured && P->exchange_steps > 0) {
        int last = P->exchange_steps - 1;
        return P->step[k < last ? k : last];    /* binomial's extra step for p != 2^L */
    }
    return (mpiopt_link_cost){P->alpha, P->beta};
}

static mpiopt_link_cost pattern_link(const mpiopt_cost_call *x, const mpiopt_link_cost *measured)
{
    if (x->measured)
        return *measured;
    return (mpiopt_link_cost){x->params->alpha, x->params->beta};
}

mpiopt_link_cost mpiopt_cost_ring_link(const mpiopt_cost_call *x)
{
    return pattern_link(x, &x->params->ring);
}

double mpiopt_cost_steps(const mpiopt_cost_call *x, int levels, int times, int halving,
                         double sequence_latency)
{
    double t = 0;
    for (int k = 0; k < levels; k++) {
        mpiopt_link_cost l = step_link(x, k);
        double m = halving ? x->n / (double)(2 << k) : x->n;
        t += times * (m * l.beta + (sequence_latency > 0 ? 0 : l.alpha));
    }
    return t + (sequence_latency > 0 ? sequence_latency : 0);
}

static const mpiopt_cost_params *(*model_source)(void);

void mpiopt_cost_model_source(const mpiopt_cost_params *(*source)(void))
{
    __atomic_store_n(&model_source, source, __ATOMIC_RELEASE);
}

const mpiopt_cost_params *mpiopt_cost_model(void)
{
    /* registered by a constructor of the same library, so before any call can get here */
    return __atomic_load_n(&model_source, __ATOMIC_ACQUIRE)();
}

mpiopt_cost_call mpiopt_cost_call_of(int p, double bytes, const mpiopt_cost_params *params)
{
    mpiopt_cost_call x = {.params = params, .p = p, .n = bytes, .lc = log2_ceil(p),
                          .ranks_per_node = params->ranks_per_node};
    x.p2 = mpiopt_pow2_floor(p, &x.levels);
    x.measured = params->exchange_ranks == p && params->exchange_steps == x.levels;
    mpiopt_link_cost f = pattern_link(&x, &params->fold);
    x.fold_in = x.p2 == p ? 0 : f.alpha + x.n * f.beta + x.n * params->gamma;
    x.fold = x.p2 == p ? 0 : x.fold_in + f.alpha + x.n * f.beta;
    x.latency_rd = x.measured ? params->doubling_latency : 0;
    x.latency_hd = x.measured ? params->halving_doubling_latency : 0;
    return x;
}

double mpiopt_cost_seconds(mpiopt_algorithm algorithm, int is_reduce, int p, double bytes,
                           const mpiopt_cost_params *params)
{
    if (p < 1 || bytes < 0 || !params || (int)algorithm < 0 || algorithm >= MPIOPT_ALG_COUNT)
        return -1;
    if (p == 1)
        return 0;
    if (algorithm == MPIOPT_ALG_AUTO) {
        double best = -1;
        for (int a = MPIOPT_ALG_AUTO + 1; a < MPIOPT_ALG_COUNT; a++) {
            double t = mpiopt_cost_seconds((mpiopt_algorithm)a, is_reduce, p, bytes, params);
            if (t >= 0 && (best < 0 || t < best))
                best = t;
        }
        return best;
    }
    if (!mpiopt_algorithms[algorithm].cost)
        return -1;    /* the vendor's algorithm is not modelled */
    mpiopt_cost_call x = mpiopt_cost_call_of(p, bytes, params);
    double t = mpiopt_algorithms[algorithm].cost(&x, is_reduce);
    /* a reduce that starts from a copy of its input (reduce.c) pays one more pass over it, as
     * long as a reduction's: at p = 2 this is what made the ring 2x slower than binomial, which
     * reads the input where it is, while the formulas alone ranked the ring first from 32 KiB */
    if (is_reduce && !(mpiopt_algorithms[algorithm].flags & MPIOPT_REDUCE_READS_SRC))
        t += x.n * params->gamma;
    return t;
}
