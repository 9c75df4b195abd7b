/* Small allreduces and reduces through a tree shaped by the node, beside the shared_memory
 * algorithm's flat path (shared_memory.c), which has every rank read all p inputs: p lines a
 * rank, p^2 in all, each written by another core. Here a rank reads its children's partial
 * results and its parent's result: radix - 1 lines a level and one, so the lines read a rank grow
 * with the radix and log p, and those crossing a socket with the number of sockets.
 *
 * The bits: recursive doubling's (mpiopt_shm_reduce_inputs). The tree is over its virtual
 * ranks: the first 2 * surplus ranks fold in pairs (2g, 2g + 1) into virtual rank g (2g reads
 * 2g + 1's input: in_2g op in_2g+1), the others are virtual rank r - surplus; a node of level l
 * covers an aligned block of span[l + 1] virtual ranks and combines its radix[l] children's
 * partials (each an aligned block of span[l]) in binary brackets, ((c0 op c1) op (c2 op c3)),
 * lower op higher. Every radix is a power of two, so every bracket is one of recursive
 * doubling's and the result is bit for bit its result, for every op, non-commutative user ops
 * included (tests/c/same_bits.c). A block's leader is its lowest virtual rank; the top is
 * virtual rank 0, rank 0.
 *
 * The levels: the node's groups (topology.c: ranks sharing an L3, a NUMA node, a package), each
 * rounded down to a power of two, are block boundaries, so a lower level stays inside its group;
 * between two boundaries, levels of the radix MPIOPT_SHM_TREE_RADIX (a power of two, default 4)
 * and one smaller level for what is left. Without groups (no hwloc, one socket and L3): levels
 * of the default radix. Its default, from a model of a level's cost: a leader waits for its
 * radix - 1 children's lines, which come about together (a miss each, overlapped, s each after
 * the first, L), and a tree of p ranks has log_R p levels up and as many down:
 *   2 log_R(p) (L + (R - 1) s), least at R = 4-8 for L/s = 4-8 (200 ns a line shared with
 *   another core against 20-40 ns for each overlapped one); R = 4 is also MPICH's release-gather
 *   radix for small messages and at the low end of UCC's 4-16 (whose larger radix pays where
 *   its payload is smaller than a line), so a payload of a few KiB, reduced radix - 1 times a
 *   level, keeps its reduction short.
 *
 * The lines (node_window.h's tree_line): each rank writes only its own; every line carries the
 * tree's call number (counted over the communicator's tree calls, never reset), written last
 * (release), read first (acquire); a payload of up to TREE_INLINE_BYTES sits on the line with its
 * number, so such a call moves one line per edge; up to TREE_MAX_BYTES it is copied in after
 * the line and out by the reader. Up: a rank that leads waits for its children's lines, copies
 * their partials and reduces them; it then publishes its own partial on its up line (a leaf: its
 * input). Every rank publishes its up line, the top too (with no payload): it says that rank has
 * read its children's lines of that call. Down (allreduce): the top publishes the result on its
 * down line; each rank waits for its parent's, and a rank with children copies it to its own
 * down line for them (so a line crosses a socket once a socket and call) and then to its output.
 * Reduce: up only; the top has the result, and hands it to a root other than itself on its down
 * line (one line more, read by the root alone).
 *
 * Reuse: a rank writes up[k % TREE_UP_BUFFERS] only once its parent has published its up line
 * of call k - TREE_UP_BUFFERS (it has then read this rank's). In an allreduce the result coming
 * down says so for every call before; a reduce's ranks run on, and look at their parent's line
 * once in TREE_UP_BUFFERS - 1 calls (wait_up_writable). A down line needs no such wait: a rank
 * writes it in call k only after its children's up lines of call k, which they write after
 * they have read call k - 1's result; the top writes the root's line after every rank's up line
 * of the call, the root's included. Waits yield the core (mpiopt_shm_wait): with more ranks than
 * cores, the rank waited for may need this one's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/node/tree.h"
#include "coll/node/topology.h"
#include "coll/node/line_count.h"
#include "kernels/kernels.h"
#include "coll/engine/report.h"

#define TREE_MAX_LEVELS 32
#define TREE_MAX_RADIX 64
#define DEFAULT_RADIX 4
/* MPIOPT_SHM_TREE's default, from bench/line_model.py: its model (a handover L = 160 ns, measured
 * here by bench/line_pingpong.c; each further line of a wait s = 16 ns and a call's own work
 * C = 130 ns, fitted at p = 2; a line from the other socket counts twice) priced with the counted
 * lines of both paths (docs/shared_memory_lines.md), allreduce, µs flat / tree:
 *     p = 16:  8 B 0.49 / 0.77   512 B 2.17 / 1.67   2 KiB 7.2 / 4.4    4 KiB 2.7 / 8.0
 *     p = 32:  8 B 0.71 / 1.06   512 B 4.19 / 2.18   2 KiB 14.6 / 5.6   4 KiB 3.5 / 10.0
 *     p = 64:  8 B 1.74 / 1.63   512 B 12.4 / 3.20   2 KiB 44.4 / 7.9   4 KiB 7.2 / 14.2
 * So by default: a payload past the flag's line (the flat path then reads 1 + bytes/64 lines of
 * every rank) from 16 ranks; a payload on the line from 64, where the flat path's p - 1 lines,
 * half of them from the other socket, cost as much as the tree's 2 log levels of handovers (the
 * model has no term for p - 1 cores reading one line at once, which only makes the flat path
 * dearer); an allreduce of SCATTER_FROM_BYTES and more never (the flat path's reduce-scatter
 * reads 1/p of each input where a tree's leaders read every child's whole payload). Not
 * measured on a node of 16 cores or more (this machine has 2). MPIOPT_SHM_TREE=N takes the tree
 * from N ranks at every size to TREE_MAX_BYTES. */
