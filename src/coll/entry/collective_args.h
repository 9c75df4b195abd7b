/* Argument checks shared by allreduce.c and reduce.c: what mpiopt runs itself and what it leaves
 * to the vendor. */
#ifndef MPIOPT_COLLECTIVE_ARGS_H
#define MPIOPT_COLLECTIVE_ARGS_H

#include <mpi.h>
#include "mpiopt.h"
#include "coll/select/select.h"
#include "coll/engine/report.h"

/* What mpiopt_allreduce / mpiopt_reduce decided for a call. */
typedef struct {
    mpiopt_algorithm algorithm;     /* never AUTO; VENDOR: hand the call to PMPI_* unchanged */
    int p, rank;
    mpiopt_vendor_reason why;       /* for VENDOR: why (MPIOPT_REPORT); else MPIOPT_TAKEN */
    int measuring;                  /* 1: a trial of measured.c's (time it; never remembered) */
    int vendor_ok;                  /* auto may give this call to the vendor (plan_uncached) */
    /* For mpiopt's algorithms, the call's context (engine.h) without its buffers: the private
     * communicator, rank, size, extent, commutativity and kernel, found once when the call was
     * planned and kept with the plan, so a repeated call asks MPI for none of them (issue 15:
     * they cost ~40 ns a call, a tenth of a small shared-memory reduce). */
    mpiopt_coll coll;
} mpiopt_call_plan;

/* The error class the MPI standard names for a bad argument of MPI_Allreduce (is_reduce = 0) or
 * MPI_Reduce and their nonblocking and persistent forms, or MPI_SUCCESS: MPI_ERR_COUNT,
 * MPI_ERR_TYPE (a null datatype), MPI_ERR_OP (a null op), MPI_ERR_ROOT (outside an
 * intracommunicator). Checked before any algorithm runs, so a bad call is answered the same
 * whatever would have taken it (MPICH 4.0.2 itself crashes on a negative count under
 * MPI_ERRORS_RETURN). MPI_COMM_NULL is left to the vendor, which raises it where its version
 * of the standard says (there is no communicator to raise it on). */
int mpiopt_check_arguments(int is_reduce, MPI_Comm comm, int count, MPI_Datatype datatype,
                           MPI_Op op, int root);

/* The checks and the selection both operations share (for a call the plan cache does not know).
 * is_reduce: root is checked too. Returns MPI_ERR_ARG for an algorithm argument out of range,
 * the class of a bad argument (mpiopt_check_arguments), an MPI error if the context of mpiopt's
 * algorithm cannot be made (the communicator's record), else MPI_SUCCESS with *plan set, and
 * remembers the plan where it can. The caller raises an error (mpiopt_raise). nonblocking = 1
 * for the nonblocking and persistent calls, which must not block (mpiopt_coll_init). */
int mpiopt_plan_call(int is_reduce, mpiopt_algorithm requested, MPI_Comm comm, int count,
                     MPI_Datatype datatype, MPI_Op op, int root, int nonblocking,
                     mpiopt_call_plan *plan);

/* The algorithm (or vendor) that environment variable MPIOPT_<COLLECTIVE> names; auto where it
 * is unset or names none. Read once into *cache (-1 before). */
mpiopt_algorithm mpiopt_env_algorithm(const char *variable, int *cache);

/* The plan of a collective that chooses among its own algorithms by a rule of its own (scan.c,
 * reduce_scatter.c; no tuning rows or cost model): the argument checks, reasons and context of
 * mpiopt_plan_call. choose(requested, p, commutative, ctx) names the algorithm that runs the call,
 * or MPIOPT_ALG_VENDOR where none of the collective's fits it (the report: MPIOPT_WHY_ALGORITHM).
 * count: the elements this rank reduces; env: what MPIOPT_<COLLECTIVE> names
 * (mpiopt_env_algorithm), for a call that asks for auto. */
typedef mpiopt_algorithm (*mpiopt_choose_fn)(mpiopt_algorithm requested, int p, int commutative,
                                             const void *ctx);
int mpiopt_plan_collective(mpiopt_algorithm requested, mpiopt_algorithm env, MPI_Comm comm,
                           int count, MPI_Datatype datatype, MPI_Op op, int nonblocking,
                           mpiopt_choose_fn choose, const void *ctx, mpiopt_call_plan *plan);

