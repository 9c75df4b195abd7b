/* The layout of the shared_memory algorithm's window, for the two files that use it:
 * shared_memory.c (the window, and reductions through its buffers) and single_copy.c (large
 * allreduces that read the other ranks' buffers where they are). Internal to src/coll. */
#ifndef MPIOPT_NODE_WINDOW_H
#define MPIOPT_NODE_WINDOW_H

#include <sched.h>
#include <stdint.h>
#include <string.h>
#include "coll/node/node_layout.h"
#include "coll/node/line_count.h"
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#define BUFFER_BYTES 8192
#define RESULT_BUFFERS 4
/* The ring's buffers: a reduce's other ranks look at the root's progress once in SMALL_BUFFERS - 1
 * calls (shared_memory.c's wait_writable), and each look is a cache line from the root's core.
 * With four, that look was 40 % of the non-root's time in the exchange at 64 B; with sixteen it
 * is a look every fifteen calls. Calls of up to 48 bytes touch one line of each buffer. */
#define SMALL_BUFFERS 16

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
    const char *calibration;        /* data the others read once to time it (single_copy.c) */
} direct_block;

/* A stage of the pipelined allreduce and reduce (staged.c): a rank's input to one chunk of the
 * vector, and its share of that chunk's result. Flags hold chunk numbers, counted over calls. A
 * slot has as many stages as the node's budget for the window gives (MPIOPT_SHM_WINDOW_BYTES,
 * between MIN_STAGES and MAX_STAGES); an allreduce uses the first ALLREDUCE_STAGES (they stay
 * in cache; at p = 2 only their inputs, staged.c), a reduce all of them, so that its other ranks
 * can hand over MiBs and leave. */
#define STAGE_BYTES (64u << 10)
/* A stage's `out` holds one rank's share of a chunk (p > 2: at most half of it, staged.c and
 * staged_groups.c size their chunks so): half a stage less its five flag lines, so that a stage
 * is 96 KiB, whole pages (a window's part is pages: no bytes the budget does not count), and
 * four stages of a rank fit the stages' half of its share of the node's default budget at 64
 * ranks (64 MiB / 64 / 2 = 512 KiB; with an `out` as large as `in` four stages took 513 KiB,
 * and 64 ranks got none) */
#define STAGE_FLAG_LINES 5
#define STAGE_OUT_BYTES (STAGE_BYTES / 2 - STAGE_FLAG_LINES * 64)
/* p > 2 allreduces take the stages for elements of up to this size (a share of a chunk of at
 * least 3 elements fits `out`); larger ones the slots' pieces or another algorithm */
#define STAGE_MAX_EXTENT (STAGE_OUT_BYTES / 4)
#define ALLREDUCE_STAGES 4
/* at p = 2 an allreduce's chunks of up to 16 KiB go round up to this many (staged.c) */
#define PAIR_ALLREDUCE_STAGES 8
#define MIN_STAGES ALLREDUCE_STAGES
#define MAX_STAGES 256
typedef struct {
    _Alignas(64) uint64_t in_chunk;     /* the chunk whose input is in `in` */
    _Alignas(64) uint64_t out_chunk;    /* the chunk whose share of the result is in `out` */
    _Alignas(64) uint64_t done_chunk;   /* the last chunk this rank holds whole: it reads no
                                         * other rank's stage for it any more */
    _Alignas(64) uint64_t in_half;      /* p = 2 allreduce (staged.c): 2 * chunk - 1 once the
                                         * first half of its input is in `in`, 2 * chunk both */
    _Alignas(64) uint64_t result_chunk; /* p > 2 allreduce by the node's groups
                                         * (staged_groups.c): the chunk whose share of the
                                         * whole result is in `in`, where its own input's
                                         * share would be (nobody reads that there) */
    _Alignas(64) char in[STAGE_BYTES];
    _Alignas(64) char out[STAGE_OUT_BYTES];
} stage;
_Static_assert(sizeof(stage) == STAGE_FLAG_LINES * 64 + STAGE_BYTES + STAGE_OUT_BYTES &&
               sizeof(stage) % 4096 == 0, "a stage is its flag lines and data, whole pages");

/* shared_memory.c's allreduce pieces of this size and up are reduce-scattered where p > 2 (and
 * tree.c leaves them to it by default): below, the second round of cache-line handovers costs
 * more than the reduction it shares out. At p = 2 it costs more at every piece size (a piece is
 * at most 8 KiB): OSU, both ranks reducing the whole piece against each its half, 4 KiB
 * 1.19-1.24 us against 1.54-1.66 and 8 KiB 1.86-2.08 against 2.08-2.35 under Open MPI 4.1.4,
 * MPICH 4.0.2 and Intel MPI 2021.15 alike. */
