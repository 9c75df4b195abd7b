/* Dissemination barrier (Hensgen, Finkel and Manber): in round k every process signals rank
 * r + 2^k and waits for rank r - 2^k; after ceil(log2 p) rounds each has heard, directly or
 * through others, from all. Cost: ceil(log2 p) * alpha.
 *
 * Only used to wait politely: with more ranks than cores, a vendor barrier that polls keeps a
 * core from the process everybody waits for (see p2p.c). Otherwise the vendor's barrier is as
 * good and is what runs. */
#include "coll/algorithms/algorithms.h"

int mpiopt_barrier(MPI_Comm comm)
{
    if (!mpiopt_yield_when_idle())
        return PMPI_Barrier(comm);
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)  /* two groups: ranks are not one ring of 0..p-1 */
        return PMPI_Barrier(comm);
    mpiopt_coll c;
    int rc = mpiopt_coll_init_comm(&c, comm);
    for (int k = 1; rc == MPI_SUCCESS && k < c.size; k <<= 1)
        rc = mpiopt_sendrecv(&c, NULL, 0, (c.rank + k) % c.size, NULL, 0,
                             (c.rank - k + c.size) % c.size);
    return rc;
}
