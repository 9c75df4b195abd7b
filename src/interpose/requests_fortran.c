/* The Fortran (mpif.h / `use mpi`) bindings of requests.c: the calls that complete, start and
 * free requests (those that make them are generated, collectives.list). Open MPI's Fortran
 * library calls PMPI_Wait & co., which
 * would never see an mpiopt request: so these are defined here for both MPIs, converting handles
 * and statuses with PMPI_*_f2c / c2f around the C entry points. Fortran indices start at 1. */
#include <stdlib.h>
#include "mpiopt.h"
#include "fortran.h"

/* Fortran handles (MPI_Fint, PMPI_*_f2c) are not in the MPI standard ABI: without them (CMakeLists.txt,
 * MPIOPT_HAVE_MPI_FINT) this file is left out, as no Fortran call can reach a C-only build. */
#ifdef MPIOPT_HAVE_MPI_FINT

#ifdef MPI_F_STATUS_SIZE
#define STATUS_SIZE MPI_F_STATUS_SIZE
#else
#define STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif

static void set_ierr(MPI_Fint *ierr, int rc)
{
    if (ierr)
        *ierr = (MPI_Fint)rc;
}

/* C statuses for Fortran ones (NULL: ignored), and back. */
static MPI_Status *c_statuses(MPI_Fint *f, int n)
{
    if (f == MPI_F_STATUS_IGNORE || f == MPI_F_STATUSES_IGNORE)
        return MPI_STATUSES_IGNORE;
#if defined(MPICH_VERSION)
    if (f == (MPI_Fint *)MPI_F08_STATUS_IGNORE || f == (MPI_Fint *)MPI_F08_STATUSES_IGNORE)
        return MPI_STATUSES_IGNORE;     /* `use mpi_f08` (fortran.h) */
#endif
    return malloc(sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1));
}

static void f_statuses(MPI_Status *c, MPI_Fint *f, int n)
{
    if (c == MPI_STATUSES_IGNORE)
        return;
    for (int i = 0; i < n; i++)
        PMPI_Status_c2f(&c[i], f + (size_t)i * STATUS_SIZE);
    free(c);
}

static MPI_Request *c_requests(const MPI_Fint *f, int n)
{
    MPI_Request *c = malloc(sizeof *c * (size_t)(n > 0 ? n : 1));
    for (int i = 0; c && i < n; i++)
        c[i] = PMPI_Request_f2c(f[i]);
    return c;
}

static void f_requests(MPI_Request *c, MPI_Fint *f, int n)
{
    for (int i = 0; i < n; i++)
        f[i] = PMPI_Request_c2f(c[i]);
    free(c);
}

/* ---- completing ---- */

static void wait_f(MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Request r = PMPI_Request_f2c(*request);
    MPI_Status *st = c_statuses(status, 1);
    int rc = mpiopt_request_wait(&r, st == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : st);
    *request = PMPI_Request_c2f(r);
    f_statuses(st, status, 1);
    set_ierr(ierr, rc);
}

static void test_f(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Request r = PMPI_Request_f2c(*request);
    MPI_Status *st = c_statuses(status, 1);
    int done = 0;
    int rc = mpiopt_request_test(&r, &done, st == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : st);
    *request = PMPI_Request_c2f(r);
    *flag = done != 0;
    f_statuses(st, status, done ? 1 : 0);
    set_ierr(ierr, rc);
}

static void waitall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses, MPI_Fint *ierr)
{
    int n = (int)*count;
    MPI_Request *r = c_requests(requests, n);
    MPI_Status *st = c_statuses(statuses, n);
    int rc = mpiopt_request_waitall(n, r, st);
    f_requests(r, requests, n);
    f_statuses(st, statuses, n);
    set_ierr(ierr, rc);
}

static void testall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag, MPI_Fint *statuses,
                      MPI_Fint *ierr)
{
    int n = (int)*count, done = 0;
    MPI_Request *r = c_requests(requests, n);
    MPI_Status *st = c_statuses(statuses, n);
    int rc = mpiopt_request_testall(n, r, &done, st);
    f_requests(r, requests, n);
    f_statuses(st, statuses, done ? n : 0);
    *flag = done != 0;
    set_ierr(ierr, rc);
}

static void testany_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag,
                      MPI_Fint *status, MPI_Fint *ierr)
{
    int n = (int)*count, i = MPI_UNDEFINED, done = 0;
    MPI_Request *r = c_requests(requests, n);
    MPI_Status *st = c_statuses(status, 1);
    int rc = mpiopt_request_testany(n, r, &i, &done,
                                    st == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : st);
    f_requests(r, requests, n);
    f_statuses(st, status, done ? 1 : 0);
    *index = i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
    *flag = done != 0;
    set_ierr(ierr, rc);
}

static void waitany_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *status,
                      MPI_Fint *ierr)
{
    int n = (int)*count, i = MPI_UNDEFINED;
    MPI_Request *r = c_requests(requests, n);
    MPI_Status *st = c_statuses(status, 1);
    int rc = mpiopt_request_waitany(n, r, &i, st == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : st);
    f_requests(r, requests, n);
    f_statuses(st, status, 1);
    *index = i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
    set_ierr(ierr, rc);
}

/* testsome (wait = 0) and waitsome (wait = 1) */
static void some_f(int wait, MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount,
                   MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    int n = (int)*incount, out = 0;
    MPI_Request *r = c_requests(requests, n);
    MPI_Status *st = c_statuses(statuses, n);
    int *idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    int rc = wait ? mpiopt_request_waitsome(n, r, &out, idx, st)
                  : mpiopt_request_testsome(n, r, &out, idx, st);
    f_requests(r, requests, n);
    f_statuses(st, statuses, out == MPI_UNDEFINED ? 0 : out);
    for (int j = 0; out != MPI_UNDEFINED && j < out; j++)
        indices[j] = idx[j] + 1;
    free(idx);
    *outcount = out;
    set_ierr(ierr, rc);
}

