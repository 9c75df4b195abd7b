/* hierarchical's pricing (hierarchical.c runs the algorithm): the parameters of each level, the
 * flat algorithm a level would run, the rounds across nodes (whole vector and shares), the two
 * ways of splitting the work, and mpiopt_cost_hierarchical, which `auto` calls. Pure C: no MPI
 * calls, like every cost formula (cost_model.h). */
#include <math.h>
#include "coll/algorithms/algorithms.h"
#include "coll/algorithms/hierarchical.h"

/* The parameters of one level: inside a node (intra = 1: intra_alpha, intra_beta where set), or
 * between nodes (intra = 0: alpha, beta), where the node's `flows` ranks send at once through
 * its one link, each at 1/flows of its bandwidth. Patterns measured on all ranks are neither's. */
mpiopt_cost_params mpiopt_hier_level_params(const mpiopt_cost_params *P, int intra, int flows)
{
    mpiopt_cost_params l = {.alpha = P->alpha, .beta = P->beta * flows, .gamma = P->gamma};
    if (intra && P->intra_alpha > 0)
        l.alpha = P->intra_alpha;
    if (intra && P->intra_beta > 0)
        l.beta = P->intra_beta;
    return l;
}

/* The flat algorithm (and its cost in *t) for one level: the cheapest the cost model names for
 * p processes and the bytes, among those that fit the op (never this one, nor shared_memory,
 * which needs one node). A function of facts every rank of the level agrees on. */
mpiopt_algorithm mpiopt_hier_flat_algorithm(const mpiopt_cost_params *level, int is_reduce,
                                            int p, double bytes, int commutative, double *t)
{
    mpiopt_algorithm best = is_reduce ? MPIOPT_ALG_BINOMIAL : MPIOPT_ALG_RABENSEIFNER;
    double best_t = -1;
    for (int a = 0; a < MPIOPT_ALG_COUNT; a++) {
        if (!mpiopt_algorithms[a].cost || a == MPIOPT_ALG_HIERARCHICAL ||
            a == MPIOPT_ALG_SHARED_MEMORY || !mpiopt_algorithm_fits(a, p, commutative))
            continue;
        double ta = mpiopt_cost_seconds((mpiopt_algorithm)a, is_reduce, p, bytes, level);
        if (ta >= 0 && (best_t < 0 || ta < best_t)) {
            best_t = ta;
            best = (mpiopt_algorithm)a;
        }
    }
    if (t)
        *t = best_t < 0 ? 0 : best_t;
    return best;
}

/* α and a rank's β of a network step whose farthest partner is 2^k ranks away, with `flows` of
 * a node's m ranks sending at once: with patterns measured for this job (every rank sending to
 * the rank 2^k away), that step's α and its β (all m ranks of a node sending) scaled to the ranks
 * that do; else the network's α, β with that many flows. */
static void network_step(const mpiopt_cost_params *P, int nodes, int m, int k, int flows,
                         double *alpha, double *beta)
{
    if (P->exchange_ranks == nodes * m && k < P->exchange_steps && P->step[k].alpha > 0) {
        *alpha = P->step[k].alpha;
        *beta = P->step[k].beta * flows / m;
        return;
    }
    mpiopt_cost_params inter = mpiopt_hier_level_params(P, 0, flows);
    *alpha = inter.alpha;
    *beta = inter.beta;
}

/* The network part of a whole-vector round that takes `bits` bits of the node number from
 * `shift` up: m - m/r ranks of each node swap at once with nodes up to (r - 1) << shift away. */
static double round_swap_cost(const mpiopt_cost_params *P, int nodes, int m, int shift, int bits,
                              double n)
{
    int r = 1 << bits, flows = m - m / r;
    double alpha, beta;
    network_step(P, nodes, m, shift + bits - 1 + log2_of(m), flows, &alpha, &beta);
    return alpha + n * beta;
}

/* The whole-vector allreduce across nodes by rounds of `lb` bits of the node number (the last
 * round fewer), each node combining with up to 2^lb - 1 others at once (whole_allreduce_radix):
 * its predicted seconds. In a round of r < m nodes the node's m / r subgroups of r ranks all do
 * the round's work. */
static double radix_cost(const mpiopt_cost_params *intra, const mpiopt_cost_params *P, int nodes,
                         int m, double n, int lb)
{
    int ln = log2_of(nodes);
    double t = 0;
    if (lb < 1 || lb > log2_of(m))
        return 1e30;    /* one rank a node: no round can take more than one other node */
    for (int shift = 0; shift < ln; shift += lb) {
        int bits = ln - shift < lb ? ln - shift : lb;
        t += round_swap_cost(P, nodes, m, shift, bits, n);
        t += mpiopt_cost_seconds(MPIOPT_ALG_RECURSIVE_DOUBLING, 0, 1 << bits, n, intra);
    }
    return t;
}

/* The bits a round (1 … log2 m) whose rounds cost least, their cost in *t. Fewer rounds mean
 * fewer network messages in sequence; shorter ones may keep the first rounds' partners near
 * (under one leaf switch): the measured patterns decide. A function of the model and the layout,
 * the same on every rank. */
int mpiopt_hier_radix_bits(const mpiopt_cost_params *intra, const mpiopt_cost_params *P,
                           int nodes, int m, double n, double *t)
{
    int best = log2_of(m);
    *t = radix_cost(intra, P, nodes, m, n, best);
    for (int lb = best - 1; lb >= 1; lb--) {
        double tl = radix_cost(intra, P, nodes, m, n, lb);
        if (tl < *t) {
            *t = tl;
            best = lb;
        }
    }
    return best;
}

