/* Shared-memory allreduce and reduce for small messages on one node (the case codes call millions
 * of times: dot products, norms, time-step minima). Every rank copies its input into a buffer of
 * its slot in a window the communicator's ranks share (MPI_Win_allocate_shared, made at the first
 * call and kept with mpiopt's record of the communicator, within the node's budget: node_window.c),
 * publishes the call's number in that buffer's header, waits until every rank has published it,
 * and then reduces the p inputs itself, the same operands in the same order on every rank:
 * recursive doubling's (so every rank holds the same bits, those of recursive doubling, and a
 * non-commutative op sees rank order). No message, no matching: one copy in, p lines read a rank.
 *
 *   one copy of n bytes in, p cache lines read, p*n*gamma (every rank reduces all p inputs)
 *
 * A reduce is the same with only the root waiting and reducing, from its own input where the
 * caller left it: the others copy, publish and return. The root publishes when it has read.
 *
 * A larger allreduce piece (SCATTER_FROM_BYTES and up, p > 2) is reduce-scattered instead: each
 * rank reduces only its share (1/p) of the piece from the p inputs, into a result buffer of its
 * slot, publishes that, and then every rank copies the p shares into its output. Each rank
 * computes 1/p of the piece instead of all of it, and the shares' cache lines travel once (each
 * element still reduced with recursive doubling's bracketing, so the bits do not change):
 *
 *   one copy of n bytes in, n bytes read to reduce, n bytes gathered, (p-1)/p*n*gamma
 *
 * Each slot holds a ring of sixteen input buffers for small calls (node_window.h). A rank publishes
 * call k of the ring only after it has read every input of call k - 1, so a rank may write call
 * k's input once every rank has published k - buffers + 1. What a rank saw of the others when it
 * last looked tells it how many calls it may go on without looking again: the header of a buffer
 * is on the line with its first 48 bytes, and a call of up to 48 bytes moves one cache line per
 * rank, not three. At p = 2 an allreduce of up to LINES_MAX_BYTES goes through a buffer as
 * numbered lines instead (exchange_lines): the other rank reads each line as soon as it is there.
 *
 * Allreduces larger than a buffer (at p = 2, than the lines) and reduces larger than three go
 * through the stages (staged.c): as many as the node's budget for the window allows
 * (MPIOPT_SHM_WINDOW_BYTES, divided among its ranks; at least 4), so that a reduce's other ranks
 * hand over up to all of them (4 MiB at p = 2) and return while the root is still reducing, as a
 * program's non-root ranks want. Allreduces of 64 KiB and up (at p = 2, 181 KiB) and reduces at
 * p = 2 of 16-362 KiB read the other ranks' buffers where they are instead, where the ranks may
 * (single_copy.c; MPIOPT_SHM_SINGLE_COPY=0: never). Without stages (the budget spent) a larger
 * message goes in pieces of a buffer each, every piece a call of its own (exchange).
 * Small calls on many ranks go up a tree of the node instead (tree.c, MPIOPT_SHM_TREE).
 *
 * Recursive doubling or Rabenseifner takes the call instead (the same decision on every rank; the
 * same bits, see mpiopt_shm_reduce_inputs) when the ranks do not share one node, when a
 * nonblocking call records the algorithm (a schedule is made of messages), and under SimGrid
 * (one address space, ranks scheduled cooperatively). */
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "coll/algorithms/algorithms.h"
#include "coll/node/line_count.h"
#include "coll/node/tree.h"
#include "coll/engine/report.h"

/* A reduce's other ranks hand over this much through the ring without waiting for the root (fewer
 * buffers than the ring has: the root may still read the call before); larger: the stages */
#define SMALL_RING_BYTES (3 * BUFFER_BYTES)
/* allreduces larger than a buffer go through the stages (staged.c): as fast as the window's pieces
 * to 16 KiB and twice as fast from 32 KiB, where a piece's three waits every 8 KiB add up ... */
#define STAGED_FROM_BYTES (BUFFER_BYTES + 1)
/* ... at p = 2 those above the lines': at 8 KiB two halves of a stage beat a ring piece (OSU, three
 * alternating runs, us: Intel MPI 1.84-1.86 against 1.95-2.02, Open MPI 4.1.4 1.71-1.73 against
 * 1.86-1.92, MPICH 4.0.2 1.70-1.74 against 1.86-1.99) */
