/* Pipelined allreduce and reduce on one node: the shared_memory algorithm's way for large messages
 * (allreduces from 64 KiB, at p = 2 from 181 KiB, read the other ranks' memory instead where the
 * ranks may: single_copy.c).
 *
 * The window's small buffers (8 KiB) cost three waits a piece; reading the other ranks' memory
 * where it is (single_copy.c) costs a system call and the pinning of every page, which on one
 * virtual machine ran at a quarter of memcpy's speed. Here each rank has stages in its slot
 * (node_window.h), each holding its input to one chunk of the vector (STAGE_BYTES) and its share
 * of that chunk's result, and the chunks flow through them:
 *
 *   1. rank r copies the others' shares of its input chunk into its stage and posts it;
 *   2. it reduces its own share (1/p) of the chunk: its own input where the caller left it, the
 *      others' from their stages, into its stage's result half, and posts that;
 *   3. it copies every rank's share of the result into its output (its own first, in cache) and
 *      posts that it holds the chunk whole: the others may now reuse the stage.
 *
 *   (p-1)/p*n copied in, n read to reduce, n copied out, (p-1)/p*n*gamma; 3 posts a chunk
 *
 * From 4 MiB the copy out streams past the caches (copy_out), so that memory sees n read and n
 * written a rank, not a third n of lines read only to be overwritten.
 *
 * An allreduce goes round the first ALLREDUCE_STAGES stages: a rank may run that many chunks
 * ahead of the slowest before it waits, so copying in, reducing and copying out of neighbouring
 * chunks overlap across ranks, and the stages stay in cache. At p = 2 both ranks reduce whole
 * chunks instead of shares (allreduce_pair). Each element is reduced with
 * recursive doubling's bracketing (mpiopt_shm_reduce_inputs), so the bits are those of the
 * window's pieces and of every other path of shared_memory. In place is safe: a rank writes a
 * chunk's output only after it has read its own input to that chunk, and nobody else reads it.
 *
 * A reduce goes the same way with only the root reducing, through all of the stages, in chunks of
 * an eighth of the call from 8 KiB to a stage (chunk_elements): the other
 * ranks copy each chunk whole into a stage, post it, and are done with it (they read nobody's
 * stage), so they return as soon as their last chunk is in, while the root still reduces (up to
 * the stages' total, 4 MiB a rank at p = 2 by default). The chunks go round 256 KiB of stages
 * (reduce_stages), on from call to call: few enough that the root reads lines just written by
 * the neighbouring core from the shared cache, where a ring through all of the window (the deep
 * ring of before) landed every call in lines gone cold (at p = 2, Open MPI 4.1.4, MPI_FLOAT,
 * median of three runs, OSU's figure: 512 KiB 41-46 against 94 us, 1 MiB 83-93 against 131,
 * 4 MiB 612-811 against 983); enough that a non-root seldom writes lines the root still holds.
 *
 * A scan or exscan goes the same way as a reduce, in the reduce's chunks and through all of the
 * stages: every rank but the last copies its input chunk into a stage and posts it, and rank r
 * folds the chunks of the ranks below it onto its own, the nearest first, into its output. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "coll/node/node_window.h"     /* and, on x86-64, emmintrin.h's 16-byte loads and stores */

#ifndef SMPI_SAMPLE_FLOPS



/* Results of calls this large are written past the caches (non-temporal stores): the output
 * would not stay in cache anyway, and a store that misses first reads the line it overwrites.
 * At p = 2 (MPICH 4.0.2, four alternating runs): 16 MiB in 4.2-4.8 ms against 6.5-10.6 ms,
 * 8 MiB 1.6-2.1 against 2.5-3.1; 4 MiB 0.70-0.78 against 0.57-3.1; below 4 MiB slower (the
 * output would have stayed in cache: 2 MiB 340 against 210-230 us). */
#define STREAM_FROM_BYTES (4u << 20)

static void copy_out(void *dst, const void *src, size_t n, int stream)
{
#if defined(__x86_64__)
    if (stream && ((uintptr_t)dst & 15) == ((uintptr_t)src & 15)) {
        char *d = dst;
        const char *s = src;
        size_t head = (16 - ((uintptr_t)d & 15)) & 15;
        head = head < n ? head : n;
        memcpy(d, s, head);
        d += head, s += head, n -= head;
        for (; n >= 64; d += 64, s += 64, n -= 64)
            for (int k = 0; k < 4; k++)
                _mm_stream_si128((__m128i *)d + k, _mm_load_si128((const __m128i *)s + k));
        memcpy(d, s, n);
        return;
    }
#endif
    (void)stream;
    mpiopt_shm_copy(dst, src, n);
}

