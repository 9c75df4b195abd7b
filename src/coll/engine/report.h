/* MPIOPT_REPORT: which reduction calls reached mpiopt, which of them its algorithms ran, and why
 * the others went to the vendor (issue 27). A program whose calls enter by a door mpiopt does not
 * have, or that mpiopt hands on, must not look sped up.
 *
 * Counting costs nothing while the report is off (one predictable branch, on paths that are not
 * the hand-off). While it is on, the hand-off's one-slot shortcut is not filled
 * (plan_cache.c), so every call passes the planned path, where it is counted. */
#ifndef MPIOPT_REPORT_H
#define MPIOPT_REPORT_H

#include "mpiopt.h"

typedef enum {
    MPIOPT_CALL_ALLREDUCE,
    MPIOPT_CALL_REDUCE,
    MPIOPT_CALL_REDUCE_LOCAL,
    MPIOPT_CALL_IALLREDUCE,
    MPIOPT_CALL_IREDUCE,
    MPIOPT_CALL_ALLREDUCE_INIT,
    MPIOPT_CALL_REDUCE_INIT,
    MPIOPT_CALL_SCAN,
    MPIOPT_CALL_EXSCAN,
    MPIOPT_CALL_ISCAN,
    MPIOPT_CALL_IEXSCAN,
    MPIOPT_CALL_SCAN_INIT,
    MPIOPT_CALL_EXSCAN_INIT,
    MPIOPT_CALL_REDUCE_SCATTER_BLOCK,
    MPIOPT_CALL_REDUCE_SCATTER,
    MPIOPT_CALL_IREDUCE_SCATTER_BLOCK,
    MPIOPT_CALL_IREDUCE_SCATTER,
    MPIOPT_CALL_REDUCE_SCATTER_BLOCK_INIT,
    MPIOPT_CALL_REDUCE_SCATTER_INIT,
    MPIOPT_CALL_KINDS
} mpiopt_call_kind;

/* The binding a call came in by: told by the entry points that are not the C int-count ones. */
typedef enum {
    MPIOPT_DOOR_C,
    MPIOPT_DOOR_LARGE_COUNT,    /* MPI_*_c (MPI-4 MPI_Count) */
    MPIOPT_DOOR_FORTRAN,        /* mpif.h, `use mpi`, `use mpi_f08` */
    MPIOPT_DOORS
} mpiopt_door;

/* Why a call went to the vendor's PMPI_*; MPIOPT_TAKEN when mpiopt's code ran it. */
typedef enum {
    MPIOPT_TAKEN,
    MPIOPT_WHY_FASTER,          /* auto: the vendor wins at this size (tuning rows, cost model) */
    MPIOPT_WHY_MEASURED,        /* auto: the vendor won its trials of this size (measured.c) */
    MPIOPT_WHY_REQUESTED,       /* the caller asked for the vendor (C API argument) */
    MPIOPT_WHY_ENV,             /* MPIOPT_<COLLECTIVE>=vendor */
    MPIOPT_WHY_ARGUMENTS,       /* arguments the vendor judges (MPI_COMM_NULL, ...) */
    MPIOPT_WHY_INTERCOMM,
    MPIOPT_WHY_DATATYPE,        /* a derived datatype with holes, or none of mpiopt's kernels */
    MPIOPT_WHY_ALGORITHM,       /* the algorithm asked for cannot take this op or count */
    MPIOPT_WHY_NO_PRIVATE_COMM, /* nonblocking, on a comm without a record (coll/engine/context.c) */
    MPIOPT_WHY_NONBLOCKING_OFF, /* MPIOPT_NONBLOCKING=0 */
    MPIOPT_WHY_LARGE_COUNT,     /* count > INT_MAX (a reduce-scatter's: the sum of its counts) */
    MPIOPT_WHY_USER_OP,         /* MPI_Reduce_local of a user-defined op */
    MPIOPT_WHY_COUNT
} mpiopt_vendor_reason;

