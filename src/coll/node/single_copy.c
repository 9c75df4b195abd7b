/* Single-copy allreduce and exscan pair on one node: the shared_memory algorithm's way for large
 * messages.
 *
 * Through the window every byte is copied twice: into the rank's buffer, and out of the others'
 * buffers into the result. Here each rank reads the other ranks' memory where the program keeps
 * it, with Linux's cross-memory attach (process_vm_readv, the single-copy mechanism of Open MPI's
 * and MPICH's shared-memory transports), so that only what a rank must have of the others crosses:
 *
 *   1. every rank posts the addresses of its input and output in its slot of the window;
 *   2. rank r reduces its share (elements r*n/p to (r+1)*n/p) of the p inputs into its own output,
 *      reading the others' share of their input in cache-sized chunks, and posts
 *      that its share is done;
 *   3. rank r reads every other rank's share of the result from that rank's output into its own;
 *   4. every rank posts that it has read all it needs, and leaves once all have: until then the
 *      others may still read its buffers.
 *
 *   (p-1)/p*n read from the others twice (inputs, results), (p-1)/p*n*gamma, 3 waits a call
 *
 * against the window's copy of n in, n read to reduce and n gathered. Each element is reduced with
 * recursive doubling's bracketing (mpiopt_shm_reduce_inputs), the bits of the window's pieces.
 * In place is safe: a rank writes the part of its buffer that others read as input (their shares)
 * only after they posted that their share is done, and its own share is read by nobody else.
 *
 * Whether the ranks may read each other is found once, when the window is made: each reads a word
 * of every other rank (a container or Yama's ptrace_scope can forbid it; where Yama's scope is 1,
 * each rank first lets the others in, prctl(PR_SET_PTRACER), as Open MPI's transports do); all
 * ranks must agree, or none takes this way (MPIOPT_SHM_SINGLE_COPY=0: none ever does). Whether
 * it pays for an allreduce is measured then too (direct_pays_here): where process_vm_readv copies
 * at half memcpy's speed or better (28 against 50 GB/s at 256 KiB, Xeon, 2026-11-28) it beat the
 * stages against all five vendors from 64 KiB (docs/collectives.md, "shared_memory"); on the
 * 2-core EPYC VM it copies at a quarter (11 against 43 GB/s, fresh data) and the stages, with
 * their turns (staged.c), won at every size with fresh inputs. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coll/node/node_window.h"
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/uio.h>
#endif

#ifndef SMPI_SAMPLE_FLOPS
/* A rank's share is read and reduced in chunks of the others' inputs that fit, all p of them,
 * in half an L2 cache: 256 KiB at p = 2 (fewer system calls: 1.3-1.4x the vendor at 64 KiB-4 MiB
 * against 1.2-1.3x with 64 KiB chunks, Open MPI 4.1.4, one run), at least 64 KiB. */
#define CHUNKS_BYTES (512u << 10)
#define MIN_CHUNK_BYTES (64u << 10)
#define MAX_CHUNK_BYTES (256u << 10)

static const uint64_t probe_word = 0x6d70696f70742121ull;   /* what the probe must read */

/* Allreduces of this size and up are read where they are, where the ranks can: below, three
 * waits and a system call per chunk cost more than the window's second copy ... */
#define DIRECT_FROM_BYTES (64u << 10)
/* ... but at p = 2 the stages' whole chunks (staged.c) are faster still up to 128 KiB
 * (shared_memory forced, OSU, MPI_FLOAT, two runs each, stages against single copy: Intel MPI
 * 2021.15 64 KiB 7.2-7.4 us against 11.8-12.5, 128 KiB 14.2-14.6 against 21.6, 256 KiB 28-30
 * against 25.4-25.5, 512 KiB 57-58 against 48-50; Open MPI 4.1.4 and MPICH 4.0.2 alike), so
 * there single copy is first choice from the geometric mean of 128 and 256 KiB. */
#define PAIR_DIRECT_FROM_BYTES 185364u

int mpiopt_shm_direct_pays(const mpiopt_coll *c, const node_window *w, size_t bytes)
{
    if (!w->direct_allreduce || bytes < DIRECT_FROM_BYTES)
        return 0;
    return c->size == 2 && bytes < PAIR_DIRECT_FROM_BYTES ? 1 : 2;
}