/* w->pair_turn[s]: the bits of allreduce_pair's turns */
#define PAIR_TURN_OTHERS_SLOT 1     /* this rank writes the other rank's slot next */
#define PAIR_TURN_AFTER_OTHER 2     /* another way used the stage last */
#define PAIR_TURN_IN_PLACE 4        /* the last use was in place: both ranks read their own copy */

/* Waits until this rank may write stage s for `chunk`: every other rank is done with the chunk
 * the stage carried before (chunks are numbered alike on every rank: every rank makes the same
 * calls). */
stage *mpiopt_shm_stage_for(const mpiopt_coll *c, node_window *w, uint64_t chunk, int s)
{
    for (int r = 0; r < c->size; r++)
        if (r != c->rank)
            mpiopt_shm_wait(&w->all_stages[r][s].done_chunk, w->stage_chunk[s]);
    w->stage_chunk[s] = chunk;
    w->pair_turn[s] = PAIR_TURN_AFTER_OTHER;    /* allreduce_pair starts again from its own slot */
    return &w->my_stages[s];
}

/* Room to reduce the p inputs of up to `elements` elements at a time (node_window.h) */
int mpiopt_shm_make_fold(const mpiopt_coll *c, size_t elements, fold_space *f)
{
    int levels, p2 = mpiopt_pow2_floor(c->size, &levels);
    f->inputs = malloc(sizeof *f->inputs * (size_t)c->size);
    f->scratch = NULL;
    f->value = NULL;
    if (c->size > 2) {
        f->scratch = mpiopt_scratch((size_t)p2 * elements * c->extent);
        f->value = malloc(sizeof *f->value * (size_t)p2);
    }
    return !f->inputs || (c->size > 2 && (!f->scratch || !f->value)) ? MPI_ERR_NO_MEM
                                                                   : MPI_SUCCESS;
}

void mpiopt_shm_free_fold(fold_space *f)
{
    free(f->value);
    mpiopt_scratch_free(f->scratch);
    free(f->inputs);
}

/* A reduce is cut into REDUCE_PIECES chunks of at least MIN_CHUNK_BYTES (at most a stage), so
 * that the root starts reducing the first while the others still copy the rest in: one 64 KiB
 * chunk had the root wait for the whole copy. At p = 2, MPI_FLOAT, two alternating runs each
 * against Open MPI 4.1.4 and Intel MPI 2021.15 (Xeon, 2 cores): 32 KiB 3.8-4.4 us against
 * 5.2-5.7, 64 KiB 6.6-7.2 against 9.5-10.2, 256 KiB 30 against 32-34. An allreduce keeps whole
 * stages: there every rank waits for every input of a chunk anyway, and four pieces measured
 * slower at 32-64 KiB (10-11 us against 7). */
#define REDUCE_PIECES 8
#define MIN_CHUNK_BYTES 8192

static size_t chunk_elements(size_t count, size_t extent)
{
    size_t chunk = (count * extent / REDUCE_PIECES + 63) & ~(size_t)63;    /* whole cache lines */
    chunk = chunk < MIN_CHUNK_BYTES ? MIN_CHUNK_BYTES : chunk > STAGE_BYTES ? STAGE_BYTES : chunk;
    return chunk / extent ? chunk / extent : 1;     /* extent <= STAGE_BYTES: the caller's check */
}

/* The stages an allreduce at p = 2 goes round: ROTATION_BYTES of chunks, between
 * ALLREDUCE_STAGES and PAIR_ALLREDUCE_STAGES (and what the window has). More stages gave chunks
 * of 16 KiB lines the other core read longer ago (OSU, Intel MPI 2021.15, shared_memory forced,
 * two runs each: 16 KiB round 4 stages 3.20-3.29 us, 8 2.69-2.77, 16 2.66-2.70), and chunks of
 * 32-64 KiB nothing (32 KiB: 4 stages 3.89-3.97 us, 8 4.06-4.18). */
#define ROTATION_BYTES (128u << 10)

