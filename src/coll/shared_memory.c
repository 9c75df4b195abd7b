/* Shared-memory allreduce and reduce for small messages on one node (the case codes call millions
 * of times: dot products, norms, time-step minima). Every rank copies its input into a buffer of
 * its slot in a window the communicator's ranks share (MPI_Win_allocate_shared, made at the first
 * call and kept with the private communicator), publishes the call's number in that buffer's
 * header, waits until every rank has published it, and then reduces the p inputs itself, the same
 * operands in the same order on every rank: recursive doubling's (so every rank holds the same
 * bits, those of recursive doubling, and a non-commutative op sees rank order). No message, no
 * matching: one copy in and p cache lines read per rank.
 *
 *   one copy of n bytes in, p cache lines read, p*n*gamma (every rank reduces all p inputs)
 *
 * A reduce is the same with only the root waiting and reducing, from its own input where the
 * caller left it: the others copy, publish and return. The root publishes when it has read.
 *
 * A larger allreduce piece (SCATTER_FROM_BYTES and up) is reduce-scattered instead: each rank
 * reduces only its share (1/p) of the piece from the p inputs, into a result buffer of its slot,
 * publishes that, and then every rank copies the p shares into its output. Each rank computes
 * 1/p of the piece instead of all of it, and the shares' cache lines travel once:
 *
 *   one copy of n bytes in, n bytes read to reduce, n bytes gathered, (p-1)/p*n*gamma
 *
 * Each element is still reduced with recursive doubling's bracketing, so the bits do not change.
 *
 * Each slot holds a ring of sixteen input buffers for small calls (node_window.h). A rank publishes
 * call k of the ring only after it has read every input of call k - 1, so a rank may write call
 * k's input once every rank has published k - buffers + 1. Allreduces larger than a buffer and
 * reduces larger than three go through the slot's stages instead (staged.c): as many as the
 * node's budget for the window allows (MPIOPT_SHM_WINDOW_BYTES, default 16 MiB a node, divided
 * among its ranks; at least 4), so that a reduce's other ranks hand over up to all of them (4 MiB
 * at p = 2) and return while the root is still reducing, as a program's non-root ranks want. With
 * MPIOPT_SHM_SINGLE_COPY=1 large allreduces read the other ranks' buffers where they are
 * (single_copy.c). What a rank saw of the others when it last looked tells it
 * how many calls it may go on without looking again: the header of a buffer is on the line with
 * its first 48 bytes, and a call of up to 48 bytes moves one cache line per rank, not three.
 *
 * A message larger than a buffer goes in pieces of a buffer each, every piece a call of its own
 * (exchange): the copying ranks run ahead while the reducing ones reduce, and the inputs are read
 * once, from cache. At p = 2 that beat both vendors' reduce at every size up to 4 MiB.
 *
 * Recursive doubling or Rabenseifner takes the call instead (the same decision on every rank,
 * from facts all ranks share; the same bits, see mpiopt_shm_reduce_inputs) when the ranks do
 * not share one node, when a nonblocking call records the algorithm (a schedule is made of
 * messages), and under SimGrid, whose ranks share one address space and are scheduled
 * cooperatively. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include "coll.h"
#include "node.h"
#include "node_window.h"

#define DEFAULT_WINDOW_BYTES (16u << 20)    /* one communicator's stages, its node's ranks together */
/* All communicators' windows on a node together (MPIOPT_SHM_NODE_BYTES): MPICH's cap on its
 * intra-node collective memory (MPIR_CVAR_COLL_SHM_LIMIT_PER_NODE). Each rank keeps to its
 * share, this over the node's ranks, so the node keeps to the whole without a word between
 * processes; the ranks of a communicator agree (MPI_MIN) on what they make. Past it a
 * communicator's small calls take recursive doubling or Rabenseifner, and its large ones the
 * slots' buffers in pieces instead of stages. */
