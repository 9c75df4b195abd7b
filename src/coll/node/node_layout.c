/* Which ranks of a communicator share a node, for the node-aware algorithm (hierarchical.c).
 *
 * Found once per communicator and kept with mpiopt's record of it (context.c frees it with that, through the callback this file registers):
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups the ranks of each node, the lowest rank of
 * each group names its node, and an allgather of those names gives every rank the whole layout.
 * Nodes need not hold the same number of ranks, nor consecutive ranks (a round-robin placement).
 *
 * MPIOPT_RANKS_PER_NODE=k is a testing knob: each run of k consecutive ranks of MPI_COMM_WORLD
 * is taken to be a node (the last may hold fewer), so one machine can run the node-aware code
 * with pretend nodes. Counting in MPI_COMM_WORLD, as a real node would, a communicator made by
 * MPI_Comm_split with other keys or a subset of the ranks gets nodes of uneven sizes whose ranks
 * are not consecutive. The knob needs no communication (the group translation is local), so it
 * also serves a nonblocking call that is the communicator's first, where the split (a blocking
 * collective) may not be made. */
#include <stdlib.h>
#include "coll/node/node_layout.h"

static void layout_free(mpiopt_node_layout *layout)
{
    if (!layout)
        return;
    free(layout->node_of);
    free(layout->start);
    free(layout->members);
    free(layout);
}

/* A record frees its layout with it (engine.h). */
__attribute__((constructor)) static void register_layout_free(void)
{
    mpiopt_record_parts_register(&(mpiopt_record_parts){.node_layout_free = layout_free});
}

static int ranks_per_node_knob(void)
{
    const char *s = getenv("MPIOPT_RANKS_PER_NODE");
    if (!s || !*s)
        return 0;
    char *end;
    long k = strtol(s, &end, 10);
    return *end == '\0' && k > 0 && k < (1 << 30) ? (int)k : 0;
}

/* The layout from each rank's node name (the lowest rank of its node) in name[0..p). */
static mpiopt_node_layout *layout_from_names(const int *name, int p)
{
    mpiopt_node_layout *L = calloc(1, sizeof *L);
    int *index_of_name = malloc(sizeof(int) * (size_t)p);
    if (!L || !index_of_name || !(L->node_of = malloc(sizeof(int) * (size_t)p)) ||
        !(L->start = calloc((size_t)p + 1, sizeof(int))) ||
        !(L->members = malloc(sizeof(int) * (size_t)p))) {
        free(index_of_name);
        layout_free(L);
        return NULL;
    }
    /* a node's name is its lowest rank, so numbering names as they first appear in rank order
     * numbers nodes by their lowest rank */
    for (int r = 0; r < p; r++)
        index_of_name[r] = -1;
    for (int r = 0; r < p; r++) {
        int *k = &index_of_name[name[r]];
        if (*k < 0)
            *k = L->nodes++;
        L->node_of[r] = *k;
        L->start[*k + 1]++;
    }
    free(index_of_name);
    L->min_ranks = p;
    for (int k = 0; k < L->nodes; k++) {
        int n = L->start[k + 1];
        L->min_ranks = n < L->min_ranks ? n : L->min_ranks;
        L->max_ranks = n > L->max_ranks ? n : L->max_ranks;
        L->start[k + 1] += L->start[k];
    }
    /* members node by node, each node's in rank order (a counting sort) */
    int *fill = malloc(sizeof(int) * (size_t)L->nodes);
    if (!fill) {
        layout_free(L);
        return NULL;
    }
    for (int k = 0; k < L->nodes; k++)
        fill[k] = L->start[k];
    L->in_order = 1;
    for (int r = 0; r < p; r++) {
        int i = fill[L->node_of[r]]++;
        L->members[i] = r;
    }
    for (int i = 0; i < p; i++)
        L->in_order &= L->members[i] == i;
    free(fill);
    return L;
}

/* Each rank's node name under the knob: the lowest rank of c->user_comm in its block of k ranks of
 * MPI_COMM_WORLD. */
