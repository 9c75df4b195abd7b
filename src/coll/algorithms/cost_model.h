/* What each algorithm's cost formula (mpiopt_cost_<name>, in the algorithm's own file, next to
 * the formula in its top comment) needs to price one call: the facts of the call and the ways of
 * pricing a message with measured patterns or plain alpha + m*beta. Pure C: no MPI calls. */
#ifndef MPIOPT_COST_MODEL_H
#define MPIOPT_COST_MODEL_H

#include "mpiopt.h"

typedef struct {
    const mpiopt_cost_params *params;
    int measured;           /* params hold patterns measured for this p (mpiopt-exchange) */
    int p;                  /* processes */
    int ranks_per_node;     /* params->ranks_per_node */
    int levels, lc;         /* floor(log2 p), ceil(log2 p) */
    double p2;              /* 2^levels */
    double n;               /* bytes */
    double fold_in;         /* the surplus fold of p - p2 ranks (0 for a power of two) */
    double fold;            /* the fold and the result sent back */
    double latency_rd;      /* measured latency of steps 0 … L-1 in sequence (0: none) */
    double latency_hd;      /* of steps 0 … L-1 then L-1 … 0 (0: none) */
} mpiopt_cost_call;

/* The facts of a call of `bytes` on p processes, priced with params (the fold's terms, the
 * measured patterns where params has them for p). */
mpiopt_cost_call mpiopt_cost_call_of(int p, double bytes, const mpiopt_cost_params *params);

/* The cost of one message of the ring pattern (rank r to r+1) on this call's processes. */
mpiopt_link_cost mpiopt_cost_ring_link(const mpiopt_cost_call *x);
/* Steps 0 … levels-1 at distance 2^k, `times` messages each of n bytes (halving: n / 2^(k+1)):
 * the bandwidth terms, plus the latency terms unless a measured latency of the whole sequence
 * (sequence_latency > 0) replaces them. */
double mpiopt_cost_steps(const mpiopt_cost_call *x, int levels, int times, int halving,
                         double sequence_latency);

/* The parameters an algorithm that chooses inner ones (hierarchical.c) prices them with: those
 * `auto` selects with. Selection owns them (built in, or MPIOPT_TUNING_FILE's) and registers its
 * source at load (select.c), so the algorithms include nothing above them. */
void mpiopt_cost_model_source(const mpiopt_cost_params *(*source)(void));
const mpiopt_cost_params *mpiopt_cost_model(void);

#endif
