/* Internal interface of the collective algorithms (src/coll/).
 *
 * Layers: allreduce.c / reduce.c check arguments and hand over to the algorithm select.c names;
 * each algorithm file works on a contiguous buffer through an mpiopt_coll context, using only
 * PMPI point-to-point calls on mpiopt's communicator and the reduction helpers below. The result
 * lands in the buffer; this rank's contribution is either in it already or, for the algorithms
 * that read it where the caller left it, in c->src.
 * Nothing here knows about LD_PRELOAD (src/interpose/) or kernel internals (src/kernels/). */
#ifndef MPIOPT_COLL_H
#define MPIOPT_COLL_H

#include <stddef.h>
#include "mpiopt.h"
#include "op_kernel.h"
#include "cost_model.h"

typedef struct mpiopt_schedule mpiopt_schedule;   /* schedule.h */
typedef struct mpiopt_node_window mpiopt_node_window;   /* shared_memory.c */
typedef struct mpiopt_measured mpiopt_measured;         /* measured.c */

/* Which ranks of a communicator share a node (node_layout.c). Nodes are numbered in the order of
 * their lowest rank; a node's ranks are listed in rank order. */
typedef struct mpiopt_node_layout {
    int nodes;
    int *node_of;           /* [p] the node of each rank */
    int *start;             /* [nodes + 1] node k's ranks are members[start[k] .. start[k+1]) */
    int *members;           /* [p] the ranks, node by node */
    int min_ranks, max_ranks;   /* the fewest and most ranks a node has */
    int in_order;           /* 1 if members[i] = i: each node's ranks are consecutive */
} mpiopt_node_layout;

/* One collective call as the algorithms see it. */
typedef struct {
    /* Where the messages go: mpiopt's communicator, shared by all communicators, with tags of this
     * one's own (common.c), or this communicator's own duplicate. */
    MPI_Comm comm;
    /* The program's communicator: ranks and size are its own, and mpiopt's own collective calls
     * (agreements, the node's layout, the windows) are made on it, within a blocking call the
     * program makes on it, so they come in the same order on every rank. */
    MPI_Comm user_comm;
    /* NULL, or user_comm's rank r is rank msg_rank[r] of comm (p2p.c translates). */
    const int *msg_rank;
    int rank, size;
    MPI_Datatype datatype;
    MPI_Op op;
    size_t extent;          /* bytes per element in memory */
    int commutative;
    int has_kernel;
    mpiopt_op_kernel kernel;
    /* This rank's contribution where the caller left it (the sendbuf: read, never written), or
     * NULL when it is already in the algorithm's buffer (MPI_IN_PLACE, or copied there by
     * mpiopt_coll_take_input). Reading it in place of a copy saves n bytes read + written; the
     * algorithms that do start from it and keep track of where their own data is afterwards. */
    const void *src;
    int tag;                /* of every message: the communicator's, or a schedule's own */
    /* Where shared_memory.c keeps the window it made for this communicator (a field of the
     * user communicator's mpiopt attribute, so found with the rest of it); NULL for a
     * communicator of one. */
    mpiopt_node_window **node_window;
    /* Where node_layout.c keeps the node layout it found for this communicator (the same
     * attribute); NULL for a communicator of one. */
    mpiopt_node_layout **node_layout;
    /* measured.c's trials and choices for this communicator (the same attribute); NULL for a
     * communicator of one. */
    mpiopt_measured *measured;
    /* NULL, or: the algorithm runs on a group of c->comm's ranks (hierarchical.c runs a flat
     * algorithm between nodes that way): rank and size are this rank's place in the group and
     * its size, and the algorithm's peer g is c->comm's rank peers[g] (p2p.c translates). */
    const int *peers;
    /* Not NULL while a nonblocking or persistent call records the algorithm (schedule.h): the
     * point-to-point calls, reductions and copies below append to it instead of acting. */
    mpiopt_schedule *record;
} mpiopt_coll;

/* Fills *c for a call on the user's communicator (c->src = NULL); returns an MPI error code. A
 * communicator of one process gets no record: nothing is ever sent on it.
 * nonblocking = 1: a call that may not block, on a communicator that has its record already
 * (mpiopt_private_exists); a blocking call makes it if there is none. */
int mpiopt_coll_init(mpiopt_coll *c, MPI_Comm user_comm, MPI_Datatype datatype, MPI_Op op,
                     int nonblocking);
