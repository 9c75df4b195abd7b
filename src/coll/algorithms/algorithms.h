/* The algorithms (src/coll/algorithms/): one a file, each a row of include/mpiopt_algorithms.h;
 * the phases they share (halving_doubling.c, ring.c, binomial.c); the registry (registry.c) and
 * the cost model (cost_model.h). Each works on a contiguous buffer through an mpiopt_coll context,
 * using only the engine's point-to-point calls and reduction helpers, and the node's window (the
 * shared_memory algorithm). The result lands in the buffer; this rank's contribution is either in
 * it already or, for the algorithms that read it where the caller left it, in c->src. */
#ifndef MPIOPT_COLL_ALGORITHMS_H
#define MPIOPT_COLL_ALGORITHMS_H

#include "coll/engine/engine.h"
#include "coll/node/node_layout.h"
#include "coll/algorithms/cost_model.h"

/* ---- phases on a group of 2^levels processes (group rank g = rank_of[g] in c->comm) ---- */

/* Reduce-scatter by recursive halving: afterwards group member g holds, in
 * buf[mpiopt_halving_range(count, g, levels)], the rank-ordered reduction of all members' data
 * over that range. `mine`: where this member's data is, buf or c->src (the first step then sends
 * from it and reduces it straight into buf; the rest of buf is left for the allgather or gather
 * to fill). tmp: count elements of scratch. */
int mpiopt_reduce_scatter_halving(const mpiopt_coll *c, void *buf, void *tmp, size_t count,
                                  const void *mine, const int *rank_of, int levels, int g);
/* The same with the range cut at member boundaries instead of in halves: member index k's range
 * is [cuts[k], cuts[k + 1]) (2^levels + 1 offsets, cuts[2^levels] the count), and member g ends
 * holding member index bitreverse(g)'s range. */
int mpiopt_reduce_scatter_halving_cuts(const mpiopt_coll *c, void *buf, void *tmp,
                                       const size_t *cuts, const void *mine, const int *rank_of,
                                       int levels, int g);
/* Allgather by recursive doubling: the inverse of the reduce-scatter above. */
int mpiopt_allgather_doubling(const mpiopt_coll *c, void *buf, size_t count, const int *rank_of,
                              int levels, int g);
/* Binomial gather of the halving ranges into group member `dst`'s buf. */
int mpiopt_gather_halving(const mpiopt_coll *c, void *buf, size_t count, const int *rank_of,
                          int levels, int g, int dst);

/* The power-of-two fold used by recursive doubling and Rabenseifner for any p: the first
 * 2*(p - p2) ranks pair up (2i, 2i+1); the even one sends its data (from c->src when set) to the
 * odd one, which reduces (even op odd) into buf and takes part as group member i; the others are
 * members rank - (p - p2). f->tmp (count elements) and f->rank_of (p entries) must be allocated;
 * sets f->g to the group rank, or -1 for ranks that sit out, f->rank_of (p2 entries) to map back,
 * and f->mine to where this rank's (folded) data now is: c->src, or buf once the fold wrote it. */
typedef struct {
    void *tmp;
    int *rank_of;
    int levels, g;
    const void *mine;
} mpiopt_fold;
int mpiopt_fold_in(const mpiopt_coll *c, void *buf, size_t count, mpiopt_fold *f);
/* Gives the ranks that sat out the result of their odd partner. */
int mpiopt_fold_out(const mpiopt_coll *c, void *buf, size_t count);

/* A fold with its scratch: mpiopt_fold_begin allocates f->tmp and f->rank_of, then folds in;
 * mpiopt_fold_end gives them back (also after a failed begin). */
int mpiopt_fold_begin(const mpiopt_coll *c, void *buf, size_t count, mpiopt_fold *f);
void mpiopt_fold_end(mpiopt_fold *f);

/* Ring phases over all ranks of c->comm (commutative ops only: each block is reduced in a rotated
 * rank order). After the reduce-scatter, rank r holds block (r + 1) % p of mpiopt_ring_block; it
 * reads this rank's data from c->src when set, and then block r of buf is left unwritten (the
 * allgather fills it). */
void mpiopt_ring_block(size_t count, int p, int b, size_t *lo, size_t *hi);
int mpiopt_reduce_scatter_ring(const mpiopt_coll *c, void *buf, void *tmp, size_t count);
/* The same over blocks [displs[b], displs[b + 1]) (p + 1 offsets; NULL: mpiopt_ring_block's). With
 * own_out set, it ends on this rank's own block r instead, and writes that block's result at
 * own_out (which may be tmp's block r, or not overlap the data at all); buf may then be tmp
 * itself (the blocks in between are kept in tmp). */
int mpiopt_reduce_scatter_ring_blocks(const mpiopt_coll *c, void *buf, void *tmp, size_t count,
                                      const size_t *displs, void *own_out);
int mpiopt_allgather_ring(const mpiopt_coll *c, void *buf, size_t count);

/* Binomial broadcast of count elements from rank root. */
int mpiopt_bcast_binomial(const mpiopt_coll *c, void *buf, size_t count, int root);