/* ---- the shares between nodes in rounds of several nodes at once ----
 * After the node's reduce-scatter every rank owns a share of n/m bytes, and the owners of a share
 * on the N nodes (a power of two) allreduce it. Rabenseifner between them takes 2 log2 N network
 * steps in sequence; at 64 KiB on 64 nodes of 16 those latencies are most of the time. Rounds of
 * r = 2^bits nodes take the bits of the node number from the lowest up: in a round each owner
 * sends the r - 1 other members of its block their pieces of its range at once, receives its own
 * piece from each and reduces them in node order (reduce-scatter); the allgather sends the same
 * messages the other way, rounds in reverse. log_r N steps each way instead of log2 N, for r - 2
 * further messages a step. */

/* One step (either way) of a round of 2^bits nodes 2^shift apart on `bytes` a rank, all m ranks
 * of a node sending at once: the farthest partner's step (network_step), each further message
 * at the node's α (what a message costs the processes that post and match it is at most an
 * intra-node message's latency; SMPI's fat-tree: 0.53 µs a further message, against 0.70 for an
 * intra-node step), and the r - 1 pieces through the node's link. */
static double share_step_cost(const mpiopt_cost_params *P, const mpiopt_cost_params *intra,
                              int nodes, int m, int shift, int bits, double bytes)
{
    int r = 1 << bits;
    double alpha, beta;
    network_step(P, nodes, m, shift + bits - 1 + log2_of(m), m, &alpha, &beta);
    return alpha + (r - 2) * intra->alpha + (r - 1) * (bytes / r) * beta;
}

/* The rounds (bits[i] bits of the node number each, lowest first) whose reduce-scatter and
 * allgather of `bytes` cost least: dynamic programming over the bits taken, since a round's cost
 * depends only on where it starts (its bytes are bytes / 2^shift). Returns their number; their
 * cost in *t. The same on every rank: a function of the model and the layout. */
int mpiopt_hier_share_rounds(const mpiopt_cost_params *P, int nodes, int m, double bytes,
                             int *bits, double *t)
{
    int ln = log2_of(nodes), take[MAX_ROUNDS + 1];
    double best[MAX_ROUNDS + 1];
    mpiopt_cost_params intra = mpiopt_hier_level_params(P, 1, 1);
    best[ln] = 0;
    for (int s = ln - 1; s >= 0; s--) {
        double b = ldexp(bytes, -s);
        best[s] = -1;
        for (int lb = 1; lb <= MAX_ROUND_BITS && s + lb <= ln; lb++) {
            double r = (double)(1 << lb);
            double ts = 2 * share_step_cost(P, &intra, nodes, m, s, lb, b) +
                        (r - 1) * (b / r) * P->gamma + best[s + lb];
            if (best[s] < 0 || ts < best[s]) {
                best[s] = ts;
                take[s] = lb;
            }
        }
    }
    int n = 0;
    for (int s = 0; s < ln; s += take[s])
        bits[n++] = take[s];
    *t = best[0];
    return n;
}

/* The two ways of splitting the work (hierarchical.c's top): the predicted seconds of the whole
 * vector on every owner (*whole) and of shares (*shares), for `nodes` nodes of m ranks and n
 * bytes. */
void mpiopt_hier_variant_costs(const mpiopt_cost_params *P, int is_reduce, int nodes, int m,
                               double n, int uniform, double *whole, double *shares)
{
    /* between nodes all m ranks of a node send at once: the whole vector each (allreduce; a
     * reduce's first ranks alone), or a share each */
    mpiopt_cost_params intra = mpiopt_hier_level_params(P, 1, 1);
    mpiopt_cost_params inter = mpiopt_hier_level_params(P, 0, m);
    mpiopt_cost_params inter_whole = mpiopt_hier_level_params(P, 0, is_reduce ? 1 : m);
    double node_t, net_t;
    /* whole: the node's allreduce (reduce) by the cheapest flat algorithm, then the network's */
    mpiopt_hier_flat_algorithm(&intra, is_reduce, m, n, 1, &node_t);
    mpiopt_hier_flat_algorithm(&inter_whole, is_reduce, nodes, n, 1, &net_t);
    *whole = node_t + net_t + (is_reduce ? intra.alpha + n * intra.beta : 0);
    if (!is_reduce && uniform && m > 1 && nodes > 1 && pow2(m) && pow2(nodes)) {
        double rounds;
        mpiopt_hier_radix_bits(&intra, P, nodes, m, n, &rounds);
        double radix = mpiopt_cost_seconds(MPIOPT_ALG_RECURSIVE_DOUBLING, 0, m, n, &intra) + rounds;
        *whole = radix < *whole ? radix : *whole;
    }
    /* shares: halving and doubling inside the node (Rabenseifner's terms), the network on n/m */
    node_t = mpiopt_cost_seconds(MPIOPT_ALG_RABENSEIFNER, is_reduce, m, n, &intra);
    mpiopt_hier_flat_algorithm(&inter, is_reduce, nodes, n / m, 1, &net_t);
    if (!is_reduce && uniform && pow2(nodes)) {
        int bits[MAX_ROUNDS];
        double rounds;
        mpiopt_hier_share_rounds(P, nodes, m, n / m, bits, &rounds);
        net_t = rounds < net_t ? rounds : net_t;
    }
    *shares = node_t + net_t;
}

double mpiopt_cost_hierarchical(const mpiopt_cost_call *x, int is_reduce)
{
    /* priced only where the node layout is known: ranks_per_node > 1 on >= 2 nodes */
    int m = x->ranks_per_node, nodes = m > 0 ? (x->p + m - 1) / m : 0;
    if (m < 2 || nodes < 2)
        return -1;
    double whole, shares;
    mpiopt_hier_variant_costs(x->params, is_reduce, nodes, m, x->n, x->p % m == 0, &whole, &shares);
    return whole < shares ? whole : shares;
}