/* The stages that chunks of chunk_bytes go round: rotation_bytes of them, between at_least and
 * at_most, and no more than the window has (the allreduce's pair_stages, the reduce's
 * reduce_stages) */
static uint64_t stages_round(const node_window *w, size_t rotation_bytes, size_t chunk_bytes,
                             uint64_t at_least, uint64_t at_most)
{
    uint64_t n = rotation_bytes / (chunk_bytes ? chunk_bytes : 1);
    n = n < at_least ? at_least : n > at_most ? at_most : n;
    return n < w->stages ? n : w->stages;
}

static uint64_t pair_stages(const node_window *w, size_t chunk_bytes)
{
    return stages_round(w, ROTATION_BYTES, chunk_bytes, ALLREDUCE_STAGES, PAIR_ALLREDUCE_STAGES);
}

/* The elements of a chunk of m in its first half: whole cache lines where elements fit them, so
 * that the other rank's reads of the first half and this rank's writes of the second share no
 * line */
static size_t first_half(size_t m, size_t extent)
{
    size_t per_line = extent < 64 && 64 % extent == 0 ? 64 / extent : 1;
    size_t first = ((m + 1) / 2 + per_line - 1) / per_line * per_line;
    return first < m ? first : m;
}

/* At p = 2 both ranks reduce whole chunks: each copies its input chunk into a stage and posts it,
 * then reduces its own input where the caller left it with the other rank's stage, straight into
 * its output. One wait a chunk instead of three, the same lines crossing between the cores (n a
 * rank either way), and the bracketing of every path of shared_memory (mpiopt_shm_reduce_inputs).
 * The chunks go round the stages (pair_stages), on from call to call. A chunk goes in two halves,
 * each posted once it is in: the other rank reduces the first while this one still copies the
 * second (OSU, shared_memory forced, two runs each, the whole chunk against halves: Intel MPI
 * 2021.15 16 KiB 3.54 against 3.21-3.23 us, 32 KiB 4.02-4.03 against 3.81-3.82, 128 KiB 14.8-15.2
 * against 14.1-14.4; four parts and eight were slower at 16-32 KiB, 3.7-5.9 us). The reduce reads
 * the stage's copy only in place (a user op may write its output before it has read both inputs).
 * Against the split into shares: 16 KiB 3.4-3.5 us against 4.0-4.3, 32 KiB 5.6-5.8 against
 * 7.4-7.9 (docs/measurements/log.md, "the stages of an allreduce").
 *
 * The two ranks take turns with each stage's two slots: a rank copies its input into the slot it
 * read the other's from the last time round, and the other's slot becomes the one it reads. So a
 * line goes one way at a time, written by one core and then read and written by the other, and
 * never back to a core that only read it. Writing each time into the rank's own slot, whose lines
 * the other core had just read, had every store first take the line back from that core: with
 * fresh inputs (the application writes its send buffer before each call) the copy in took 5-8
 * times as long as the same copy into lines nobody else held, 8.7 against 1.2 us at 64 KiB (a
 * test program, two processes on the 2-core EPYC VM, 2026-12-07), and the whole call 6-15 times
 * the cross-core floor (mpiopt-line-pingpong --bulk), 1.5-2 times with turns (medians, the same
 * program: 64 KiB 6.4 against 38 us, 256 KiB 27 against 138, 1 MiB 94 against 538, the floor 4.2,
 * 14.7 and 47; the machine loaded by other jobs, figures of a quiet one in docs/benchmarks.md).
 * Turns also make the wait for the other rank before a stage's reuse unneeded: the slot a rank
 * writes is one whose last writer it waited for, and nobody else reads it meanwhile; except after
 * a call in place, where the other rank read its own input from its copy in that slot too, and
 * after another way's use of the stage (stage_for). */
