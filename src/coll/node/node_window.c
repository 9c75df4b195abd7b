/* The shared_memory algorithm's windows (node_window.h): made when a communicator first needs
 * them, kept within the node's budget, freed with the communicator or at MPI_Finalize. The
 * reductions through them are shared_memory.c's, staged.c's and single_copy.c's. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "coll/node/node_layout.h"
#include "kernels/node.h"
#include "coll/node/node_window.h"
#include "coll/engine/report.h"

/* one communicator's stages, its node's ranks together (MPIOPT_SHM_WINDOW_BYTES) */
#define DEFAULT_WINDOW_BYTES (16u << 20)
/* All communicators' windows on a node together (MPIOPT_SHM_NODE_BYTES): MPICH's cap on its
 * intra-node collective memory (MPIR_CVAR_COLL_SHM_LIMIT_PER_NODE). Each rank keeps to its
 * share, this over the node's ranks, so the node keeps to the whole without a word between
 * processes; the ranks of a communicator agree (MPI_MIN) on what they make. Past it a
 * communicator's small calls take recursive doubling or Rabenseifner, and its large ones the
 * slots' buffers in pieces instead of stages. */
#define DEFAULT_NODE_BYTES (64u << 20)
/* Communicators with windows a process (MPIOPT_SHM_COMMS): each window takes one of the MPI's
 * context ids (MPICH has 2048 a process, and the program needs them), two with stages. Past it
 * a communicator takes the message-passing algorithms, which at small sizes are slower than the
 * vendor's own shared memory (0.66x MPICH 5.0.2's at 4-256 B), so the cap is what lets a program
 * keep 1900 live communicators under MPICH and still gives a window to one made after 100
 * others. Where a node has more ranks, the bytes' budget binds first (16 ranks: 24 windows). */
#define DEFAULT_WINDOW_COMMS 128
/* the backing store must have this much more free than a window takes (tmpfs fills, and a page
 * touched on a full tmpfs is SIGBUS, not an error) */
#define ROOM_SPARE 1.25
#define SHM_DIRECTORY "/dev/shm"    /* where Open MPI and MPICH back shared windows */

/* SimGrid's mpi.h defines SMPI_SAMPLE_FLOPS: there shared_memory takes no call, and no window
 * is made */
#ifndef SMPI_SAMPLE_FLOPS

/* The windows not freed yet, oldest first. MPI_Finalize tears down the one-sided layer before it
 * frees the communicators (and their attributes), so MPI_Win_free in the communicator's delete
 * callback crashes there; the windows still alive are freed at the start of MPI_Finalize instead
 * (an attribute on MPI_COMM_SELF), oldest first: every rank made the windows it shares with others
 * in the same order, so the collective frees meet. */
static node_window *oldest, *newest;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static int finalize_keyval = MPI_KEYVAL_INVALID;
static int keyval_rc;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;

/* bytes of all windows' parts this process holds, and of those the stages; how many windows
 * (live_lock) */
static size_t held_here, stages_here;
static int windows_here;

static void unlink_window(node_window *w)
{
    *(w->prev ? &w->prev->next : &oldest) = w->next;
    *(w->next ? &w->next->prev : &newest) = w->prev;
}

/* What a rank's part of `bytes` of a window costs the node: the part and the line that aligns
 * it (allocate_shared) in whole pages, and a page for the MPI's own record of the window. The
 * parts alone filled the budget to 64 MiB and /dev/shm then held 64.4 MiB (200 communicators at
 * p = 3, both MPIs alike: test_resources.py). */