/* The algorithm's part of a planned call (allreduce.c, reduce.c), out of line so that the
 * hand-off to the vendor stays a few instructions. record = NULL runs it; a schedule records it
 * there instead (nonblocking.c). */
typedef struct mpiopt_schedule mpiopt_schedule;
int mpiopt_allreduce_run(const mpiopt_call_plan *plan, const void *sendbuf, void *recvbuf,
                         int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                         mpiopt_schedule *record) __attribute__((noinline));
int mpiopt_reduce_run(const mpiopt_call_plan *plan, const void *sendbuf, void *recvbuf,
                      int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                      mpiopt_schedule *record) __attribute__((noinline));

/* The context a planned call runs its algorithm in (scan.c, reduce_scatter.c): the plan's, with
 * this call's input (sendbuf; MPI_IN_PLACE: none), attached to `record` where the call is
 * recorded as a schedule. An MPI error code. */
int mpiopt_planned_context(const mpiopt_call_plan *plan, MPI_Comm comm, const void *sendbuf,
                           mpiopt_schedule *record, mpiopt_coll *c);

/* plan_cache.c: remember a plan made for a call (the lookup is in plan_cache.h). */
void mpiopt_plan_remember(int kind, mpiopt_algorithm requested, MPI_Comm comm, int count,
                          MPI_Datatype datatype, MPI_Op op, int root, const mpiopt_call_plan *plan);

/* The cheap part, enough to select an algorithm: 0 for arguments the vendor should judge (null
 * handles, negative count); else sets *p (the communicator's size) and *bytes (count * size). */
int mpiopt_coll_shape(MPI_Comm comm, int count, MPI_Datatype datatype, int *p, size_t *bytes);

/* 1 if mpiopt's algorithms can take this call: an intracommunicator, count >= 0, and a datatype
 * whose count elements are one dense block of count*extent bytes from the buffer address
 * (predefined types, contiguous derived types). Sets *p and *bytes (count * size). */
int mpiopt_coll_supported(MPI_Comm comm, int count, MPI_Datatype datatype, int *p, size_t *bytes);

/* 1 where the vendor's own reduction is known to give wrong results (design.md: Open MPI 4.1.4's
 * avx component saturates 8- and 16-bit integer sums (MPI_CHAR and MPI_INTEGER1/2 included), and
 * it compares MPI_UNSIGNED_LONG as signed and MPI_OFFSET as unsigned (tests/c/type_check.c);
 * MPICH 4.0.2 compares unsigned integers as signed in MAX / MIN): `auto` then avoids the vendor. */
int mpiopt_vendor_result_wrong(MPI_Datatype datatype, MPI_Op op);
/* 1 where the vendor's MPI_Allreduce may give different ranks different bits: MPICH 4.0.2's
 * recursive doubling lets the two partners of a step apply a commutative op in opposite orders,
 * and floating-point MAX / MIN of +0.0 and -0.0 then depends on the order (tests/c/coll_check.c,
 * "double MAX signed zeros"). */
int mpiopt_vendor_allreduce_ranks_differ(MPI_Datatype datatype, MPI_Op op);

/* 1 where every nonblocking call goes to the vendor: when MPIOPT_NONBLOCKING=0 asks for it
 * (nonblocking.c says why one would). */
int mpiopt_nonblocking_off(void);

/* Starts a nonblocking or persistent call of mpiopt's (nonblocking.c): `record` runs the blocking
 * algorithm with its messages, reductions and copies appended to schedule s instead of made
 * (schedule.h), and a new request (persistent: restartable) runs s as the program tests and
 * waits. On failure nothing is left behind; an MPI error code. */
int mpiopt_start_recorded(int (*record)(const void *args, mpiopt_schedule *s), const void *args,
                          int persistent, MPI_Request *request);

/* The vendor's persistent collective `name` (MPIOPT_VENDOR_INIT(Scan): PMPI_Scan_init): MPI-4's,
 * Open MPI 4.1's PMPIX_ (its pcollreq extension), or undefined where there is none (SimGrid). */
#include "persistent_name.h"
#ifdef VENDOR_PERSISTENT_NAME
#define MPIOPT_VENDOR_INIT(name) VENDOR_PERSISTENT_NAME(name##_init)
#endif

#endif
