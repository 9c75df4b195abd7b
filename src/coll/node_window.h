/* The layout of the shared_memory algorithm's window, for the two files that use it:
 * shared_memory.c (the window, and reductions through its buffers) and single_copy.c (large
 * allreduces that read the other ranks' buffers where they are). Internal to src/coll. */
#ifndef MPIOPT_NODE_WINDOW_H
#define MPIOPT_NODE_WINDOW_H

#include <sched.h>
#include <stdint.h>
#include "coll.h"

#define BUFFER_BYTES 8192
#define RESULT_BUFFERS 4
#define SMALL_BUFFERS 4

typedef struct {
    _Alignas(64) uint64_t call;     /* the call whose input follows (0: none yet) */
    uint64_t pad;                   /* keeps data 16-byte aligned, as malloc'd buffers are */
    char data[BUFFER_BYTES];
} buffer;

/* What a rank tells the others for a single-copy allreduce (single_copy.c): each field on a
 * cache line of its own, as each is written at a different time and waited for by the others. */
typedef struct {
    _Alignas(64) uint64_t posted;   /* the call whose addresses follow */
    const char *src;                /* this rank's input and output to it, in its address space */
    char *dst;
    _Alignas(64) uint64_t reduced;  /* the call whose share of the result is in dst */
    _Alignas(64) uint64_t gathered; /* the call whose result this rank holds whole: it reads no
                                     * other rank's memory for it any more */
    _Alignas(64) int64_t pid;       /* set at creation */
    const uint64_t *probe;          /* a word the others read once to learn that they can */
} direct_block;

typedef struct {
    direct_block direct;
    buffer result[RESULT_BUFFERS];  /* this rank's share of allreduce call k's result in
                                     * result[k % RESULT_BUFFERS] */
    buffer small[SMALL_BUFFERS];    /* the small ring's buffers */
    buffer in[];                    /* the large ring's */
} slot;

/* Calls go through one of two rings of input buffers, each with its own call numbers: every
 * allreduce and small reduces through four buffers that stay in cache, larger reduces through as
 * many as the window's budget gives, so that a reduce's other ranks can hand over MiBs and leave.
 * Through the large ring, every call would land in buffers gone cold (new cache lines, new pages).
 * Every rank makes the same calls, so each ring's numbers agree. The result buffers are numbered
 * by the small ring's calls (allreduces only). */
typedef struct {
    int large;                      /* 0: slot.small, 1: slot.in */
    uint64_t buffers;               /* the same on every rank */
    uint64_t calls;                 /* the last call made through this ring */
    uint64_t writable_until;        /* the last call whose buffer is known free */
} ring;

static inline buffer *ring_buffer(const ring *g, slot *s, uint64_t call)
{
    return (g->large ? s->in : s->small) + call % g->buffers;
}

/* A rank's view of the window (made by shared_memory.c's window_of) */
struct mpiopt_node_window {
    int usable;                     /* 0: the ranks do not share a node */
    int freed;                      /* the window is gone (MPI_Finalize came first) */
    MPI_Win win;
    ring small, large;
    int direct;                     /* every rank can read every other's memory (single_copy.c) */
    slot *mine;
    slot **all;                     /* every rank's slot, mapped here */
    struct mpiopt_node_window *prev, *next;
};
typedef mpiopt_node_window node_window;

/* Where a rank that reduces p > 2 inputs keeps the p2 partial results of a piece: allocated once
 * a call, not once a piece; NULL when that failed. */
typedef struct {
    char *scratch;                  /* p2 pieces */
    char **value;                   /* p2 pointers into it */
    const char **inputs;            /* p pointers: where each rank's input to a piece is */
} fold_space;

/* Waits until *flag reads at least `call`; returns what it read. Spins briefly, then gives the
 * core away between looks: with more ranks than cores the rank waited for may need this one. */
static inline uint64_t mpiopt_shm_wait(const uint64_t *flag, uint64_t call)
{
    uint64_t seen;
    for (unsigned looks = 0; (seen = __atomic_load_n(flag, __ATOMIC_ACQUIRE)) < call; looks++) {
        if (looks < 256) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
/* single_copy.c: the ranks' process ids and probe words in the window (before the window's first
 * barrier), then whether every rank can read every other (collective, after it) */
void mpiopt_shm_direct_prepare(node_window *w);
int mpiopt_shm_direct_agree(const mpiopt_coll *c, node_window *w);
/* An allreduce of `count` elements by reading the other ranks' buffers (w->direct set) */
int mpiopt_shm_direct_allreduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                                size_t count);

#endif
        } else {
            sched_yield();
        }
    }
    return seen;
}

/* The p inputs (in[r]: rank r's) reduced into buf with recursive doubling's bracketing
 * (shared_memory.c) */
int mpiopt_shm_reduce_inputs(const mpiopt_coll *c, const char *const *in, void *buf, size_t count,
                             const fold_space *f);

/* single_copy.c: the ranks' process ids and probe words in the window (before the window's first
 * barrier), then whether every rank can read every other (collective, after it) */
void mpiopt_shm_direct_prepare(node_window *w);
int mpiopt_shm_direct_agree(const mpiopt_coll *c, node_window *w);
/* An allreduce of `count` elements by reading the other ranks' buffers (w->direct set) */
int mpiopt_shm_direct_allreduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                                size_t count);

#endif