#define PAGE_BYTES 4096u
static size_t part_bytes(size_t bytes)
{
    return (bytes + 64 + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES + PAGE_BYTES;
}

/* The stages that fit `bytes` of a rank's budget */
static uint64_t stages_within(size_t bytes)
{
    size_t around = part_bytes(0);
    return bytes > around ? (bytes - around) / sizeof(stage) : 0;
}

/* Bytes of w's two windows this rank holds (its slot, its stages), as the budget counts them. */
static size_t bytes_held(const node_window *w)
{
    return (w->usable ? part_bytes(sizeof(slot)) : 0) +
           (w->stages ? part_bytes(w->stages * sizeof(stage)) : 0);
}

/* Both windows of w (collective: every rank of its communicator frees them in this order). */
static int free_windows(node_window *w)
{
    int rc = MPI_SUCCESS;
    if (w->usable && PMPI_Win_free(&w->win) != MPI_SUCCESS)
        rc = MPI_ERR_OTHER;
    if (w->stages > 0 && PMPI_Win_free(&w->stage_win) != MPI_SUCCESS)
        rc = MPI_ERR_OTHER;
    held_here -= bytes_held(w);
    stages_here -= w->stages ? part_bytes(w->stages * sizeof(stage)) : 0;
    windows_here -= w->usable;
    return rc;
}

static int window_free(node_window *w)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&live_lock);
    if (!w->freed) {
        rc = free_windows(w);
        unlink_window(w);
    }
    pthread_mutex_unlock(&live_lock);
    free(w->all);
    free(w->all_stages);
    free(w->tree);
    free(w);
    return rc;
}

static int free_all_at_finalize(MPI_Comm self, int keyval, void *attr, void *extra)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&live_lock);
    for (node_window *w = oldest; w; w = w->next) {
        if (free_windows(w) != MPI_SUCCESS)
            rc = MPI_ERR_OTHER;
        w->freed = 1;
    }
    oldest = newest = NULL;
    pthread_mutex_unlock(&live_lock);
    return rc;
}

static void keep(node_window *w)
{
    pthread_mutex_lock(&live_lock);
    w->prev = newest;
    *(newest ? &newest->next : &oldest) = w;
    newest = w;
    pthread_mutex_unlock(&live_lock);
}

static void create_keyval(void)
{
    keyval_rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_all_at_finalize,
                                        &finalize_keyval, NULL);
    if (keyval_rc == MPI_SUCCESS)
        keyval_rc = PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL);
}

/* This rank's share of the node's budget, and what it may still take of it: all of the rest
 * for slots, and for stages only what keeps the stages of all communicators within half the
 * share (so that communicators made later keep room for their slots: at 64 MiB and two ranks,
 * about a hundred). */
static size_t node_share(const mpiopt_coll *c)
{
    long node = mpiopt_env_long("MPIOPT_SHM_NODE_BYTES", DEFAULT_NODE_BYTES);
    long ranks = mpiopt_node_ranks();
    ranks = ranks > c->size ? ranks : c->size;     /* a launcher that does not say: at least */
    return node > 0 ? (size_t)node / (size_t)ranks : 0;
}

static size_t budget_left(const mpiopt_coll *c, int for_stages)
{
    size_t share = node_share(c), held, stages;
    pthread_mutex_lock(&live_lock);
    held = held_here;
    stages = stages_here;
    pthread_mutex_unlock(&live_lock);
    size_t left = share > held ? share - held : 0;
    if (for_stages) {
        size_t stage_left = share / 2 > stages ? share / 2 - stages : 0;
        left = left < stage_left ? left : stage_left;
    }
    return left;
}

/* Whether the backing store has room for a window of `bytes` (all ranks' parts) with some to
 * spare. MPIOPT_SHM_ROOM_CHECK=0 skips the look: the tests' control, which shows what a full
 * /dev/shm does without it. No /dev/shm: the MPI backs its windows elsewhere, and says so with
 * an error if it cannot. */
static int room_for(size_t bytes)
{
    if (mpiopt_env_long("MPIOPT_SHM_ROOM_CHECK", 1) == 0)
        return 1;
    struct statvfs v;
    if (statvfs(SHM_DIRECTORY, &v) != 0)
        return 1;
    return (double)v.f_bavail * (double)v.f_frsize >= ROOM_SPARE * (double)bytes;
}

/* Says once, on the communicator's first rank, under MPIOPT_VERBOSE, what a communicator runs
 * instead and why. */
static void say_fallback(const mpiopt_coll *c, const char *what, const char *why)
{
    if (c->rank == 0 && mpiopt_verbose())
        fprintf(stderr, "mpiopt: shared_memory on a communicator of %d ranks: %s (%s)\n", c->size,
                what, why);
}

