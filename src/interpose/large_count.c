/* MPI-4's large-count entry points (MPI_Count counts) for LD_PRELOAD, defined where the MPI's
 * mpi.h declares them (MPIOPT_HAVE_LARGE_COUNT, found at configure time): an MPI-4 library gives
 * mpi4py 4 and any C program written with MPI_Count only these names, and a drop-in without them
 * takes nothing (issue 27).
 *
 * A count that fits an int takes exactly the path of the int-count call (the same function,
 * hand-off and plan cache included); a negative one is answered by that path's argument check
 * (MPI_ERR_COUNT). A count above INT_MAX goes to the vendor's PMPI_*_c: mpiopt's algorithms and
 * kernels take size_t element counts, but its plans and C API take int, and a reduction of more
 * than 2^31 elements is bandwidth-bound, where the vendor's pipelined algorithms lose little. */
#include <limits.h>
#include "mpiopt.h"
#include "coll/coll.h"
#include "coll/handoff.h"
#include "coll/report.h"

#ifdef MPIOPT_HAVE_LARGE_COUNT

/* The int to pass on for count, or 0 if it needs the vendor's large-count call; either way the
 * call is the report's (MPIOPT_REPORT) as a call of this door. */
static int small(MPI_Count count, int *n, mpiopt_call_kind kind)
{
    mpiopt_report_door(MPIOPT_DOOR_LARGE_COUNT);
    if (count > INT_MAX) {
        mpiopt_report_call(kind, MPIOPT_ALG_VENDOR, MPIOPT_WHY_LARGE_COUNT);
        return 0;
    }
    *n = count < 0 ? -1 : (int)count;
    return 1;
}

int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm)
{
    int n;
    if (!small(count, &n, MPIOPT_CALL_ALLREDUCE))
        return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm);
    return mpiopt_allreduce_entry(sendbuf, recvbuf, n, datatype, op, comm, MPIOPT_ALG_AUTO);
}

int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, int root, MPI_Comm comm)
{
    int n;
    if (!small(count, &n, MPIOPT_CALL_REDUCE))
        return PMPI_Reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm);
    return mpiopt_reduce_entry(sendbuf, recvbuf, n, datatype, op, root, comm, MPIOPT_ALG_AUTO);
}

int MPI_Reduce_local_c(const void *inbuf, void *inoutbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op)
{
    int n;
    if (!small(count, &n, MPIOPT_CALL_REDUCE_LOCAL))
        return PMPI_Reduce_local_c(inbuf, inoutbuf, count, datatype, op);
    return mpiopt_reduce_local(inbuf, inoutbuf, n, datatype, op);
}

int MPI_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    int n;
    if (!small(count, &n, MPIOPT_CALL_IALLREDUCE))
        return PMPI_Iallreduce_c(sendbuf, recvbuf, count, datatype, op, comm, request);
    return mpiopt_iallreduce(sendbuf, recvbuf, n, datatype, op, comm, MPIOPT_ALG_AUTO, request);
}

int MPI_Ireduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
    int n;
    if (!small(count, &n, MPIOPT_CALL_IREDUCE))
        return PMPI_Ireduce_c(sendbuf, recvbuf, count, datatype, op, root, comm, request);
    return mpiopt_ireduce(sendbuf, recvbuf, n, datatype, op, root, comm, MPIOPT_ALG_AUTO,
                          request);
}

int MPI_Allreduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                         MPI_Request *request)
{
    int n;
    if (!small(count, &n, MPIOPT_CALL_ALLREDUCE_INIT))
        return PMPI_Allreduce_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return mpiopt_allreduce_init(sendbuf, recvbuf, n, datatype, op, comm, info, MPIOPT_ALG_AUTO,
                                 request);
}

int MPI_Reduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    int n;
    if (!small(count, &n, MPIOPT_CALL_REDUCE_INIT))
        return PMPI_Reduce_init_c(sendbuf, recvbuf, count, datatype, op, root, comm, info,
                                  request);
    return mpiopt_reduce_init(sendbuf, recvbuf, n, datatype, op, root, comm, info,
                              MPIOPT_ALG_AUTO, request);
}

#endif