/* 1 while MPIOPT_REPORT asks for the report (read once, when the library is loaded). */
extern __attribute__((visibility("hidden"))) int mpiopt_report_on;

/* The door of the call this thread is in; reset to C by each count. */
extern __attribute__((visibility("hidden"))) _Thread_local unsigned char mpiopt_report_door_now;

/* Why the shared_memory algorithm could not take a call whole (node_window.c): the same on every
 * rank of the communicator (they agree on the least). */
typedef enum {
    MPIOPT_NODE_NO_CONTEXT_ID,  /* MPIOPT_SHM_COMMS communicators have windows, or no split */
    MPIOPT_NODE_BUDGET,         /* the node's shared-memory budget is spent */
    MPIOPT_NODE_NO_ROOM,        /* /dev/shm has no room for it */
    MPIOPT_NODE_ALLOC_FAILED,   /* the MPI could not allocate the window */
    MPIOPT_NODE_SPANS_NODES,    /* the communicator's ranks are on more than one node */
    MPIOPT_NODE_SCHEDULE,       /* a nonblocking or persistent call: a schedule of messages */
    MPIOPT_NODE_REASONS
} mpiopt_node_reason;

void mpiopt_report_count_node(int pieces, mpiopt_node_reason why);

/* One call shared_memory ran by message passing (no window: pieces = 0), or a large one it took
 * in pieces through the small buffers (no stages: pieces = 1). */
static inline void mpiopt_report_node(int pieces, mpiopt_node_reason why)
{
    if (__builtin_expect(mpiopt_report_on, 0))
        mpiopt_report_count_node(pieces, why);
}

static inline void mpiopt_report_door(mpiopt_door door)
{
    if (__builtin_expect(mpiopt_report_on, 0))
        mpiopt_report_door_now = (unsigned char)door;
}

/* What hierarchical ran at each level of a blocking call (one count a rank a call), so that the
 * report says what ran within the nodes and between them: an algorithm of the registry, or one
 * of hierarchical's own ways of a level. */
typedef enum { MPIOPT_LEVEL_NODE, MPIOPT_LEVEL_NETWORK, MPIOPT_LEVELS } mpiopt_level;
typedef enum {
    MPIOPT_WAY_HALVING = MPIOPT_ALG_COUNT, /* node: reduce-scatter by halving, allgather/gather back */
    MPIOPT_WAY_DIRECT,          /* node: each share reduced at its owner, then copied back */
    MPIOPT_WAY_RADIX,           /* network: the whole vector in rounds of several nodes */
    MPIOPT_WAY_SHARE_ROUNDS,    /* network: each share in rounds of several nodes */
    MPIOPT_WAYS
} mpiopt_level_way;

void mpiopt_report_count_level(mpiopt_level level, int way);

/* way: an mpiopt_algorithm or an mpiopt_level_way */
static inline void mpiopt_report_level(mpiopt_level level, int way)
{
    if (__builtin_expect(mpiopt_report_on, 0))
        mpiopt_report_count_level(level, way);
}

void mpiopt_report_count_call(mpiopt_call_kind kind, mpiopt_algorithm algorithm,
                              mpiopt_vendor_reason why);

/* One call of this kind: run by algorithm (why = MPIOPT_TAKEN) or handed to the vendor. */
static inline void mpiopt_report_call(mpiopt_call_kind kind, mpiopt_algorithm algorithm,
                                      mpiopt_vendor_reason why)
{
    if (__builtin_expect(mpiopt_report_on, 0))
        mpiopt_report_count_call(kind, algorithm, why);
}

/* At MPI_Init (src/interpose/init.c), on every rank: arranges the report at MPI_Finalize, summed
 * over MPI_COMM_WORLD and printed by its rank 0. Without it (an init mpiopt did not see), each
 * rank's counts are printed at exit by the rank the launcher calls 0. */
void mpiopt_report_start(void);

/* 1 if MPIOPT_VERBOSE asks for a line on stderr about the choices made. */
int mpiopt_verbose(void);

#endif