#define DEFAULT_NODE_BYTES (64u << 20)
/* the backing store must have this much more free than a window takes (tmpfs fills, and a page
 * touched on a full tmpfs is SIGBUS, not an error) */
#define ROOM_SPARE 1.25
#define SHM_DIRECTORY "/dev/shm"    /* where Open MPI and MPICH back shared windows */
/* allreduce pieces of this size and up are reduce-scattered: below, the second round of
 * cache-line handovers costs more than the reduction it shares out */
#define SCATTER_FROM_BYTES 4096
/* A reduce's other ranks hand over this much through the ring without waiting for the root
 * (fewer buffers than the ring has: the root may still be reading the last of the call before);
 * larger reduces go through the stages (staged.c), whose pieces were measured from here */
#define SMALL_RING_BYTES (3 * BUFFER_BYTES)
/* with MPIOPT_SHM_SINGLE_COPY=1, allreduces of this size and up read the other ranks' buffers
 * where they are (single_copy.c), where the ranks can: below, its three waits and a system call
 * per chunk cost more than the window's second copy */
#define DIRECT_FROM_BYTES (64u << 10)
/* allreduces larger than a buffer go through the stages (staged.c): at p = 2 against
 * Intel MPI's shared-memory allreduce, as fast as the window's pieces up to 16 KiB and twice as
 * fast from 32 KiB, where a piece's three waits every 8 KiB add up */
#define STAGED_FROM_BYTES (BUFFER_BYTES + 1)

/* SimGrid's mpi.h defines SMPI_SAMPLE_FLOPS: there every call takes the other algorithm */
#ifndef SMPI_SAMPLE_FLOPS

/* The windows not freed yet, oldest first. MPI_Finalize tears down the one-sided layer before it
 * frees the communicators (and their attributes), so MPI_Win_free in the communicator's delete
 * callback crashes there; the windows still alive are freed at the start of MPI_Finalize instead
 * (an attribute on MPI_COMM_SELF), oldest first: every rank made the windows it shares with others
 * in the same order, so the collective frees meet. */
static node_window *oldest, *newest;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static int window_keyval = MPI_KEYVAL_INVALID, finalize_keyval = MPI_KEYVAL_INVALID;
static int keyvals_rc;
static pthread_once_t keyvals_once = PTHREAD_ONCE_INIT;

/* bytes of all windows' parts this process holds, and of those the stages (live_lock) */
static size_t held_here, stages_here;

static void unlink_window(node_window *w)
{
    *(w->prev ? &w->prev->next : &oldest) = w->next;
    *(w->next ? &w->next->prev : &newest) = w->prev;
}

/* Both windows of w (collective: every rank of its communicator frees them in this order). */
static int free_windows(node_window *w)
{
    int rc = MPI_SUCCESS;
    if (w->usable && PMPI_Win_free(&w->win) != MPI_SUCCESS)
        rc = MPI_ERR_OTHER;
    if (w->stages > 0 && PMPI_Win_free(&w->stage_win) != MPI_SUCCESS)
        rc = MPI_ERR_OTHER;
    held_here -= w->held;
    stages_here -= w->stages * sizeof(stage);
    w->held = 0;
    return rc;
}

static int free_window(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    node_window *w = attr;
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&live_lock);
    if (!w->freed) {
        rc = free_windows(w);
        unlink_window(w);
    }
    pthread_mutex_unlock(&live_lock);
    free(w->all);
    free(w->all_stages);
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

static void create_keyvals(void)
{
    keyvals_rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_window, &window_keyval, NULL);
    if (keyvals_rc == MPI_SUCCESS)
        keyvals_rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_all_at_finalize,
                                             &finalize_keyval, NULL);
    if (keyvals_rc == MPI_SUCCESS)
        keyvals_rc = PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL);
}