static int allreduce_pair(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                          size_t count)
{
    int me = c->rank, rc = MPI_SUCCESS;
    size_t extent = c->extent, per_chunk = STAGE_BYTES / extent;   /* >= 1: the caller's check */
    size_t reach = (count < per_chunk ? count : per_chunk) * extent;
    uint64_t stages = pair_stages(w, reach);
    /* A call that reaches further into the stages than any before first asks for the new part
     * of the stages it goes round in cache. Else the first calls of a larger size each fetch
     * their lines from memory, and auto's few trial calls (measured.c) time that, not the size's
     * cost: OSU, Intel MPI 2021.15, shared_memory's trials against its steady 3.9 us at 32 KiB
     * and 7.3 at 64 KiB, 6.2-8.6 and 10.1-11.4 us before, 3.6-6.0 and 6.8-9.7 after. */
    if (reach > w->stages_warm) {
        for (uint64_t s = 0; s < stages; s++) {
            mpiopt_shm_warm(w->my_stages[s].in, w->stages_warm, reach, 1);
            mpiopt_shm_warm(w->all_stages[1 - me][s].in, w->stages_warm, reach, 0);
        }
        w->stages_warm = reach;
    }
    for (size_t at = 0; at < count; at += per_chunk) {
        size_t m = count - at < per_chunk ? count - at : per_chunk;
        uint64_t chunk = ++w->chunks;
        /* the stages in turn across calls, not from the first each call: a call of one chunk
         * that reused its stage every time took half as long again (OSU, Intel MPI 2021.15,
         * single copy off: 32 KiB 5.8-5.9 against 4.0-4.1 us, 64 KiB 11.2-11.6 against 7.3-7.5;
         * perf: the time went to the copy in) */
        int s = (int)(chunk % stages);
        if (w->pair_turn[s] & (PAIR_TURN_AFTER_OTHER | PAIR_TURN_IN_PLACE)) {
            /* another way used it, or the other rank read its own copy there (in place): wait
             * until it is done */
            mpiopt_shm_stage_for(c, w, chunk, s);
            w->pair_turn[s] &= PAIR_TURN_OTHERS_SLOT;
        }
        int turn = w->pair_turn[s];
        w->pair_turn[s] = (unsigned char)((1 - turn) | (in == out ? PAIR_TURN_IN_PLACE : 0));
        w->stage_chunk[s] = chunk;
        char *mine = w->all_stages[me ^ turn][s].in;
        const char *theirs = w->all_stages[(1 - me) ^ turn][s].in;
        uint64_t *posted = &w->my_stages[s].in_half;                 /* each rank's own line */
        const uint64_t *their_posted = &w->all_stages[1 - me][s].in_half;
        size_t first = first_half(m, extent);
        memcpy(mine, mpiopt_at(c, in, at), first * extent);
        mpiopt_shm_post_chunk(posted, 2 * chunk - 1);
        memcpy(mine + first * extent, mpiopt_at(c, in, at + first), (m - first) * extent);
        mpiopt_shm_post_chunk(posted, 2 * chunk);
        for (int h = 0; h < 2; h++) {
            size_t from = h ? first : 0, n = h ? m - first : first;
            const char *inputs[2];
            inputs[me] = in == out ? mine + from * extent : mpiopt_at(c, in, at + from);
            inputs[1 - me] = theirs + from * extent;
            mpiopt_shm_wait(their_posted, 2 * chunk - 1 + (uint64_t)h);
            /* the other rank wrote these lines, whichever rank's slot of the stage holds them
             * (the turns): counted by their writer, not by where they are */
            MPIOPT_COUNT_READ_WRITTEN_BY(inputs[1 - me], n * extent, 1 - me);
            if (rc == MPI_SUCCESS && n > 0)
                rc = mpiopt_shm_reduce_inputs(c, inputs, mpiopt_at(c, out, at + from), n, NULL);
        }
        /* for another way's next use (mpiopt_shm_stage_for) */
        mpiopt_shm_post_chunk(&w->my_stages[s].done_chunk, chunk);
    }
    return rc;
}