/* n bytes between `local` and `remote` in process pid: into local (write 0) or out of it. */
static int cross_copy(int64_t pid, void *local, void *remote, size_t n, int write)
{
#ifdef __linux__
    while (n > 0) {
        struct iovec l = {local, n}, r = {remote, n};
        ssize_t done = write ? process_vm_writev((pid_t)pid, &l, 1, &r, 1, 0)
                             : process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return MPI_ERR_OTHER;
        local = (char *)local + done;
        remote = (char *)remote + done;
        n -= (size_t)done;
    }
    return MPI_SUCCESS;
#else
    (void)pid, (void)local, (void)remote, (void)n, (void)write;
    return MPI_ERR_OTHER;
#endif
}

/* n bytes at `remote` in process pid into `local`. */
static int read_remote(int64_t pid, void *local, const void *remote, size_t n)
{
    return cross_copy(pid, local, (void *)remote, n, 0);
}

/* n bytes from `local` to `remote` in process pid. */
static int write_remote(int64_t pid, void *remote, const void *local, size_t n)
{
    return cross_copy(pid, (void *)local, remote, n, 1);
}

/* The measure of whether single copy pays (direct_pays_here): each rank writes CALIBRATION_READS
 * pieces of CALIBRATION_BYTES when the window is made, and the next rank reads each once (a piece
 * read twice would come from the reader's own cache the second time); the fastest read against
 * the fastest memcpy of the reader's own pieces. A quarter of a MiB: a stage's reach, where the
 * choice between the ways starts to matter. */
#define CALIBRATION_BYTES (256u << 10)
#define CALIBRATION_READS 4
/* single copy pays for an allreduce where process_vm_readv copies at this fraction of memcpy's
 * speed or better (the comment at the top) */
#define DIRECT_MIN_SPEED 0.5

/* Yama's ptrace_scope 1 lets a process read only its descendants' memory unless they allow it:
 * each rank allows every process of its user, as Open MPI's vader/sm transports do (the ranks'
 * uid is the same; the kernel's other checks still apply). Returns what it did, for
 * MPIOPT_VERBOSE. MPIOPT_TEST_YAMA_SCOPE stands in for the file (the tests' machines have no
 * Yama). */
static const char *allow_readers(void)
{
    int scope = -1;
    const char *test = getenv("MPIOPT_TEST_YAMA_SCOPE");
    if (test) {
        scope = atoi(test);
    } else {
        FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
        if (f) {
            if (fscanf(f, "%d", &scope) != 1)
                scope = -1;
            fclose(f);
        }
    }
    if (scope != 1)
        return scope < 0 ? "no Yama" : "Yama's ptrace_scope is not 1: nothing to allow";
#if defined(__linux__) && defined(PR_SET_PTRACER)
    return prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0
               ? "Yama's ptrace_scope is 1: readers allowed (PR_SET_PTRACER)"
               : "Yama's ptrace_scope is 1 and PR_SET_PTRACER failed";
#else
    return "Yama's ptrace_scope is 1 and no PR_SET_PTRACER here";
#endif
}

static const char *readers_note = "";

void mpiopt_shm_direct_prepare(const mpiopt_coll *c, node_window *w)
{
    w->mine->direct.pid = (int64_t)getpid();
    w->mine->direct.probe = &probe_word;
    w->calibration = NULL;
    if (mpiopt_env_long("MPIOPT_SHM_SINGLE_COPY", 1) == 0 || c->size < 2)
        return;
    readers_note = allow_readers();
    /* the data another rank times reading: written now, as an application's send buffer */
    w->calibration = malloc((size_t)CALIBRATION_READS * CALIBRATION_BYTES);
    if (w->calibration)
        memset(w->calibration, 1 + c->rank, (size_t)CALIBRATION_READS * CALIBRATION_BYTES);
    w->mine->direct.calibration = w->calibration;
}