/* A shared window of `bytes` a rank over node, c's ranks, all on this node, in c's order (the
 * split keeps it), from mpiopt_node_comm (an MPI that cannot allocate says so to mpiopt, which
 * falls back, not to the program's error handler); collective: *mine this rank's part, all[r]
 * rank r's as mapped here (an array of c->size pointers), every page of *mine touched now by its
 * owner (so it is on the owner's NUMA node, no call pays the first-use page faults, and no page
 * is first touched on a full tmpfs later: SIGBUS). The window keeps what it needs of node. */
static inline void *first_line(void *p)
{
    return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* Each rank's part is asked one line larger and starts at its first whole cache line: Open MPI
 * 4.1.4 places the parts 8 bytes past a line (its disp_unit of 64 notwithstanding), which split
 * every line of the layout (a flag and the payload on it) over two (the counting build counted
 * it: src/coll/node/line_count.h). The mappings are page-aligned, so the same line in every
 * process. */
static int allocate_shared(const mpiopt_coll *c, MPI_Comm node, size_t bytes, void *mine,
                           void *all, MPI_Win *win)
{
    int rc = PMPI_Win_allocate_shared((MPI_Aint)(bytes + 64), 64, MPI_INFO_NULL, node, mine,
                                      win);
    void **parts = all;
    for (int r = 0; rc == MPI_SUCCESS && r < c->size; r++) {
        MPI_Aint size;
        int disp;
        rc = PMPI_Win_shared_query(*win, r, &size, &disp, &parts[r]);
        parts[r] = first_line(parts[r]);
    }
    if (rc == MPI_SUCCESS) {
        *(void **)mine = first_line(*(void **)mine);
        memset(*(void **)mine, 0, bytes);
    }
    return rc;
}

/* Maps the pages of another rank's part of a window (`bytes` from `start`) into this process now,
 * once its owner has touched them (the agreement after allocate_shared): otherwise the first
 * calls to read each page pay a page fault each, 32 a stage, and auto's trials (measured.c),
 * which run a few calls of each algorithm, timed the staged allreduce at 16 KiB at 10.8 us
 * against the 3.4 it takes once mapped (Intel MPI 2021.15). Pages only read: no memory is
 * allocated (they count in this process's resident set, as once read), and an error here costs
 * only the faults later. */
static void map_here(const void *start, size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
#ifdef MADV_POPULATE_READ
    uintptr_t aligned = (uintptr_t)start & ~(uintptr_t)(page - 1);
    if (madvise((void *)aligned, (size_t)((uintptr_t)start - aligned) + bytes,
                MADV_POPULATE_READ) == 0)
        return;
#endif
    for (size_t at = 0; at < bytes; at += (size_t)page)    /* older kernels: a read a page */
        (void)*((volatile const char *)start + at);
}

/* A size larger than any before writes and reads lines of the ring's buffers no call has touched
 * since the window was made: from memory, where the calls after find them in the caches. Asking
 * for them once (prefetches change nothing, so nobody waits) keeps that out of the first sixteen
 * calls of each new size, which are auto's trial calls (measured.c): OSU, Intel MPI 2021.15,
 * shared_memory's trials at 4 KiB 1.2-1.7 us against its steady 1.06-1.11. */
void mpiopt_node_window_warm_ring_to(const mpiopt_coll *c, node_window *w, size_t reach)
{
    reach = reach < sizeof(buffer) ? reach : sizeof(buffer);
    for (int b = 0; b < SMALL_BUFFERS; b++)
        for (int r = 0; r < c->size; r++)
            mpiopt_shm_warm((const char *)&w->all[r]->small[b], w->ring_warm, reach,
                            r == c->rank);
    w->ring_warm = reach;
}

/* One int every rank of c agrees on: the least of what they hold. */
static int agree_min(const mpiopt_coll *c, uint64_t mine, uint64_t *all)
{
    return PMPI_Allreduce(&mine, all, 1, MPI_UINT64_T, MPI_MIN, c->user_comm);
}

/* What a rank can make: a reason it cannot (mpiopt_node_reason, report.h), or CAN; the ranks
 * agree on the least. */
#define CAN MPIOPT_NODE_REASONS
static const char *const cannot_why[] = {
    [MPIOPT_NODE_NO_CONTEXT_ID] = "no context id: MPIOPT_SHM_COMMS communicators have windows",
    [MPIOPT_NODE_BUDGET] = "shared-memory budget spent",
    [MPIOPT_NODE_NO_ROOM] = "no room in " SHM_DIRECTORY,
    [MPIOPT_NODE_ALLOC_FAILED] = "the MPI could not allocate it",
    [MPIOPT_NODE_SPANS_NODES] = "the ranks are on more than one node",
    [MPIOPT_NODE_SCHEDULE] = "a schedule of messages"};

/* w gets no window (every rank of c comes here alike): why, said under MPIOPT_VERBOSE. */
static void no_window(const mpiopt_coll *c, node_window *w, int why)
{
    w->usable = 0;
    w->why_unusable = why;
    say_fallback(c, "recursive doubling / Rabenseifner", cannot_why[why]);
}

/* w gets no stages: why, said, and counted for this call (MPIOPT_REPORT). */
static int no_stages(const mpiopt_coll *c, node_window *w, int why)
{
    w->stages = 0;
    w->why_no_stages = why;
    say_fallback(c, "large calls in pieces through the small buffers", cannot_why[why]);
    mpiopt_report_node(1, (mpiopt_node_reason)why);
    return 0;
}

/* The window of c's communicator, made by the first call on it (collective: every rank makes
 * this call) and kept where c->node_window points, in the communicator's record, which frees it
 * with the communicator: later calls read one pointer.
 * It holds the slots only (168 KiB a rank); mpiopt_node_window_stages adds the stages when a
 * call needs them.
 * Not usable (the caller takes another algorithm) where the ranks do not share a node, or where
 * any rank's share of the node's budget, its windows or the room in /dev/shm is spent. */
int mpiopt_node_window_of(const mpiopt_coll *c, node_window **out)
{
    if (*c->node_window) {
        *out = *c->node_window;
        return MPI_SUCCESS;
    }
    int rc;
    node_window *w = NULL;
    pthread_once(&keyval_once, create_keyval);
    if (keyval_rc != MPI_SUCCESS)
        return keyval_rc;
    if (!(w = calloc(1, sizeof *w)) || !(w->all = calloc((size_t)c->size, sizeof *w->all))) {
        free(w);
        return MPI_ERR_NO_MEM;
    }
    w->stage_win = MPI_WIN_NULL;
    w->why_unusable = w->why_no_stages = -1;
    MPI_Comm node = MPI_COMM_NULL;
    int node_size = 0;
    if (mpiopt_node_comm(c, &node) == MPI_SUCCESS)
        PMPI_Comm_size(node, &node_size);
    else    /* no node communicator (no context id left): no window */
        w->why_unusable = MPIOPT_NODE_NO_CONTEXT_ID;
    rc = MPI_SUCCESS;
    w->usable = node_size == c->size;
    if (node_size > 0 && !w->usable)
        w->why_unusable = MPIOPT_NODE_SPANS_NODES;     /* the report names the path taken */
    if (w->usable) {
        pthread_mutex_lock(&live_lock);
        int windows = windows_here;
        pthread_mutex_unlock(&live_lock);
        uint64_t can = CAN, all;
        if (windows >= mpiopt_env_long("MPIOPT_SHM_COMMS", DEFAULT_WINDOW_COMMS))
            can = MPIOPT_NODE_NO_CONTEXT_ID;
        else if (budget_left(c, 0) < part_bytes(sizeof(slot)))
            can = MPIOPT_NODE_BUDGET;
        else if (!room_for((size_t)c->size * sizeof(slot)))
            can = MPIOPT_NODE_NO_ROOM;
        rc = agree_min(c, can, &all);
        w->usable = rc == MPI_SUCCESS && all == CAN;
        if (rc == MPI_SUCCESS && all < CAN)
            no_window(c, w, (int)all);
    }
    if (w->usable && rc == MPI_SUCCESS) {
        rc = allocate_shared(c, node, sizeof(slot), &w->mine, w->all, &w->win);
        uint64_t made;
        /* the ranks that have it keep it unused (a rank whose MPI refused would not free it
         * with the others) */
        if (agree_min(c, rc == MPI_SUCCESS, &made) != MPI_SUCCESS || !made)
            no_window(c, w, MPIOPT_NODE_ALLOC_FAILED);
        rc = MPI_SUCCESS;
    }
    if (node != MPI_COMM_NULL)
        PMPI_Comm_free(&node);
    if (w->usable) {
        __atomic_thread_fence(__ATOMIC_RELEASE);    /* every header 0 before the barrier */
        w->small.writable_until = SMALL_BUFFERS - 1;
        mpiopt_shm_direct_prepare(c, w);
        rc = PMPI_Barrier(c->user_comm);    /* every header reads 0 before the first call */
        if (rc == MPI_SUCCESS)
            rc = mpiopt_shm_direct_agree(c, w);
    }
    if (rc != MPI_SUCCESS) {
        free(w->all);
        free(w);
        return rc;
    }
    pthread_mutex_lock(&live_lock);
    held_here += bytes_held(w);
    windows_here += w->usable;
    pthread_mutex_unlock(&live_lock);
    keep(w);
    *out = *c->node_window = w;
    return MPI_SUCCESS;
}

int mpiopt_node_spans_nodes(const mpiopt_coll *c)
{
    node_window *w;
    return mpiopt_node_window_of(c, &w) == MPI_SUCCESS &&
           w->why_unusable == MPIOPT_NODE_SPANS_NODES;
}

/* Whether w has stages, making them at the first call that asks (collective: every rank asks at
 * the same call, as every rank takes the same path for the same size): as many as
 * MPIOPT_SHM_WINDOW_BYTES gives (divided among the ranks; at least MIN_STAGES), fewer if the
 * stages' half of the rank's share of the node's budget (budget_left) or the room in /dev/shm
 * holds fewer; none below MIN_STAGES.
 * Without stages large calls go through the slots' buffers in pieces. */
int mpiopt_node_window_stages(const mpiopt_coll *c, node_window *w)
{
    if (w->stages_tried) {
        if (!w->stages && w->why_no_stages >= 0)
            mpiopt_report_node(1, (mpiopt_node_reason)w->why_no_stages);
        return w->stages > 0;
    }
    w->stages_tried = 1;
    long window = mpiopt_env_long("MPIOPT_SHM_WINDOW_BYTES", DEFAULT_WINDOW_BYTES);
    uint64_t want = (uint64_t)(window > 0 ? window : 0) / ((uint64_t)c->size * sizeof(stage));
    want = want < MIN_STAGES ? MIN_STAGES : want > MAX_STAGES ? MAX_STAGES : want;
    uint64_t afford = stages_within(budget_left(c, 1)), why = CAN;
    if (want > afford) {
        want = afford;
        why = MPIOPT_NODE_BUDGET;
    }
    while (want >= MIN_STAGES && !room_for((size_t)c->size * want * sizeof(stage))) {
        want /= 2;
        why = MPIOPT_NODE_NO_ROOM;
    }
    if (want < MIN_STAGES)
        want = 0;
    else
        why = CAN;  /* fewer stages than asked for are still stages */
    int rc = agree_min(c, want, &w->stages);
    if (rc == MPI_SUCCESS && w->stages == 0)
        rc = agree_min(c, why, &why);
    if (rc != MPI_SUCCESS || w->stages == 0)
        return no_stages(c, w, why < CAN ? (int)why : MPIOPT_NODE_BUDGET);
    size_t bytes = w->stages * sizeof(stage);
    MPI_Comm node = MPI_COMM_NULL;
    rc = (w->all_stages = calloc((size_t)c->size, sizeof *w->all_stages)) ? MPI_SUCCESS
                                                                             : MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = mpiopt_node_comm(c, &node);
    if (rc == MPI_SUCCESS)
        rc = allocate_shared(c, node, bytes, &w->my_stages, w->all_stages, &w->stage_win);
    if (node != MPI_COMM_NULL)
        PMPI_Comm_free(&node);
    /* all ranks made it, or none uses it (a rank whose MPI refused would not free it with the
     * others: the ones that have it keep it unused until the communicator goes) */
    uint64_t made;
    if (agree_min(c, rc == MPI_SUCCESS, &made) != MPI_SUCCESS || !made)
        return no_stages(c, w, MPIOPT_NODE_ALLOC_FAILED);
    /* the allreduce's stages, which it goes round from call to call (staged.c); a reduce goes
     * round 256 KiB of chunks, so it pays its faults in its first few calls (the rest stay
     * unmapped here, and out of this rank's resident set, until a call needs them) */
    uint64_t mapped = c->size == 2 ? PAIR_ALLREDUCE_STAGES : ALLREDUCE_STAGES;
    mapped = mapped < w->stages ? mapped : w->stages;
    for (int r = 0; r < c->size; r++)
        if (r != c->rank)
            map_here(w->all_stages[r], mapped * sizeof(stage));
    pthread_mutex_lock(&live_lock);
    held_here += part_bytes(bytes);
    stages_here += part_bytes(bytes);
    pthread_mutex_unlock(&live_lock);
    return 1;
}
#else
static int window_free(node_window *w)
{
    (void)w;
    return MPI_SUCCESS;     /* no windows under SimGrid */
}

int mpiopt_node_spans_nodes(const mpiopt_coll *c)
{
    (void)c;
    return 0;               /* shared_memory takes no call under SimGrid: nothing to avoid */
}
#endif

/* A record frees its window with the user's communicator (engine.h). */
__attribute__((constructor)) static void register_window_free(void)
{
    mpiopt_record_parts_register(&(mpiopt_record_parts){.node_window_free = window_free});
}

/* The p inputs (in[r]: rank r's) reduced into buf with the bracketing and operand order of
 * recursive doubling (recursive_doubling.c, halving_doubling.c's fold): the first 2(p - p2) ranks
 * in pairs, then groups of 1, 2, 4, … virtual ranks, always lower op higher. So the result has the
 * bits of recursive doubling, the algorithm a nonblocking call records in this one's place, and a
 * program made nonblocking by `mpiopt transform` computes what it computed before. */
int mpiopt_shm_reduce_inputs(const mpiopt_coll *c, const char *const *in, void *buf, size_t count,
                             const fold_space *f)
{
    if (c->size == 2)
        return mpiopt_coll_reduce3(c, in[0], in[1], buf, count);
    return mpiopt_shm_reduce_virtual(c, in, 0, mpiopt_pow2_floor(c->size, NULL), buf, count, f);
}

int mpiopt_shm_reduce_virtual(const mpiopt_coll *c, const char *const *in, int v0, int n,
                              void *buf, size_t count, const fold_space *f)
{
    int surplus = c->size - mpiopt_pow2_floor(c->size, NULL);
    size_t bytes = count * c->extent;
    char **value = f->value;
    /* without it this rank still takes part (copies, publishes), so the others finish */
    int rc = f->scratch && value ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    for (int g = 0; rc == MPI_SUCCESS && g < n; g++) {    /* the virtual ranks after the fold */
        int v = v0 + g;
        value[g] = f->scratch + (size_t)g * bytes;
        if (v < surplus)
            rc = mpiopt_coll_reduce3(c, in[2 * v], in[2 * v + 1], value[g], count);
        else
            memcpy(value[g], in[v + surplus], bytes);
    }
    char *whole = NULL;
    if (rc == MPI_SUCCESS)
        rc = mpiopt_shm_bracket(c, value, n, count, &whole);
    if (rc == MPI_SUCCESS)
        memcpy(buf, whole, bytes);
    return rc;
}

int mpiopt_shm_bracket(const mpiopt_coll *c, char **value, int n, size_t count, char **result)
{
    int rc = MPI_SUCCESS;
    for (int step = 1; rc == MPI_SUCCESS && step < n; step *= 2)
        for (int g = 0; rc == MPI_SUCCESS && g < n; g += 2 * step) {
            rc = mpiopt_coll_reduce_left(c, value[g], value[g + step], count);  /* lower op higher */
            value[g] = value[g + step];
        }
    *result = value[0];
    return rc;
}
