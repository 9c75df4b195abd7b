/* Facts about this node that the launcher states in the environment: one place for the kernels'
 * threads (src/kernels/threads.c) and the collectives' waits (src/coll/engine/p2p.c). No MPI calls. */
#ifndef MPIOPT_NODE_H
#define MPIOPT_NODE_H

/* Ranks the launcher started on this node: Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE or MPICH
 * Hydra's MPI_LOCALNRANKS; 0 when unknown (other launchers, SimGrid, a singleton). */
long mpiopt_node_ranks(void);

#endif