/* process_vm_readv's speed over memcpy's here (0 where it could not be timed) */
static double remote_read_speed(const mpiopt_coll *c, node_window *w)
{
    const direct_block *next = &w->all[(c->rank + 1) % c->size]->direct;
    char *to = malloc(CALIBRATION_BYTES);
    double best_read = 0, best_copy = 0;
    if (!to || !w->calibration || !next->calibration) {
        free(to);
        return 0;
    }
    memset(to, 0, CALIBRATION_BYTES);   /* no page faults timed */
    for (int k = 0; k < CALIBRATION_READS; k++) {
        double t0 = PMPI_Wtime();
        if (read_remote(next->pid, to, next->calibration + (size_t)k * CALIBRATION_BYTES,
                        CALIBRATION_BYTES) != MPI_SUCCESS) {
            free(to);
            return 0;
        }
        double t1 = PMPI_Wtime();
        memcpy(to, w->calibration + (size_t)k * CALIBRATION_BYTES, CALIBRATION_BYTES);
        __asm__ volatile("" : : "r"(to) : "memory");    /* the copy is kept */
        double t2 = PMPI_Wtime();
        best_read = k == 0 || t1 - t0 < best_read ? t1 - t0 : best_read;
        best_copy = k == 0 || t2 - t1 < best_copy ? t2 - t1 : best_copy;
    }
    free(to);
    return best_read > 0 ? best_copy / best_read : 0;
}

/* Writing another process's memory takes the same permission as reading it (ptrace's attach
 * check), so the read probe answers for both. MPIOPT_SHM_SINGLE_COPY=2: an allreduce takes single
 * copy where the ranks may, paying or not (the tests of single_copy.c's allreduce). */
int mpiopt_shm_direct_agree(const mpiopt_coll *c, node_window *w)
{
    long setting = mpiopt_env_long("MPIOPT_SHM_SINGLE_COPY", 1);
    int can = setting != 0;
    for (int r = 0; can && r < c->size; r++) {
        uint64_t seen = 0;
        if (r != c->rank)
            can = read_remote(w->all[r]->direct.pid, &seen, w->all[r]->direct.probe, sizeof seen)
                      == MPI_SUCCESS && seen == probe_word;
    }
    /* every rank must be able to, and the slowest rank's measure decides: one allreduce of the
     * measure, -1 where a rank cannot read the others */
    double speed = !can ? -1 : c->size > 1 ? remote_read_speed(c, w) : 0;
    int rc = PMPI_Allreduce(MPI_IN_PLACE, &speed, 1, MPI_DOUBLE, MPI_MIN, c->user_comm);
    free(w->calibration);   /* every rank has read its piece: the allreduce is after the reads */
    w->calibration = NULL;
    w->direct = rc == MPI_SUCCESS && speed >= 0;
    speed = speed < 0 ? 0 : speed;
    w->direct_allreduce = w->direct && (setting == 2 || speed >= DIRECT_MIN_SPEED);
    if (c->rank == 0 && mpiopt_verbose() && setting != 0)
        fprintf(stderr, "mpiopt: shared_memory single copy on %d ranks: %s; allreduce %s "
                "(process_vm_readv at %.2f of memcpy's speed here, taken from %.2f%s; %s)\n",
                c->size, w->direct ? "the ranks may read each other"
                                   : "the ranks may not read each other",
                w->direct_allreduce ? "by single copy" : "through the stages", speed,
                DIRECT_MIN_SPEED, setting == 2 ? ", or at any speed with MPIOPT_SHM_SINGLE_COPY=2"
                                               : "", readers_note);
    return rc;
}

static void share_of(const mpiopt_coll *c, int r, size_t count, size_t *first, size_t *n)
{
    *first = count * (size_t)r / (size_t)c->size;
    *n = count * (size_t)(r + 1) / (size_t)c->size - *first;
}

static void post(uint64_t *flag, uint64_t call)
{
    __atomic_store_n(flag, call, __ATOMIC_RELEASE);
}

/* A single-copy call starts as a call of the window's small ring (shared_memory.c), numbered as
 * its calls are, and posts where this rank's input and output are. */
static uint64_t post_addresses(node_window *w, const void *in, void *out)
{
    uint64_t call = ++w->small.calls;
    w->mine->direct.src = in;
    w->mine->direct.dst = out;
    post(&w->mine->direct.posted, call);
    return call;
}

/* ... and ends as one, once every rank has finished every call before it: its number published
 * in this rank's buffer (no input in it). */
static void end_as_ring_call(node_window *w, uint64_t call)
{
    post(&ring_buffer(w->mine, call)->call, call);
    w->small.writable_until = call + SMALL_BUFFERS - 1;
}