/* ---- the algorithms (one file each, one row each in include/mpiopt_algorithms.h) ----
 * allreduce: buf receives the result; the algorithms flagged MPIOPT_READS_SRC read this rank's
 * contribution from c->src when it is set, the others need it in buf (c->src NULL).
 * reduce: buf is scratch of count elements on every rank (this rank's contribution in it, or in
 * c->src for the algorithms flagged MPIOPT_REDUCE_READS_SRC); the result lands in the root's buf.
 * cost: the predicted seconds of one call (cost_model.h), the formula of the file's top comment. */
#define MPIOPT_DECLARE_ALGORITHM(ID, name, ...)                                             \
    int mpiopt_allreduce_##name(const mpiopt_coll *c, void *buf, size_t count);             \
    int mpiopt_reduce_##name(const mpiopt_coll *c, void *buf, size_t count, int root);      \
    double mpiopt_cost_##name(const mpiopt_cost_call *x, int is_reduce);
MPIOPT_ALGORITHM_LIST(MPIOPT_DECLARE_ALGORITHM)
#undef MPIOPT_DECLARE_ALGORITHM

/* Scan (exclusive = 0) or exscan (1) by recursive doubling (scan.c): this rank's input in c->src,
 * or in buf (MPI_IN_PLACE); its prefix lands in buf (an exscan leaves rank 0's buf as it was). */
int mpiopt_scan_recursive_doubling(const mpiopt_coll *c, void *buf, size_t count, int exclusive);
/* shared_memory.c: the same on the node's window (rank r folds the r lower inputs); *done 0
 * where it cannot (no window, a schedule records the call) */
int mpiopt_scan_shared_memory(const mpiopt_coll *c, void *buf, size_t count, int exclusive,
                              int *done);

/* Reduce-scatter (reduce_scatter.c): rank r gets block r, elements [displs[r], displs[r + 1]) of
 * the reduction (displs: p + 1 offsets), at the start of recvbuf, which gets nothing else; this
 * rank's input in c->src, never NULL (in place, the entry passes the caller's buffer as c->src and
 * other memory as recvbuf). ring: commutative ops only; halving: p a power of two and equal
 * blocks; binomial, shared_memory: any call. */
int mpiopt_reduce_scatter_blocks_ring(const mpiopt_coll *c, void *recvbuf, const size_t *displs);
int mpiopt_reduce_scatter_blocks_halving(const mpiopt_coll *c, void *recvbuf,
                                         const size_t *displs);
int mpiopt_reduce_scatter_blocks_binomial(const mpiopt_coll *c, void *recvbuf,
                                          const size_t *displs);
/* shared_memory.c: a reduce-scatter on the node's window, each rank reducing its own block
 * (displs as above) into out; *done 0 where it cannot (no window, a schedule) */
int mpiopt_reduce_scatter_shared_memory(const mpiopt_coll *c, void *out, const size_t *displs,
                                        int *done);
int mpiopt_reduce_scatter_blocks_shared_memory(const mpiopt_coll *c, void *recvbuf,
                                                const size_t *displs);

/* The registry (registry.c): one entry per mpiopt_algorithm, from mpiopt_algorithms.h (their
 * names are the engine's, engine.h, for the report). The selectors (auto, vendor) have no
 * functions. */
typedef struct {
    int (*allreduce)(const mpiopt_coll *c, void *buf, size_t count);
    int (*reduce)(const mpiopt_coll *c, void *buf, size_t count, int root);
    double (*cost)(const mpiopt_cost_call *x, int is_reduce);
    unsigned flags;             /* MPIOPT_KEEPS_ORDER, MPIOPT_READS_SRC, … */
    int min_count;
} mpiopt_algorithm_info;
extern const mpiopt_algorithm_info mpiopt_algorithms[MPIOPT_ALG_COUNT];

/* 1 if algorithm a can run a call on p processes with this op: rank order for non-commutative
 * ops, a power of two where it needs one (the selectors always can). */
int mpiopt_algorithm_fits(mpiopt_algorithm a, int p, int commutative);
/* 1 if a can take count elements of an op (predefined or not) once selected; else the call goes
 * to the vendor. */
int mpiopt_algorithm_takes(mpiopt_algorithm a, int count, int predefined_op);

/* ---- the rest of the family (MPIOPT_FAMILY_LIST): reduce-scatter and scan ---- */
typedef enum { MPIOPT_FAMILY_REDUCE_SCATTER, MPIOPT_FAMILY_SCAN } mpiopt_family;
#define FAMILY_COST_DECLARATION(COLLECTIVE, collective, ID, name, flags) \
    double mpiopt_cost_##collective##_##name(const mpiopt_cost_call *x);
MPIOPT_FAMILY_LIST(FAMILY_COST_DECLARATION)
#undef FAMILY_COST_DECLARATION
/* 1 if algorithm a runs the collective for this op (a row, in rank order where the op does not
 * commute). */
int mpiopt_family_fits(mpiopt_family f, mpiopt_algorithm a, int commutative);
/* The predicted seconds of a call of `bytes` (a reduce-scatter's whole buffer, a scan's) on p
 * processes by its row's formula, with the model's parameters; negative where not modelled. */
double mpiopt_family_cost(mpiopt_family f, mpiopt_algorithm a, int p, double bytes,
                          const mpiopt_cost_params *params);

#endif
