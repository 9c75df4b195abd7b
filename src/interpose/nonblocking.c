/* The nonblocking and persistent allreduce / reduce for LD_PRELOAD, and the calls that complete,
 * start and free requests (any request: those that are not mpiopt's go to the vendor's PMPI_*
 * unchanged, at the cost of one test while mpiopt has none live). MPI_Allreduce_init and
 * MPI_Reduce_init are MPI-4 (MPICH 4); Open MPI 4.1 names them MPIX_ (its pcollreq extension). */
#include "mpiopt.h"

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return mpiopt_iallreduce(sendbuf, recvbuf, count, datatype, op, comm, MPIOPT_ALG_AUTO,
                             request);
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request *request)
{
    return mpiopt_ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, MPIOPT_ALG_AUTO,
                          request);
}

#if MPI_VERSION >= 4 || defined(MPIOPT_HAVE_PERSISTENT_COLL)
#define PERSISTENT_NAME(name) MPI_##name
#elif defined(OMPI_MAJOR_VERSION)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PERSISTENT_NAME(name) MPIX_##name
#endif
#endif

#ifdef PERSISTENT_NAME
int PERSISTENT_NAME(Allreduce_init)(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    MPI_Info info, MPI_Request *request)
{
    return mpiopt_allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info,
                                 MPIOPT_ALG_AUTO, request);
}

int PERSISTENT_NAME(Reduce_init)(const void *sendbuf, void *recvbuf, int count,
                                 MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                                 MPI_Info info, MPI_Request *request)
{
    return mpiopt_reduce_init(sendbuf, recvbuf, count, datatype, op, root, comm, info,
                              MPIOPT_ALG_AUTO, request);
}
#endif

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    return mpiopt_request_wait(request, status);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    return mpiopt_request_test(request, flag, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    return mpiopt_request_waitall(count, requests, statuses);
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    return mpiopt_request_testall(count, requests, flag, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    return mpiopt_request_waitany(count, requests, index, status);
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    return mpiopt_request_testany(count, requests, index, flag, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    return mpiopt_request_waitsome(incount, requests, outcount, indices, statuses);
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    return mpiopt_request_testsome(incount, requests, outcount, indices, statuses);
}

int MPI_Start(MPI_Request *request)
{
    return mpiopt_request_start(request);
}

int MPI_Startall(int count, MPI_Request requests[])
{
    return mpiopt_request_startall(count, requests);
}

int MPI_Request_free(MPI_Request *request)
{
    return mpiopt_request_free(request);
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    return mpiopt_request_get_status(request, flag, status);
}