int mpiopt_shm_direct_allreduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                                size_t count)
{
    int p = c->size, me = c->rank, rc = MPI_SUCCESS;
    uint64_t call = post_addresses(w, in, out);
    direct_block *mine = &w->mine->direct;

    size_t chunk_bytes = CHUNKS_BYTES / (size_t)p;
    chunk_bytes = chunk_bytes < MIN_CHUNK_BYTES ? MIN_CHUNK_BYTES
                : chunk_bytes > MAX_CHUNK_BYTES ? MAX_CHUNK_BYTES : chunk_bytes;
    size_t chunk = chunk_bytes / c->extent ? chunk_bytes / c->extent : 1;
    int levels, p2 = mpiopt_pow2_floor(p, &levels);
    /* every rank's chunk (this rank's only in place: a user op's reduction may write its output
     * before it has read both operands), then the fold's p2 partial results (p > 2 only) */
    char *scratch = mpiopt_scratch(((size_t)p + (p > 2 ? (size_t)p2 : 0)) * chunk * c->extent);
    const char **inputs = malloc(sizeof *inputs * (size_t)p);
    fold_space f = {NULL, p > 2 ? malloc(sizeof *f.value * (size_t)p2) : NULL, NULL};
    if (!scratch || !inputs || (p > 2 && !f.value))
        rc = MPI_ERR_NO_MEM;    /* this rank still takes every step, so the others finish */
    else if (p > 2)
        f.scratch = scratch + (size_t)p * chunk * c->extent;

    for (int r = 0; r < p; r++)
        mpiopt_shm_wait(&w->all[r]->direct.posted, call);
    size_t first, n;
    share_of(c, me, count, &first, &n);
    for (size_t done = 0; rc == MPI_SUCCESS && done < n; done += chunk) {
        size_t m = n - done < chunk ? n - done : chunk, at = first + done;
        for (int r = 0; rc == MPI_SUCCESS && r < p; r++) {
            char *copy = scratch + (size_t)r * chunk * c->extent;
            const direct_block *theirs = &w->all[r]->direct;
            if (r != me)
                rc = read_remote(theirs->pid, copy, mpiopt_at(c, theirs->src, at), m * c->extent);
            else if (in == out)
                memcpy(copy, mpiopt_at(c, in, at), m * c->extent);
            else
                copy = mpiopt_at(c, in, at);
            inputs[r] = copy;
        }
        if (rc == MPI_SUCCESS)
            rc = mpiopt_shm_reduce_inputs(c, inputs, mpiopt_at(c, out, at), m, &f);
    }
    post(&mine->reduced, call);

    for (int k = 1; k < p; k++) {   /* the others' shares, each as soon as it is done */
        int r = (me + k) % p;
        const direct_block *theirs = &w->all[r]->direct;
        mpiopt_shm_wait(&theirs->reduced, call);
        share_of(c, r, count, &first, &n);
        int read_rc = read_remote(theirs->pid, mpiopt_at(c, out, first),
                                  mpiopt_at(c, theirs->dst, first), n * c->extent);
        if (rc == MPI_SUCCESS)
            rc = read_rc;
    }
    post(&mine->gathered, call);
    for (int r = 0; r < p; r++)
        mpiopt_shm_wait(&w->all[r]->direct.gathered, call);

    end_as_ring_call(w, call);
    free(f.value);
    free(inputs);
    mpiopt_scratch_free(scratch);
    return rc;
}

/* A reduce at p = 2 from REDUCE_DIRECT_FROM_BYTES to below REDUCE_DIRECT_TO_BYTES: the root
 * reads the other rank's whole input into its output with one system call, posts that it has, and
 * reduces it with its own input there; the other rank leaves once its input is read. The other
 * rank writing half of it into the root's output meanwhile took 1.5-1.9x as long at 16-128 KiB:
 * the root's output lines, which the root wrote last, had to cross to the writing core first.
 * Open MPI's own reduce moves the bytes the same way (one single-copy read by the root), and the
 * window's copy in and read out were slower at these sizes (Open MPI 4.1.4, p = 2, MPI_FLOAT,
 * OSU, us, 16, 32, 64, 128 and 256 KiB: the window 2.1, 3.3-3.4, 5.7-6.0, 9.7-10.1, 17.1-17.4;
 * this 1.40-1.42, 2.43-2.52, 4.25-4.49, 7.42-7.71, 14.1-14.7; Open MPI's 1.93-3.27, 2.93-3.16,
 * 4.76-4.82, 8.12-8.37, 14.8-15.4). From 512 KiB the stages' chunks, reduced while the rest is
 * copied in, are faster (33 us at 512 KiB and 78 at 1 MiB; one read, in a test program, 36 and
 * 144-149). */
