/* How the node groups a communicator's ranks, for the shared-memory tree (tree.c): which ranks
 * share an L3 cache, a NUMA node, a package. A tree whose lower levels stay inside those groups
 * moves the lines that cross them (a NUMA node's, a socket's: a directory write besides the
 * line) only at its upper levels, once per group and call.
 *
 * With hwloc (the build finds it with pkg-config: MPIOPT_HAVE_HWLOC), the topology is loaded
 * once a process. hwloc itself honours HWLOC_SYNTHETIC and HWLOC_XMLFILE, so a test can describe
 * a node this machine is not (a 2-socket, 4-NUMA, 64-core one on 2 cores). Each rank's core is
 * the core of the first PU it is bound to; where that is not known (a topology that is not this
 * system's, as a synthetic or XML one is; a rank not bound, as under oversubscription; or any
 * rank of the communicator in either case) every rank takes rank r -> core r (mod the cores):
 * the order launchers fill a node in by default, and for tests the mapping onto the described
 * node. Without hwloc no groups are known: the tree takes its default radix at every level.
 * The groups depend only on what every rank gathered, so every rank computes the same tree. */
#include <pthread.h>
#include <stdlib.h>
#include "coll/node/topology.h"

int mpiopt_node_all_agree(const mpiopt_coll *c, const int *mine, int n, int *least)
{
    int both[2 * MPIOPT_AGREE_MAX], all[2 * MPIOPT_AGREE_MAX], same = 1;
    if (n > MPIOPT_AGREE_MAX)
        return 0;
    for (int i = 0; i < n; i++)
        both[i] = mine[i], both[n + i] = -mine[i];
    if (PMPI_Allreduce(both, all, 2 * n, MPI_INT, MPI_MIN, c->user_comm) != MPI_SUCCESS)
        return 0;
    for (int i = 0; i < n; i++) {
        same &= all[i] == -all[n + i];
        if (least)
            least[i] = all[i];
    }
    return same;
}
#ifdef MPIOPT_HAVE_HWLOC
#include <hwloc.h>

static hwloc_topology_t topology;
static int topology_loaded;
static pthread_once_t topology_once = PTHREAD_ONCE_INIT;

static void load_topology(void)
{
    if (hwloc_topology_init(&topology) != 0)
        return;
    if (hwloc_topology_load(topology) != 0) {
        hwloc_topology_destroy(topology);
        return;
    }
    topology_loaded = 1;
}

/* The logical index of the core this rank is bound to, or -1 where that is not known. */
static int bound_core(void)
{
    if (!hwloc_topology_is_thissystem(topology))
        return -1;      /* a described node: its cores are not this machine's */
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int core = -1;
    if (set && hwloc_get_cpubind(topology, set, HWLOC_CPUBIND_PROCESS) == 0 &&
        !hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(topology), set)) {
        int first = hwloc_bitmap_first(set);
        hwloc_obj_t pu = first >= 0 ? hwloc_get_pu_obj_by_os_index(topology, (unsigned)first)
                                    : NULL;
        hwloc_obj_t c = pu ? hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_CORE, pu) : NULL;
        core = c ? (int)c->logical_index : pu ? (int)pu->logical_index : -1;
    }
    hwloc_bitmap_free(set);
    return core;
}

/* The index of the object of `type` that holds core `core`, or -1. */
static int holder(hwloc_obj_type_t type, int core)
{
    hwloc_obj_t c = hwloc_get_obj_by_type(topology, HWLOC_OBJ_CORE, (unsigned)core);
    if (!c)
        c = hwloc_get_obj_by_type(topology, HWLOC_OBJ_PU, (unsigned)core);
    int n = hwloc_get_nbobjs_by_type(topology, type);
    for (int i = 0; c && i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topology, type, (unsigned)i);
        if (o && o->cpuset && hwloc_bitmap_isincluded(c->cpuset, o->cpuset))
            return i;
    }
    return -1;
}

int mpiopt_node_topology_groups(const mpiopt_coll *c, int *groups)
{
    pthread_once(&topology_once, load_topology);
    int p = c->size, mine = topology_loaded ? bound_core() : -1, n = 0;
    int *core = malloc(sizeof(int) * (size_t)p);
    if (!core || PMPI_Allgather(&mine, 1, MPI_INT, core, 1, MPI_INT, c->user_comm) !=
                     MPI_SUCCESS || !topology_loaded) {
        free(core);
        return 0;
    }
    int cores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE), unknown = 0;
    if (cores <= 0)
        cores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PU);
    for (int r = 0; r < p; r++)
        unknown |= core[r] < 0;
    for (int r = 0; unknown && r < p; r++)
        core[r] = r % (cores > 0 ? cores : 1);     /* rank r -> core r: see the top */
    static const hwloc_obj_type_t types[MPIOPT_TOPOLOGY_MAX_GROUPS] = {
        HWLOC_OBJ_L3CACHE, HWLOC_OBJ_NUMANODE, HWLOC_OBJ_PACKAGE};
    for (int t = 0; t < MPIOPT_TOPOLOGY_MAX_GROUPS; t++) {
        int objects = hwloc_get_nbobjs_by_type(topology, types[t]);
        if (objects <= 0)
            continue;
        int *ranks = calloc((size_t)objects, sizeof(int)), smallest = p, ok = ranks != NULL;
        for (int r = 0; ok && r < p; r++) {
            int h = holder(types[t], core[r]);
            if (h < 0)
                ok = 0;
            else
                ranks[h]++;
        }
        /* the level's size: its smallest group of the ranks (a tree's blocks are equal) */
        for (int i = 0; ok && i < objects; i++)
            if (ranks[i] > 0 && ranks[i] < smallest)
                smallest = ranks[i];
        free(ranks);
        if (ok && smallest > 1 && smallest < p && (n == 0 || smallest > groups[n - 1]))
            groups[n++] = smallest;
    }
    free(core);
    return n;
}
#else
int mpiopt_node_topology_groups(const mpiopt_coll *c, int *groups)
{
    (void)c, (void)groups;
    return 0;       /* no hwloc in this build: the tree's default radix at every level */
}
#endif