#define DEFAULT_FROM_RANKS 16
#define DEFAULT_INLINE_FROM_RANKS 64

struct mpiopt_shm_tree {
    int levels;
    int radix[TREE_MAX_LEVELS];     /* level l's children a leader */
    int span[TREE_MAX_LEVELS + 1];  /* virtual ranks a node of level l - 1 covers: span[0] = 1 */
    int max_radix;
    int surplus;                    /* c->size - p2 */
    int vrank;                      /* this rank's virtual rank; -1: folded into rank - 1's */
    int lead;                       /* the levels at which it leads a block (0: a leaf) */
    int fold_child;                 /* rank + 1 where it folds with it, else -1 */
    int parent;                     /* the rank reading its up line; -1: the top */
    uint64_t calls;                 /* the tree calls so far */
    uint64_t parent_read_until;     /* the last call whose up line the parent is known to have
                                     * read */
};
typedef struct mpiopt_shm_tree shm_tree;

/* ---- the tree's reads and writes of the window, each in one small function (a count of the
 * lines a call moves can be kept here) ---- */

/* the line's number: the call whose payload it holds is there (release) */
static inline void line_publish(tree_line *l, uint64_t call)
{
    __atomic_store_n(&l->call, call, __ATOMIC_RELEASE);
    MPIOPT_COUNT_FLAG_WRITE();
}

/* waits until another rank's line says `call` (or later); what it says */
static inline uint64_t line_wait(const tree_line *l, uint64_t call)
{
    return mpiopt_shm_wait(&l->call, call);
}

/* another rank's line's number as it is now */
static inline uint64_t line_peek(const tree_line *l)
{
    MPIOPT_COUNT_READ(&l->call, sizeof l->call);
    return __atomic_load_n(&l->call, __ATOMIC_ACQUIRE);
}

/* where a payload of `bytes` sits: on the line with its number, or after it */
static inline char *payload_of(tree_line *l, size_t bytes)
{
    return bytes <= TREE_INLINE_BYTES ? l->inline_data : l->data;
}