/* The communicator part alone, for calls that move no typed data (a barrier): MPI_BYTE, no op. */
int mpiopt_coll_init_comm(mpiopt_coll *c, MPI_Comm user_comm);

/* For algorithms that work in place from the start: copies the count elements at c->src (if any)
 * into buf and sets c->src to NULL. */
void mpiopt_coll_take_input(mpiopt_coll *c, void *buf, size_t count);

/* mpiopt's record of a user communicator (where its messages go, its tags, its window), which
 * outlives the user's handle for as long as a schedule holds it (common.c): a program may free
 * its communicator while a nonblocking collective on it is pending. Hold: one more reference
 * (made on first use); release: one fewer, and the last gives back its tags. */
typedef struct mpiopt_private_comm mpiopt_private_comm;
int mpiopt_private_hold(MPI_Comm user_comm, mpiopt_private_comm **held);
int mpiopt_private_release(mpiopt_private_comm *held);
/* The next schedule's tag on the communicator (a count that wraps after the communicator's
 * tags): messages of nonblocking collectives that are in flight together never match each
 * other's receives. */
int mpiopt_private_tag(mpiopt_private_comm *pc);
/* Makes user_comm's record now if it has none (collective over it: MPI_Init for
 * MPI_COMM_WORLD, which also makes mpiopt's shared communicator, and the program's
 * communicator constructors, src/interpose/comm.c), so that a nonblocking call on it finds one. */
int mpiopt_private_prepare(MPI_Comm user_comm);
/* 1 if user_comm has its record. A nonblocking call on one without goes to the vendor. */
int mpiopt_private_exists(MPI_Comm user_comm);
/* The user communicator it duplicates, or MPI_COMM_NULL once the program freed that. */
MPI_Comm mpiopt_private_user_comm(const mpiopt_private_comm *pc);
/* Frees a communicator's shared-memory windows (node_window.c; collective: called from the user
 * communicator's MPI_Comm_free). */
int mpiopt_node_window_free(mpiopt_node_window *w);

/* The node layout of c's communicator in *out: MPIOPT_RANKS_PER_NODE=k (a testing knob: each run
 * of k consecutive ranks is a node), else MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) on the
 * program's communicator at the first call (collective: every rank makes it), kept with it. *out =
 * NULL when it cannot be known yet: a schedule being recorded may not make the collective calls,
 */
int mpiopt_node_layout_get(const mpiopt_coll *c, const mpiopt_node_layout **out);
void mpiopt_node_layout_free(mpiopt_node_layout *layout);
/* The ranks of c's communicator on this node (MPI_Comm_split_type, collective), as a communicator
 * whose errors come back as codes, also those of the split itself (then *node = MPI_COMM_NULL). */
int mpiopt_node_comm(const mpiopt_coll *c, MPI_Comm *node);

/* Raises error code rc (not MPI_SUCCESS) through comm's error handler, as the vendor would, and
 * returns it: mpiopt's own checks and failures reach the program the way MPI says they must. */
int mpiopt_raise(MPI_Comm comm, int rc);

/* ---- point-to-point (p2p.c): n elements of c->datatype on c->comm with c->tag ---- */
int mpiopt_send(const mpiopt_coll *c, const void *buf, size_t n, int dst);
int mpiopt_recv(const mpiopt_coll *c, void *buf, size_t n, int src);
int mpiopt_sendrecv(const mpiopt_coll *c, const void *sbuf, size_t sn, int dst, void *rbuf,
                    size_t rn, int src);
int mpiopt_isend(const mpiopt_coll *c, const void *buf, size_t n, int dst, MPI_Request *req);
int mpiopt_irecv(const mpiopt_coll *c, void *buf, size_t n, int src, MPI_Request *req);
int mpiopt_waitall(const mpiopt_coll *c, int n, MPI_Request *reqs);
/* 1 if this process should yield its core while it waits: more ranks on the node than cores
 * under an MPI library that polls regardless (MPICH), or MPIOPT_YIELD=1. */
int mpiopt_yield_when_idle(void);

/* memcpy of n bytes (recorded when c->record is set). */
int mpiopt_coll_copy(const mpiopt_coll *c, void *dst, const void *src, size_t n);

