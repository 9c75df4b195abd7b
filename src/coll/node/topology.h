/* The node's shape for the shared-memory tree (tree.c): how many of a communicator's ranks share
 * an L3 cache, a NUMA node, a package, read with hwloc where the build has it (topology.c).
 * Internal to src/coll. */
#ifndef MPIOPT_COLL_NODE_TOPOLOGY_H
#define MPIOPT_COLL_NODE_TOPOLOGY_H

#include "coll/engine/engine.h"

#define MPIOPT_TOPOLOGY_MAX_GROUPS 3     /* L3, NUMA node, package */

/* The sizes (in ranks, ascending, each > 1 and < c->size) of the nested groups of c's ranks that
 * share an L3, a NUMA node, a package, into groups[0..n); returns n (0: no levels known: no
 * hwloc, or every rank in one of each). The same on every rank: collective on c->user_comm (one
 * allgather of each rank's core) where the build has hwloc, no communication where not. */
int mpiopt_node_topology_groups(const mpiopt_coll *c, int *groups);

/* Whether every rank of c holds the same n ints (n <= MPIOPT_AGREE_MAX; collective on
 * c->user_comm: one allreduce of them and their negations, MPI_MIN of both); *least (n ints, or
 * NULL) gets the least of each. Each rank reads the node from its own view (HWLOC_SYNTHETIC,
 * HWLOC_XMLFILE or a cpuset can differ between ranks), and ranks that build different shapes
 * wait on lines nobody writes: a shape is taken only where this says all agree. 0 where the
 * allreduce failed. */
#define MPIOPT_AGREE_MAX 8
int mpiopt_node_all_agree(const mpiopt_coll *c, const int *mine, int n, int *least);

#endif
