/* Shared-memory allreduce and reduce for small messages on one node (the case codes call millions
 * of times: dot products, norms, time-step minima). Every rank copies its input into its own slot
 * of a window the communicator's ranks share (MPI_Win_allocate_shared, made at the first call and
 * kept with the private communicator), publishes the call's sequence number, waits until every
 * rank has published it, and then reduces the p inputs itself, the same operands in the same
 * order on every rank: recursive doubling's (so every rank holds the same bits, those of
 * recursive doubling, and a non-commutative op sees rank order). No message, no matching: one
 * copy in and p cache lines read per rank.
 *
 *   one copy of n bytes in, p cache lines read, p*n*gamma (every rank reduces all p inputs)
 *
 * Each slot holds two input buffers, used by odd and even calls: a rank writes call k's input
 * only after every rank has published call k-1, which each does after it has read call k-2's.
 * A reduce is the same with only the root waiting and reducing: the others publish and return.
 *
 * Recursive doubling takes the call instead (the same decision on every rank, from facts all
 * ranks share; the same bits, see reduce_as_recursive_doubling) when the message is larger than a
 * slot, when the ranks do not share one node, when a nonblocking call records the algorithm (a
 * schedule is made of messages), and under SimGrid, whose ranks share one address space and are
 * scheduled cooperatively. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "coll.h"

#define SLOT_BYTES 8192

/* SimGrid's mpi.h defines SMPI_SAMPLE_FLOPS: there every call takes the other algorithm */
#ifndef SMPI_SAMPLE_FLOPS
typedef struct {
    uint64_t published;             /* the last call whose input is in data[call % 2] */
    char pad[64 - sizeof(uint64_t)];
    char data[2][SLOT_BYTES];
} slot;

typedef struct node_window {
    int usable;                     /* 0: the ranks do not share a node */
    int freed;                      /* the window is gone (MPI_Finalize came first) */
    MPI_Win win;
    uint64_t calls;
    slot *mine;
    slot **all;                     /* every rank's slot, mapped here */
    struct node_window *prev, *next;
} node_window;

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

static void unlink_window(node_window *w)
{
    *(w->prev ? &w->prev->next : &oldest) = w->next;
    *(w->next ? &w->next->prev : &newest) = w->prev;
}

static int free_window(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    node_window *w = attr;
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&live_lock);
    if (w->usable && !w->freed)
        rc = PMPI_Win_free(&w->win);    /* collective: every rank frees the communicator */
    if (!w->freed)
        unlink_window(w);
    pthread_mutex_unlock(&live_lock);
    free(w->all);
    free(w);
    return rc;
}

static int free_all_at_finalize(MPI_Comm self, int keyval, void *attr, void *extra)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&live_lock);
    for (node_window *w = oldest; w; w = w->next) {
        if (w->usable && PMPI_Win_free(&w->win) != MPI_SUCCESS)
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

/* The window of c's private communicator, made by the first call on it (collective: every rank
 * makes this call). Every call passes here: one attribute lookup, no lock. */
static int window_of(const mpiopt_coll *c, node_window **out)
{
    int found = 0, rc;
    node_window *w = NULL;
    pthread_once(&keyvals_once, create_keyvals);
    if (keyvals_rc != MPI_SUCCESS)
        return keyvals_rc;
    if ((rc = PMPI_Comm_get_attr(c->comm, window_keyval, &w, &found)) != MPI_SUCCESS)
        return rc;
    if (found) {
        *out = w;
        return MPI_SUCCESS;
    }
    if (!(w = calloc(1, sizeof *w)) || !(w->all = calloc((size_t)c->size, sizeof *w->all))) {
        free(w);
        return MPI_ERR_NO_MEM;
    }
    MPI_Comm node;
    int node_size = 0;
    rc = PMPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rc == MPI_SUCCESS) {
        PMPI_Comm_size(node, &node_size);
        PMPI_Comm_free(&node);
    }
    w->usable = rc == MPI_SUCCESS && node_size == c->size;
    if (w->usable) {
        rc = PMPI_Win_allocate_shared((MPI_Aint)sizeof(slot), 64, MPI_INFO_NULL, c->comm,
                                      &w->mine, &w->win);
        for (int r = 0; rc == MPI_SUCCESS && r < c->size; r++) {
            MPI_Aint size;
            int disp;
            rc = PMPI_Win_shared_query(w->win, r, &size, &disp, &w->all[r]);
        }
        if (rc == MPI_SUCCESS) {
            __atomic_store_n(&w->mine->published, 0, __ATOMIC_RELEASE);
            rc = PMPI_Barrier(c->comm);     /* every slot reads 0 before the first call */
        }
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_set_attr(c->comm, window_keyval, w);
    if (rc != MPI_SUCCESS) {
        free(w->all);
        free(w);
        return rc;
    }
    keep(w);
    *out = w;
    return MPI_SUCCESS;
}

static void wait_published(const slot *s, uint64_t call)
{
    /* spin briefly, then give the core away between looks: with more ranks than cores the rank
     * being waited for may need this one */
    for (unsigned looks = 0; __atomic_load_n(&s->published, __ATOMIC_ACQUIRE) < call; looks++) {
        if (looks < 256) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            sched_yield();
        }
    }
}