#define SCATTER_FROM_BYTES 4096
/* The tree's lines (tree.c): a small call's partial result going up the tree, its result coming
 * down. Each its writer's only (single-writer), numbered with the tree's call (never reset), the
 * number on the line's first word; a payload of up to TREE_INLINE_BYTES on that same line, a
 * larger one (to TREE_MAX_BYTES) in `data` after it. */
#define TREE_MAX_BYTES 4096
#define TREE_INLINE_BYTES 56
/* up lines in turn: a reduce's leaves look at their parent's progress once in
 * TREE_UP_BUFFERS - 1 calls (tree.c's wait_up_writable); the down line is one (its reuse is
 * bounded by the up pass of the call after) */
#define TREE_UP_BUFFERS 4
typedef struct {
    _Alignas(64) uint64_t call;
    char inline_data[TREE_INLINE_BYTES];
    _Alignas(64) char data[TREE_MAX_BYTES];
} tree_line;

typedef struct {
    direct_block direct;
    buffer result[RESULT_BUFFERS];  /* this rank's share of allreduce call k's result in
                                     * result[k % RESULT_BUFFERS] */
    buffer small[SMALL_BUFFERS];    /* the ring's buffers */
    tree_line up[TREE_UP_BUFFERS];  /* tree.c: this rank's partial of tree call k in
                                     * up[k % TREE_UP_BUFFERS] */
    tree_line down;                 /* tree.c: the result, for this rank's children */
} slot;

/* Small calls go through a ring of SMALL_BUFFERS input buffers that stay in cache, each call with
 * its own number. Every rank makes the same calls, so the numbers agree. The result buffers are
 * numbered by the ring's calls (allreduces only). */
typedef struct {
    uint64_t calls;                 /* the last call made through this ring */
    uint64_t writable_until;        /* the last call whose buffer is known free */
    /* shared_memory.c's exchange_lines: per buffer, the last call that wrote it as numbered
     * lines, and how many of its lines end with a call's number (not another call's data) */
    uint64_t lines_call[SMALL_BUFFERS];
    uint32_t lines_numbered[SMALL_BUFFERS];
    /* exchange_lines at p = 2: per buffer, whose slot this rank writes its lines in next (0 its
     * own, 1 the other rank's), the same on both ranks */
    unsigned char lines_turn[SMALL_BUFFERS];
} ring;

/* every ring has SMALL_BUFFERS: a power of two, so no division */
static inline buffer *ring_buffer(slot *s, uint64_t call)
{
    return s->small + call % SMALL_BUFFERS;
}

/* A rank's view of the window (made by shared_memory.c's window_of) */
/* Two shared windows a communicator, made when first needed (shared_memory.c): the slots, at the
 * first call (what small calls need, 168 KiB a rank), and the stages, at the first call that goes
 * through them, sized from what is left of the node's budget (MPIOPT_SHM_NODE_BYTES). */
struct mpiopt_node_window {
    int usable;                     /* 0: the ranks do not share a node, or the budget or the
                                     * room in the backing store is spent */
    int why_unusable;               /* then: a node's limit (mpiopt_node_reason), or -1 */
    int why_no_stages;              /* once stages were refused: the same */
    int freed;                      /* the windows are gone (MPI_Finalize came first) */
    MPI_Win win;
    ring small;
    int direct;                     /* every rank can read and write every other's memory
                                     * (single_copy.c), found when the window is made */
    int direct_allreduce;           /* and an allreduce read that way pays on this machine
                                     * (measured then, single_copy.c) */
    char *calibration;              /* this rank's data for that measure, until it is done */
    int stages_tried;               /* the stage window was asked for (made or refused) */
    MPI_Win stage_win;              /* MPI_WIN_NULL until made */
    uint64_t stages;                /* in each rank's stage array, the same on every rank
                                     * (0: none) */
    stage *my_stages;
    stage **all_stages;             /* every rank's stages, mapped here */
    uint64_t chunks;                /* the chunks through the stages so far (staged.c) */
    size_t ring_warm;               /* bytes of each ring buffer asked into cache so far */
    size_t stages_warm;             /* bytes of each allreduce stage in this rank's cache
                                     * (staged.c's allreduce_pair) */
    uint64_t stage_chunk[MAX_STAGES];   /* the chunk each stage carried last (0: none yet) */
    /* staged.c's allreduce_pair: whose slot of stage s this rank writes next, its own or the
     * other rank's, the same on both ranks, and whether its reuse must first wait for the other
     * rank (staged.c's PAIR_TURN_* bits) */
    unsigned char pair_turn[MAX_STAGES];
    /* staged_groups.c: the virtual ranks of a group of the node (a power of two, >= 2), 1 where
     * the allreduce takes the flat stages, 0 not yet known; and the chunk each stage carried in
     * that way last (its reuse waits only for the ranks that read it then) */
    int stage_group;
    uint64_t grouped_chunk[MAX_STAGES];
    slot *mine;
    slot **all;                     /* every rank's slot, mapped here */
    struct mpiopt_shm_tree *tree;   /* tree.c's shape and state, made at its first call */
    struct mpiopt_node_window *prev, *next;
};
typedef mpiopt_node_window node_window;