#define PAIR_STAGED_FROM_BYTES (LINES_MAX_BYTES + 1)
/* At p = 2, allreduces up to this size go through a buffer as lines that each carry their call's
 * number (exchange_lines; measured there): 74 lines, 4.6 KiB of the buffer's 8 */
#define LINES_MAX_BYTES 4096
/* Calls of more lines wait for their last line (stored after the others) before reading any, so
 * that the lines travel together, not one after the other (exchange_lines) */
#define LINES_EACH_MAX 8
/* A line: LINE_PAYLOAD bytes of input, then the call's number */
#define LINE_PAYLOAD 56
_Static_assert((LINES_MAX_BYTES + LINE_PAYLOAD - 1) / LINE_PAYLOAD * 64 + 64 <= sizeof(buffer),
               "a call's lines must fit a buffer after its header's line");

/* An exscan at p = 2 is one message, rank 0's input to rank 1. From this size both ranks copy
 * half of it, from one address space to the other (single_copy.c), where they can; where they
 * cannot, the vendor's point-to-point (recursive doubling's one message) moves it faster than the
 * window copies it in and out, up to EXSCAN_STAGED_FROM_BYTES (p = 2, MPI_FLOAT, OSU's figure,
 * one run: 32-512 KiB 2.7-24.8 us against 5.0-35.1 under Open MPI 4.1.4, 3.7-51 against
 * 4.7-38 under MPICH 4.0.2; 1 MiB 70-81 against 85-117). */
#define EXSCAN_PAIR_FROM_BYTES (16u << 10)
#define EXSCAN_STAGED_FROM_BYTES (1u << 20)

/* SimGrid's mpi.h defines SMPI_SAMPLE_FLOPS: there every call takes the other algorithm */
#ifndef SMPI_SAMPLE_FLOPS

