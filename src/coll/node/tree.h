/* The shared-memory tree for small allreduces and reduces (tree.c), called from the
 * shared_memory algorithm's exchange (shared_memory.c) beside its flat path. Internal to
 * src/coll. */
#ifndef MPIOPT_COLL_NODE_TREE_H
#define MPIOPT_COLL_NODE_TREE_H

#include "coll/node/node_window.h"

/* Whether a call of `bytes` on c's p ranks (root -1: an allreduce) goes up the tree
 * (MPIOPT_SHM_TREE; the same answer on every rank): p > 2, bytes <= TREE_MAX_BYTES and p at or
 * above the threshold; by default also where the model prices it below the flat path (tree.c). */
int mpiopt_shm_tree_takes(const mpiopt_coll *c, size_t bytes, int root);
/* An allreduce (root -1) or reduce to root of `count` elements through the tree: `in` this
 * rank's input (the caller's, read only), `out` its result (allreduce: every rank; reduce: the
 * root). Recursive doubling's bits. The first call on a window builds the tree (collective). */
int mpiopt_shm_tree_reduce(const mpiopt_coll *c, node_window *w, const void *in, void *out,
                           size_t count, int root);

#endif
