/* What hierarchical.c (the algorithm) and hierarchical_cost.c (its pricing) share. */
#ifndef MPIOPT_HIERARCHICAL_H
#define MPIOPT_HIERARCHICAL_H

#include "coll/algorithms/algorithms.h"

#define MAX_ROUND_BITS 4    /* rounds of shares across nodes: up to 16 nodes a round */
#define MAX_ROUNDS 32

static inline int pow2(int x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

/* log2 of a power of two */
static inline int log2_of(int x)
{
    int l = 0;
    while ((1 << l) < x)
        l++;
    return l;
}

/* The parameters of one level: inside a node (intra = 1), or between nodes (intra = 0), where
 * `flows` ranks of a node send at once through its one link. */
mpiopt_cost_params mpiopt_hier_level_params(const mpiopt_cost_params *P, int intra, int flows);
/* The cheapest flat algorithm for one level (its cost in *t, if t) */
mpiopt_algorithm mpiopt_hier_flat_algorithm(const mpiopt_cost_params *level, int is_reduce,
                                            int p, double bytes, int commutative, double *t);
/* The bits a round (1 … log2 m) of the whole-vector rounds across nodes; their cost in *t */
int mpiopt_hier_radix_bits(const mpiopt_cost_params *intra, const mpiopt_cost_params *P,
                           int nodes, int m, double n, double *t);
/* The rounds of shares across nodes (bits[i] bits each, lowest first; at most MAX_ROUNDS) whose
 * reduce-scatter and allgather of `bytes` cost least: their number; their cost in *t */
int mpiopt_hier_share_rounds(const mpiopt_cost_params *P, int nodes, int m, double bytes,
                             int *bits, double *t);
/* The predicted seconds of the whole-vector split and of the shares split */
void mpiopt_hier_variant_costs(const mpiopt_cost_params *P, int is_reduce, int nodes, int m,
                               double n, int uniform, double *whole, double *shares);

#endif
