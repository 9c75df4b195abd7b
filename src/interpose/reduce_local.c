/* MPI_Reduce_local for LD_PRELOAD: the C binding and the Fortran (mpif.h / `use mpi`) bindings
 * of both Open MPI and MPICH, which name the symbol in the usual gfortran manglings. */
#include "mpiopt.h"
#include "coll/report.h"     /* each Fortran binding tells the report its door */
#include "fortran.h"

int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                     MPI_Op op)
{
    return mpiopt_reduce_local(inbuf, inoutbuf, count, datatype, op);
}

static void reduce_local_f(void *inbuf, void *inoutbuf, MPI_Fint *count, MPI_Fint *datatype,
                           MPI_Fint *op, MPI_Fint *ierr)
{
    mpiopt_report_door(MPIOPT_DOOR_FORTRAN);
    int rc = mpiopt_reduce_local(inbuf, inoutbuf, (int)*count, PMPI_Type_f2c(*datatype),
                                 PMPI_Op_f2c(*op));
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

MPIOPT_FORTRAN_SYMBOLS(reduce_local_f,
                       (void *a, void *b, MPI_Fint *c, MPI_Fint *d, MPI_Fint *e, MPI_Fint *f),
                       (a, b, c, d, e, f),
                       mpi_reduce_local, MPI_REDUCE_LOCAL)
MPIOPT_FORTRAN_F08_SYMBOL(reduce_local_f,
                          (void *a, void *b, MPI_Fint *c, MPI_Fint *d, MPI_Fint *e, MPI_Fint *f),
                          (a, b, c, d, e, f), mpi_reduce_local)
