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
 * mpiopt_cost_hierarchical in hierarchical_cost.c, which holds all of the pricing.
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
 * Everything is point-to-point on mpiopt's communicator, so nonblocking and persistent calls
 * record it into a schedule like every other algorithm. */
#include <stdlib.h>
#include "coll/algorithms/algorithms.h"
#include "coll/algorithms/hierarchical.h"
#include "coll/engine/report.h"

/* What one call needs to know about this rank's node. */
typedef struct {
    const mpiopt_node_layout *L;
    int node, m, j;         /* this rank's node, its number of ranks, this rank's place in it */
    const int *local;       /* the node's ranks, local rank order */
    int shares;
    /* what ran at each level (mpiopt_level): an algorithm or an mpiopt_level_way, -1 nothing;
     * the call's own, for the report */
    int *ways;
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

/* A context for a group of c's ranks: peers[g] is group member g, this rank is member me. */
static mpiopt_coll group_context(const mpiopt_coll *c, const int *peers, int size, int me,
                                 const void *src)
{
    mpiopt_coll g = *c;
    g.peers = peers;
    g.rank = me;
    g.size = size;
    g.src = src;
    return g;
}

/* The context of the group of ranks that own `share` on each node (local rank share mod that
 * node's size), in node order; this rank is its member v->node. group: one int a node. */
static mpiopt_coll owners_of(const mpiopt_coll *c, const node_view *v, int share, int *group)
{
    const mpiopt_node_layout *L = v->L;
    for (int k = 0; k < L->nodes; k++) {
        int mk = L->start[k + 1] - L->start[k];
        group[k] = L->members[L->start[k] + share % mk];
    }
    return group_context(c, group, L->nodes, v->node, NULL);
}

/* The flat algorithm between nodes on elements [lo, hi) of buf, among the ranks that own
 * `share` on each node (local rank share mod that node's size), in node order. root_node < 0:
 * allreduce; else reduce to that node's member. group: scratch of one int a node. */
static int run_between_nodes(const mpiopt_coll *c, const node_view *v, void *buf, size_t lo,
                             size_t hi, int share, int root_node, int *group)
{
    const mpiopt_node_layout *L = v->L;
    if (L->nodes == 1 || hi == lo)
        return MPI_SUCCESS;
    mpiopt_coll g = owners_of(c, v, share, group);
    mpiopt_cost_params inter = mpiopt_hier_level_params(mpiopt_cost_model(), 0,
                                                        v->L->max_ranks);
    mpiopt_algorithm a = mpiopt_hier_flat_algorithm(&inter, root_node >= 0, L->nodes,
                                        (double)(hi - lo) * (double)c->extent, c->commutative,
                                        NULL);
    const mpiopt_algorithm_info *alg = &mpiopt_algorithms[a];
    v->ways[MPIOPT_LEVEL_NETWORK] = (int)a;
    return root_node < 0 ? alg->allreduce(&g, mpiopt_at(c, buf, lo), hi - lo)
                         : alg->reduce(&g, mpiopt_at(c, buf, lo), hi - lo, root_node);
}

/* The rounds (mpiopt_hier_share_rounds) on group g of 2^sum(bits) members: elements [lo0, hi0) of buf
 * hold this member's operand and end with the result. Reduce-scatter: in round i, among the
 * r members whose numbers differ only in round i's bits (stride s: the product of the earlier
 * rounds' r), this member sends member e block e of its range (mpiopt_ring_block of r) and keeps
 * block d (its own digit), which it reduces with the others' in member order: partial results
 * are of consecutive members, combined in order, so rank order holds for non-commutative ops
 * where nodes hold consecutive ranks. The allgather sends each round's block back the other way,
 * rounds in reverse. Bits: every element is reduced once, by its last owner, and copied from
 * there, so every member receives the same bits. */
static int share_allreduce_rounds(const mpiopt_coll *g, void *buf, size_t lo0, size_t hi0,
                                  const int *bits, int rounds)
{
    size_t lo[MAX_ROUNDS + 1], hi[MAX_ROUNDS + 1];
    int stride[MAX_ROUNDS], rc = MPI_SUCCESS, most = 1 << MAX_ROUND_BITS;
    char *tmp = mpiopt_coll_scratch(g, hi0 - lo0 + (size_t)most);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)most);
    if (!tmp || !reqs) {
        free(reqs);
        mpiopt_scratch_free(tmp);
        return MPI_ERR_NO_MEM;
    }
    lo[0] = lo0;
    hi[0] = hi0;
    for (int i = 0, s = 1; rc == MPI_SUCCESS && i < rounds; s *= 1 << bits[i], i++) {
        int r = 1 << bits[i], d = g->rank / s % r, base = g->rank - d * s, n = 0;
        size_t span = hi[i] - lo[i], slot = span / (size_t)r + 1, mlo, mhi, blo, bhi;
        stride[i] = s;
        mpiopt_ring_block(span, r, d, &mlo, &mhi);
        for (int e = 0; rc == MPI_SUCCESS && e < r && mhi > mlo; e++)
            if (e != d)
                rc = mpiopt_irecv(g, mpiopt_at(g, tmp, (size_t)e * slot), mhi - mlo, base + e * s,
                                  &reqs[n++]);
        for (int e = 0; rc == MPI_SUCCESS && e < r; e++) {
            mpiopt_ring_block(span, r, e, &blo, &bhi);
            if (e != d && bhi > blo)
                rc = mpiopt_isend(g, mpiopt_at(g, buf, lo[i] + blo), bhi - blo, base + e * s,
                                  &reqs[n++]);
        }
        if (rc == MPI_SUCCESS)
            rc = mpiopt_waitall(g, n, reqs);
        /* block d = x_0 op … op x_{r-1}: the members before d into slot 0, that on the left of
         * this member's own block (in buf), then the members after it on the right */
        size_t len = mhi - mlo;
        char *acc = mpiopt_at(g, buf, lo[i] + mlo);
        if (len && d > 0) {
            for (int e = 1; rc == MPI_SUCCESS && e < d; e++)
                rc = mpiopt_coll_reduce_right(g, tmp, mpiopt_at(g, tmp, (size_t)e * slot), len);
            if (rc == MPI_SUCCESS)
                rc = mpiopt_coll_reduce_left(g, tmp, acc, len);
        }
        for (int e = d + 1; rc == MPI_SUCCESS && len && e < r; e++)
            rc = mpiopt_coll_reduce_right(g, acc, mpiopt_at(g, tmp, (size_t)e * slot), len);
        lo[i + 1] = lo[i] + mlo;
        hi[i + 1] = lo[i] + mhi;
    }
    for (int i = rounds - 1; rc == MPI_SUCCESS && i >= 0; i--) {
        int s = stride[i], r = 1 << bits[i], d = g->rank / s % r, base = g->rank - d * s, n = 0;
        size_t span = hi[i] - lo[i], blo, bhi, mine = hi[i + 1] - lo[i + 1];
        for (int e = 0; rc == MPI_SUCCESS && e < r; e++) {
            mpiopt_ring_block(span, r, e, &blo, &bhi);
            if (e != d && bhi > blo)
                rc = mpiopt_irecv(g, mpiopt_at(g, buf, lo[i] + blo), bhi - blo, base + e * s,
                                  &reqs[n++]);
        }
        for (int e = 0; rc == MPI_SUCCESS && e < r && mine; e++)
            if (e != d)
                rc = mpiopt_isend(g, mpiopt_at(g, buf, lo[i + 1]), mine, base + e * s, &reqs[n++]);
        if (rc == MPI_SUCCESS)
            rc = mpiopt_waitall(g, n, reqs);
    }
    free(reqs);
    mpiopt_scratch_free(tmp);
    return rc;
}