int mpiopt_node_window_free(MPI_Comm private_comm)
{
    if (window_keyval == MPI_KEYVAL_INVALID)
        return MPI_SUCCESS;     /* no window was ever made */
    void *w;
    int found = 0, rc = PMPI_Comm_get_attr(private_comm, window_keyval, &w, &found);
    if (rc == MPI_SUCCESS && found)
        rc = PMPI_Comm_delete_attr(private_comm, window_keyval);   /* free_window */
    return rc;
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

/* One int every rank of c agrees on: the least of what they hold. */
static int agree_min(const mpiopt_coll *c, uint64_t mine, uint64_t *all)
{
    return PMPI_Allreduce(&mine, all, 1, MPI_UINT64_T, MPI_MIN, c->comm);
}

/* The window of c's private communicator, made by the first call on it (collective: every rank
 * makes this call) and kept where c->node_window points: later calls read one pointer. The
 * window is also an attribute of the private communicator, whose delete callback frees it.
 * It holds the slots only (168 KiB a rank); stages_of adds the stages when a call needs them.
 * Not usable (the caller takes another algorithm) where the ranks do not share a node, or where
 * any rank's share of the node's budget or the room in /dev/shm is spent. */
static int window_of(const mpiopt_coll *c, node_window **out)
{
    if (*c->node_window) {
        *out = *c->node_window;
        return MPI_SUCCESS;
    }
    int rc;
    node_window *w = NULL;
    pthread_once(&keyvals_once, create_keyvals);
    if (keyvals_rc != MPI_SUCCESS)
        return keyvals_rc;
    if (!(w = calloc(1, sizeof *w)) || !(w->all = calloc((size_t)c->size, sizeof *w->all))) {
        free(w);
        return MPI_ERR_NO_MEM;
    }
    w->stage_win = MPI_WIN_NULL;
    MPI_Comm node;
    int node_size = 0;
    rc = PMPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rc == MPI_SUCCESS) {
        PMPI_Comm_size(node, &node_size);
        PMPI_Comm_free(&node);
    }
    w->usable = rc == MPI_SUCCESS && node_size == c->size;
    if (w->usable) {
        /* 1: this rank can afford its slot and sees room for the window; all must */
        uint64_t can = budget_left(c, 0) >= sizeof(slot) ? 2 : 0, all;
        if (can && !room_for((size_t)c->size * sizeof(slot)))
            can = 1;
        rc = agree_min(c, can, &all);
        w->usable = rc == MPI_SUCCESS && all == 2;
        if (rc == MPI_SUCCESS && all < 2) {
            w->why = all == 0 ? "shared-memory budget spent" : "no room in " SHM_DIRECTORY;
            say_fallback(c, "recursive doubling / Rabenseifner", w->why);
        }
    }
    if (w->usable && rc == MPI_SUCCESS) {
        rc = PMPI_Win_allocate_shared((MPI_Aint)sizeof(slot), 64, MPI_INFO_NULL, c->comm,
                                      &w->mine, &w->win);
        for (int r = 0; rc == MPI_SUCCESS && r < c->size; r++) {
            MPI_Aint size;
            int disp;
            rc = PMPI_Win_shared_query(w->win, r, &size, &disp, &w->all[r]);
        }
        if (rc == MPI_SUCCESS) {
            /* touch every page now, by its owner (so it is on the owner's NUMA node), not one
             * page fault a call while the ring is used for the first time */
            memset(w->mine, 0, sizeof(slot));
            __atomic_thread_fence(__ATOMIC_RELEASE);    /* every header 0 before the barrier */
            w->small.writable_until = SMALL_BUFFERS - 1;
            mpiopt_shm_direct_prepare(w);
            rc = PMPI_Barrier(c->comm);     /* every header reads 0 before the first call */
        }
        if (rc == MPI_SUCCESS)
            rc = mpiopt_shm_direct_agree(c, w);
        if (rc == MPI_SUCCESS)
            w->held = sizeof(slot);
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_set_attr(c->comm, window_keyval, w);
    if (rc != MPI_SUCCESS) {
        free(w->all);
        free(w);
        return rc;
    }
    pthread_mutex_lock(&live_lock);
    held_here += w->held;
    pthread_mutex_unlock(&live_lock);
    keep(w);
    *out = *c->node_window = w;
    return MPI_SUCCESS;
}

/* Whether w has stages, making them at the first call that asks (collective: every rank asks at
 * the same call, as every rank takes the same path for the same size): as many as
 * MPIOPT_SHM_WINDOW_BYTES gives (divided among the ranks; at least MIN_STAGES), fewer if the
 * stages' half of the rank's share of the node's budget (budget_left) or the room in /dev/shm
 * holds fewer; none below MIN_STAGES.
 * Without stages large calls go through the slots' buffers in pieces. */
static int stages_of(const mpiopt_coll *c, node_window *w)
{
    if (w->stages_tried)
        return w->stages > 0;
    w->stages_tried = 1;
    long window = mpiopt_env_long("MPIOPT_SHM_WINDOW_BYTES", DEFAULT_WINDOW_BYTES);
    uint64_t want = (uint64_t)(window > 0 ? window : 0) / ((uint64_t)c->size * sizeof(stage));
    want = want < MIN_STAGES ? MIN_STAGES : want > MAX_STAGES ? MAX_STAGES : want;
    uint64_t afford = budget_left(c, 1) / sizeof(stage);
    const char *why = NULL;
    if (want > afford) {
        want = afford;
        why = "shared-memory budget spent";
    }
    while (want >= MIN_STAGES && !room_for((size_t)c->size * want * sizeof(stage))) {
        want /= 2;
        why = "no room in " SHM_DIRECTORY;
    }
    if (want < MIN_STAGES)
        want = 0;
    int rc = agree_min(c, want, &w->stages);
    if (rc != MPI_SUCCESS || w->stages == 0) {
        w->stages = 0;
        w->why = why ? why : "another rank's budget or room is spent";
        say_fallback(c, "large calls in pieces through the small buffers", w->why);
        return 0;
    }
    size_t bytes = w->stages * sizeof(stage);
    rc = PMPI_Win_allocate_shared((MPI_Aint)bytes, 64, MPI_INFO_NULL, c->comm, &w->my_stages,
                                  &w->stage_win);
    if (rc == MPI_SUCCESS && !(w->all_stages = calloc((size_t)c->size, sizeof *w->all_stages)))
        rc = MPI_ERR_NO_MEM;
    for (int r = 0; rc == MPI_SUCCESS && r < c->size; r++) {
        MPI_Aint size;
        int disp;
        rc = PMPI_Win_shared_query(w->stage_win, r, &size, &disp, &w->all_stages[r]);
    }
    if (rc == MPI_SUCCESS)
        memset(w->my_stages, 0, bytes);     /* every page real now, as for the slots */
    /* all ranks made it, or none uses it (a rank whose MPI refused would not free it with the
     * others: the ones that have it keep it unused until the communicator goes) */
    uint64_t made;
    if (agree_min(c, rc == MPI_SUCCESS, &made) != MPI_SUCCESS || !made) {
        w->stages = 0;
        w->why = "the MPI could not allocate the stages";
        say_fallback(c, "large calls in pieces through the small buffers", w->why);
        return 0;
    }
    pthread_mutex_lock(&live_lock);
    held_here += bytes;
    stages_here += bytes;
    w->held += bytes;
    pthread_mutex_unlock(&live_lock);
    return 1;
}

static void publish(node_window *w, uint64_t call)
{
    __atomic_store_n(&ring_buffer(w->mine, call)->call, call, __ATOMIC_RELEASE);
}

/* Waits until this rank may write call's buffer: every rank has published call - buffers + 1 and
 * so read call - buffers. Looks only when what it saw last time does not already say so, and
 * then first at the newest call a rank can have published (call - 1; ranks publish in order):
 * a reduce's root publishes after its others have run on, so the buffer of call - buffers + 1
 * holds just that number and bought one call a look (a cache line from the root's core on
 * every non-root call, 12 % of its time at 8 B), where call - 1 buys buffers - 1 calls. */
static void wait_writable(const mpiopt_coll *c, node_window *w, ring *g, uint64_t call)
{
    if (call <= g->writable_until)
        return;
    uint64_t needed = call - SMALL_BUFFERS + 1, least = UINT64_MAX;
    for (int r = 0; r < c->size; r++) {
        uint64_t seen = __atomic_load_n(&ring_buffer(w->all[r], call - 1)->call,
                                        __ATOMIC_ACQUIRE);
        if (seen < needed)
            seen = mpiopt_shm_wait(&ring_buffer(w->all[r], needed)->call, needed);
        least = seen < least ? seen : least;
    }
    g->writable_until = least + SMALL_BUFFERS - 1;
}

/* Element `first` of rank r's input to this call: in its buffer, or in `mine` for this rank when
 * it reads its own input where the caller left it. */
static const void *input_of(const mpiopt_coll *c, const node_window *w,
                            uint64_t call, const void *mine, int r, size_t first)
{
    const char *base = r == c->rank && mine ? mine : ring_buffer(w->all[r], call)->data;
    return base + first * c->extent;
}

/* The p inputs (in[r]: rank r's) reduced into buf with the bracketing and operand order of
 * recursive doubling (recursive_doubling.c, halving_doubling.c's fold): the first 2(p - p2) ranks
 * in pairs, then groups of 1, 2, 4, … virtual ranks, always lower op higher. So the result has the
 * bits of recursive doubling, the algorithm a nonblocking call records in this one's place, and a
 * program made nonblocking by `mpiopt transform` computes what it computed before. */
int mpiopt_shm_reduce_inputs(const mpiopt_coll *c, const char *const *in, void *buf, size_t count,
                             const fold_space *f)
{
    int levels, p2 = mpiopt_pow2_floor(c->size, &levels), surplus = c->size - p2;
    size_t bytes = count * c->extent;
    if (c->size == 2)
        return mpiopt_coll_reduce3(c, in[0], in[1], buf, count);
    char **value = f->value;
    /* without it this rank still takes part (copies, publishes), so the others finish */
    int rc = f->scratch && value ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    for (int g = 0; rc == MPI_SUCCESS && g < p2; g++) {   /* the virtual ranks after the fold */
        value[g] = f->scratch + (size_t)g * bytes;
        if (g < surplus)
            rc = mpiopt_coll_reduce3(c, in[2 * g], in[2 * g + 1], value[g], count);
        else
            memcpy(value[g], in[g + surplus], bytes);
    }
    for (int step = 1; rc == MPI_SUCCESS && step < p2; step *= 2)
        for (int g = 0; rc == MPI_SUCCESS && g < p2; g += 2 * step) {
            rc = mpiopt_coll_reduce_left(c, value[g], value[g + step], count);  /* lower op higher */
            value[g] = value[g + step];
        }
    if (rc == MPI_SUCCESS)
        memcpy(buf, value[0], bytes);
    return rc;
}

/* Elements [first, first + count) of this call's p inputs in the window (this rank's in `mine`
 * when it reads its own input where the caller left it) reduced into buf. */
static int reduce_window_inputs(const mpiopt_coll *c, const node_window *w,
                                uint64_t call, const void *mine, size_t first, void *buf,
                                size_t count, const fold_space *f)
{
    const char *pair[2], **in = c->size == 2 ? pair : f->inputs;
    if (!in)
        return MPI_ERR_NO_MEM;
    for (int r = 0; r < c->size; r++)
        in[r] = input_of(c, w, call, mine, r, first);
    return mpiopt_shm_reduce_inputs(c, in, buf, count, f);
}

/* Elements [first, first + n) of a piece of `count`: rank r's share, 1/p of it (whole elements). */
static void share_of(const mpiopt_coll *c, int r, size_t count, size_t *first, size_t *n)
{
    *first = count * (size_t)r / (size_t)c->size;
    *n = count * (size_t)(r + 1) / (size_t)c->size - *first;
}

/* An allreduce piece whose inputs every rank has published: this rank reduces its share into its
 * result buffer and publishes it, then copies every rank's share into `out`. A rank writes
 * result[call % RESULT_BUFFERS] only after every input of `call` is published, so every rank has
 * finished call - 1, and read call - 1's results. */
static int scatter_gather_piece(const mpiopt_coll *c, node_window *w,
                                uint64_t call, void *out, size_t count, const fold_space *f)
{
    size_t first, n;
    share_of(c, c->rank, count, &first, &n);
    buffer *mine = &w->mine->result[call % RESULT_BUFFERS];
    int rc = n ? reduce_window_inputs(c, w, call, NULL, first, mine->data, n, f)
               : MPI_SUCCESS;
    __atomic_store_n(&mine->call, call, __ATOMIC_RELEASE);
    /* this rank's own share first (in cache), then the others' as they come */
    for (int k = 0; k < c->size; k++) {
        int r = (c->rank + k) % c->size;
        const buffer *theirs = &w->all[r]->result[call % RESULT_BUFFERS];
        share_of(c, r, count, &first, &n);
        if (k > 0)
            mpiopt_shm_wait(&theirs->call, call);
        memcpy((char *)out + first * c->extent, theirs->data, n * c->extent);
    }
    return rc;
}

/* One piece of a call (at most a buffer's worth of elements): `call` is its number, `in` this
 * rank's input to it and `out` where its result goes (root: the reduce's, or -1 for an allreduce,
 * where every rank reduces). */
static int exchange_piece(const mpiopt_coll *c, node_window *w, ring *g, uint64_t call,
                          const void *in, void *out, size_t count, int root, const fold_space *f)
{
    const void *mine = NULL;
    if (c->rank == root && in != out) {
        mine = in;          /* nobody else reads a reduce root's input: it stays where it is */
    } else {
        wait_writable(c, w, g, call);
        memcpy(ring_buffer(w->mine, call)->data, in, count * c->extent);
    }
    if (c->rank != root) {
        publish(w, call);
        if (root >= 0)
            return MPI_SUCCESS;     /* a reduce's other ranks: the root reads their input */
    }
    for (int r = 0; r < c->size; r++)
        if (r != c->rank)
            mpiopt_shm_wait(&ring_buffer(w->all[r], call)->call, call);
    int rc;
    if (root < 0 && count * c->extent >= SCATTER_FROM_BYTES)
        rc = scatter_gather_piece(c, w, call, out, count, f);
    else
        rc = reduce_window_inputs(c, w, call, mine, 0, out, count, f);
    if (c->rank == root)
        publish(w, call);   /* a reduce's root: once it has read the others' inputs */
    /* every rank has published call, so has read call - 1's inputs (and results) */
    g->writable_until = call + SMALL_BUFFERS - 1;
    return rc;
}
#else
int mpiopt_node_window_free(MPI_Comm private_comm)
{
    (void)private_comm;
    return MPI_SUCCESS;     /* no windows under SimGrid */
}
#endif

/* The shared part of both operations (root: as above). A message larger than a buffer goes in
 * pieces, each a call of its own: the ranks that copy run up to buffers - 1 pieces ahead of
 * those that reduce, so copying and reducing overlap. *done = 0: the call is not this
 * algorithm's (see the top). */
static int exchange(const mpiopt_coll *c, void *buf, size_t count, int root, int *done)
{
    *done = 0;
#ifdef SMPI_SAMPLE_FLOPS
    (void)c, (void)buf, (void)count, (void)root;
    return MPI_SUCCESS;
#else
    size_t bytes = count * c->extent;
    /* a call that fits a buffer is one piece: no division (tens of cycles) on the small path */
    size_t per_piece = bytes <= BUFFER_BYTES ? count : BUFFER_BYTES / c->extent;
    node_window *w;
    int rc;
    if (c->record || per_piece == 0 || c->size < 2)
        return MPI_SUCCESS;
    if ((rc = window_of(c, &w)) != MPI_SUCCESS || !w->usable)
        return rc;
    *done = 1;
    const char *in = c->src ? c->src : buf;
    if (root < 0 && bytes >= STAGED_FROM_BYTES && c->extent <= STAGE_BYTES) {
        if (w->direct && bytes >= DIRECT_FROM_BYTES)
            return mpiopt_shm_direct_allreduce(c, w, in, buf, count);
        if (stages_of(c, w))
            return mpiopt_shm_staged_allreduce(c, w, in, buf, count);
    }
    if (root >= 0 && bytes > SMALL_RING_BYTES && c->extent <= STAGE_BYTES && stages_of(c, w))
        return mpiopt_shm_staged_reduce(c, w, in, buf, count, root);
    ring *g = &w->small;
    fold_space f = {NULL, NULL, NULL};
    if (c->size > 2 && (root < 0 || c->rank == root)) {
        int levels, p2 = mpiopt_pow2_floor(c->size, &levels);
        f.scratch = mpiopt_coll_scratch(c, (size_t)p2 * (count < per_piece ? count : per_piece));
        f.value = malloc(sizeof *f.value * (size_t)p2);
        f.inputs = malloc(sizeof *f.inputs * (size_t)c->size);
    }
    /* every piece, whatever failed before: the other ranks wait for this one's */
    for (size_t first = 0; first < count; first += per_piece) {
        size_t n = count - first < per_piece ? count - first : per_piece;
        int piece_rc = exchange_piece(c, w, g, ++g->calls, mpiopt_at(c, in, first),
                                      mpiopt_at(c, buf, first), n, root, &f);
        if (rc == MPI_SUCCESS)
            rc = piece_rc;
    }
    free(f.value);
    free(f.inputs);
    mpiopt_scratch_free(f.scratch);
    return rc;
#endif
}

/* Where this algorithm cannot take a call, recursive doubling (the fewest rounds) takes it up to
 * this size and Rabenseifner (half the bytes) above: both have the bits this algorithm computes
 * (tests/c/same_bits.c). The crossover measured at p = 2 on both MPIs (docs/collectives.md). */
#define RABENSEIFNER_FROM_BYTES 92682

int mpiopt_allreduce_shared_memory(const mpiopt_coll *c, void *buf, size_t count)
{
    int done, rc = exchange(c, buf, count, -1, &done);
    if (rc != MPI_SUCCESS || done)
        return rc;
    if (count * c->extent >= RABENSEIFNER_FROM_BYTES)
        return mpiopt_allreduce_rabenseifner(c, buf, count);
    return mpiopt_allreduce_recursive_doubling(c, buf, count);
}

int mpiopt_reduce_shared_memory(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    int done, rc = exchange(c, buf, count, root, &done);
    if (rc != MPI_SUCCESS || done)
        return rc;
    if (count * c->extent >= RABENSEIFNER_FROM_BYTES) {
        mpiopt_coll in_buf = *c;    /* Rabenseifner's reduce starts from its input in buf */
        mpiopt_coll_take_input(&in_buf, buf, count);
        return mpiopt_reduce_rabenseifner(&in_buf, buf, count, root);
    }
    return mpiopt_reduce_recursive_doubling(c, buf, count, root);   /* reads c->src too */
}

double mpiopt_cost_shared_memory(const mpiopt_cost_call *x, int is_reduce)
{
    /* Not modelled: it runs only where the ranks share a node, which the model does not know, and
     * a cache line is not a message. `auto` takes it from the measured rows (select.c's defaults
     * for p = 2 and 4, or a tuning file from `mpiopt tune`), never from the formulas. */
    (void)x, (void)is_reduce;
    return -1;
}
