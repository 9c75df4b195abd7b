/* Large allreduces at p > 2 through the stages by the node's groups (its packages, or the largest
 * level of its groups that the communicator spans: topology.c), beside the flat stages of
 * staged.c, which have every rank reduce its 1/p share of a chunk from all p inputs and then
 * read every other rank's share of the result: 2n(p - 1)/p bytes a rank read from other cores,
 * half of them from the other socket on a 2-socket node, so p * n bytes crossing the sockets in
 * a call in all, growing with the ranks. Here the ranks of a group (G virtual ranks) reduce the
 * group's inputs among themselves, and only the groups' partials cross:
 *
 *   1. every rank copies its input chunk into its stage (less the share it reduces itself, which
 *      it reads where the caller left it) and posts it;
 *   2. rank j of group b reduces share j (1/G of the chunk) of its group's G inputs into its
 *      stage's `out`: group b's partial of that share; posts it;
 *   3. it reduces share j of the S = p2 / G groups' partials (from rank j of every group: the
 *      only bytes that cross groups, n/G * (S - 1) a rank) into its stage's `in`, where share
 *      j of its own input would be (step 1 left it out, and nobody reads it there): the share
 *      of the whole result; posts it (result_chunk). Every group computes every share of
 *      the whole, S times in all, so that no result crosses a group again;
 *   4. every rank copies its group's G shares of the result into its output and posts that it
 *      is done with the chunk.
 *
 *   bytes crossing groups a call: S (S - 1) n in all, whatever p (2n on 2 sockets), against
 *   p n for the flat stages; a rank reads n (G - 1)/G to reduce, n (S - 1)/G partials and
 *   n (G - 1)/G of results; 4 posts a chunk
 *
 * The bits are recursive doubling's, as on every path of shared_memory: a group is an aligned
 * block of G virtual ranks (recursive doubling's fold of the first 2(p - p2) ranks in pairs,
 * mpiopt_shm_reduce_virtual), so its partial is one of recursive doubling's brackets, and the
 * groups' partials are bracketed in turn (mpiopt_shm_bracket). The higher rank of a folded pair
 * reduces nothing: it hands its input over and copies the result out.
 *
 * A stage's reuse waits only for the ranks that read it in the chunk before: the group's ranks
 * and this rank's counterparts in the other groups (after another way's use, for every rank:
 * mpiopt_shm_stage_for). So no flag of every rank is read either: the lines crossing groups a
 * chunk are the partials and 2 (S - 1) flags a rank.
 *
 * One level only: within a group every rank reads every other's share, as the flat stages do
 * (a group of one package's ranks crosses its NUMA nodes). MPIOPT_SHM_GROUPS=0: the flat stages
 * always. The groups are agreed by all ranks (mpiopt_node_all_agree), or none is taken. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/node/node_window.h"
#include "coll/node/topology.h"
#include "coll/engine/report.h"

#ifndef SMPI_SAMPLE_FLOPS

/* The virtual rank v's real rank: the lower of its pair where it is a folded one */
static int real_rank(int v, int surplus)
{
    return v < surplus ? 2 * v : v + surplus;
}

/* The group's virtual ranks: the outermost of the node's groups (rounded down to a power of two)
 * that is a proper part of the communicator, or 1 (the flat stages). Collective: the topology's
 * allgather and the agreement. */
static int decide_group(const mpiopt_coll *c)
{
    const char *forced = getenv("MPIOPT_SHM_GROUPS");
    int groups[MPIOPT_TOPOLOGY_MAX_GROUPS], n = mpiopt_node_topology_groups(c, groups);
    int p2 = mpiopt_pow2_floor(c->size, NULL);
    int group = n > 0 ? mpiopt_pow2_floor(groups[n - 1], NULL) : 1;
    if ((forced && *forced && atoi(forced) == 0) || group < 2 || group >= p2)
        group = 1;
    int least = 1;
    int agreed = mpiopt_node_all_agree(c, &group, 1, &least);
    if (c->rank == 0 && mpiopt_verbose()) {
        if (!agreed)
            fprintf(stderr, "mpiopt: shared_memory stages on %d ranks: the ranks see different "
                    "node groups (HWLOC_*, the cpusets or MPIOPT_SHM_GROUPS differ between "
                    "ranks); every rank takes the flat stages\n", c->size);
        else if (group > 1)
            fprintf(stderr, "mpiopt: shared_memory stages on %d ranks: groups of %d, %d groups\n",
                    c->size, group, p2 / group);
        else
            fprintf(stderr, "mpiopt: shared_memory stages on %d ranks: flat\n", c->size);
    }
    return agreed ? group : 1;
}

typedef struct {
    int group, groups;              /* G virtual ranks a group, S groups */
    int surplus, b, j, works;       /* this rank: its group, its share, whether it reduces */
} shape;

/* Waits until this rank may write stage s for `chunk`: the ranks that read it in its last chunk
 * (its group's and its counterparts, where that chunk went this way) are done with it. */
