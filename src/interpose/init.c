/* MPI_Init / MPI_Init_thread for LD_PRELOAD.
 * - Every MPI: MPIOPT_REPORT's table is arranged for MPI_Finalize on every rank (coll/report.h).
 * - mpiopt's own communicator, on which every communicator's messages go with tags of their own
 *   (coll/engine/context.c), is made from MPI_COMM_WORLD at once, the one moment every rank meets while
 *   nothing else is pending, with MPI_COMM_WORLD's record: a program whose first reduction is a
 *   nonblocking one then gets mpiopt's schedule for it (comm.c does the same for the
 *   communicators the program makes). */
#include "mpiopt.h"
#include "coll/engine/engine.h"
#include "coll/engine/report.h"
#include "chain.h"

/* Once: the own init, or, where a tool behind mpiopt took MPI_Init to the vendor past it, after
 * that tool's MPI_Init (chain.h). */
static void started(void)
{
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
        return;
    mpiopt_private_prepare(MPI_COMM_WORLD);
    mpiopt_report_start();
}

static void started_after_tool(int rc)
{
    if (rc == MPI_SUCCESS)
        started();
}

MPIOPT_C_ENTRY_THEN(Init, (int *argc, char ***argv), (argc, argv), started_after_tool)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        started();
    return rc;
}

MPIOPT_C_ENTRY_THEN(Init_thread, (int *argc, char ***argv, int required, int *provided),
                    (argc, argv, required, provided), started_after_tool)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        started();
    return rc;
}

#if defined(OMPI_MAJOR_VERSION)
#include "fortran.h"

/* Open MPI's Fortran MPI_INIT is mpiopt's too (before mpiopt defined PMPI_Init, the vendor's
 * called PMPI_Init past mpiopt's C name). It runs mpiopt's own C init, not the C entry point:
 * a C tool behind mpiopt is reached through the Fortran chain, as without mpiopt (chain.h).
 * (MPICH's is left alone: it sets up its Fortran constants, MPI_IN_PLACE among them, before its
 * C init, which it calls by the C name.) */
static void init_f(MPI_Fint *ierr)
{
    int rc = mpiopt_own_Init(NULL, NULL);
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

static void init_thread_f(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    int p = 0, rc = mpiopt_own_Init_thread(NULL, NULL, (int)*required, &p);
    *provided = (MPI_Fint)p;
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

MPIOPT_FORTRAN_ENTRY(init_f, (MPI_Fint *a), (a), mpi_init, MPI_INIT)
MPIOPT_FORTRAN_ENTRY(init_thread_f, (MPI_Fint *a, MPI_Fint *b, MPI_Fint *c), (a, b, c),
                       mpi_init_thread, MPI_INIT_THREAD)
MPIOPT_FORTRAN_F08_ENTRY(init_f, (MPI_Fint *a), (a), mpi_init)
MPIOPT_FORTRAN_F08_ENTRY(init_thread_f, (MPI_Fint *a, MPI_Fint *b, MPI_Fint *c), (a, b, c),
                          mpi_init_thread)
#endif