/* c's window, made at its first call (collective; node_window.c); not usable (w->usable 0) where
 * the ranks do not share a node or the budget or /dev/shm has no room: the caller takes another
 * algorithm. */
int mpiopt_node_window_of(const mpiopt_coll *c, node_window **out);
/* Asks for the first `reach` bytes of every buffer of the ring in cache (this rank's for writing,
 * the others' for reading) where a call reaches further than any before (node_window.c); on
 * every small call, so the common case is one compare here. */
void mpiopt_node_window_warm_ring_to(const mpiopt_coll *c, node_window *w, size_t reach);
static inline void mpiopt_node_window_warm_ring(const mpiopt_coll *c, node_window *w,
                                                size_t reach)
{
    if (reach > w->ring_warm && w->ring_warm < sizeof(buffer))
        mpiopt_node_window_warm_ring_to(c, w, reach);
}
/* Whether w has stages, made at the first call that asks (collective: every rank asks at the same
 * call); without them large calls go through the slots' buffers in pieces. */
int mpiopt_node_window_stages(const mpiopt_coll *c, node_window *w);

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
    MPIOPT_COUNT_READ(flag, sizeof *flag);    /* another rank's flag line (the counting build) */
    for (unsigned looks = 0; (seen = __atomic_load_n(flag, __ATOMIC_ACQUIRE)) < call; looks++) {
        if (looks < 256) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            sched_yield();
        }
    }
    return seen;
}

/* Asks for bytes [from, to) of p in cache, whole lines, to write (this rank's own) or to read:
 * hints that change nothing, so nobody waits for them (the ring's buffers and the stages, when a
 * call first reaches further into them than any before) */
static inline void mpiopt_shm_warm(const char *p, size_t from, size_t to, int write)
{
    for (size_t at = from & ~(size_t)63; at < to; at += 64) {
        if (write)
            __builtin_prefetch(p + at, 1, 3);
        else
            __builtin_prefetch(p + at, 0, 3);
    }
}

/* Copies n bytes into or out of the window's stages (staged.c; at p = 2 an allreduce copies its
 * input in with memcpy instead, measured there). glibc's memcpy copies 8-64 KiB with `rep movsb`,
 * which is slow on lines another core holds: a reduce's non-root writing the stages its root
 * read in the call before, an allreduce reading the other rank's share of the result. 16-byte
 * loads and stores, measured at p = 2 with Open MPI 4.1.4:
 * - a reduce of 128 KiB: the non-root took 9.9-10.0 us against 13.3;
 * - an allreduce: the vendor's time / shared_memory's went from 1.29, 1.16, 1.15, 1.24 to 1.49,
 *   1.34, 1.32, 1.36 at 128 KiB, 256 KiB, 512 KiB and 1 MiB (four alternating runs, median).
 * Under Intel MPI 2021.15 the allreduce gained 6-8 % at 64-256 KiB and was unchanged from
 * 512 KiB. */
static inline void mpiopt_shm_copy(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    char *d = dst;
    const char *s = src;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_storeu_si128((__m128i *)d, a);
        _mm_storeu_si128((__m128i *)(d + 16), b);
        _mm_storeu_si128((__m128i *)(d + 32), c);
        _mm_storeu_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, n);
#else
    memcpy(dst, src, n);
#endif
}

/* The p inputs (in[r]: rank r's) reduced into buf with recursive doubling's bracketing
 * (node_window.c; the shared_memory algorithm, staged.c and single_copy.c use it); f only where
 * p > 2 (NULL at p = 2: rank 0's input op rank 1's) */
int mpiopt_shm_reduce_inputs(const mpiopt_coll *c, const char *const *in, void *buf, size_t count,
                             const fold_space *f);

