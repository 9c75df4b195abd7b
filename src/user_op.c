/* Threaded user-defined reduction ops.
 *
 * The vendor calls an MPI_User_function with (in, inout, len, datatype) and no context, so a
 * single callback cannot know which user function it stands for. We keep a small fixed pool of
 * trampolines, trampoline k reading slot k of a registry: each threaded op takes a free slot,
 * records the user's function there, and is created (PMPI_Op_create) with that slot's
 * trampoline. The alternative, one trampoline looking the op up by MPI_Op, is impossible: the
 * callback is not told the op. Generating code at run time (libffi closures) would lift the pool
 * limit but adds a dependency and executable memory for a case (more than MPIOPT_USER_OP_SLOTS
 * live threaded ops) where the plain vendor op is a correct fallback.
 *
 * Each call cuts the buffer into cache-sized chunks (MPIOPT_USER_OP_CHUNK bytes, default 64 KiB,
 * whole elements), the user's function called once a chunk, and deals the chunks out as a few
 * OpenMP tasks (TASKS_PER_THREAD a thread, each a run of consecutive chunks) of priority
 * MPIOPT_USER_OP_PRIORITY (default 1; OpenMP honours it only up to OMP_MAX_TASK_PRIORITY). A task
 * a chunk was the first design and left the second thread idle: a 256 MiB buffer is 4096 chunks,
 * and past a queue limit of a few dozen tasks a thread GCC's libgomp runs new tasks undeferred in
 * the thread that creates them, so the creator did all the work (1.0x the unthreaded op; 1.5x
 * now, where memory bandwidth bounds it: docs/user_ops.md). Inside
 * a parallel region the tasks join the caller's team (so a reduction run as a task overlaps the
 * team's other tasks); outside, a parallel region of the op's thread count runs them. For an
 * element-wise function, result[i] depends only on in[i] and inout[i], so chunked calls are bit
 * for bit one call: that is the promise the user makes by creating the op this way. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include "mpiopt.h"
#include "user_op.h"
#include "kernels/kernels.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define MPIOPT_USER_OP_SLOTS 64
#define DEFAULT_CHUNK_BYTES (64u << 10)
/* enough tasks that a thread slowed by another process hands its share on, few enough that no
 * OpenMP runtime reaches its queue limit */
#define TASKS_PER_THREAD 4

typedef void c_user_fn(void *, void *, int *, MPI_Datatype *);
#ifdef MPIOPT_HAVE_MPI_FINT     /* Fortran handles: not in the MPI standard ABI (CMakeLists.txt) */
typedef void f_user_fn(void *, void *, MPI_Fint *, MPI_Fint *);
#endif

typedef struct {
    void (*fn)(void);   /* NULL: slot free */
    int fortran;
    int threads;        /* 0: mpiopt_max_threads() */
    MPI_Op op;
} user_op_slot;

