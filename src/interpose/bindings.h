/* What the generated bindings (bindings.py, collectives.list) share: the large-count test, the
 * end of a Fortran call that started a request, and the name of the persistent collectives. */
#ifndef MPIOPT_INTERPOSE_BINDINGS_H
#define MPIOPT_INTERPOSE_BINDINGS_H

#include <limits.h>
#include <stdlib.h>
#include "mpiopt.h"
#include "coll/engine/report.h"

/* The int to pass on for an MPI_Count, or 0 if the call needs the vendor's large-count form
 * (count > INT_MAX: mpiopt's plans and C API take int counts, and a reduction of more than 2^31
 * elements is bandwidth-bound, where the vendor's pipelined algorithms lose little); either way
 * the call is the report's as one of the large-count door. A negative count reaches the int
 * path's argument check (MPI_ERR_COUNT). */
static inline int mpiopt_count_fits(MPI_Count count, int *n, mpiopt_call_kind kind)
{
    mpiopt_report_door(MPIOPT_DOOR_LARGE_COUNT);
    if (count > INT_MAX) {
        mpiopt_report_call(kind, MPIOPT_ALG_VENDOR, MPIOPT_WHY_LARGE_COUNT);
        return 0;
    }
    *n = count < 0 ? -1 : (int)count;
    return 1;
}

/* The counts as ints (malloc'd: the caller frees them) for a call whose counts all fit one, or
 * NULL if the call needs the vendor's large-count form: a count above INT_MAX (as above), or a
 * call the vendor judges (no communicator, no counts, no memory for the copy). The calls that
 * take the ints have copied what they need of them when they return (also a started request). */
static inline int *mpiopt_counts_fit(const MPI_Count *counts, MPI_Comm comm,
                                     mpiopt_call_kind kind)
{
    int p;
    int *n = NULL;
    mpiopt_report_door(MPIOPT_DOOR_LARGE_COUNT);
    if (counts && comm != MPI_COMM_NULL && PMPI_Comm_size(comm, &p) == MPI_SUCCESS &&
        (n = malloc(sizeof(int) * (size_t)(p > 0 ? p : 1)))) {
        for (int r = 0; r < p; r++) {
            if (counts[r] > INT_MAX) {
                free(n);
                mpiopt_report_call(kind, MPIOPT_ALG_VENDOR, MPIOPT_WHY_LARGE_COUNT);
                return NULL;
            }
            n[r] = counts[r] < 0 ? -1 : (int)counts[r];
        }
        return n;
    }
    mpiopt_report_call(kind, MPIOPT_ALG_VENDOR, MPIOPT_WHY_ARGUMENTS);
    return NULL;
}

#ifdef MPIOPT_HAVE_MPI_FINT    /* Fortran handles: not in the MPI standard ABI (CMakeLists.txt) */
/* The Fortran bindings pass an INTEGER array of counts on as an int array. */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is not an int");

/* The end of a Fortran call that started a request: its handle for Fortran, the error code. */
static inline void mpiopt_fortran_started(int rc, MPI_Request r, MPI_Fint *request, MPI_Fint *ierr)
{
    if (rc == MPI_SUCCESS)
        *request = PMPI_Request_c2f(r);
    if (ierr)
        *ierr = (MPI_Fint)rc;
}
#endif

#include "persistent_name.h"     /* src/: the entry layer names the vendor's by it too */

#endif
