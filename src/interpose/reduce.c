/* MPI_Reduce for LD_PRELOAD: the C binding and the Fortran bindings of Open MPI and MPICH, all
 * mpiopt_reduce with `auto` (the C binding inlines its hand-off, coll/handoff.h), which also
 * keeps MPI_IN_PLACE at a non-zero root away from MPICH 4.0.2's PMPI_Reduce, which crashes on it. */
#include "mpiopt.h"
#include "coll/coll.h"
#include "coll/handoff.h"
#include "coll/report.h"     /* each Fortran binding tells the report its door */
#include "fortran.h"

MPIOPT_HANDOFF_PLACEMENT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm)
{
    return mpiopt_reduce_entry(sendbuf, recvbuf, count, datatype, op, root, comm, MPIOPT_ALG_AUTO);
}

static void reduce_f(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                     MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
    mpiopt_report_door(MPIOPT_DOOR_FORTRAN);
    int rc = mpiopt_reduce(mpiopt_fortran_buffer(sendbuf), mpiopt_fortran_buffer(recvbuf),
                           (int)*count, PMPI_Type_f2c(*datatype), PMPI_Op_f2c(*op), (int)*root,
                           PMPI_Comm_f2c(*comm), MPIOPT_ALG_AUTO);
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

MPIOPT_FORTRAN_SYMBOLS(reduce_f,
                       (void *a, void *b, MPI_Fint *c, MPI_Fint *d, MPI_Fint *e, MPI_Fint *f,
                        MPI_Fint *g, MPI_Fint *h),
                       (a, b, c, d, e, f, g, h),
                       mpi_reduce, MPI_REDUCE)
MPIOPT_FORTRAN_F08_SYMBOL(reduce_f,
                          (void *a, void *b, MPI_Fint *c, MPI_Fint *d, MPI_Fint *e, MPI_Fint *f,
                           MPI_Fint *g, MPI_Fint *h),
                          (a, b, c, d, e, f, g, h), mpi_reduce)
