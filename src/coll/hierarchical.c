/* Node-aware allreduce and reduce: the ranks of each node reduce among themselves, every rank a
 * share of the vector, the owners of a share on the different nodes combine it with one of
 * mpiopt's flat algorithms, and the result comes back to the node. With m ranks a node, a flat
 * algorithm sends m times the messages over each node's link; this one sends each byte of the
 * vector over it about twice (out and in), once a node.
 *
 *   1. reduce-scatter inside the node: the vector is cut into S shares (S = the most ranks a node
 *      has); share s belongs to the node's local rank s mod m. Every other rank of the node sends
 *      its piece of the share to that owner (all at once: inside a node a message is a copy
 *      through shared memory), which reduces the node's m pieces in local rank order.
 *   2. between nodes: for each share it owns, in share order, the owner runs a flat algorithm
 *      (the cheapest the cost model names for N nodes and the share's bytes, see
 *      inter_node_algorithm) with the owners of the same share on the other nodes, in node order.
 *      The algorithm runs unchanged on that group: p2p.c maps its ranks (mpiopt_coll.peers).
 *   3. the owner sends the share's result to the other ranks of its node (allreduce), or to the
 *      root (reduce: only on the root's node; the flat algorithm reduced to the owner there).
 *
 *   allreduce: intra 2*(m-1)*(alpha_i + n/m*beta_i) + (m-1)/m*n*gamma
 *              + the flat algorithm on N nodes and n/m bytes, at the network's alpha, beta
 *   reduce:    the same with the flat reduce, and one message of n/m per share to the root.
 *
 * The m-1 messages of a step leave at once, so the intra-node term is priced as their latency
 * once and their bytes in sequence (they share the node's memory bandwidth): see
 * mpiopt_cost_hierarchical.
 *
 * Bracketing (bit for bit): each node's partial result is ((x_0 op x_1) op x_2) ... over its ranks
 * in rank order; the nodes' partial results are combined as the flat algorithm brackets N
 * operands (recursive doubling's or Rabenseifner's tree, binomial's). Every rank receives the
 * owner's bits, so all ranks hold the same result. Non-commutative ops keep rank order when each
 * node holds consecutive ranks (the flat algorithms chosen keep order too); with ranks placed
 * otherwise, a non-commutative op goes to a flat algorithm over all ranks (Rabenseifner for the
 * allreduce, binomial for the reduce), as does a call whose node layout is not known yet (a
 * nonblocking call that is the communicator's first, see node_layout.c).
 *
 * Everything is point-to-point on the private communicator, so nonblocking and persistent calls
 * record it into a schedule like every other algorithm. */
#include <stdlib.h>
#include "coll.h"

/* The flat algorithm that combines a share between nodes: the cheapest the cost model names for
 * `nodes` processes and the share's bytes, among those that fit the op (never this one, nor
 * shared_memory, which needs one node). A function of facts all owners of the share agree on. */
static mpiopt_algorithm inter_node_algorithm(const mpiopt_coll *c, int is_reduce, int nodes,
                                             size_t bytes)
{
    const mpiopt_cost_params *model = mpiopt_selection_model();
    mpiopt_algorithm best = is_reduce ? MPIOPT_ALG_BINOMIAL : MPIOPT_ALG_RABENSEIFNER;
    double best_t = -1;
    for (int a = 0; a < MPIOPT_ALG_COUNT; a++) {
        if (!mpiopt_algorithms[a].cost || a == MPIOPT_ALG_HIERARCHICAL ||
            a == MPIOPT_ALG_SHARED_MEMORY || !mpiopt_algorithm_fits(a, nodes, c->commutative))
            continue;
        double t = mpiopt_cost_seconds((mpiopt_algorithm)a, is_reduce, nodes, (double)bytes,
                                       model);
        if (t >= 0 && (best_t < 0 || t < best_t)) {
            best_t = t;
            best = (mpiopt_algorithm)a;
        }
    }
    return best;
}

/* What one call needs to know about this rank's node. */
typedef struct {
    const mpiopt_node_layout *L;
    int node, m, j;         /* this rank's node, its number of ranks, this rank's place in it */
    const int *local;       /* the node's ranks, local rank order */
    int shares;
} node_view;

static int owner(const node_view *v, int s)
{
    return s % v->m;
}

static void share_range(const node_view *v, size_t count, int s, size_t *lo, size_t *hi)
{
    mpiopt_ring_block(count, v->shares, s, lo, hi);
}

/* Step 1: the node's reduction of each share this rank owns into buf (local rank order); the
 * pieces of the others' shares go to their owners from `mine` (c->src or buf). */