/* The allreduce of this rank's share, elements [lo, hi) of buf, with its owners on the other
 * nodes: in rounds of several nodes where the model prices them below the flat algorithm (nodes
 * of one size, a power of two of them), else the flat algorithm. Every owner of the share
 * decides alike: same bytes, same model. */
static int share_between_nodes(const mpiopt_coll *c, const node_view *v, void *buf, size_t lo,
                               size_t hi, int *group)
{
    const mpiopt_node_layout *L = v->L;
    if (L->nodes > 2 && pow2(L->nodes) && L->min_ranks == L->max_ranks && hi > lo) {
        const mpiopt_cost_params *P = mpiopt_cost_model();
        mpiopt_cost_params inter = mpiopt_hier_level_params(P, 0, L->max_ranks);
        double bytes = (double)(hi - lo) * (double)c->extent, flat_t, rounds_t;
        int bits[MAX_ROUNDS];
        mpiopt_hier_flat_algorithm(&inter, 0, L->nodes, bytes, c->commutative, &flat_t);
        int rounds = mpiopt_hier_share_rounds(P, L->nodes, L->max_ranks, bytes, bits, &rounds_t);
        if (rounds_t < flat_t) {
            mpiopt_coll g = owners_of(c, v, v->j, group);
            v->ways[MPIOPT_LEVEL_NETWORK] = MPIOPT_WAY_SHARE_ROUNDS;
            return share_allreduce_rounds(&g, buf, lo, hi, bits, rounds);
        }
    }
    return run_between_nodes(c, v, buf, lo, hi, v->j, -1, group);
}