static int names_from_knob(const mpiopt_coll *c, int k, int *name)
{
    int p = c->size, rc;
    MPI_Group mine, world;
    int *ranks = malloc(sizeof(int) * 2 * (size_t)p);
    if (!ranks)
        return MPI_ERR_NO_MEM;
    int *world_rank = ranks + p;
    for (int r = 0; r < p; r++)
        ranks[r] = r;
    rc = PMPI_Comm_group(c->user_comm, &mine);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Comm_group(MPI_COMM_WORLD, &world);
        if (rc == MPI_SUCCESS) {
            rc = PMPI_Group_translate_ranks(mine, p, ranks, world, world_rank);
            PMPI_Group_free(&world);
        }
        PMPI_Group_free(&mine);
    }
    /* the first rank of each block seen in rank order names it (p^2 at worst, once a
     * communicator, in tests) */
    for (int r = 0; rc == MPI_SUCCESS && r < p; r++) {
        name[r] = r;
        for (int q = 0; q < r; q++)
            if (world_rank[q] / k == world_rank[r] / k) {
                name[r] = q;
                break;
            }
    }
    free(ranks);
    return rc;
}

int mpiopt_node_comm(const mpiopt_coll *c, MPI_Comm *node)
{
    /* the split takes a context id, and a program that holds nearly all of them (MPICH: 2048)
     * must not die of mpiopt's: the error comes back to mpiopt, not to the program's handler,
     * which is the communicator's for the moment of the call (a blocking collective on it: no
     * other call of the program's is on it then but point-to-point from other threads) */
    MPI_Errhandler programs;
    int rc = PMPI_Comm_get_errhandler(c->user_comm, &programs);
    if (rc != MPI_SUCCESS)
        return rc;
    PMPI_Comm_set_errhandler(c->user_comm, MPI_ERRORS_RETURN);
    rc = PMPI_Comm_split_type(c->user_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, node);
    PMPI_Comm_set_errhandler(c->user_comm, programs);
    PMPI_Errhandler_free(&programs);
    if (rc != MPI_SUCCESS) {
        *node = MPI_COMM_NULL;
        return rc;
    }
    if ((rc = PMPI_Comm_set_errhandler(*node, MPI_ERRORS_RETURN)) != MPI_SUCCESS)
        PMPI_Comm_free(node);   /* sets it to MPI_COMM_NULL */
    return rc;
}

/* Each rank's node name, found by MPI (collective on c->user_comm); where the MPI cannot split
 * (no context id left), every rank its own node, which the flat algorithms need not know. */
static int names_from_mpi(const mpiopt_coll *c, int *name)
{
    MPI_Comm node;
    if (mpiopt_node_comm(c, &node) != MPI_SUCCESS) {
        for (int r = 0; r < c->size; r++)
            name[r] = r;
        return MPI_SUCCESS;
    }
    int lowest = c->rank;
    int rc = PMPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, node);
    PMPI_Comm_free(&node);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allgather(&lowest, 1, MPI_INT, name, 1, MPI_INT, c->user_comm);
    return rc;
}

int mpiopt_node_layout_get(const mpiopt_coll *c, const mpiopt_node_layout **out)
{
    *out = NULL;
    if (!c->node_layout)
        return MPI_SUCCESS;             /* a communicator of one */
    if (*c->node_layout) {
        *out = *c->node_layout;
        return MPI_SUCCESS;
    }
    int k = ranks_per_node_knob(), p = c->size, rc = MPI_SUCCESS;
    if (!k && c->record)
        return MPI_SUCCESS;             /* no collective calls from here: not known yet */
    int *name = malloc(sizeof(int) * (size_t)p);
    if (!name)
        return MPI_ERR_NO_MEM;
    if (k) {
        rc = names_from_knob(c, k, name);
    } else {
        rc = names_from_mpi(c, name);
    }
    mpiopt_node_layout *L = rc == MPI_SUCCESS ? layout_from_names(name, p) : NULL;
    free(name);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!L)
        return MPI_ERR_NO_MEM;
    *out = *c->node_layout = L;
    return MPI_SUCCESS;
}