/* this rank's payload into its own line (before line_publish) */
static inline void payload_write(tree_line *l, const void *src, size_t bytes)
{
    memcpy(payload_of(l, bytes), src, bytes);
}

/* another rank's payload out of its line (after line_wait) */
static inline void payload_read(void *dst, const tree_line *l, size_t bytes)
{
    memcpy(dst, payload_of((tree_line *)l, bytes), bytes);
    MPIOPT_COUNT_READ(payload_of((tree_line *)l, bytes), bytes);
}

/* ---- the knobs, read once a process ---- */
static int tree_from, tree_radix;
static int tree_default;     /* MPIOPT_SHM_TREE unset: the model's sizes (above) */
static pthread_once_t knobs_once = PTHREAD_ONCE_INIT;

static void read_knobs(void)
{
    /* MPIOPT_SHM_TREE: 0 never, 1 wherever it can (p > 2), N > 1 from N ranks */
    long from = mpiopt_env_long("MPIOPT_SHM_TREE", -1);
    tree_default = !(from == 0 || (from >= 1 && from < (1L << 30)));
    tree_from = from == 0 ? 0 : from == 1 ? 3 : from > 1 && from < (1L << 30) ? (int)from
                                                                           : DEFAULT_FROM_RANKS;
    long radix = mpiopt_env_long("MPIOPT_SHM_TREE_RADIX", DEFAULT_RADIX);
    radix = radix < 2 ? 2 : radix > TREE_MAX_RADIX ? TREE_MAX_RADIX : radix;
    tree_radix = mpiopt_pow2_floor((int)radix, NULL);
}

int mpiopt_shm_tree_takes(const mpiopt_coll *c, size_t bytes, int root)
{
    pthread_once(&knobs_once, read_knobs);
    if (c->size <= 2 || bytes > TREE_MAX_BYTES || tree_from == 0 || c->size < tree_from)
        return 0;
    if (!tree_default)
        return 1;
    if (root < 0 && bytes >= SCATTER_FROM_BYTES)
        return 0;
    return bytes > TREE_INLINE_BYTES || c->size >= DEFAULT_INLINE_FROM_RANKS;
}

/* the rank that holds virtual rank v */
static inline int real_rank(const shm_tree *t, int v)
{
    return v < t->surplus ? 2 * v : v + t->surplus;
}

/* Says once a communicator, on its rank 0, under MPIOPT_VERBOSE, the tree's shape: the node's
 * groups it follows and each level's radix (the tests read it). */
static void say_shape(const mpiopt_coll *c, const shm_tree *t, const int *groups, int ngroups)
{
    if (c->rank != 0 || !mpiopt_verbose())
        return;
    char text[256];
    int at = snprintf(text, sizeof text, "mpiopt: shared_memory tree on %d ranks: node groups",
                      c->size);
    for (int i = 0; i < ngroups && at < (int)sizeof text; i++)
        at += snprintf(text + at, sizeof text - (size_t)at, "%s%d", i ? "," : " ", groups[i]);
    if (ngroups == 0 && at < (int)sizeof text)
        at += snprintf(text + at, sizeof text - (size_t)at, " none");
    if (at < (int)sizeof text)
        at += snprintf(text + at, sizeof text - (size_t)at, ", radix");
    for (int l = 0; l < t->levels && at < (int)sizeof text; l++)
        at += snprintf(text + at, sizeof text - (size_t)at, "%s%d", l ? "," : " ", t->radix[l]);
    fprintf(stderr, "%s\n", text);
}

/* Every rank must build the same tree, or one waits on a line no other rank writes: the shape
 * comes from each rank's own view (its hwloc topology; its MPIOPT_SHM_TREE_RADIX). Where the
 * ranks do not agree (mpiopt_node_all_agree), every rank takes the same fallback: no node groups
 * and the least radix, and MPIOPT_VERBOSE says so. Returns the groups' count and sets *radix. */