int mpiopt_shm_staged_allreduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                                size_t count)
{
    MPIOPT_COUNT_STAGES(w->all_stages, w->stages * sizeof(stage), c->size, c->rank);
    if (c->size == 2)
        return allreduce_pair(c, w, in, out, count);
    int grouped, grouped_rc = mpiopt_shm_grouped_allreduce(c, w, in, out, count, &grouped);
    if (grouped)
        return grouped_rc;
    int p = c->size, me = c->rank, rc = MPI_SUCCESS;
    size_t extent = c->extent, per_chunk = STAGE_BYTES / extent;   /* >= 1: the caller's check */
    fold_space f;
    /* without it this rank still takes every step, so the others finish */
    /* room for the largest share */
    rc = mpiopt_shm_make_fold(c, (per_chunk + (size_t)p - 1) / (size_t)p, &f);
    const char **inputs = f.inputs;
    int stream = count * extent >= STREAM_FROM_BYTES, stages = ALLREDUCE_STAGES;

    for (size_t at = 0, j = 0; at < count; at += per_chunk, j++) {
        size_t m = count - at < per_chunk ? count - at : per_chunk, first, n;
        uint64_t chunk = ++w->chunks;
        int s = (int)(j % (size_t)stages);
        stage *mine = mpiopt_shm_stage_for(c, w, chunk, s);

        mpiopt_shm_share_of(m, me, p, &first, &n);
        mpiopt_shm_copy(mine->in, mpiopt_at(c, in, at), first * extent);
        mpiopt_shm_copy(mine->in + (first + n) * extent, mpiopt_at(c, in, at + first + n),
                        (m - first - n) * extent);
        mpiopt_shm_post_chunk(&mine->in_chunk, chunk);

        for (int r = 0; inputs && r < p; r++) {
            if (r == me) {
                inputs[r] = mpiopt_at(c, in, at + first);
            } else {
                mpiopt_shm_wait(&w->all_stages[r][s].in_chunk, chunk);
                inputs[r] = w->all_stages[r][s].in + first * extent;
                MPIOPT_COUNT_READ_EACH(inputs[r], n * extent);  /* its copy of my share */
            }
        }
        if (rc == MPI_SUCCESS && n > 0)
            rc = mpiopt_shm_reduce_inputs(c, inputs, mine->out, n, &f);
        mpiopt_shm_post_chunk(&mine->out_chunk, chunk);

        for (int k = 0; k < p; k++) {
            int r = (me + k) % p;
            const stage *theirs = &w->all_stages[r][s];
            size_t their_first, their_n;
            mpiopt_shm_share_of(m, r, p, &their_first, &their_n);
            if (k > 0)
                mpiopt_shm_wait(&theirs->out_chunk, chunk);
            MPIOPT_COUNT_READ_EACH(theirs->out, their_n * extent);  /* k = 0, its own: uncounted */
            copy_out(mpiopt_at(c, out, at + their_first), theirs->out, their_n * extent, stream);
        }
        mpiopt_shm_post_chunk(&mine->done_chunk, chunk);
    }
#if defined(__x86_64__)
    if (stream)
        _mm_sfence();   /* the streamed stores are seen before anything after the call */
#endif
    mpiopt_shm_free_fold(&f);
    return rc;
}

/* The stages a reduce goes round: REDUCE_ROTATION_BYTES of chunks, at least the call's chunks
 * (none is reused within a call) and no more than the window has. Starting every call at the
 * first stage had the non-root write lines its root read in the call before, which it must first
 * take back from the root's cache: at p = 2 (OSU, shared_memory forced, two runs each, us) Open
 * MPI 4.1.4 32 KiB 4.6 against 3.3-3.4, 64 KiB 8.4 against 5.7-6.0, 128 KiB 11.4 against 9.7-10.1;
 * Intel MPI 2021.15 128 KiB going round 128 KiB of chunks 14.1-14.4, 256 KiB 11.7-12.5, 1 MiB
 * 11.2-12.6; 512 KiB-1 MiB alike round 256 KiB and 1 MiB, and 15 % slower round all the stages
 * (4 MiB), whose lines have left the caches by the time they come round. */
#define REDUCE_ROTATION_BYTES (256u << 10)

static uint64_t reduce_stages(const node_window *w, size_t count, size_t per_chunk, size_t extent)
{
    uint64_t calls_chunks = (count + per_chunk - 1) / per_chunk;
    return stages_round(w, REDUCE_ROTATION_BYTES, per_chunk * extent, calls_chunks, UINT64_MAX);
}