/* Pointer to element i of a buffer. */
static inline char *mpiopt_at(const mpiopt_coll *c, const void *buf, size_t i)
{
    return (char *)buf + i * c->extent;
}

/* inout[0..n) = in[0..n) op inout[0..n): `in` is the left operand (lower ranks). */
int mpiopt_coll_reduce_left(const mpiopt_coll *c, const void *in, void *inout, size_t n);
/* inout[0..n) = inout[0..n) op in[0..n): `inout` is the left operand; `in` may be overwritten
 * (it is scratch: non-commutative user ops need it to compute the result out of place). */
int mpiopt_coll_reduce_right(const mpiopt_coll *c, void *inout, void *in, size_t n);
/* out[0..n) = left[0..n) op right[0..n) (left: lower ranks), with the kernel's 3-buffer form: no
 * copy of an operand. out may be the same buffer as right (then it is reduce_left); it must not
 * be left, nor partly overlap either. */
int mpiopt_coll_reduce3(const mpiopt_coll *c, const void *left, const void *right, void *out,
                        size_t n);
/* buf[0..n) = mine op theirs (mine_left) or theirs op mine, where `theirs` is a partner's data in
 * scratch (may be overwritten) and `mine` this rank's data: buf itself, or c->src (then buf is
 * only written). */
int mpiopt_coll_reduce_mine(const mpiopt_coll *c, const void *mine, void *theirs, void *buf,
                            size_t n, int mine_left);

/* Element range [lo, hi) of a count-element buffer owned by `path` after `levels` steps of
 * recursive halving: bit i of path picks the upper (1) or lower (0) half at step i. Halving in
 * this order keeps every partial result a reduction of consecutive ranks, and the ranges of a
 * smaller block of processes are unions of those of a bigger one (binary_blocks.c needs that). */
void mpiopt_halving_range(size_t count, unsigned path, int levels, size_t *lo, size_t *hi);

/* ---- phases on a group of 2^levels processes (group rank g = rank_of[g] in c->comm) ---- */

/* Reduce-scatter by recursive halving: afterwards group member g holds, in
 * buf[mpiopt_halving_range(count, g, levels)], the rank-ordered reduction of all members' data
 * over that range. `mine`: where this member's data is, buf or c->src (the first step then sends
 * from it and reduces it straight into buf; the rest of buf is left for the allgather or gather
 * to fill). tmp: count elements of scratch. */
int mpiopt_reduce_scatter_halving(const mpiopt_coll *c, void *buf, void *tmp, size_t count,
                                  const void *mine, const int *rank_of, int levels, int g);
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

/* Scratch memory (scratch.c): from this thread's pool, which keeps its buffers mapped between
 * calls until MPI_Finalize, so no call faults its scratch in again. Buffers held at the same time
 * are distinct; each goes back with mpiopt_scratch_free. Never NULL for 0 bytes. */
void *mpiopt_scratch(size_t bytes);
void mpiopt_scratch_free(void *buf);
/* A fresh buffer of at least `bytes` (never NULL for 0), cache-line aligned, outside the pool:
 * give it back with free(). */
void *mpiopt_scratch_aligned(size_t bytes);
/* While on (this thread records a schedule), mpiopt_scratch_free gives nothing back: the
 * schedule owns the scratch its algorithm took (mpiopt_coll_scratch) until it is freed. */
void mpiopt_scratch_recording(int on);
/* count elements of scratch: from the pool, or the schedule's while recording. */
void *mpiopt_coll_scratch(const mpiopt_coll *c, size_t count);
/* Moves the result from rank `from` to rank `to` (nothing if they are the same rank). */
int mpiopt_forward_result(const mpiopt_coll *c, void *buf, size_t count, int from, int to);

/* Ring phases over all ranks of c->comm (commutative ops only: each block is reduced in a rotated
 * rank order). After the reduce-scatter, rank r holds block (r + 1) % p of mpiopt_ring_block; it
 * reads this rank's data from c->src when set, and then block r of buf is left unwritten (the
 * allgather fills it). */
void mpiopt_ring_block(size_t count, int p, int b, size_t *lo, size_t *hi);
int mpiopt_reduce_scatter_ring(const mpiopt_coll *c, void *buf, void *tmp, size_t count);
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

/* The registry (algorithms.c): one entry per mpiopt_algorithm, from mpiopt_algorithms.h. The
 * selectors (auto, vendor) have no functions. */
