/* Scratch memory kept between collective calls.
 *
 * glibc serves a large malloc with mmap and unmaps it again at free, so an algorithm that
 * allocated its scratch per call paid a page fault for every 4 KiB of it on every call: a 4 MiB
 * ring reduce spent 2.7 ms where 0.5 ms is the work (strace shows the munmap). Here each thread
 * keeps a few buffers that grow to the largest size asked of them and stay mapped until
 * MPI_Finalize (or the thread's exit).
 *
 * Per thread, not per communicator: a thread runs one collective at a time, so its pool is never
 * shared and needs no lock; and the communicator attributes belong to the caches in select.c.
 * The buffers are released by the delete callback of an attribute on MPI_COMM_SELF, which MPI
 * runs at the start of MPI_Finalize (MPI-3.1 §8.7.1). A call holds at most a few buffers at once
 * (reduce: the non-root's copy of its data, then the algorithm's own); each slot is handed to one
 * holder at a time, so buffers held together are distinct memory. Beyond the slots, plain malloc.
 *
 * MPIOPT_SCRATCH_POOL=0 turns the pool off (malloc and free on every call), to measure what it
 * saves. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "coll/engine/engine.h"
#include "coll/engine/schedule.h"
#include "tls_model.h"

#define SLOTS 4
#define ALIGN 64    /* a cache line, and an AVX-512 vector */

typedef struct pool {
    struct pool *next;          /* every thread's pool, for MPI_Finalize to empty */
    void *buf[SLOTS];
    size_t cap[SLOTS];
    unsigned char busy[SLOTS];
} pool;

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static pool *pools;
static pthread_key_t exit_key;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static int enabled, finalized;
static int self_keyval = MPI_KEYVAL_INVALID;
/* MPIOPT_TLS_FAST (initial-exec in the native build): read at a fixed offset from the thread
 * pointer, where the default model of a shared library calls __tls_get_addr on every access (a
 * small reduce's non-root rank takes and gives back scratch on every call); the SMPI build keeps
 * the default model (tls_model.h says why) */
static __thread pool *my_pool MPIOPT_TLS_FAST;
static __thread int recording MPIOPT_TLS_FAST;   /* mpiopt_scratch_recording */

static void empty(pool *p)
{
    for (int i = 0; i < SLOTS; i++) {
        if (p->busy[i])
            continue;
        free(p->buf[i]);
        p->buf[i] = NULL;
        p->cap[i] = 0;
    }
}

/* MPI_Finalize: every pool's buffers go back; later calls (none are allowed) would use malloc. */
static int release_all(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    pthread_mutex_lock(&pools_lock);
    finalized = 1;
    for (pool *p = pools; p; p = p->next)
        empty(p);
    pthread_mutex_unlock(&pools_lock);
    return MPI_SUCCESS;
}

/* A thread's exit: its pool is unlinked and freed. */
static void thread_exit(void *arg)
{
    pool *p = arg;
    pthread_mutex_lock(&pools_lock);
    for (pool **q = &pools; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            break;
        }
    pthread_mutex_unlock(&pools_lock);
    empty(p);
    free(p);
}

static void setup(void)
{
    const char *env = getenv("MPIOPT_SCRATCH_POOL");
    enabled = !(env && !strcmp(env, "0"));
    if (!enabled || pthread_key_create(&exit_key, thread_exit) != 0 ||
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, release_all, &self_keyval, NULL) != MPI_SUCCESS ||
        PMPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, NULL) != MPI_SUCCESS)
        enabled = 0;
}

static pool *this_thread_pool(void)
{
    if (my_pool)
        return my_pool;
    pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_lock(&pools_lock);
    p->next = pools;
    pools = p;
    pthread_mutex_unlock(&pools_lock);
    pthread_setspecific(exit_key, p);
    return my_pool = p;
}

void *mpiopt_scratch_aligned(size_t bytes)
{
    void *m = NULL;
    size_t rounded = (bytes + ALIGN - 1) / ALIGN * ALIGN;
#ifdef SMPI_SHARED_MALLOC
    /* Under SimGrid every simulated rank lives in one process, and smpicc turns malloc (not
     * posix_memalign) into SMPI's intercept: from smpi/auto-shared-malloc-thresh up, the ranks'
     * scratch shares the same few pages instead of 1024 ranks x 8 MiB x a few slots of real
     * memory. Contents are garbage then, which the simulation (network time only) allows; free
     * is intercepted too. Page-aligned when shared; malloc's 16 bytes below (only speed needs
     * ALIGN). */
    (void)m;
    return malloc(rounded ? rounded : ALIGN);
#else
    return posix_memalign(&m, ALIGN, rounded ? rounded : ALIGN) == 0 ? m : NULL;
#endif
}

void *mpiopt_scratch(size_t bytes)
{
    pool *p = my_pool;     /* made only once setup has run and found the pool enabled */
    if (!p) {
        pthread_once(&setup_once, setup);
        p = enabled && !finalized ? this_thread_pool() : NULL;
    }
    if (finalized)
        p = NULL;
    if (!p)
        return mpiopt_scratch_aligned(bytes);
    /* the smallest free slot that fits; failing that, the largest free one, grown */
    int fit = -1, grow = -1;
    for (int i = 0; i < SLOTS; i++) {
        if (p->busy[i])
            continue;
        if (p->cap[i] >= bytes && (fit < 0 || p->cap[i] < p->cap[fit]))
            fit = i;
        if (grow < 0 || p->cap[i] > p->cap[grow])
            grow = i;
    }
    if (fit < 0 && grow >= 0) {
        free(p->buf[grow]);     /* no copy: scratch holds nothing between holders */
        p->cap[grow] = 0;
        if (!(p->buf[grow] = mpiopt_scratch_aligned(bytes)))
            return NULL;
        p->cap[grow] = bytes;
        fit = grow;
    }
    if (fit < 0)
        return mpiopt_scratch_aligned(bytes);  /* every slot is held */
    p->busy[fit] = 1;
    return p->buf[fit];
}

void mpiopt_scratch_recording(int on)
{
    recording = on;
}

void mpiopt_scratch_free(void *buf)
{
    pool *p = my_pool;
    if (!buf || recording)
        return;     /* a schedule's scratch lives as long as the schedule */
    for (int i = 0; p && i < SLOTS; i++)
        if (p->buf[i] == buf && p->busy[i]) {
            p->busy[i] = 0;
            return;
        }
    free(buf);
}

void *mpiopt_coll_scratch(const mpiopt_coll *c, size_t count)
{
    if (c->record)
        return mpiopt_schedule_scratch(c->record, count * c->extent);
    return mpiopt_scratch(count * c->extent);
}