/* Elements [first, first + n) of a chunk of m elements: share r of p (staged.c, staged_groups.c) */
static inline void mpiopt_shm_share_of(size_t m, int r, int p, size_t *first, size_t *n)
{
    *first = m * (size_t)r / (size_t)p;
    *n = m * (size_t)(r + 1) / (size_t)p - *first;
}
/* Posts a stage's flag: the chunk it now says (staged.c, staged_groups.c) */
static inline void mpiopt_shm_post_chunk(uint64_t *flag, uint64_t chunk)
{
    MPIOPT_COUNT_FLAG_WRITE();      /* every post is a stage's flag line (line_count.h) */
    __atomic_store_n(flag, chunk, __ATOMIC_RELEASE);
}
/* staged.c's pieces for staged_groups.c: a stage to write for `chunk` once every other rank is
 * done with what it carried before, and the room to reduce inputs (free_fold gives it back) */
stage *mpiopt_shm_stage_for(const mpiopt_coll *c, node_window *w, uint64_t chunk, int s);
int mpiopt_shm_make_fold(const mpiopt_coll *c, size_t elements, fold_space *f);
void mpiopt_shm_free_fold(fold_space *f);
/* The same over the virtual ranks [v0, v0 + n) only (recursive doubling's: the first 2 * surplus
 * ranks fold in pairs; n a power of two, v0 a multiple of n): a block of the whole's brackets,
 * whose n-th parts the whole then brackets again (staged_groups.c) */
int mpiopt_shm_reduce_virtual(const mpiopt_coll *c, const char *const *in, int v0, int n,
                              void *buf, size_t count, const fold_space *f);
/* The bracket of recursive doubling over n values (n a power of two; value[g] are n pieces of
 * `count` elements, overwritten), lower op higher; *result: where the whole is */
int mpiopt_shm_bracket(const mpiopt_coll *c, char **value, int n, size_t count, char **result);
/* An allreduce at p > 2 through the stages by the node's groups (staged_groups.c): *done 0 where
 * it takes the flat stages instead (collective at the first call: the node's groups, agreed) */
int mpiopt_shm_grouped_allreduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                                 size_t count, int *done);
/* An allreduce of `count` elements in chunks through the ranks' stages (staged.c) */
int mpiopt_shm_staged_allreduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                                size_t count);
/* A reduce to `root` the same way: the others copy their chunks in and return */
int mpiopt_shm_staged_reduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                             size_t count, int root);
/* A scan (exclusive = 0) or exscan the same way: rank r folds the chunks of the ranks below */
int mpiopt_shm_staged_scan(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                           size_t count, int exclusive);
/* One piece of a scan or exscan on this rank: `own` its input, `out` its result (n elements);
 * lower_input(ctx, r) waits until lower rank r's input to the piece is there and returns it. The
 * nearest lower rank's first, then the others folded on the left: in_0 op (in_1 op (... op own)).
 * Rank 0's scan is its input; its exscan leaves out as it was. Used by the window's ring
 * (shared_memory.c) and by the stages (staged.c). */
typedef const char *(*mpiopt_shm_lower_input)(const void *ctx, int r);
int mpiopt_shm_scan_fold(const mpiopt_coll *c, mpiopt_shm_lower_input lower_input,
                         const void *ctx, const void *own, void *out, size_t n, int exclusive);

/* single_copy.c: the ranks' process ids, probe words and data to time in the window (before the
 * window's first barrier), then whether every rank can read every other and whether it pays for
 * an allreduce (collective, after it) */
void mpiopt_shm_direct_prepare(const mpiopt_coll *c, node_window *w);
int mpiopt_shm_direct_agree(const mpiopt_coll *c, node_window *w);
/* Whether reading the other ranks' buffers pays for an allreduce of `bytes`: 2 over every other
 * way, 1 only over the window's pieces (the stages are faster), 0 not */
int mpiopt_shm_direct_pays(const mpiopt_coll *c, const node_window *w, size_t bytes);
/* An allreduce of `count` elements by reading the other ranks' buffers (w->direct set) */
int mpiopt_shm_direct_allreduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                                size_t count);
/* Whether a reduce of `bytes` at p = 2 is the root reading the other's input (w->direct set),
 * and that reduce */
int mpiopt_shm_direct_reduce_pays(const mpiopt_coll *c, size_t bytes);
int mpiopt_shm_direct_reduce_pair(const mpiopt_coll *c, node_window *w, const void *in,
                                  void *out, size_t count, int root);
/* An exscan at p = 2 (rank 0's input to rank 1's out), half of it read by rank 1 and half
 * written by rank 0 (w->direct set) */
int mpiopt_shm_direct_exscan_pair(const mpiopt_coll *c, node_window *w, const void *in,
                                  void *out, size_t count);

#endif
