/* MPI_Allreduce for LD_PRELOAD: the C binding and the Fortran bindings of Open MPI and MPICH.
 * Everything is mpiopt_allreduce with `auto` (coll/handoff.h, inline here so that a call handed
 * to the vendor jumps straight to PMPI_Allreduce), which hands what it does not handle
 * (intercommunicators, non-contiguous datatypes, the sizes where the vendor is faster) to
 * PMPI_Allreduce. */
#include "mpiopt.h"
#include "coll/coll.h"
#include "coll/handoff.h"
#include "coll/report.h"     /* each Fortran binding tells the report its door */
#include "fortran.h"

MPIOPT_HANDOFF_PLACEMENT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    return mpiopt_allreduce_entry(sendbuf, recvbuf, count, datatype, op, comm, MPIOPT_ALG_AUTO);
}

static void allreduce_f(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                        MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
{
    mpiopt_report_door(MPIOPT_DOOR_FORTRAN);
    int rc = mpiopt_allreduce(mpiopt_fortran_buffer(sendbuf), mpiopt_fortran_buffer(recvbuf),
                              (int)*count, PMPI_Type_f2c(*datatype), PMPI_Op_f2c(*op),
                              PMPI_Comm_f2c(*comm), MPIOPT_ALG_AUTO);
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

MPIOPT_FORTRAN_SYMBOLS(allreduce_f,
                       (void *a, void *b, MPI_Fint *c, MPI_Fint *d, MPI_Fint *e, MPI_Fint *f,
                        MPI_Fint *g),
                       (a, b, c, d, e, f, g),
                       mpi_allreduce, MPI_ALLREDUCE)
MPIOPT_FORTRAN_F08_SYMBOL(allreduce_f,
                          (void *a, void *b, MPI_Fint *c, MPI_Fint *d, MPI_Fint *e, MPI_Fint *f,
                           MPI_Fint *g),
                          (a, b, c, d, e, f, g), mpi_allreduce)