static int agreed_shape(const mpiopt_coll *c, int *groups, int ngroups, int *radix)
{
    enum { N = MPIOPT_TOPOLOGY_MAX_GROUPS + 2 };
    _Static_assert(N <= MPIOPT_AGREE_MAX, "the shape is agreed in one allreduce");
    int mine[N] = {ngroups, *radix}, least[N] = {0, 2};    /* 2: where no agreement was had */
    for (int i = 0; i < ngroups; i++)
        mine[2 + i] = groups[i];
    if (mpiopt_node_all_agree(c, mine, N, least))
        return ngroups;
    *radix = least[1];
    if (c->rank == 0 && mpiopt_verbose())
        fprintf(stderr, "mpiopt: shared_memory tree on %d ranks: the ranks see different node "
                "shapes (HWLOC_*, the cpusets or MPIOPT_SHM_TREE_RADIX differ between ranks); "
                "every rank builds the tree without node groups, radix %d\n", c->size, *radix);
    return 0;
}

/* The tree of c's ranks (collective: the topology's allgather and the agreement). */
static shm_tree *build(const mpiopt_coll *c)
{
    int groups[MPIOPT_TOPOLOGY_MAX_GROUPS], radix = tree_radix;
    int ngroups = agreed_shape(c, groups, mpiopt_node_topology_groups(c, groups), &radix);
    shm_tree *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    int p2 = mpiopt_pow2_floor(c->size, NULL), bound[MPIOPT_TOPOLOGY_MAX_GROUPS + 2], nb = 0;
    t->surplus = c->size - p2;
    bound[nb++] = 1;
    for (int i = 0; i < ngroups; i++) {
        int b = mpiopt_pow2_floor(groups[i], NULL);
        if (b > bound[nb - 1] && b < p2)
            bound[nb++] = b;
    }
    bound[nb++] = p2;
    t->span[0] = 1;
    for (int i = 1; i < nb; i++)
        for (int ratio = bound[i] / bound[i - 1]; ratio > 1 && t->levels < TREE_MAX_LEVELS;) {
            int r = ratio < radix ? ratio : radix;
            t->radix[t->levels] = r;
            t->span[t->levels + 1] = t->span[t->levels] * r;
            t->max_radix = r > t->max_radix ? r : t->max_radix;
            t->levels++;
            ratio /= r;
        }
    say_shape(c, t, groups, ngroups);
    int me = c->rank;
    t->fold_child = t->parent = -1;
    if (me < 2 * t->surplus && me % 2) {
        t->vrank = -1;
        t->parent = me - 1;
        return t;
    }
    if (me < 2 * t->surplus) {
        t->vrank = me / 2;
        t->fold_child = me + 1;
    } else {
        t->vrank = me - t->surplus;
    }
    while (t->lead < t->levels && t->vrank % t->span[t->lead + 1] == 0)
        t->lead++;
    if (t->lead < t->levels)
        t->parent = real_rank(t, t->vrank - t->vrank % t->span[t->lead + 1]);
    return t;
}

/* Waits until this rank may write its up line of `call`: its parent has published (so read)
 * call - TREE_UP_BUFFERS. Looks first at the parent's newest line (call - 1), which buys
 * TREE_UP_BUFFERS - 1 calls, as the ring's wait_writable does (shared_memory.c). */
static void wait_up_writable(shm_tree *t, const node_window *w, uint64_t call)
{
    if (call <= t->parent_read_until + TREE_UP_BUFFERS)
        return;
    uint64_t needed = call - TREE_UP_BUFFERS;
    const slot *parent = w->all[t->parent];
    uint64_t seen = line_peek(&parent->up[(call - 1) % TREE_UP_BUFFERS]);
    if (seen < needed)
        seen = line_wait(&parent->up[needed % TREE_UP_BUFFERS], needed);
    t->parent_read_until = seen;
}

