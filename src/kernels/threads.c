/* Splitting large reductions across threads.
 *
 * Below MPIOPT_THREAD_MIN_BYTES a single thread is used: a parallel region costs a few
 * microseconds, which only pays once the buffer no longer fits in cache and a second core adds
 * memory bandwidth. The thread count comes from the process's CPU affinity mask, not the number
 * of online CPUs: mpirun binds each rank to its own core(s), and threads beyond that mask would
 * only time-share them (and steal cores from neighbouring ranks). Unbound ranks share the node. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "kernels.h"
#include "node.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_get_thread_num(void) { return 0; }
#endif

/* Measured with `mpiopt-reduce-local --compare --threads-always -o sum -t d` on the 2-core
 * AVX-512 development machine, unbound: two threads over one are 0.87x at 64 KiB of input, 1.20x
 * at 128 KiB, 1.46x at 256 KiB, 1.7-3.3x from 512 KiB up (each core brings its own L2 and memory
 * bandwidth); 256 KiB keeps a margin for the cost of waking a thread. */
#define DEFAULT_THREAD_MIN_BYTES (256u << 10)
/* Slices start on 4 KiB boundaries so threads never share a cache line or page. */
#define SLICE_ALIGN 4096

long mpiopt_env_long(const char *name, long fallback)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return fallback;
    char *end;
    long v = strtol(s, &end, 10);
    return (*end == '\0' && v >= 0) ? v : fallback;
}

static int affinity_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    if (n <= 0)
        return 1;
    /* An unbound rank (MPICH binds nothing by default) sees every CPU of the node, as do its
     * neighbours: share the node's CPUs among the node's ranks instead of each taking all. */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long local = mpiopt_node_ranks();
    if (n >= online && local > 1)
        n = (int)(n / local) > 0 ? (int)(n / local) : 1;
    return n;
}

int mpiopt_max_threads(void)
{
    static int cached;
    if (!cached) {
        long t = mpiopt_env_long("MPIOPT_THREADS", 0);
        cached = t > 0 ? (int)t : affinity_cpus();
    }
    return cached;
}

size_t mpiopt_thread_min_bytes(void)
{
    static long cached = -1;
    if (cached < 0)
        cached = mpiopt_env_long("MPIOPT_THREAD_MIN_BYTES", DEFAULT_THREAD_MIN_BYTES);
    return (size_t)cached;
}

int mpiopt_threads_for(size_t bytes)
{
    int t = mpiopt_max_threads();
    if (t <= 1 || bytes < mpiopt_thread_min_bytes() || bytes < 2 * SLICE_ALIGN)
        return 1;
    /* at least two slices' worth of work per thread */
    size_t most = bytes / SLICE_ALIGN / 2;
    return (size_t)t > most ? (int)most : t;
}

/* Bounds of slice k of n elements split across t threads, cut at SLICE_ALIGN-byte multiples
 * of the element size so each thread's writes start on a fresh page. */
static void slice(size_t n, size_t elem_size, int t, int k, size_t *lo, size_t *hi)
{
    size_t per_align = SLICE_ALIGN % elem_size == 0 ? SLICE_ALIGN / elem_size : 1;
    size_t chunks = (n + per_align - 1) / per_align;
    *lo = (chunks * (size_t)k / (size_t)t) * per_align;
    *hi = (chunks * (size_t)(k + 1) / (size_t)t) * per_align;
    if (*lo > n) *lo = n;
    if (*hi > n) *hi = n;
}

/* One slice of a threaded run: which kernel form, and its buffers. */
typedef struct {
    mpiopt_kernel2_fn k2;
    mpiopt_kernel3_fn k3;
    const char *in1, *in2;
    char *out;
    size_t n, elem_size;
} slice_job;

static void run_slice(const slice_job *j, size_t lo, size_t hi)
{
    size_t off = lo * j->elem_size;
    if (j->k2)
        j->k2(j->in1 + off, j->out + off, hi - lo);
    else
        j->k3(j->in1 + off, j->in2 + off, j->out + off, hi - lo);
}

static void run_job(const slice_job *j, int threads)
{
    if (threads <= 1) {
        run_slice(j, 0, j->n);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        size_t lo, hi;
        slice(j->n, j->elem_size, threads, omp_get_thread_num(), &lo, &hi);
        if (hi > lo)
            run_slice(j, lo, hi);
    }
}

void mpiopt_run2_threads(mpiopt_kernel2_fn k, const void *in, void *inout, size_t n,
                         size_t elem_size, int threads)
{
    slice_job j = { k, NULL, in, NULL, inout, n, elem_size };
    run_job(&j, threads);
}

void mpiopt_run3_threads(mpiopt_kernel3_fn k, const void *in1, const void *in2, void *out,
                         size_t n, size_t elem_size, int threads)
{
    slice_job j = { NULL, k, in1, in2, out, n, elem_size };
    run_job(&j, threads);
}

/* Below two slices no thread count is worked out: a small call (a dot product's sum) goes
 * straight to the kernel. */
void mpiopt_run2(mpiopt_kernel2_fn k, const void *in, void *inout, size_t n, size_t elem_size)
{
    if (n * elem_size < 2 * SLICE_ALIGN)
        k(in, inout, n);
    else
        mpiopt_run2_threads(k, in, inout, n, elem_size, mpiopt_threads_for(n * elem_size));
}

void mpiopt_run3(mpiopt_kernel3_fn k, const void *in1, const void *in2, void *out, size_t n,
                 size_t elem_size)
{
    if (n * elem_size < 2 * SLICE_ALIGN)
        k(in1, in2, out, n);
    else
        mpiopt_run3_threads(k, in1, in2, out, n, elem_size, mpiopt_threads_for(n * elem_size));
}