static user_op_slot slots[MPIOPT_USER_OP_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

static void call_user(const user_op_slot *s, char *in, char *inout, size_t n, MPI_Datatype dt)
{
#ifdef MPIOPT_HAVE_MPI_FINT
    if (s->fortran) {
        MPI_Fint len = (MPI_Fint)n, fdt = PMPI_Type_c2f(dt);
        ((f_user_fn *)s->fn)(in, inout, &len, &fdt);
        return;
    }
#endif
    int len = (int)n;
    ((c_user_fn *)s->fn)(in, inout, &len, &dt);
}

static void run_chunked(const user_op_slot *s, void *in, void *inout, size_t n, MPI_Datatype dt)
{
    MPI_Aint lb, extent;
    if (n == 0)
        return;
    if (PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS || extent <= 0) {
        call_user(s, in, inout, n, dt);
        return;
    }
    /* the environment does not change within a run: read it once, not on every call */
    static long chunk_bytes = -1, priority_setting = -1;
    if (chunk_bytes < 0) {
        chunk_bytes = mpiopt_env_long("MPIOPT_USER_OP_CHUNK", DEFAULT_CHUNK_BYTES);
        priority_setting = mpiopt_env_long("MPIOPT_USER_OP_PRIORITY", 1);
    }
    size_t per = (size_t)chunk_bytes / (size_t)extent;
    if (per == 0)
        per = 1;
    size_t chunks = (n + per - 1) / per;
    /* as for the predefined ops: one thread below MPIOPT_THREAD_MIN_BYTES, where waking threads
     * costs more than it saves (the vendor calls the op once per segment of a large message) */
    int threads = s->threads > 0 ? s->threads : mpiopt_max_threads();
    if (n * (size_t)extent < mpiopt_thread_min_bytes())
        threads = 1;
    int priority = (int)priority_setting;
    if (chunks == 1 || threads <= 1) {
        call_user(s, in, inout, n, dt);
        return;
    }
    char *a = in, *b = inout;
    size_t step = per * (size_t)extent;
    long tasks = (long)threads * TASKS_PER_THREAD;
    if (tasks > (long)chunks)
        tasks = (long)chunks;
    /* task t runs chunks [t*chunks/tasks, (t+1)*chunks/tasks): every task within one chunk of
     * the same work */
#define TASK_BODY                                                                        \
    {                                                                                    \
        size_t first = (size_t)t * chunks / (size_t)tasks;                               \
        size_t end = (size_t)(t + 1) * chunks / (size_t)tasks;                           \
        for (size_t c = first; c < end; c++) {                                           \
            size_t lo = c * per, m = n - lo < per ? n - lo : per;                        \
            call_user(s, a + c * step, b + c * step, m, dt);                             \
        }                                                                                \
    }
#ifdef _OPENMP
    if (omp_in_parallel()) {
#pragma omp taskgroup
        {
#pragma omp taskloop grainsize(1) priority(priority) default(shared)
            for (long t = 0; t < tasks; t++)
                TASK_BODY
        }
        return;
    }
#pragma omp parallel num_threads(threads)
#pragma omp single
#pragma omp taskloop grainsize(1) priority(priority) default(shared)
    for (long t = 0; t < tasks; t++)
        TASK_BODY
#else
    (void)priority;
    for (long t = 0; t < tasks; t++)
        TASK_BODY
#endif
#undef TASK_BODY
}

/* The pool: trampoline_G_J runs the op recorded in slot 8*G + J. */
#define TRAMPOLINE(g, j)                                                                \
    static void trampoline_##g##_##j(void *in, void *inout, int *len, MPI_Datatype *dt) \
    {                                                                                   \
        run_chunked(&slots[8 * g + j], in, inout, *len > 0 ? (size_t)*len : 0, *dt);    \
    }
#define TRAMPOLINES8(g) TRAMPOLINE(g, 0) TRAMPOLINE(g, 1) TRAMPOLINE(g, 2) TRAMPOLINE(g, 3) \
    TRAMPOLINE(g, 4) TRAMPOLINE(g, 5) TRAMPOLINE(g, 6) TRAMPOLINE(g, 7)
TRAMPOLINES8(0) TRAMPOLINES8(1) TRAMPOLINES8(2) TRAMPOLINES8(3)
TRAMPOLINES8(4) TRAMPOLINES8(5) TRAMPOLINES8(6) TRAMPOLINES8(7)
#define T8(g) trampoline_##g##_0, trampoline_##g##_1, trampoline_##g##_2, trampoline_##g##_3, \
    trampoline_##g##_4, trampoline_##g##_5, trampoline_##g##_6, trampoline_##g##_7
static MPI_User_function *const trampolines[MPIOPT_USER_OP_SLOTS] = {
    T8(0), T8(1), T8(2), T8(3), T8(4), T8(5), T8(6), T8(7)
};

int mpiopt_user_op_create(void (*fn)(void), int fortran, int commute, int threads, MPI_Op *op)
{
    pthread_mutex_lock(&slots_lock);
    int k = 0;
    while (k < MPIOPT_USER_OP_SLOTS && slots[k].fn)
        k++;
    if (k == MPIOPT_USER_OP_SLOTS) {
        pthread_mutex_unlock(&slots_lock);
        return MPI_ERR_INTERN;    /* caller falls back to a plain op */
    }
    slots[k].fn = fn;
    slots[k].fortran = fortran;
    slots[k].threads = threads;
    int rc = PMPI_Op_create(trampolines[k], commute, op);
    if (rc == MPI_SUCCESS)
        slots[k].op = *op;
    else
        slots[k].fn = NULL;
    pthread_mutex_unlock(&slots_lock);
    return rc;
}

static int slot_of(MPI_Op op)
{
    for (int k = 0; k < MPIOPT_USER_OP_SLOTS; k++)
        if (slots[k].fn && slots[k].op == op)
            return k;
    return -1;
}

int mpiopt_user_op_forget(MPI_Op op)
{
    pthread_mutex_lock(&slots_lock);
    int k = slot_of(op);
    if (k >= 0)
        slots[k].fn = NULL;
    pthread_mutex_unlock(&slots_lock);
    return k >= 0;
}

int mpiopt_user_op_reduce_local(const void *in, void *inout, size_t n, MPI_Datatype datatype,
                                MPI_Op op)
{
    int k = op == MPI_OP_NULL ? -1 : slot_of(op);
    if (k < 0 || in == MPI_IN_PLACE || inout == MPI_IN_PLACE)
        return PMPI_Reduce_local(in, inout, (int)n, datatype, op);
    run_chunked(&slots[k], (void *)in, inout, n, datatype);
    return MPI_SUCCESS;
}

int mpiopt_op_create_threaded(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    int rc = mpiopt_user_op_create((void (*)(void))user_fn, 0, commute, 0, op);
    return rc == MPI_ERR_INTERN ? PMPI_Op_create(user_fn, commute, op) : rc;
}

#ifdef MPIOPT_HAVE_MPI_FINT
/* Called by the Fortran module `mpiopt` (include/mpiopt.f90) without BIND(C), so under gfortran's
 * name and convention: every argument by reference, user_fn the address of a Fortran procedure
 * with the Fortran MPI_User_function convention, commute 0 or 1 (converted from LOGICAL in
 * Fortran, whose .true. differs between compilers). */
void mpiopt_op_create_threaded_f_(void (*user_fn)(void), const MPI_Fint *commute, MPI_Fint *op,
                                  MPI_Fint *ierror)
{
    MPI_Op c_op = MPI_OP_NULL;
    int rc = mpiopt_user_op_create(user_fn, 1, *commute != 0, 0, &c_op);
    if (rc == MPI_ERR_INTERN)
        rc = MPI_ERR_OTHER;    /* a Fortran function cannot be given to the C PMPI_Op_create */
    *op = rc == MPI_SUCCESS ? PMPI_Op_c2f(c_op) : 0;
    *ierror = rc;
}
#endif