/* Step 2 of the direct split: for every share this rank owns, in share order. */
static int combine_between_nodes(const mpiopt_coll *c, const node_view *v, void *buf,
                                 size_t count, int root_node)
{
    int *group = malloc(sizeof(int) * (size_t)v->L->nodes), rc = MPI_SUCCESS;
    if (!group)
        return MPI_ERR_NO_MEM;
    for (int s = v->j; rc == MPI_SUCCESS && s < v->shares; s += v->m) {
        size_t lo, hi;
        share_range(v, count, s, &lo, &hi);
        rc = run_between_nodes(c, v, buf, lo, hi, s, root_node, group);
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

/* 1 if the whole vector should go to every owner (small messages: fewest rounds), 0 for shares.
 * From the layout and the model, which every rank shares. */
static int whole_vector(const mpiopt_coll *c, const node_view *v, int is_reduce, size_t count)
{
    double whole, shares;
    mpiopt_hier_variant_costs(mpiopt_cost_model(), is_reduce, v->L->nodes, v->L->max_ranks,
                  (double)count * (double)c->extent, v->L->min_ranks == v->L->max_ranks, &whole,
                  &shares);
    return whole <= shares;
}

/* Nodes of one power-of-two size: the shares are recursive halving's ranges, and the node's
 * reduce-scatter and allgather are halving_doubling.c's (log2 m rounds, not m - 1 messages). */
static int halving_fits(const node_view *v)
{
    int m = v->L->max_ranks;
    return v->L->min_ranks == m && (m & (m - 1)) == 0;
}

/* The whole vector, allreduce: the node's allreduce by a flat algorithm that leaves the same
 * bits on every rank, then the network's by every group of owners at once. All groups compute
 * the same bits from the same operands, so nothing needs to come back to the node. */
static int whole_allreduce_radix(const mpiopt_coll *c, const node_view *v, void *buf,
                                 size_t count, int lb);

static int whole_allreduce(const mpiopt_coll *c, const node_view *v, void *buf, size_t count)
{
    const mpiopt_node_layout *L = v->L;
    if (L->min_ranks == L->max_ranks && pow2(v->m) && pow2(L->nodes) && L->nodes > 1 &&
        v->m > 1) {
        /* the cheaper of the two ways between nodes, as whole_vector priced them */
        mpiopt_cost_params intra1 = mpiopt_hier_level_params(mpiopt_cost_model(), 1, 1);
        mpiopt_cost_params inter = mpiopt_hier_level_params(mpiopt_cost_model(), 0, v->m);
        double n = (double)count * (double)c->extent, flat_t, rounds;
        mpiopt_hier_flat_algorithm(&inter, 0, L->nodes, n, 1, &flat_t);
        int lb = mpiopt_hier_radix_bits(&intra1, mpiopt_cost_model(), L->nodes, v->m, n,
                                        &rounds);
        if (rounds <= flat_t) {
            v->ways[MPIOPT_LEVEL_NODE] = MPIOPT_ALG_RECURSIVE_DOUBLING;
            v->ways[MPIOPT_LEVEL_NETWORK] = MPIOPT_WAY_RADIX;
            return whole_allreduce_radix(c, v, buf, count, lb);
        }
    }
    mpiopt_cost_params intra = mpiopt_hier_level_params(mpiopt_cost_model(), 1, 1);
    double bytes = (double)count * (double)c->extent;
    mpiopt_coll node = group_context(c, v->local, v->m, v->j, c->src);
    mpiopt_algorithm a = mpiopt_hier_flat_algorithm(&intra, 0, v->m, bytes, c->commutative, NULL);
    if (a != MPIOPT_ALG_RECURSIVE_DOUBLING && a != MPIOPT_ALG_RABENSEIFNER)
        a = MPIOPT_ALG_RECURSIVE_DOUBLING;
    int rc = MPI_SUCCESS;
    if (v->m > 1) {
        v->ways[MPIOPT_LEVEL_NODE] = (int)a;
        rc = mpiopt_algorithms[a].allreduce(&node, buf, count);
    }
    else if (c->src)
        rc = mpiopt_coll_copy(c, buf, c->src, count * c->extent);
    int *group = malloc(sizeof(int) * (size_t)v->L->nodes);
    if (!group)
        return MPI_ERR_NO_MEM;
    /* a rank that owns several groups (its node is smaller than the largest) runs the others
     * first, each on a copy of the node's result whose outcome it does not need (the copies
     * before buf changes). Every such rank runs its groups in decreasing share order, so no two
     * ranks wait for each other in two groups taken in opposite orders. */
    void *spare = NULL;
    for (int s = v->j + v->m; rc == MPI_SUCCESS && s < v->shares; s += v->m) {
        if (!spare && !(spare = mpiopt_coll_scratch(c, count)))
            rc = MPI_ERR_NO_MEM;
        if (rc == MPI_SUCCESS)
            rc = mpiopt_coll_copy(c, spare, buf, count * c->extent);
        if (rc == MPI_SUCCESS)
            rc = run_between_nodes(c, v, spare, 0, count, s, -1, group);
    }
    if (rc == MPI_SUCCESS)
        rc = run_between_nodes(c, v, buf, 0, count, v->j, -1, group);
    free(group);
    mpiopt_scratch_free(spare);
    return rc;
}

/* The whole vector, allreduce, on N nodes of m ranks (both powers of two): after the node's
 * allreduce, rounds over the bits of the node number, lm <= log2 m bits a round (fewer in the
 * last; radix_bits picks lm).
 * In a round local rank j (0 < j < r = 2^bits) swaps the node's value with local rank j of the
 * node whose digit (those bits of its number) differs from this one's by j, so the node's ranks
 * 0 … r-1 hold the values of the r nodes of its block, local rank j the value of digit d ^ j
 * (d: this node's digit). They allreduce them by recursive doubling in digit order (group member
 * g is local rank g ^ d): every node of the block computes the same bits, in node order, so rank
 * order holds where nodes hold consecutive ranks. When r < m, the node's ranks
 * form m / r subgroups of r consecutive local ranks (q = j / r, place t = j mod r) and every
 * subgroup does the round alike: (q, t) swaps with (q, t) on the node whose digit differs by t,
 * and the subgroup's recursive doubling computes the same bits as every other's, so no rank waits
 * for a hand-off afterwards. log_r N rounds of one network message each, against log2 N for
 * recursive doubling. */
static int whole_allreduce_radix(const mpiopt_coll *c, const node_view *v, void *buf,
                                 size_t count, int lm)
{
    const mpiopt_node_layout *L = v->L;
    int m = v->m, ln = log2_of(L->nodes), rc = MPI_SUCCESS;
    mpiopt_coll node = group_context(c, v->local, m, v->j, c->src);
    rc = mpiopt_allreduce_recursive_doubling(&node, buf, count);
    int *peers = malloc(sizeof(int) * (size_t)m);
    void *theirs = mpiopt_coll_scratch(c, count);
    if (!peers || !theirs) {
        free(peers);
        mpiopt_scratch_free(theirs);
        return MPI_ERR_NO_MEM;
    }
    for (int shift = 0; rc == MPI_SUCCESS && shift < ln; shift += lm) {
        int bits = ln - shift < lm ? ln - shift : lm, r = 1 << bits;
        int d = (v->node >> shift) & (r - 1);
        int base = v->j - v->j % r, t = v->j % r;   /* this rank's subgroup and place in it */
        if (t > 0) {
            int other = v->node ^ (t << shift);
            int partner = L->members[L->start[other] + v->j];
            rc = mpiopt_sendrecv(c, buf, count, partner, theirs, count, partner);
            if (rc == MPI_SUCCESS)
                rc = mpiopt_coll_copy(c, buf, theirs, count * c->extent);
        }
        for (int g = 0; g < r; g++)
            peers[g] = v->local[base + (g ^ d)];
        mpiopt_coll block = group_context(c, peers, r, t ^ d, NULL);
        if (rc == MPI_SUCCESS)
            rc = mpiopt_allreduce_recursive_doubling(&block, buf, count);
    }
    free(peers);
    mpiopt_scratch_free(theirs);
    return rc;
}

/* The whole vector, reduce: binomial to each node's first rank, the network's reduce among
 * those, and the result on to the root. */
static int whole_reduce(const mpiopt_coll *c, const node_view *v, void *buf, size_t count,
                        int root)
{
    const mpiopt_node_layout *L = v->L;
    int root_node = L->node_of[root], rc = MPI_SUCCESS;
    mpiopt_coll node = group_context(c, v->local, v->m, v->j, c->src);
    if (v->m > 1) {
        v->ways[MPIOPT_LEVEL_NODE] = MPIOPT_ALG_BINOMIAL;
        rc = mpiopt_reduce_binomial(&node, buf, count, 0);
    }
    else if (c->src)
        rc = mpiopt_coll_copy(c, buf, c->src, count * c->extent);
    if (rc == MPI_SUCCESS && v->j == 0) {
        int *group = malloc(sizeof(int) * (size_t)L->nodes);
        if (!group)
            return MPI_ERR_NO_MEM;
        rc = run_between_nodes(c, v, buf, 0, count, 0, root_node, group);
        free(group);
    }
    if (rc == MPI_SUCCESS)
        rc = mpiopt_forward_result(c, buf, count, L->members[L->start[root_node]], root);
    return rc;
}

/* Shares as recursive halving's ranges (halving_fits): the node's reduce-scatter by halving,
 * the network on this rank's range, then the node's allgather by doubling (root < 0) or, on the
 * root's node, the gather to the root. */
static int halving(const mpiopt_coll *c, const node_view *v, void *buf, size_t count, int root)
{
    int levels, m = v->m, rc;
    mpiopt_pow2_floor(m, &levels);
    int *rank_of = malloc(sizeof(int) * (size_t)m);
    int *group = malloc(sizeof(int) * (size_t)v->L->nodes);
    void *tmp = mpiopt_coll_scratch(c, count);
    if (!rank_of || !group || !tmp) {
        free(rank_of);
        free(group);
        mpiopt_scratch_free(tmp);
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < m; i++)
        rank_of[i] = i;
    mpiopt_coll node = group_context(c, v->local, m, v->j, c->src);
    size_t lo, hi;
    mpiopt_halving_range(count, (unsigned)v->j, levels, &lo, &hi);
    if (m > 1)
        v->ways[MPIOPT_LEVEL_NODE] = MPIOPT_WAY_HALVING;
    rc = mpiopt_reduce_scatter_halving(&node, buf, tmp, count, c->src ? c->src : buf, rank_of,
                                       levels, v->j);
    int root_node = root < 0 ? -1 : v->L->node_of[root];
    if (rc == MPI_SUCCESS)
        rc = root < 0 ? share_between_nodes(c, v, buf, lo, hi, group)
                      : run_between_nodes(c, v, buf, lo, hi, v->j, root_node, group);
    if (rc == MPI_SUCCESS && root < 0) {
        rc = mpiopt_allgather_doubling(&node, buf, count, rank_of, levels, v->j);
    } else if (rc == MPI_SUCCESS && root_node == v->node) {
        int root_local = 0;
        while (v->local[root_local] != root)
            root_local++;
        rc = mpiopt_gather_halving(&node, buf, count, rank_of, levels, v->j, root_local);
    }
    free(rank_of);
    free(group);
    mpiopt_scratch_free(tmp);
    return rc;
}

/* The call's levels to the report: a blocking call's (a schedule being recorded runs later,
 * perhaps many times), each level this rank took part in. */
static int report_levels(const mpiopt_coll *c, const int *ways, int rc)
{
    for (int l = 0; !c->record && l < MPIOPT_LEVELS; l++)
        if (ways[l] >= 0)
            mpiopt_report_level((mpiopt_level)l, ways[l]);
    return rc;
}

/* The levels of an allreduce (root < 0) or a reduce to root. */
static int by_levels(const mpiopt_coll *c, node_view *v, void *buf, size_t count, int root)
{
    int is_reduce = root >= 0;
    if (whole_vector(c, v, is_reduce, count))
        return is_reduce ? whole_reduce(c, v, buf, count, root) : whole_allreduce(c, v, buf, count);
    if (halving_fits(v))
        return halving(c, v, buf, count, root);
    if (v->m > 1)
        v->ways[MPIOPT_LEVEL_NODE] = MPIOPT_WAY_DIRECT;
    int root_node = is_reduce ? v->L->node_of[root] : -1;
    int rc = reduce_scatter_node(c, v, buf, count);
    if (rc == MPI_SUCCESS)
        rc = combine_between_nodes(c, v, buf, count, root_node);
    if (rc == MPI_SUCCESS && (!is_reduce || root_node == v->node))
        rc = return_to_node(c, v, buf, count, root);
    return rc;
}

int mpiopt_allreduce_hierarchical(const mpiopt_coll *c, void *buf, size_t count)
{
    node_view v;
    int rc, ways[MPIOPT_LEVELS] = {-1, -1};
    if (!view_of(c, &v, &rc))
        return rc != MPI_SUCCESS ? rc : mpiopt_allreduce_rabenseifner(c, buf, count);
    v.ways = ways;
    return report_levels(c, ways, by_levels(c, &v, buf, count, -1));
}

int mpiopt_reduce_hierarchical(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    node_view v;
    int rc, ways[MPIOPT_LEVELS] = {-1, -1};
    if (!view_of(c, &v, &rc))
        return rc != MPI_SUCCESS ? rc : mpiopt_reduce_binomial(c, buf, count, root);
    v.ways = ways;
    return report_levels(c, ways, by_levels(c, &v, buf, count, root));
}
