/* The engine the algorithms run on (src/coll/engine/): one collective call's context (context.c:
 * the communicator's record, where its messages go, its tags), point-to-point on it (p2p.c), the
 * reduction helpers, scratch (scratch.c), schedules that record an algorithm for a nonblocking
 * call (schedule.h), requests and their waits (requests.h), handles kept alive (handles.h) and
 * MPIOPT_REPORT (report.h). The bottom layer of src/coll/: it includes nothing above it, and what
 * the layers above keep in a communicator's record they free through the callbacks they register
 * (mpiopt_record_parts). Nothing here knows about LD_PRELOAD (src/interpose/) or kernel internals
 * (src/kernels/). */
#ifndef MPIOPT_COLL_ENGINE_H
#define MPIOPT_COLL_ENGINE_H

#include <stddef.h>
#include "mpiopt.h"
#include "op_kernel.h"

typedef struct mpiopt_schedule mpiopt_schedule;         /* engine/schedule.h */
typedef struct mpiopt_node_window mpiopt_node_window;   /* node/node_window.h */
typedef struct mpiopt_node_layout mpiopt_node_layout;   /* node/node_layout.h */
typedef struct mpiopt_measured mpiopt_measured;         /* select/measured.c */

/* One collective call as the algorithms see it. */
typedef struct {
    /* Where the messages go: mpiopt's communicator, shared by all communicators, with tags of this
     * one's own (context.c), or this communicator's own duplicate. */
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
    /* Where node_window.c keeps the window it made for this communicator (a field of the
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
 * outlives the user's handle for as long as a schedule holds it (context.c): a program may free
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

/* What the layers above keep in a communicator's record, made and freed by them: the record
 * calls back the functions they register (each at load, from a constructor), so the engine
 * includes nothing above it. A part whose layer registered nothing stays NULL. */
typedef struct {
    mpiopt_measured *(*measured_new)(void);             /* select/measured.c */
    void (*measured_free)(mpiopt_measured *m);
    void (*node_layout_free)(mpiopt_node_layout *l);    /* node/node_layout.c */
    int (*node_window_free)(mpiopt_node_window *w);     /* node/node_window.c: collective */
} mpiopt_record_parts;
/* Sets the non-NULL members of *parts. */
void mpiopt_record_parts_register(const mpiopt_record_parts *parts);


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

/* The names of the algorithms and selectors, as in MPIOPT_ALLREDUCE and tuning files
 * (algorithm_names.c, from include/mpiopt_algorithms.h; mpiopt_algorithm_name is public). */
const char *mpiopt_algorithm_short_name(mpiopt_algorithm algorithm);   /* a narrow table column */
/* MPIOPT_ALG_* for a name as in MPIOPT_ALLREDUCE, or -1. */
int mpiopt_algorithm_from_name(const char *name);
/* "auto, vendor, binomial, …" into out (for help texts and warnings). */
void mpiopt_algorithm_names(char *out, size_t outlen);

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

/* mpiopt's tags start here on its communicators (context.c lays them out up to MPI_TAG_UB). */
#define MPIOPT_TAG_FIRST 1000

#endif