static void testsome_f(MPI_Fint *a, MPI_Fint *b, MPI_Fint *c, MPI_Fint *d, MPI_Fint *e,
                       MPI_Fint *f)
{
    some_f(0, a, b, c, d, e, f);
}

static void waitsome_f(MPI_Fint *a, MPI_Fint *b, MPI_Fint *c, MPI_Fint *d, MPI_Fint *e,
                       MPI_Fint *f)
{
    some_f(1, a, b, c, d, e, f);
}

/* ---- starting persistent requests, freeing ---- */

static void start_f(MPI_Fint *request, MPI_Fint *ierr)
{
    MPI_Request r = PMPI_Request_f2c(*request);
    int rc = mpiopt_request_start(&r);
    *request = PMPI_Request_c2f(r);
    set_ierr(ierr, rc);
}

static void startall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierr)
{
    int n = (int)*count;
    MPI_Request *r = c_requests(requests, n);
    int rc = mpiopt_request_startall(n, r);
    f_requests(r, requests, n);
    set_ierr(ierr, rc);
}

static void request_free_f(MPI_Fint *request, MPI_Fint *ierr)
{
    MPI_Request r = PMPI_Request_f2c(*request);
    int rc = mpiopt_request_free(&r);
    *request = PMPI_Request_c2f(r);
    set_ierr(ierr, rc);
}

static void request_get_status_f(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status,
                                 MPI_Fint *ierr)
{
    MPI_Status *st = c_statuses(status, 1);
    int done = 0;
    int rc = mpiopt_request_get_status(PMPI_Request_f2c(*request), &done,
                                       st == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : st);
    *flag = done != 0;
    f_statuses(st, status, done ? 1 : 0);
    set_ierr(ierr, rc);
}

typedef MPI_Fint F;
MPIOPT_FORTRAN_ENTRY(wait_f, (F *a, F *b, F *c), (a, b, c), mpi_wait, MPI_WAIT)
MPIOPT_FORTRAN_ENTRY(test_f, (F *a, F *b, F *c, F *d), (a, b, c, d), mpi_test, MPI_TEST)
MPIOPT_FORTRAN_ENTRY(waitall_f, (F *a, F *b, F *c, F *d), (a, b, c, d), mpi_waitall,
                       MPI_WAITALL)
MPIOPT_FORTRAN_ENTRY(testall_f, (F *a, F *b, F *c, F *d, F *e), (a, b, c, d, e), mpi_testall,
                       MPI_TESTALL)
MPIOPT_FORTRAN_ENTRY(waitany_f, (F *a, F *b, F *c, F *d, F *e), (a, b, c, d, e), mpi_waitany,
                       MPI_WAITANY)
MPIOPT_FORTRAN_ENTRY(testany_f, (F *a, F *b, F *c, F *d, F *e, F *f), (a, b, c, d, e, f),
                       mpi_testany, MPI_TESTANY)
MPIOPT_FORTRAN_ENTRY(waitsome_f, (F *a, F *b, F *c, F *d, F *e, F *f), (a, b, c, d, e, f),
                       mpi_waitsome, MPI_WAITSOME)
MPIOPT_FORTRAN_ENTRY(testsome_f, (F *a, F *b, F *c, F *d, F *e, F *f), (a, b, c, d, e, f),
                       mpi_testsome, MPI_TESTSOME)
MPIOPT_FORTRAN_ENTRY(start_f, (F *a, F *b), (a, b), mpi_start, MPI_START)
MPIOPT_FORTRAN_ENTRY(startall_f, (F *a, F *b, F *c), (a, b, c), mpi_startall, MPI_STARTALL)
MPIOPT_FORTRAN_ENTRY(request_free_f, (F *a, F *b), (a, b), mpi_request_free,
                       MPI_REQUEST_FREE)
MPIOPT_FORTRAN_ENTRY(request_get_status_f, (F *a, F *b, F *c, F *d), (a, b, c, d),
                       mpi_request_get_status, MPI_REQUEST_GET_STATUS)

/* `use mpi_f08` (fortran.h): the completion calls on both MPIs */
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(wait_f, (F *a, F *b, F *c), (a, b, c), mpi_wait)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(test_f, (F *a, F *b, F *c, F *d), (a, b, c, d), mpi_test)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(waitall_f, (F *a, F *b, F *c, F *d), (a, b, c, d), mpi_waitall)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(testall_f, (F *a, F *b, F *c, F *d, F *e), (a, b, c, d, e),
                                  mpi_testall)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(waitany_f, (F *a, F *b, F *c, F *d, F *e), (a, b, c, d, e),
                                  mpi_waitany)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(testany_f, (F *a, F *b, F *c, F *d, F *e, F *f),
                                  (a, b, c, d, e, f), mpi_testany)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(waitsome_f, (F *a, F *b, F *c, F *d, F *e, F *f),
                                  (a, b, c, d, e, f), mpi_waitsome)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(testsome_f, (F *a, F *b, F *c, F *d, F *e, F *f),
                                  (a, b, c, d, e, f), mpi_testsome)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(start_f, (F *a, F *b), (a, b), mpi_start)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(startall_f, (F *a, F *b, F *c), (a, b, c), mpi_startall)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(request_free_f, (F *a, F *b), (a, b), mpi_request_free)
MPIOPT_FORTRAN_F08_REQUEST_ENTRY(request_get_status_f, (F *a, F *b, F *c, F *d), (a, b, c, d),
                                  mpi_request_get_status)
#endif