#define REDUCE_DIRECT_FROM_BYTES (16u << 10)
#define REDUCE_DIRECT_TO_BYTES 370728u     /* the geometric mean of 256 and 512 KiB */

int mpiopt_shm_direct_reduce_pays(const mpiopt_coll *c, size_t bytes)
{
    return c->size == 2 && c->commutative && bytes >= REDUCE_DIRECT_FROM_BYTES &&
           bytes < REDUCE_DIRECT_TO_BYTES;
}

int mpiopt_shm_direct_reduce_pair(const mpiopt_coll *c, node_window *w, const void *in,
                                  void *out, size_t count, int root)
{
    int me = c->rank, rc = MPI_SUCCESS;
    uint64_t call = post_addresses(w, in, out);
    const direct_block *theirs = &w->all[1 - me]->direct;
    if (me != root) {   /* its input is read once the root posts */
        mpiopt_shm_wait(&theirs->reduced, call);
        end_as_ring_call(w, call);
        return MPI_SUCCESS;
    }
    size_t bytes = count * c->extent;
    /* in place the root's input is its output: the other's goes to scratch */
    char *copy = in == out ? mpiopt_scratch(bytes) : out;
    mpiopt_shm_wait(&theirs->posted, call);
    rc = copy ? read_remote(theirs->pid, copy, theirs->src, bytes) : MPI_ERR_NO_MEM;
    post(&w->mine->direct.reduced, call);
    end_as_ring_call(w, call);
    /* out = the other operand op out: the op is commutative, so whichever rank's operand is on
     * the left, the bits are those of mpiopt_coll_reduce_right (which swaps them for one) */
    if (rc == MPI_SUCCESS)
        rc = mpiopt_coll_reduce_left(c, copy == out ? in : copy, out, count);
    if (copy != out)
        mpiopt_scratch_free(copy);
    return rc;
}

/* An exscan at p = 2 is one message: rank 0's input becomes rank 1's result. A message moves it
 * by one copy on one core (the vendors' single-copy transports); here, from
 * EXSCAN_SPLIT_FROM_BYTES, both cores copy, rank 1 reading the first half of rank 0's input into
 * its output while rank 0 writes the second half there (below, rank 1 reads it all). Each posts
 * its addresses, copies, and posts that it is done; each leaves once the other is (rank 0's input
 * is read until rank 1 is done, rank 1's output written until rank 0 is). Open MPI 4.1.4, p = 2,
 * MPI_FLOAT, three runs, vendor's time / this: halves 64 KiB-1 MiB 1.17-1.85, rank 1 alone
 * 0.87-1.11 (the vendor's one copy); at 16-32 KiB rank 1 alone 1.09-1.43. */
#define EXSCAN_SPLIT_FROM_BYTES (64u << 10)
int mpiopt_shm_direct_exscan_pair(const mpiopt_coll *c, node_window *w, const void *in,
                                  void *out, size_t count)
{
    int me = c->rank, rc;
    uint64_t call = post_addresses(w, in, out);
    const direct_block *theirs = &w->all[1 - me]->direct;
    mpiopt_shm_wait(&theirs->posted, call);
    /* rank 1 reads [0, read), rank 0 writes the rest */
    size_t read = count * c->extent >= EXSCAN_SPLIT_FROM_BYTES ? count / 2 : count;
    if (me == 1)
        rc = read_remote(theirs->pid, out, theirs->src, read * c->extent);
    else if (read < count)
        rc = write_remote(theirs->pid, mpiopt_at(c, theirs->dst, read), mpiopt_at(c, in, read),
                          (count - read) * c->extent);
    else
        rc = MPI_SUCCESS;
    post(&w->mine->direct.reduced, call);
    mpiopt_shm_wait(&theirs->reduced, call);
    end_as_ring_call(w, call);
    return rc;
}
#endif