typedef struct {
    const char *name;           /* as in MPIOPT_ALLREDUCE and tuning files */
    const char *short_name;     /* a narrow table column */
    int (*allreduce)(const mpiopt_coll *c, void *buf, size_t count);
    int (*reduce)(const mpiopt_coll *c, void *buf, size_t count, int root);
    double (*cost)(const mpiopt_cost_call *x, int is_reduce);
    unsigned flags;             /* MPIOPT_KEEPS_ORDER, MPIOPT_READS_SRC, … */
    int min_count;
} mpiopt_algorithm_info;
extern const mpiopt_algorithm_info mpiopt_algorithms[MPIOPT_ALG_COUNT];

/* MPIOPT_ALG_* for a name as in MPIOPT_ALLREDUCE, or -1. */
int mpiopt_algorithm_from_name(const char *name);
/* "auto, vendor, binomial, …" into out (for help texts and warnings). */
void mpiopt_algorithm_names(char *out, size_t outlen);
/* 1 if algorithm a can run a call on p processes with this op: rank order for non-commutative
 * ops, a power of two where it needs one (the selectors always can). */
int mpiopt_algorithm_fits(mpiopt_algorithm a, int p, int commutative);
/* 1 if a can take count elements of an op (predefined or not) once selected; else the call goes
 * to the vendor. */
int mpiopt_algorithm_takes(mpiopt_algorithm a, int count, int predefined_op);

/* ---- selection (select.c) ---- */
/* The algorithm to run: `requested` unless it is AUTO (then the env var, tuning table or cost
 * model decides); an algorithm that cannot do a non-commutative op is replaced by one that can.
 * vendor_ok = 0 keeps `auto` from choosing the vendor (its result is known to be wrong). */
mpiopt_algorithm mpiopt_select(int is_reduce, mpiopt_algorithm requested, int p, size_t bytes,
                               int commutative, int vendor_ok, int rank);

/* The cost-model parameters `auto` selects with (built in, or MPIOPT_TUNING_FILE's). */
const mpiopt_cost_params *mpiopt_selection_model(void);

/* 1 if MPIOPT_ALLREDUCE (is_reduce = 0) / MPIOPT_REDUCE names the vendor. */
int mpiopt_env_asks_vendor(int is_reduce);

/* 1 if `auto` may time its candidates (measured.c): it chooses from the built-in rows (no tuning
 * file, no MPIOPT_ALLREDUCE / MPIOPT_REDUCE) and MPIOPT_MEASURE is not 0. */
int mpiopt_selection_measures(int is_reduce);

/* 1 if MPIOPT_VERBOSE asks for a line on stderr about the choices made. */
int mpiopt_verbose(void);

/* ---- measured choice (measured.c): auto times its candidates on a communicator's first calls ----
 * The algorithm a blocking allreduce of count elements on c runs, where the rows chose
 * rows_choice: a trial's candidate (*measuring = 1: time the call and give the time to
 * mpiopt_measured_record), the class's agreed choice, or rows_choice where nothing is measured.
 * predefined_op: the op is one of MPI's own (some candidates take only those). */
mpiopt_measured *mpiopt_measured_new(void);
void mpiopt_measured_free(mpiopt_measured *m);
mpiopt_algorithm mpiopt_measured_pick(const mpiopt_coll *c, mpiopt_algorithm rows_choice,
                                      size_t count, int predefined_op, int *measuring);
void mpiopt_measured_record(const mpiopt_coll *c, size_t count, int predefined_op,
                            double seconds);

/* The size class of a call of `bytes` bytes: log2 of the next power of two (at most 63), as
 * MPIOPT_VERBOSE names it (select.c) and measured.c keeps its trials by. */
static inline int mpiopt_size_class(size_t bytes)
{
    int k = 0;
    while (k < 63 && ((size_t)1 << k) < bytes)
        k++;
    return k;
}

/* Largest power of two <= p, and its log2. */
static inline int mpiopt_pow2_floor(int p, int *log2p)
{
    int l = 0;
    while ((2 << l) <= p)
        l++;
    if (log2p)
        *log2p = l;
    return 1 << l;
}

/* mpiopt's tags start here on its communicators (common.c lays them out up to MPI_TAG_UB). */
#define MPIOPT_TAG_FIRST 1000

#endif