#endif

#ifndef SMPI_SAMPLE_FLOPS
/* The p inputs of this call reduced into buf with the bracketing and operand order of recursive
 * doubling (recursive_doubling.c, halving_doubling.c's fold): the first 2(p - p2) ranks in pairs,
 * then groups of 1, 2, 4, … virtual ranks, always lower op higher. So the result has the bits of
 * recursive doubling, the algorithm a nonblocking call records in this one's place, and a
 * program made nonblocking by `mpiopt transform` computes what it computed before. */
static int reduce_as_recursive_doubling(const mpiopt_coll *c, node_window *w, int half,
                                        void *buf, size_t count)
{
    int levels, p2 = mpiopt_pow2_floor(c->size, &levels), surplus = c->size - p2;
    size_t bytes = count * c->extent;
    if (c->size == 2)
        return mpiopt_coll_reduce3(c, w->all[0]->data[half], w->all[1]->data[half], buf, count);
    char *scratch = mpiopt_coll_scratch(c, (size_t)p2 * count);
    char **value = malloc(sizeof *value * (size_t)p2);
    int rc = scratch && value ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    for (int g = 0; rc == MPI_SUCCESS && g < p2; g++) {   /* the virtual ranks after the fold */
        value[g] = scratch + (size_t)g * bytes;
        if (g < surplus)
            rc = mpiopt_coll_reduce3(c, w->all[2 * g]->data[half], w->all[2 * g + 1]->data[half],
                                     value[g], count);
        else
            memcpy(value[g], w->all[g + surplus]->data[half], bytes);
    }
    for (int step = 1; rc == MPI_SUCCESS && step < p2; step *= 2)
        for (int g = 0; rc == MPI_SUCCESS && g < p2; g += 2 * step) {
            rc = mpiopt_coll_reduce_left(c, value[g], value[g + step], count);  /* lower op higher */
            value[g] = value[g + step];
        }
    if (rc == MPI_SUCCESS)
        memcpy(buf, value[0], bytes);
    free(value);
    mpiopt_scratch_free(scratch);
    return rc;
}
#endif

/* The shared part of both operations; result: reduce into buf here (1) or not (0). */
static int exchange(const mpiopt_coll *c, void *buf, size_t count, int result, int *done)
{
    *done = 0;
#ifdef SMPI_SAMPLE_FLOPS
    (void)c, (void)buf, (void)count, (void)result;
    return MPI_SUCCESS;
#else
    size_t bytes = count * c->extent;
    node_window *w;
    int rc;
    if (c->record || bytes > SLOT_BYTES || c->size < 2)
        return MPI_SUCCESS;
    if ((rc = window_of(c, &w)) != MPI_SUCCESS || !w->usable)
        return rc;
    uint64_t call = ++w->calls;
    int half = (int)(call % 2);
    /* this half was last written for call - 2, and read in it; a rank publishes call - 1 only
     * after its reads of call - 2 (usually long done: a look at p cache lines) */
    for (int r = 0; r < c->size; r++)
        wait_published(w->all[r], call - 1);
    memcpy(w->mine->data[half], c->src ? c->src : buf, bytes);
    __atomic_store_n(&w->mine->published, call, __ATOMIC_RELEASE);
    *done = 1;
    if (!result)
        return MPI_SUCCESS;     /* a reduce's other ranks: the root reads their input */
    for (int r = 0; r < c->size; r++)
        wait_published(w->all[r], call);
    return reduce_as_recursive_doubling(c, w, half, buf, count);
#endif
}

int mpiopt_allreduce_shared_memory(const mpiopt_coll *c, void *buf, size_t count)
{
    int done, rc = exchange(c, buf, count, 1, &done);
    if (rc != MPI_SUCCESS || done)
        return rc;
    return mpiopt_allreduce_recursive_doubling(c, buf, count);
}

int mpiopt_reduce_shared_memory(const mpiopt_coll *c, void *buf, size_t count, int root)
{
    int done, rc = exchange(c, buf, count, c->rank == root, &done);
    if (rc != MPI_SUCCESS || done)
        return rc;
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