static stage *stage_for(const mpiopt_coll *c, node_window *w, const shape *x, uint64_t chunk,
                        int s)
{
    uint64_t last = w->stage_chunk[s];
    if (last != w->grouped_chunk[s]) {
        stage *mine = mpiopt_shm_stage_for(c, w, chunk, s);     /* another way's: everyone's */
        w->grouped_chunk[s] = chunk;
        return mine;
    }
    for (int v = x->b * x->group; last && v < (x->b + 1) * x->group; v++)
        for (int r = real_rank(v, x->surplus); r <= real_rank(v, x->surplus) + (v < x->surplus);
             r++)
            if (r != c->rank)
                mpiopt_shm_wait(&w->all_stages[r][s].done_chunk, last);
    for (int b = 0; last && b < x->groups; b++)
        if (b != x->b)
            mpiopt_shm_wait(&w->all_stages[real_rank(b * x->group + x->j, x->surplus)][s]
                                 .done_chunk, last);
    w->stage_chunk[s] = w->grouped_chunk[s] = chunk;
    return &w->my_stages[s];
}



int mpiopt_shm_grouped_allreduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                                 size_t count, int *done)
{
    *done = 0;
    if (!w->stage_group)
        w->stage_group = decide_group(c);
    int p = c->size, me = c->rank, p2 = mpiopt_pow2_floor(p, NULL);
    size_t extent = c->extent;
    if (w->stage_group < 2)
        return MPI_SUCCESS;
    *done = 1;
    shape x = {.group = w->stage_group, .groups = p2 / w->stage_group, .surplus = p - p2};
    int v = me < 2 * x.surplus ? me / 2 : me - x.surplus;
    x.works = !(me < 2 * x.surplus && me % 2);
    x.b = v / x.group;
    x.j = v % x.group;
    /* a share of the group's partial, at most a chunk's 1/G and an element, fits `out`: chunks of
     * a stage, or fewer elements for large ones (extent <= STAGE_MAX_EXTENT: the caller's) */
    size_t per_chunk = STAGE_BYTES / extent;
    size_t most = (STAGE_OUT_BYTES / extent - 1) * (size_t)x.group;
    per_chunk = per_chunk < most ? per_chunk : most;
    fold_space f;
    int rc = mpiopt_shm_make_fold(c, per_chunk / (size_t)x.group + 1, &f);
    const char **inputs = f.inputs;

    for (size_t at = 0, k = 0; at < count; at += per_chunk, k++) {
        size_t m = count - at < per_chunk ? count - at : per_chunk, first, n;
        uint64_t chunk = ++w->chunks;
        int s = (int)(k % ALLREDUCE_STAGES);
        stage *mine = stage_for(c, w, &x, chunk, s);
        const char *own = mpiopt_at(c, in, at);

        mpiopt_shm_share_of(m, x.j, x.group, &first, &n);
        if (x.works) {
            mpiopt_shm_copy(mine->in, own, first * extent);
            mpiopt_shm_copy(mine->in + (first + n) * extent, own + (first + n) * extent,
                            (m - first - n) * extent);
        } else {
            mpiopt_shm_copy(mine->in, own, m * extent);
        }
        mpiopt_shm_post_chunk(&mine->in_chunk, chunk);

        if (x.works) {
            for (int u = x.b * x.group; inputs && u < (x.b + 1) * x.group; u++)
                for (int r = real_rank(u, x.surplus);
                     r <= real_rank(u, x.surplus) + (u < x.surplus); r++) {
                    if (r == me) {
                        inputs[r] = own + first * extent;
                        continue;
                    }
                    mpiopt_shm_wait(&w->all_stages[r][s].in_chunk, chunk);
                    inputs[r] = w->all_stages[r][s].in + first * extent;
                    MPIOPT_COUNT_READ_EACH(inputs[r], n * extent);
                }
            if (rc == MPI_SUCCESS && n > 0)
                rc = mpiopt_shm_reduce_virtual(c, inputs, x.b * x.group, x.group, mine->out, n,
                                               &f);
            mpiopt_shm_post_chunk(&mine->out_chunk, chunk);

            char *whole = NULL;
            for (int b = 0; b < x.groups; b++) {
                int r = real_rank(b * x.group + x.j, x.surplus);
                const char *partial = mine->out;
                if (r != me) {
                    mpiopt_shm_wait(&w->all_stages[r][s].out_chunk, chunk);
                    partial = w->all_stages[r][s].out;
                    MPIOPT_COUNT_READ_EACH(partial, n * extent);
                }
                if (f.value)
                    memcpy(f.value[b] = f.scratch + (size_t)b * n * extent, partial, n * extent);
            }
            if (rc == MPI_SUCCESS && n > 0 && f.value)
                rc = mpiopt_shm_bracket(c, f.value, x.groups, n, &whole);
            if (rc == MPI_SUCCESS && n > 0 && whole)
                memcpy(mine->in + first * extent, whole, n * extent);
            mpiopt_shm_post_chunk(&mine->result_chunk, chunk);
        }

        for (int i = 0; i < x.group; i++) {
            int jj = (x.j + i) % x.group, r = real_rank(x.b * x.group + jj, x.surplus);
            size_t their_first, their_n;
            mpiopt_shm_share_of(m, jj, x.group, &their_first, &their_n);
            const char *result = w->all_stages[r][s].in + their_first * extent;
            if (r != me) {
                mpiopt_shm_wait(&w->all_stages[r][s].result_chunk, chunk);
                MPIOPT_COUNT_READ_EACH(result, their_n * extent);
            }
            mpiopt_shm_copy(mpiopt_at(c, out, at + their_first), result, their_n * extent);
        }
        mpiopt_shm_post_chunk(&mine->done_chunk, chunk);
    }
    mpiopt_shm_free_fold(&f);
    return rc;
}
#endif