static void publish(node_window *w, uint64_t call)
{
    __atomic_store_n(&ring_buffer(w->mine, call)->call, call, __ATOMIC_RELEASE);
    MPIOPT_COUNT_FLAG_WRITE();
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
        MPIOPT_COUNT_READ(&ring_buffer(w->all[r], call - 1)->call, sizeof seen);
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

/* Elements [first, first + count) of this call's p inputs in the window (this rank's in `mine`
 * when it reads its own input where the caller left it) reduced into buf. */
static int reduce_window_inputs(const mpiopt_coll *c, const node_window *w,
                                uint64_t call, const void *mine, size_t first, void *buf,
                                size_t count, const fold_space *f)
{
    const char *pair[2], **in = c->size == 2 ? pair : f->inputs;
    if (!in)
        return MPI_ERR_NO_MEM;
    for (int r = 0; r < c->size; r++) {
        in[r] = input_of(c, w, call, mine, r, first);
        MPIOPT_COUNT_READ(in[r], count * c->extent);
    }
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
    MPIOPT_COUNT_FLAG_WRITE();
    /* this rank's own share first (in cache), then the others' as they come */
    for (int k = 0; k < c->size; k++) {
        int r = (c->rank + k) % c->size;
        const buffer *theirs = &w->all[r]->result[call % RESULT_BUFFERS];
        share_of(c, r, count, &first, &n);
        if (k > 0)
            mpiopt_shm_wait(&theirs->call, call);
        memcpy((char *)out + first * c->extent, theirs->data, n * c->extent);
        MPIOPT_COUNT_READ(theirs->data, n * c->extent);
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
    if (root < 0 && c->size > 2 && count * c->extent >= SCATTER_FROM_BYTES)
        rc = scatter_gather_piece(c, w, call, out, count, f);
    else
        rc = reduce_window_inputs(c, w, call, mine, 0, out, count, f);
    if (c->rank == root)
        publish(w, call);   /* a reduce's root: once it has read the others' inputs */
    /* every rank has published call, so has read call - 1's inputs (and results) */
    g->writable_until = call + SMALL_BUFFERS - 1;
    return rc;
}

/* c's window in *w for a call in pieces of per_piece elements, or NULL where the call goes by
 * messages instead (the caller's fallback): a schedule being recorded, one rank, an element
 * larger than a buffer, a window the node's limits leave unusable (each reason counted for
 * MPIOPT_REPORT). */
static int usable_window(const mpiopt_coll *c, size_t per_piece, node_window **w)
{
    *w = NULL;
    if (c->record)     /* a schedule records messages: the fallback, and the report says so */
        mpiopt_report_node(0, MPIOPT_NODE_SCHEDULE);
    if (c->record || per_piece == 0 || c->size < 2)
        return MPI_SUCCESS;
    int rc = mpiopt_node_window_of(c, w);
    if (rc == MPI_SUCCESS && !(*w)->usable) {
        if ((*w)->why_unusable >= 0)
            mpiopt_report_node(0, (mpiopt_node_reason)(*w)->why_unusable);
        *w = NULL;
    }
    return rc;
}

/* An allreduce at p = 2 of up to LINES_MAX_BYTES. Each rank writes its input into its buffer as
 * lines of LINE_PAYLOAD bytes, each ending with the call's number, stored after the line's data
 * (release); the other rank copies each line once its number is there (acquire), not after one
 * header for all of them, and reduces it with its own input where the caller left it (lines and
 * numbers as in NCCL's low-latency protocols). The header is still published, after the lines,
 * for the ring's reuse (wait_writable) and its other calls. A line's number is trusted only where
 * the call before in this buffer wrote numbered lines too (the other calls write data there, and
 * data may hold any number; every rank makes the same calls, so each knows): else the reader
 * waits for the header first. Against the header alone (docs/measurements/log.md, "numbered lines at p = 2"):
 * faster up to 1.75 KiB under Open MPI 4.1.4 and Intel MPI 2021.15 (256 B 0.28 against 0.39
 * us); to 4 KiB once a call of many lines waited for its last first. Whole lines are copied
 * with a constant length, inline (a call to memcpy a line: 1 KiB 0.62-0.65 against 0.54 us). */
static int exchange_lines(const mpiopt_coll *c, node_window *w, ring *g, const void *in,
                          void *out, size_t count)
{
    uint64_t call = ++g->calls;
    size_t bytes = count * c->extent;
    uint32_t lines = (uint32_t)((bytes + LINE_PAYLOAD - 1) / LINE_PAYLOAD);
    unsigned b = (unsigned)(call % SMALL_BUFFERS);
    buffer *their_buffer = ring_buffer(w->all[1 - c->rank], call);
    /* the lines go in the slot this rank read them from the last time round (turns, as the
     * stages' at p = 2: staged.c): every use of a buffer writes both slots, one each, so the
     * numbering below holds for either; the headers stay each rank's own */
    int turn = g->lines_turn[b];
    g->lines_turn[b] = (unsigned char)(1 - turn);
    char *mine = (char *)ring_buffer(w->all[c->rank ^ turn], call) + 64;
    const char *theirs = (const char *)ring_buffer(w->all[(1 - c->rank) ^ turn], call) + 64;
    _Alignas(64) char got[(LINES_MAX_BYTES + LINE_PAYLOAD - 1) / LINE_PAYLOAD * LINE_PAYLOAD];
    if (g->lines_call[b] + SMALL_BUFFERS != call)
        g->lines_numbered[b] = 0;
    int numbered = lines <= g->lines_numbered[b];
    g->lines_call[b] = call;
    if (!numbered)
        g->lines_numbered[b] = lines;
    wait_writable(c, w, g, call);
    size_t at = 0;
    for (; at + LINE_PAYLOAD <= bytes; at += LINE_PAYLOAD, mine += 64) {
        memcpy(mine, (const char *)in + at, LINE_PAYLOAD);
        __atomic_store_n((uint64_t *)(mine + LINE_PAYLOAD), call, __ATOMIC_RELEASE);
        MPIOPT_COUNT_FLAG_WRITE();
    }
    if (at < bytes) {
        memcpy(mine, (const char *)in + at, bytes - at);
        __atomic_store_n((uint64_t *)(mine + LINE_PAYLOAD), call, __ATOMIC_RELEASE);
        MPIOPT_COUNT_FLAG_WRITE();
    }
    publish(w, call);
    if (!numbered)
        mpiopt_shm_wait(&their_buffer->call, call);
    if (lines > LINES_EACH_MAX)     /* the last line first: the others are there with it */
        mpiopt_shm_wait((const uint64_t *)(theirs + (lines - 1) * 64 + LINE_PAYLOAD), call);
    for (at = 0; at < bytes; at += LINE_PAYLOAD, theirs += 64) {
        mpiopt_shm_wait((const uint64_t *)(theirs + LINE_PAYLOAD), call);
        memcpy(got + at, theirs, LINE_PAYLOAD);
    }
    /* the other rank wrote call's lines, so it has read call - 1's */
    g->writable_until = call + SMALL_BUFFERS - 1;
    /* rank 0's input on the left, and on both ranks the three-operand kernel the other calls
     * through the ring use (the two-operand ones may give MAX of +0 and -0 other bits) */
    const void *left = c->rank == 0 ? in : got, *right = c->rank == 0 ? got : in;
    if (in != out)
        return mpiopt_coll_reduce3(c, left, right, out, count);
    _Alignas(64) char result[sizeof got];
    int rc = mpiopt_coll_reduce3(c, left, right, result, count);
    memcpy(out, result, bytes);
    return rc;
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
    if ((rc = usable_window(c, per_piece, &w)) != MPI_SUCCESS || !w)
        return rc;
    *done = 1;
    MPIOPT_COUNT_WINDOW(w->all, sizeof(slot), c->size, c->rank);
    const char *in = c->src ? c->src : buf;
    if (mpiopt_shm_tree_takes(c, bytes, root))  /* p > 2, small: a tree of the node (tree.c) */
        return mpiopt_shm_tree_reduce(c, w, in, buf, count, root);
    if (root < 0 && bytes >= (c->size == 2 ? PAIR_STAGED_FROM_BYTES : STAGED_FROM_BYTES) &&
        c->extent <= (c->size == 2 ? STAGE_BYTES : STAGE_MAX_EXTENT)) {
        int direct = mpiopt_shm_direct_pays(c, w, bytes);
        if (direct < 2 && mpiopt_node_window_stages(c, w))
            return mpiopt_shm_staged_allreduce(c, w, in, buf, count);
        if (direct)     /* and where the stages are not to be had (the node's budget) */
            return mpiopt_shm_direct_allreduce(c, w, in, buf, count);
    }
    if (root >= 0 && w->direct && mpiopt_shm_direct_reduce_pays(c, bytes))
        return mpiopt_shm_direct_reduce_pair(c, w, in, buf, count, root);
    if (root >= 0 && bytes > SMALL_RING_BYTES && c->extent <= STAGE_BYTES &&
        mpiopt_node_window_stages(c, w))
        return mpiopt_shm_staged_reduce(c, w, in, buf, count, root);
    ring *g = &w->small;
    mpiopt_node_window_warm_ring(c, w, 64 + (bytes / LINE_PAYLOAD + 1) * 64);   /* lines or data */
    if (root < 0 && c->size == 2 && bytes <= LINES_MAX_BYTES)
        return exchange_lines(c, w, g, in, buf, count);
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

#ifndef SMPI_SAMPLE_FLOPS
/* A reduce-scatter whose every rank's input, less its own block, fits one buffer (at p = 2 and
 * equal blocks: 16 KiB in all): a rank copies in only what the others reduce, the parts of its
 * input before and after its own block, end to end, so that rank r's buffer holds element e at
 * e below r's block and at e - n_r above it. Then it reduces its own block from its own input
 * where the caller left it and the others' buffers. At p = 2 that halves the bytes copied
 * (p = 2, Intel MPI 2021.15, 16 KiB: see SHARED_MEMORY_MAX_BYTES in entry/reduce_scatter.c). */
static int reduce_scatter_others_only(const mpiopt_coll *c, node_window *w, void *out,
                                      const size_t *displs, const fold_space *f)
{
    int me = c->rank, rc = MPI_SUCCESS;
    size_t count = displs[c->size], lo = displs[me], n = displs[me + 1] - lo, e = c->extent;
    /* the input, never NULL here (algorithms.h), and this rank's block of it */
    const char *in = c->src, *own = c->src + lo * e;
    ring *g = &w->small;
    uint64_t call = ++g->calls;
    wait_writable(c, w, g, call);
    char *data = ring_buffer(w->mine, call)->data;
    memcpy(data, in, lo * e);
    memcpy(data + lo * e, in + (lo + n) * e, (count - lo - n) * e);
    publish(w, call);
    const char *pair[2], **inputs = c->size == 2 ? pair : f->inputs;
    for (int r = 0; r < c->size; r++) {
        if (r == me)
            continue;
        mpiopt_shm_wait(&ring_buffer(w->all[r], call)->call, call);
        if (inputs) {
            size_t lo_r = displs[r], n_r = displs[r + 1] - lo_r;
            inputs[r] = ring_buffer(w->all[r], call)->data + (lo < lo_r ? lo : lo - n_r) * e;
        }
    }
    if (n > 0 && rc == MPI_SUCCESS) {
        if (!inputs) {
            rc = MPI_ERR_NO_MEM;
        } else {
            inputs[me] = own;
            rc = mpiopt_shm_reduce_inputs(c, inputs, out, n, f);
        }
    }
    g->writable_until = call + SMALL_BUFFERS - 1;
    return rc;
}

#endif

/* A reduce-scatter on the window: every rank copies its input in and publishes it, then reduces
 * only its own block, elements [lo, lo + n), of the p inputs, straight into out; no result is
 * handed back, so a rank reads n*p elements and computes n, not the whole allreduce. A call larger
 * than a buffer goes in pieces of a buffer, each a call of the ring: a rank reduces the part of
 * its block a piece holds. The ring's protocol as above: publishing the next call says this one's
 * inputs were read. Pieces were measured faster than the shared-memory allreduce of the whole
 * buffer at every size (p = 2: 16 KiB 2.5 against 4.5 us, 1 MiB 140 against 180), slower than the
 * ring from 16 KiB (auto's choice, entry/reduce_scatter.c). A call whose inputs less each rank's
 * own block fit one buffer goes as reduce_scatter_others_only above (every rank decides alike,
 * from displs). *done = 0: the call is not this algorithm's (the caller takes another). */
int mpiopt_reduce_scatter_shared_memory(const mpiopt_coll *c, void *out, const size_t *displs,
                                        int *done)
{
    *done = 0;
#ifdef SMPI_SAMPLE_FLOPS
    (void)c, (void)out, (void)displs;
    return MPI_SUCCESS;
#else
    node_window *w;
    int rc;
    size_t per_piece = BUFFER_BYTES / c->extent;
    size_t count = displs[c->size], lo = displs[c->rank], n = displs[c->rank + 1] - lo;
    if ((rc = usable_window(c, per_piece, &w)) != MPI_SUCCESS || !w)
        return rc;
    *done = 1;
    size_t smallest = n;    /* the smallest block: its rank copies the most */
    for (int r = 0; r < c->size; r++)
        if (displs[r + 1] - displs[r] < smallest)
            smallest = displs[r + 1] - displs[r];
    int one_piece = count - smallest <= per_piece;
    fold_space f = {NULL, NULL, NULL};
    if (c->size > 2 && n > 0) {
        int levels, p2 = mpiopt_pow2_floor(c->size, &levels);
        f.scratch = mpiopt_coll_scratch(c, (size_t)p2 * (n < per_piece ? n : per_piece));
        f.value = malloc(sizeof *f.value * (size_t)p2);
        f.inputs = malloc(sizeof *f.inputs * (size_t)c->size);
    }
    if (one_piece) {
        rc = reduce_scatter_others_only(c, w, out, displs, &f);
        goto out;
    }
    const char *in = c->src;     /* never NULL here (algorithms.h) */
    ring *g = &w->small;
    /* every piece, whatever failed before: the other ranks wait for this one's */
    for (size_t first = 0; first < count; first += per_piece) {
        size_t pn = count - first < per_piece ? count - first : per_piece;
        uint64_t call = ++g->calls;
        wait_writable(c, w, g, call);
        memcpy(ring_buffer(w->mine, call)->data, in + first * c->extent, pn * c->extent);
        publish(w, call);
        for (int r = 0; r < c->size; r++)
            if (r != c->rank)
                mpiopt_shm_wait(&ring_buffer(w->all[r], call)->call, call);
        /* the part of this rank's block in the piece: [a, b) of the call's elements */
        size_t a = lo > first ? lo : first, b = lo + n < first + pn ? lo + n : first + pn;
        if (a < b && rc == MPI_SUCCESS)
            rc = reduce_window_inputs(c, w, call, in + first * c->extent,
                                      a - first, (char *)out + (a - lo) * c->extent, b - a, &f);
        g->writable_until = call + SMALL_BUFFERS - 1;
    }
out:
    free(f.value);
    free(f.inputs);
    mpiopt_scratch_free(f.scratch);
    return rc;
#endif
}

/* A scan (exclusive = 0) or exscan (1) on the window, in pieces of a buffer, each a call of the
 * ring: every rank but the last copies its input to the piece in and publishes it (the last
 * publishes at once: nobody reads its buffer), then rank r folds the lower ranks' inputs onto its
 * own from the nearest down, each into buf: in_0 op (in_1 op (... op in_r)), rank order kept for
 * non-commutative ops. Rank r reads r inputs, so it suits a node's few ranks; no rank waits for a
 * higher one, and the ranks that copy run up to the ring's length ahead of those that fold. An
 * exscan larger than SMALL_RING_BYTES goes through the stages the same way (staged.c).
 * Publishing a piece says this rank has read the piece before (the ring's protocol above). An
 * exscan leaves rank 0's buf as it was. *done = 0: the call is not this algorithm's. */
#ifndef SMPI_SAMPLE_FLOPS
/* Where lower rank r's input to a scan's ring piece is, once it is there. */
typedef struct {
    node_window *w;
    uint64_t call;
} ring_piece;

static const char *ring_input(const void *ctx, int r)
{
    const ring_piece *x = ctx;
    buffer *theirs = ring_buffer(x->w->all[r], x->call);
    mpiopt_shm_wait(&theirs->call, x->call);
    return theirs->data;
}
#endif

int mpiopt_scan_shared_memory(const mpiopt_coll *c, void *buf, size_t count, int exclusive,
                              int *done)
{
    *done = 0;
#ifdef SMPI_SAMPLE_FLOPS
    (void)c, (void)buf, (void)count, (void)exclusive;
    return MPI_SUCCESS;
#else
    node_window *w;
    int rc, last = c->rank == c->size - 1;
    size_t e = c->extent, per_piece = BUFFER_BYTES / e;
    if ((rc = usable_window(c, per_piece, &w)) != MPI_SUCCESS || !w)
        return rc;
    *done = 1;
    const char *in = c->src ? c->src : buf;
    if (exclusive && c->size == 2 && count * e >= EXSCAN_PAIR_FROM_BYTES) {
        if (w->direct)
            return mpiopt_shm_direct_exscan_pair(c, w, in, buf, count);
        if (count * e < EXSCAN_STAGED_FROM_BYTES) {
            *done = 0;      /* recursive doubling's one message */
            return MPI_SUCCESS;
        }
    }
    /* an exscan's larger calls through the stages: at p = 2 rank 1 only copies rank 0's input,
     * and its copies from 64 KiB stages beat those from the ring's 8 KiB buffers (128 KiB-1 MiB,
     * 9.8-70 against 13-77 us, Open MPI 4.1.4, one run); a scan's fold did not gain */
    if (exclusive && count * e > SMALL_RING_BYTES && e <= STAGE_BYTES &&
        mpiopt_node_window_stages(c, w))
        return mpiopt_shm_staged_scan(c, w, in, buf, count, exclusive);
    ring_piece piece = {w, 0};
    ring *g = &w->small;
    /* every piece, whatever failed before: the other ranks wait for this one's */
    for (size_t first = 0; first < count; first += per_piece) {
        size_t n = count - first < per_piece ? count - first : per_piece;
        uint64_t call = piece.call = ++g->calls;
        const char *own = in + first * e;
        if (!last) {
            wait_writable(c, w, g, call);
            mpiopt_shm_copy(ring_buffer(w->mine, call)->data, own, n * e);
        }
        publish(w, call);
        int piece_rc = mpiopt_shm_scan_fold(c, ring_input, &piece, own, (char *)buf + first * e,
                                            n, exclusive);
        if (rc == MPI_SUCCESS)
            rc = piece_rc;
    }
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
    /* two ranks: one message, which the root reduces (the same bits: a predefined op's two
     * operands commute bit for bit); recursive doubling's exchange and Rabenseifner's two steps
     * measured 1.4-3.5x slower at 4 B-4 MiB under Open MPI 4.1.4, where the node's budgets leave
     * a communicator no window (mpiopt bench allreduce --live-comms 100) */
    if (c->size == 2)
        return mpiopt_reduce_binomial(c, buf, count, root);
    if (count * c->extent >= RABENSEIFNER_FROM_BYTES) {
        mpiopt_coll in_buf = *c;    /* Rabenseifner's reduce starts from its input in buf */
        mpiopt_coll_take_input(&in_buf, buf, count);
        return mpiopt_reduce_rabenseifner(&in_buf, buf, count, root);
    }
    return mpiopt_reduce_recursive_doubling(c, buf, count, root);   /* reads c->src too */
}
