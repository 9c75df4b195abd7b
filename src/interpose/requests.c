/* The calls that complete, start and free requests, for LD_PRELOAD: any request (those that are
 * not mpiopt's go to the vendor's PMPI_* unchanged, at the cost of one test while mpiopt has none
 * live). The calls that make mpiopt's requests are generated (collectives.list). */
#include "mpiopt.h"
#include "chain.h"

MPIOPT_C_ENTRY(Wait, (MPI_Request *request, MPI_Status *status), (request, status))
{
    return mpiopt_request_wait(request, status);
}

MPIOPT_C_ENTRY(Test, (MPI_Request *request, int *flag, MPI_Status *status), (request, flag, status))
{
    return mpiopt_request_test(request, flag, status);
}

MPIOPT_C_ENTRY(Waitall, (int count, MPI_Request requests[], MPI_Status statuses[]), (count, requests, statuses))
{
    return mpiopt_request_waitall(count, requests, statuses);
}

MPIOPT_C_ENTRY(Testall, (int count, MPI_Request requests[], int *flag, MPI_Status statuses[]), (count, requests, flag, statuses))
{
    return mpiopt_request_testall(count, requests, flag, statuses);
}

MPIOPT_C_ENTRY(Waitany, (int count, MPI_Request requests[], int *index, MPI_Status *status), (count, requests, index, status))
{
    return mpiopt_request_waitany(count, requests, index, status);
}

MPIOPT_C_ENTRY(Testany, (int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status), (count, requests, index, flag, status))
{
    return mpiopt_request_testany(count, requests, index, flag, status);
}

MPIOPT_C_ENTRY(Waitsome, (int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]), (incount, requests, outcount, indices, statuses))
{
    return mpiopt_request_waitsome(incount, requests, outcount, indices, statuses);
}

MPIOPT_C_ENTRY(Testsome, (int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]), (incount, requests, outcount, indices, statuses))
{
    return mpiopt_request_testsome(incount, requests, outcount, indices, statuses);
}

MPIOPT_C_ENTRY(Start, (MPI_Request *request), (request))
{
    return mpiopt_request_start(request);
}

MPIOPT_C_ENTRY(Startall, (int count, MPI_Request requests[]), (count, requests))
{
    return mpiopt_request_startall(count, requests);
}

MPIOPT_C_ENTRY(Request_free, (MPI_Request *request), (request))
{
    return mpiopt_request_free(request);
}

MPIOPT_C_ENTRY(Request_get_status, (MPI_Request request, int *flag, MPI_Status *status), (request, flag, status))
{
    return mpiopt_request_get_status(request, flag, status);
}
