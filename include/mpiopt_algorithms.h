/* The one list of mpiopt's allreduce/reduce algorithms (docs/collectives.md, "Adding an
 * algorithm"). The public enum (MPIOPT_ALG_AUTO, MPIOPT_ALG_VENDOR, then MPIOPT_ALG_<ID> for
 * each row below, in order), the internal registry (src/coll/algorithms/registry.c: functions, names,
 * restrictions), selection, the cost model, the tuning file, the benchmarks' --algorithms and
 * the Python layer (`mpiopt-allreduce --list-algorithms --json`) are all made from it.
 *
 * MPIOPT_SELECTOR_LIST: the two choices that are not algorithms of mpiopt's own.
 *   X(ID, name, short_label)
 * MPIOPT_ALGORITHM_LIST: one row per algorithm; its file defines mpiopt_allreduce_<name>,
 * mpiopt_reduce_<name> and mpiopt_cost_<name> (src/coll/algorithms/algorithms.h declares them from this list).
 *   X(ID, name, short_label, flags, min_count)
 * flags: MPIOPT_KEEPS_ORDER   reduces in rank order, so it also serves non-commutative ops
 *        MPIOPT_READS_SRC     its allreduce reads this rank's input where the caller left it
 *                             (no first copy)
 *        MPIOPT_REDUCE_READS_SRC  its reduce does too
 *        MPIOPT_NEEDS_POW2    only for a power-of-two number of processes
 *        MPIOPT_PREDEFINED_OP only for predefined ops (MPI_SUM, …)
 * min_count: the smallest element count it can take (smaller calls go to another algorithm). */
#ifndef MPIOPT_ALGORITHMS_H
#define MPIOPT_ALGORITHMS_H

#define MPIOPT_KEEPS_ORDER 1u
#define MPIOPT_READS_SRC 2u
#define MPIOPT_NEEDS_POW2 4u
#define MPIOPT_PREDEFINED_OP 8u
#define MPIOPT_REDUCE_READS_SRC 16u

#define MPIOPT_SELECTOR_LIST(X) \
    X(AUTO, auto, auto)         \
    X(VENDOR, vendor, vendor)

#define MPIOPT_ALGORITHM_LIST(X)                                                              \
    X(BINOMIAL, binomial, binomial,                                                           \
      MPIOPT_KEEPS_ORDER | MPIOPT_READS_SRC | MPIOPT_REDUCE_READS_SRC, 0)                       \
    X(RECURSIVE_DOUBLING, recursive_doubling, rec_dbl, MPIOPT_KEEPS_ORDER | MPIOPT_READS_SRC, 0) \
    X(RING, ring, ring, MPIOPT_READS_SRC, 0)                                                  \
    X(RABENSEIFNER, rabenseifner, rabenseif, MPIOPT_KEEPS_ORDER | MPIOPT_READS_SRC, 0)        \
    X(BINARY_BLOCKS, binary_blocks, bin_blocks, 0, 0)                                         \
    X(SHARED_MEMORY, shared_memory, shm,                                                      \
      MPIOPT_KEEPS_ORDER | MPIOPT_READS_SRC | MPIOPT_REDUCE_READS_SRC, 0)                       \
    X(HIERARCHICAL, hierarchical, hier,                                                       \
      MPIOPT_KEEPS_ORDER | MPIOPT_READS_SRC | MPIOPT_REDUCE_READS_SRC, 0)

/* MPIOPT_FAMILY_LIST: the rest of the reduction family, one row per collective and algorithm
 * that runs it (names and ids from the lists above; src/coll/algorithms/registry.c makes the
 * table, src/coll/entry/{reduce_scatter,scan}.c choose by it, and `mpiopt-allreduce
 * --list-algorithms --json` lists it for the benchmarks):
 *   X(COLLECTIVE, collective, ID, name, flags)
 * COLLECTIVE: REDUCE_SCATTER (MPI_Reduce_scatter and _block) or SCAN (MPI_Scan and MPI_Exscan);
 * the algorithm's file (reduce_scatter.c, scan.c, shared_memory.c) defines
 * mpiopt_cost_<collective>_<name>, its cost formula (negative: not modelled);
 * flags: MPIOPT_KEEPS_ORDER as above (every row takes any p and any blocks). */
#define MPIOPT_FAMILY_LIST(X)                                                             \
    X(REDUCE_SCATTER, reduce_scatter, RABENSEIFNER, rabenseifner, MPIOPT_KEEPS_ORDER)     \
    X(REDUCE_SCATTER, reduce_scatter, RING, ring, 0)                                      \
    X(REDUCE_SCATTER, reduce_scatter, BINOMIAL, binomial, MPIOPT_KEEPS_ORDER)             \
    X(REDUCE_SCATTER, reduce_scatter, SHARED_MEMORY, shared_memory, MPIOPT_KEEPS_ORDER)   \
    X(SCAN, scan, RECURSIVE_DOUBLING, recursive_doubling, MPIOPT_KEEPS_ORDER)             \
    X(SCAN, scan, SHARED_MEMORY, shared_memory, MPIOPT_KEEPS_ORDER)

#endif
