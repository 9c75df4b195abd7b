/* The calls that complete, start and free requests, for LD_PRELOAD: any request (those that are
 * not mpiopt's go to the vendor's PMPI_* unchanged, at the cost of one test while mpiopt has none
 * live). The calls that make mpiopt's requests are generated (collectives.list). */
#include "mpiopt.h"

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