int mpiopt_shm_tree_reduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                           size_t count, int root)
{
    if (!w->tree && !(w->tree = build(c)))
        return MPI_ERR_NO_MEM;
    shm_tree *t = w->tree;
    uint64_t call = ++t->calls;
    size_t bytes = count * c->extent;
    int has_children = t->fold_child >= 0 || t->lead > 0, rc = MPI_SUCCESS;
    unsigned up = (unsigned)(call % TREE_UP_BUFFERS);
    /* a leader's scratch: its partial (acc) and its children's at a level (part[1..radix)) */
    char *scratch = has_children ? mpiopt_coll_scratch(c, count * (size_t)(t->max_radix + 1))
                                 : NULL;
    if (has_children && !scratch)
        rc = MPI_ERR_NO_MEM;    /* it still waits and publishes: the others finish */
    char *acc = scratch;
    const char *have = in;      /* this rank's partial so far */
    if (t->fold_child >= 0) {
        const tree_line *l = &w->all[t->fold_child]->up[up];
        line_wait(l, call);
        if (rc == MPI_SUCCESS) {
            char *theirs = scratch + bytes;
            payload_read(theirs, l, bytes);
            rc = mpiopt_coll_reduce3(c, in, theirs, acc, count);     /* in_2g op in_2g+1 */
            have = acc;
        }
    }
    for (int level = 0; level < t->lead; level++) {
        int radix = t->radix[level];
        char *part[TREE_MAX_RADIX];
        part[0] = (char *)have;
        for (int j = 1; j < radix; j++) {
            const tree_line *l = &w->all[real_rank(t, t->vrank + j * t->span[level])]->up[up];
            line_wait(l, call);
            part[j] = scratch + (size_t)j * bytes;
            if (rc == MPI_SUCCESS)
                payload_read(part[j], l, bytes);
        }
        /* recursive doubling's brackets within the block (mpiopt_shm_reduce_inputs' loop):
         * the result lands in part[radix - 1]'s buffer; part[0] is only ever read */
        for (int step = 1; rc == MPI_SUCCESS && step < radix; step *= 2)
            for (int g = 0; rc == MPI_SUCCESS && g < radix; g += 2 * step) {
                rc = mpiopt_coll_reduce_left(c, part[g], part[g + step], count);
                part[g] = part[g + step];
            }
        if (rc == MPI_SUCCESS && level + 1 < t->lead) {
            memcpy(acc, part[0], bytes);    /* the next level's children go where it is */
            have = acc;
        } else if (rc == MPI_SUCCESS) {
            have = part[0];
        }
    }
    tree_line *mine = &w->mine->up[up];
    if (t->parent >= 0) {
        wait_up_writable(t, w, call);
        payload_write(mine, have, bytes);
    }
    line_publish(mine, call);   /* the top too: it has read its children's lines */
    if (root < 0) {
        tree_line *down = &w->mine->down;
        if (t->parent < 0) {
            payload_write(down, have, bytes);
            line_publish(down, call);
            if (have != out)
                memcpy(out, have, bytes);
        } else {
            const tree_line *theirs = &w->all[t->parent]->down;
            line_wait(theirs, call);
            if (has_children) {     /* for the children first, then this rank's own copy */
                payload_read(payload_of(down, bytes), theirs, bytes);
                line_publish(down, call);
                memcpy(out, payload_of(down, bytes), bytes);
            } else {
                payload_read(out, theirs, bytes);
            }
        }
        t->parent_read_until = call;    /* the result came down: the parent read every up */
    } else if (t->parent < 0) {         /* a reduce's top: the result */
        if (root == c->rank) {
            if (have != out)
                memcpy(out, have, bytes);
        } else {
            payload_write(&w->mine->down, have, bytes);
            line_publish(&w->mine->down, call);
        }
    } else if (root == c->rank) {       /* the root, from the top */
        const tree_line *top = &w->all[0]->down;
        line_wait(top, call);
        payload_read(out, top, bytes);
    }
    mpiopt_scratch_free(scratch);
    return rc;
}
