/* The node (src/coll/node/): which ranks of a communicator share a node (node_layout.c), the
 * shared-memory window of a communicator (node_window.h, node_window.c) and the two ways large
 * calls move through it, in stages (staged.c) or by single copy (single_copy.c). Below the
 * algorithms, above the engine. */
#ifndef MPIOPT_COLL_NODE_LAYOUT_H
#define MPIOPT_COLL_NODE_LAYOUT_H

#include "coll/engine/engine.h"

/* Which ranks of a communicator share a node (node_layout.c). Nodes are numbered in the order of
 * their lowest rank; a node's ranks are listed in rank order. */
typedef struct mpiopt_node_layout {
    int nodes;
    int *node_of;           /* [p] the node of each rank */
    int *start;             /* [nodes + 1] node k's ranks are members[start[k] .. start[k+1]) */
    int *members;           /* [p] the ranks, node by node */
    int min_ranks, max_ranks;   /* the fewest and most ranks a node has */
    int in_order;           /* 1 if members[i] = i: each node's ranks are consecutive */
} mpiopt_node_layout;

/* The node layout of c's communicator in *out: MPIOPT_RANKS_PER_NODE=k (a testing knob: each run
 * of k consecutive ranks is a node), else MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) on the
 * program's communicator at the first call (collective: every rank makes it), kept with it. *out =
 * NULL when it cannot be known yet: a schedule being recorded may not make the collective calls. */
int mpiopt_node_layout_get(const mpiopt_coll *c, const mpiopt_node_layout **out);
/* The ranks of c's communicator on this node (MPI_Comm_split_type, collective), as a communicator
 * whose errors come back as codes, also those of the split itself (then *node = MPI_COMM_NULL). */
int mpiopt_node_comm(const mpiopt_coll *c, MPI_Comm *node);
/* 1 if c's ranks are on more than one node as MPI finds them (MPI_Comm_split_type, not the
 * MPIOPT_RANKS_PER_NODE knob): shared_memory would fall back to message passing. Collective on a
 * communicator's first blocking call, where the window's record is made (node_window.c). */
int mpiopt_node_spans_nodes(const mpiopt_coll *c);

#endif