int mpiopt_shm_staged_reduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                             size_t count, int root)
{
    MPIOPT_COUNT_STAGES(w->all_stages, w->stages * sizeof(stage), c->size, c->rank);
    int p = c->size, me = c->rank, rc = MPI_SUCCESS;
    size_t extent = c->extent, per_chunk = chunk_elements(count, extent);
    uint64_t stages = reduce_stages(w, count, per_chunk, extent);
    if (me != root) {
        for (size_t at = 0; at < count; at += per_chunk) {
            size_t m = count - at < per_chunk ? count - at : per_chunk;
            uint64_t chunk = ++w->chunks;
            stage *mine = mpiopt_shm_stage_for(c, w, chunk, (int)(chunk % stages));
            mpiopt_shm_copy(mine->in, mpiopt_at(c, in, at), m * extent);
            mpiopt_shm_post_chunk(&mine->in_chunk, chunk);
            /* it reads no other rank's stage */
            mpiopt_shm_post_chunk(&mine->done_chunk, chunk);
        }
        return MPI_SUCCESS;
    }
    fold_space f;
    rc = mpiopt_shm_make_fold(c, per_chunk, &f);
    const char **inputs = f.inputs;
    for (size_t at = 0; at < count; at += per_chunk) {
        size_t m = count - at < per_chunk ? count - at : per_chunk;
        uint64_t chunk = ++w->chunks;
        int s = (int)(chunk % stages);
        stage *mine = mpiopt_shm_stage_for(c, w, chunk, s);
        const char *own = mpiopt_at(c, in, at);
        if (in == out) {    /* a user op may write its output before it has read both inputs */
            memcpy(mine->in, own, m * extent);
            own = mine->in;
        }
        for (int r = 0; inputs && r < p; r++) {
            if (r != me)
                mpiopt_shm_wait(&w->all_stages[r][s].in_chunk, chunk);
            inputs[r] = r == me ? own : w->all_stages[r][s].in;
            MPIOPT_COUNT_READ_EACH(inputs[r], m * extent);  /* its own: not counted */
        }
        if (rc == MPI_SUCCESS)
            rc = mpiopt_shm_reduce_inputs(c, inputs, mpiopt_at(c, out, at), m, &f);
        mpiopt_shm_post_chunk(&mine->done_chunk, chunk);
    }
    mpiopt_shm_free_fold(&f);
    return rc;
}

int mpiopt_shm_scan_fold(const mpiopt_coll *c, mpiopt_shm_lower_input lower_input,
                         const void *ctx, const void *own, void *out, size_t n, int exclusive)
{
    int me = c->rank, rc = MPI_SUCCESS;
    if (me == 0) {
        if (!exclusive && own != out)
            memcpy(out, own, n * c->extent);
        return MPI_SUCCESS;
    }
    const char *below = lower_input(ctx, me - 1);
    if (exclusive)
        mpiopt_shm_copy(out, below, n * c->extent);
    else
        rc = mpiopt_coll_reduce3(c, below, own, out, n);
    for (int r = me - 2; r >= 0 && rc == MPI_SUCCESS; r--)
        rc = mpiopt_coll_reduce_left(c, lower_input(ctx, r), out, n);
    return rc;
}

/* Where lower rank r's chunk of a staged scan is, once it is there. */
typedef struct {
    node_window *w;
    int stage;
    uint64_t chunk;
    size_t bytes;       /* of the chunk: what the fold reads of it (the counting build) */
} staged_piece;

static const char *staged_input(const void *ctx, int r)
{
    const staged_piece *x = ctx;
    const stage *theirs = &x->w->all_stages[r][x->stage];
    mpiopt_shm_wait(&theirs->in_chunk, x->chunk);
    MPIOPT_COUNT_READ_EACH(theirs->in, x->bytes);   /* the fold reads it whole, once */
    return theirs->in;
}

int mpiopt_shm_staged_scan(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                           size_t count, int exclusive)
{
    MPIOPT_COUNT_STAGES(w->all_stages, w->stages * sizeof(stage), c->size, c->rank);
    int last = c->rank == c->size - 1, rc = MPI_SUCCESS;
    size_t extent = c->extent, per_chunk = chunk_elements(count, extent);
    for (size_t at = 0, j = 0; at < count; at += per_chunk, j++) {
        size_t m = count - at < per_chunk ? count - at : per_chunk;
        staged_piece piece = {w, (int)(j % w->stages), ++w->chunks, m * extent};
        stage *mine = mpiopt_shm_stage_for(c, w, piece.chunk, piece.stage);
        const char *own = mpiopt_at(c, in, at);
        if (!last) {    /* the last rank's input is nobody else's */
            mpiopt_shm_copy(mine->in, own, m * extent);
            mpiopt_shm_post_chunk(&mine->in_chunk, piece.chunk);
        }
        int chunk_rc = mpiopt_shm_scan_fold(c, staged_input, &piece, own, mpiopt_at(c, out, at),
                                            m, exclusive);
        if (rc == MPI_SUCCESS)
            rc = chunk_rc;
        mpiopt_shm_post_chunk(&mine->done_chunk, piece.chunk);
    }
    return rc;
}

#endif
