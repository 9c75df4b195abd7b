/* The hand-off path of MPI_Allreduce / MPI_Reduce: a test that the call repeats the last one
 * handed to the vendor, one branch and a tail call to PMPI_*, with the arguments left in the
 * registers they came in. Inline, so that the drop-in's MPI_* symbols (src/interpose/) and the C
 * API (allreduce.c, reduce.c) each carry it themselves: every jump between the program's call and
 * the vendor's code counts here (issue 15 asks for <= 5 ns a call), and a separate entry function
 * was one more. */
#ifndef MPIOPT_HANDOFF_H
#define MPIOPT_HANDOFF_H

#include "coll/entry/plan_cache.h"

/* The drop-in's MPI_Allreduce and MPI_Reduce go first in .text (GNU ld places .text.hot there),
 * at the same address whatever else the library holds. Where they fell by chance cost up to 8 ns
 * a call: adding unrelated code moved MPI_Allreduce from page offset 0x700 to 0x940 and the
 * hand-off on MPICH from +1.8 to +9.9 ns (AMD EPYC; no hot-path instruction changed, the
 * function's own 64-byte alignment was the same), i.e. branch-predictor aliasing with the
 * vendor's code. */
#define MPIOPT_HANDOFF_PLACEMENT __attribute__((section(".text.hot.mpiopt_handoff"), aligned(64)))

/* Everything but the hand-off of a call planned before (allreduce.c, reduce.c). */
__attribute__((visibility("hidden"), noinline)) int
mpiopt_allreduce_planned(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm);
__attribute__((visibility("hidden"), noinline)) int
mpiopt_reduce_planned(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, int root, MPI_Comm comm, mpiopt_algorithm algorithm);

static inline __attribute__((always_inline)) int
mpiopt_allreduce_entry(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm)
{
    if (mpiopt_plan_repeats_vendor(0, algorithm, comm, count, datatype, op, 0))
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    return mpiopt_allreduce_planned(sendbuf, recvbuf, count, datatype, op, comm, algorithm);
}

/* MPI_IN_PLACE at a non-zero root never takes the hand-off: MPICH 4.0.2 crashes there, and
 * reduce.c works around it. */
static inline __attribute__((always_inline)) int
mpiopt_reduce_entry(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                    MPI_Op op, int root, MPI_Comm comm, mpiopt_algorithm algorithm)
{
    if ((sendbuf != MPI_IN_PLACE || root == 0) &&
        mpiopt_plan_repeats_vendor(1, algorithm, comm, count, datatype, op, root))
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    return mpiopt_reduce_planned(sendbuf, recvbuf, count, datatype, op, root, comm, algorithm);
}

#endif