static int reduce_scatter_node(const mpiopt_coll *c, const node_view *v, void *buf, size_t count)
{
    const char *mine = c->src ? c->src : buf;
    int m = v->m, owned = 0, rc = MPI_SUCCESS;
    for (int s = v->j; s < v->shares; s += m)
        owned++;
    size_t most = count / (size_t)v->shares + 1;   /* elements in the largest share */
    /* slot i of owned share o: local rank i's piece (slot j: a copy of this rank's, when buf
     * holds it and the reduction would overwrite it before it is read) */
    char *tmp = m > 1 ? mpiopt_coll_scratch(c, (size_t)owned * (size_t)m * most) : NULL;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * ((size_t)v->shares + (size_t)owned * m));
    if ((m > 1 && !tmp) || !reqs) {
        free(reqs);
        mpiopt_scratch_free(tmp);
        return MPI_ERR_NO_MEM;
    }
    int n = 0;
    for (int s = 0, o = 0; rc == MPI_SUCCESS && s < v->shares; s++) {
        size_t lo, hi;
        share_range(v, count, s, &lo, &hi);
        if (owner(v, s) != v->j) {
            if (hi > lo)
                rc = mpiopt_isend(c, mpiopt_at(c, mine, lo), hi - lo, v->local[owner(v, s)],
                                  &reqs[n++]);
            continue;
        }
        for (int i = 0; rc == MPI_SUCCESS && i < m && hi > lo; i++)
            if (i != v->j)
                rc = mpiopt_irecv(c, mpiopt_at(c, tmp, ((size_t)o * m + i) * most), hi - lo,
                                  v->local[i], &reqs[n++]);
        o++;
    }
    if (rc == MPI_SUCCESS)
        rc = mpiopt_waitall(c, n, reqs);
    free(reqs);
    for (int s = v->j, o = 0; rc == MPI_SUCCESS && s < v->shares; s += m, o++) {
        size_t lo, hi;
        share_range(v, count, s, &lo, &hi);
        size_t len = hi - lo;
        char *acc = mpiopt_at(c, buf, lo);
        const char *my_piece = mpiopt_at(c, mine, lo);
        if (len == 0)
            continue;
        if (m == 1) {
            if (my_piece != acc)
                rc = mpiopt_coll_copy(c, acc, my_piece, len * c->extent);
            continue;
        }
        const char *x[2];
        char *slot = mpiopt_at(c, tmp, (size_t)o * m * most);
        for (int i = 0; i < 2; i++)
            x[i] = i == v->j ? my_piece : mpiopt_at(c, slot, (size_t)i * most);
        if (v->j >= 2 && my_piece == acc) {      /* acc is about to be overwritten: keep it */
            char *copy = mpiopt_at(c, slot, (size_t)v->j * most);
            rc = mpiopt_coll_copy(c, copy, my_piece, len * c->extent);
            my_piece = copy;
        }
        /* acc = x_0 op x_1, then acc = acc op x_i for i = 2 … m-1 */
        if (rc == MPI_SUCCESS) {
            if (x[0] == acc)
                rc = mpiopt_coll_reduce_right(c, acc, (void *)x[1], len);
            else if (x[1] == acc)
                rc = mpiopt_coll_reduce_left(c, x[0], acc, len);
            else
                rc = mpiopt_coll_reduce3(c, x[0], x[1], acc, len);
        }
        for (int i = 2; rc == MPI_SUCCESS && i < m; i++) {
            char *xi = mpiopt_at(c, slot, (size_t)i * most);
            if (i == v->j && my_piece != xi) {  /* c->src: reduce_right may write its operand */
                rc = mpiopt_coll_copy(c, xi, my_piece, len * c->extent);
                if (rc != MPI_SUCCESS)
                    break;
            }
            rc = mpiopt_coll_reduce_right(c, acc, xi, len);
        }
    }
    mpiopt_scratch_free(tmp);
    return rc;
}

/* Step 2 for every share this rank owns: the flat algorithm among the share's owners, one a
 * node, in node order. root_node < 0: allreduce; else reduce to the owner on that node. */
static int combine_between_nodes(const mpiopt_coll *c, const node_view *v, void *buf,
                                 size_t count, int root_node)
{
    const mpiopt_node_layout *L = v->L;
    if (L->nodes == 1)
        return MPI_SUCCESS;
    int *group = malloc(sizeof(int) * (size_t)L->nodes), rc = MPI_SUCCESS;
    if (!group)
        return MPI_ERR_NO_MEM;
    for (int s = v->j; rc == MPI_SUCCESS && s < v->shares; s += v->m) {
        size_t lo, hi;
        share_range(v, count, s, &lo, &hi);
        if (hi == lo)
            continue;
        for (int k = 0; k < L->nodes; k++) {
            int mk = L->start[k + 1] - L->start[k];
            group[k] = L->members[L->start[k] + s % mk];
        }
        mpiopt_coll g = *c;
        g.peers = group;
        g.rank = v->node;
        g.size = L->nodes;
        g.src = NULL;
        mpiopt_algorithm a = inter_node_algorithm(c, root_node >= 0, L->nodes,
                                                  (hi - lo) * c->extent);
        const mpiopt_algorithm_info *alg = &mpiopt_algorithms[a];
        rc = root_node < 0 ? alg->allreduce(&g, mpiopt_at(c, buf, lo), hi - lo)
                           : alg->reduce(&g, mpiopt_at(c, buf, lo), hi - lo, root_node);
    }
    free(group);
    return rc;
}

/* Step 3: each share's result from its owner to the other ranks of the node (root < 0), or to
 * the root only. */
static int return_to_node(const mpiopt_coll *c, const node_view *v, void *buf, size_t count,
                          int root)
{
    int m = v->m, n = 0, rc = MPI_SUCCESS;
    if (m == 1)
        return MPI_SUCCESS;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)v->shares * (size_t)m);
    if (!reqs)
        return MPI_ERR_NO_MEM;
    for (int s = 0; rc == MPI_SUCCESS && s < v->shares; s++) {
        size_t lo, hi;
        share_range(v, count, s, &lo, &hi);
        int from = v->local[owner(v, s)];
        if (hi == lo)
            continue;
        if (from == c->rank) {
            for (int i = 0; rc == MPI_SUCCESS && i < m; i++)
                if (v->local[i] != c->rank && (root < 0 || v->local[i] == root))
                    rc = mpiopt_isend(c, mpiopt_at(c, buf, lo), hi - lo, v->local[i], &reqs[n++]);
        } else if (root < 0 || c->rank == root) {
            rc = mpiopt_irecv(c, mpiopt_at(c, buf, lo), hi - lo, from, &reqs[n++]);
        }
    }
    if (rc == MPI_SUCCESS)
        rc = mpiopt_waitall(c, n, reqs);
    free(reqs);
    return rc;
}

/* The view of this rank's node, or 0 when the call goes to a flat algorithm (see the top). */
static int view_of(const mpiopt_coll *c, node_view *v, int *rc)
{
    *rc = mpiopt_node_layout_get(c, &v->L);
    const mpiopt_node_layout *L = v->L;
    if (*rc != MPI_SUCCESS || !L || (!c->commutative && !L->in_order))
        return 0;
    v->node = L->node_of[c->rank];
    v->local = L->members + L->start[v->node];
    v->m = L->start[v->node + 1] - L->start[v->node];
    for (v->j = 0; v->local[v->j] != c->rank; v->j++)
        ;
    v->shares = L->max_ranks;
    return 1;
}

int mpiopt_allreduce_hierarchical(const mpiopt_coll *c, void *buf, size_t count)
{
    node_view v;
    int rc;
    if (!view_of(c, &v, &rc))
        return rc != MPI_SUCCESS ? rc : mpiopt_allreduce_rabenseifner(c, buf, count);
    rc = reduce_scatter_node(c, &v, buf, count);
    if (rc == MPI_SUCCESS)
        rc = combine_between_nodes(c, &v, buf, count, -1);
    if (rc == MPI_SUCCESS)
        rc = return_to_node(c, &v, buf, count, -1);
    return rc;
}

int mpiopt_reduce_hierarchical(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    node_view v;
    int rc;
    if (!view_of(c, &v, &rc))
        return rc != MPI_SUCCESS ? rc : mpiopt_reduce_binomial(c, buf, count, root);
    rc = reduce_scatter_node(c, &v, buf, count);
    if (rc == MPI_SUCCESS)
        rc = combine_between_nodes(c, &v, buf, count, v.L->node_of[root]);
    if (rc == MPI_SUCCESS && v.L->node_of[root] == v.node)
        rc = return_to_node(c, &v, buf, count, root);
    return rc;
}

double mpiopt_cost_hierarchical(const mpiopt_cost_call *x, int is_reduce)
{
    /* priced only where the node layout is known (x->ranks_per_node > 1 on >= 2 nodes) */
    int m = x->ranks_per_node, nodes = m > 0 ? (x->p + m - 1) / m : 0;
    if (m < 2 || nodes < 2)
        return -1;
    const mpiopt_cost_params *P = x->params;
    double share = x->n / m;
    double intra_alpha = P->intra_alpha > 0 ? P->intra_alpha : P->alpha;
    double intra_beta = P->intra_beta > 0 ? P->intra_beta : P->beta;
    /* step 1: m-1 pieces in at once, reduced; step 3: m-1 out (reduce: one, to the root) */
    double intra = intra_alpha + (m - 1) * share * intra_beta + (m - 1) * share * P->gamma;
    intra += is_reduce ? intra_alpha + share * intra_beta
                       : intra_alpha + (m - 1) * share * intra_beta;
    /* step 2: the best flat algorithm between nodes, priced at the network's parameters */
    mpiopt_cost_params net = *P;
    net.exchange_ranks = 0;     /* patterns measured on all p ranks are not the nodes' */
    double best = -1;
    for (int a = 0; a < MPIOPT_ALG_COUNT; a++) {
        if (!mpiopt_algorithms[a].cost || a == MPIOPT_ALG_HIERARCHICAL ||
            a == MPIOPT_ALG_SHARED_MEMORY)
            continue;
        double t = mpiopt_cost_seconds((mpiopt_algorithm)a, is_reduce, nodes, share, &net);
        if (t >= 0 && (best < 0 || t < best))
            best = t;
    }
    return best < 0 ? -1 : intra + best;
}
