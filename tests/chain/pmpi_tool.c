/* A small PMPI tool of the tests' own, as profilers and I/O monitors are built: each wrapper
 * counts its call and bytes, then calls PMPI_* (C) or pmpi_*_ (Fortran, as mpiP's do). It
 * writes one file a rank at its MPI_Finalize: $PMPI_TOOL_DIR/TOOL_NAME.RANK, a line a kind,
 * "kind calls bytes", the first lines "init N" and "finalize N" (so a missing report, or an
 * MPI_Init that never ran, shows). tests/python/test_pmpi_chain.py builds it with the plain mpicc as a preloaded
 * library (two copies under two names) and links it into a program, with and without mpiopt.
 *
 * Like real tools it counts a call once where the MPI's own Fortran layer calls its C wrapper
 * (MPICH's pmpi_allreduce_ calls MPI_Allreduce): calls made inside a wrapper are not counted as
 * the program's. Messages sent or received inside a wrapper are counted apart, in "nested_"
 * lines: a library between the tool and the MPI that sent its own messages through names the
 * tool holds would show there (within a reduction's wrapper), where the program's count hides
 * them.
 * TOOL_C_ONLY leaves the Fortran wrappers out (a C-only tool, as Darshan's MPI part is).
 * TOOL_DEFINES_PMPI builds it as Darshan builds its MPI part: each wrapper is also the profiling
 * name PMPI_X, and reaches the next PMPI_X with dlsym(RTLD_NEXT) (the vendor's, or libmpiopt's
 * where the tool is in front of it); it wraps what Darshan wraps of the calls here, MPI_Init,
 * MPI_Init_thread and MPI_Finalize, and point-to-point, and only in C.
 *
 * It knows nothing of mpiopt; it wraps calls mpiopt takes (reductions, waits, communicator
 * constructors, MPI_Init) and calls it does not (point-to-point, whose count shows whether a
 * tool sees mpiopt's inner messages: it must not). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TOOL_NAME
#define TOOL_NAME "tool"
#endif

#ifdef TOOL_DEFINES_PMPI
#define TOOL_C_ONLY
#include <dlfcn.h>
/* NEXT(PMPI_X): the next definition of PMPI_X after this library; ALSO_PMPI(MPI_X): PMPI_X is
 * this library's MPI_X too */
static void *next_of(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "tool: no %s after the tool\n", name);
        abort();
    }
    return f;
}
#define NEXT(pname) ((__typeof__(&pname))next_of(#pname))
#define ALSO_PMPI(name) __typeof__(name) P##name __attribute__((alias(#name)));
#else
#define NEXT(pname) pname
#define ALSO_PMPI(name)
#endif

enum kind {
    K_INIT, K_FINALIZE, K_ALLREDUCE, K_REDUCE, K_IALLREDUCE, K_IREDUCE, K_ALLREDUCE_INIT,
    K_SCAN, K_REDUCE_SCATTER_BLOCK, K_WAIT, K_WAITALL, K_TEST, K_START, K_REQUEST_FREE,
    K_COMM_DUP, K_COMM_FREE, K_SEND, K_RECV, K_ISEND, K_IRECV, K_SENDRECV, K_COUNT
};
static const char *const kind_names[K_COUNT] = {
    "init", "finalize", "allreduce", "reduce", "iallreduce", "ireduce", "allreduce_init",
    "scan", "reduce_scatter_block", "wait", "waitall", "test", "start", "request_free",
    "comm_dup", "comm_free", "send", "recv", "isend", "irecv", "sendrecv"};
static unsigned long calls[K_COUNT], bytes[K_COUNT], nested_calls[K_COUNT], nested_bytes[K_COUNT];
static int depth;       /* wrappers running: a nested one does not count (single-threaded) */

static void count(enum kind k, int n, MPI_Datatype type)
{
    int size = 0;
    if (depth && k < K_SEND)
        return;
    unsigned long *c = depth ? nested_calls : calls, *b = depth ? nested_bytes : bytes;
    c[k]++;
    if (n > 0 && type != MPI_DATATYPE_NULL && PMPI_Type_size(type, &size) == MPI_SUCCESS)
        b[k] += (unsigned long)n * (unsigned long)size;
}

static void write_report(void)
{
    if (depth)
        return;
    int rank = -1;
    const char *dir = getenv("PMPI_TOOL_DIR");
    char path[4096];
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    snprintf(path, sizeof path, "%s/%s.%d", dir ? dir : ".", TOOL_NAME, rank);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    for (int k = 0; k < K_COUNT; k++)
        fprintf(f, "%s %lu %lu\n", kind_names[k], calls[k], bytes[k]);
    for (int k = K_SEND; k < K_COUNT; k++)
        fprintf(f, "nested_%s %lu %lu\n", kind_names[k], nested_calls[k], nested_bytes[k]);
    fclose(f);
}

/* ---- C ---- */

int MPI_Init(int *argc, char ***argv)
{
    count(K_INIT, 0, MPI_DATATYPE_NULL);
    depth++;
    int rc = NEXT(PMPI_Init)(argc, argv);
    depth--;
    return rc;
}
ALSO_PMPI(MPI_Init)

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    count(K_INIT, 0, MPI_DATATYPE_NULL);
    depth++;
    int rc = NEXT(PMPI_Init_thread)(argc, argv, required, provided);
    depth--;
    return rc;
}
ALSO_PMPI(MPI_Init_thread)

int MPI_Finalize(void)
{
    count(K_FINALIZE, 0, MPI_DATATYPE_NULL);
    write_report();
    depth++;
    int rc = NEXT(PMPI_Finalize)();
    depth--;
    return rc;
}
ALSO_PMPI(MPI_Finalize)

#ifndef TOOL_DEFINES_PMPI
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c)
{
    count(K_ALLREDUCE, n, t);
    depth++;
    int rc = NEXT(PMPI_Allreduce)(s, r, n, t, o, c);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c)
{
    count(K_REDUCE, n, t);
    depth++;
    int rc = NEXT(PMPI_Reduce)(s, r, n, t, o, root, c);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c,
                   MPI_Request *q)
{
    count(K_IALLREDUCE, n, t);
    depth++;
    int rc = NEXT(PMPI_Iallreduce)(s, r, n, t, o, c, q);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Ireduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c,
                MPI_Request *q)
{
    count(K_IREDUCE, n, t);
    depth++;
    int rc = NEXT(PMPI_Ireduce)(s, r, n, t, o, root, c, q);
    depth--;
    return rc;
}
#endif

/* MPI-4's persistent allreduce, or Open MPI 4.1's MPIX_ one */
#if MPI_VERSION >= 4
#define TOOL_ALLREDUCE_INIT MPI_Allreduce_init
#define TOOL_PALLREDUCE_INIT PMPI_Allreduce_init
#elif defined(OMPI_MAJOR_VERSION)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define TOOL_ALLREDUCE_INIT MPIX_Allreduce_init
#define TOOL_PALLREDUCE_INIT PMPIX_Allreduce_init
#endif
#endif
#if defined(TOOL_ALLREDUCE_INIT) && !defined(TOOL_DEFINES_PMPI)
int TOOL_ALLREDUCE_INIT(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c,
                        MPI_Info info, MPI_Request *q)
{
    count(K_ALLREDUCE_INIT, n, t);
    depth++;
    int rc = TOOL_PALLREDUCE_INIT(s, r, n, t, o, c, info, q);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Scan(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c)
{
    count(K_SCAN, n, t);
    depth++;
    int rc = NEXT(PMPI_Scan)(s, r, n, t, o, c);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Reduce_scatter_block(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c)
{
    count(K_REDUCE_SCATTER_BLOCK, n, t);
    depth++;
    int rc = NEXT(PMPI_Reduce_scatter_block)(s, r, n, t, o, c);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Wait(MPI_Request *q, MPI_Status *st)
{
    count(K_WAIT, 0, MPI_DATATYPE_NULL);
    depth++;
    int rc = NEXT(PMPI_Wait)(q, st);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Waitall(int n, MPI_Request q[], MPI_Status st[])
{
    count(K_WAITALL, 0, MPI_DATATYPE_NULL);
    depth++;
    int rc = NEXT(PMPI_Waitall)(n, q, st);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Test(MPI_Request *q, int *flag, MPI_Status *st)
{
    count(K_TEST, 0, MPI_DATATYPE_NULL);
    depth++;
    int rc = NEXT(PMPI_Test)(q, flag, st);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Start(MPI_Request *q)
{
    count(K_START, 0, MPI_DATATYPE_NULL);
    depth++;
    int rc = NEXT(PMPI_Start)(q);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Request_free(MPI_Request *q)
{
    count(K_REQUEST_FREE, 0, MPI_DATATYPE_NULL);
    depth++;
    int rc = NEXT(PMPI_Request_free)(q);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Comm_dup(MPI_Comm c, MPI_Comm *out)
{
    count(K_COMM_DUP, 0, MPI_DATATYPE_NULL);
    depth++;
    int rc = NEXT(PMPI_Comm_dup)(c, out);
    depth--;
    return rc;
}
#endif

#ifndef TOOL_DEFINES_PMPI
int MPI_Comm_free(MPI_Comm *c)
{
    count(K_COMM_FREE, 0, MPI_DATATYPE_NULL);
    depth++;
    int rc = NEXT(PMPI_Comm_free)(c);
    depth--;
    return rc;
}
#endif

int MPI_Send(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    count(K_SEND, n, t);
    depth++;
    int rc = NEXT(PMPI_Send)(b, n, t, dest, tag, c);
    depth--;
    return rc;
}
ALSO_PMPI(MPI_Send)

int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st)
{
    count(K_RECV, n, t);
    depth++;
    int rc = NEXT(PMPI_Recv)(b, n, t, src, tag, c, st);
    depth--;
    return rc;
}
ALSO_PMPI(MPI_Recv)

int MPI_Isend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c, MPI_Request *q)
{
    count(K_ISEND, n, t);
    depth++;
    int rc = NEXT(PMPI_Isend)(b, n, t, dest, tag, c, q);
    depth--;
    return rc;
}
ALSO_PMPI(MPI_Isend)

int MPI_Irecv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *q)
{
    count(K_IRECV, n, t);
    depth++;
    int rc = NEXT(PMPI_Irecv)(b, n, t, src, tag, c, q);
    depth--;
    return rc;
}
ALSO_PMPI(MPI_Irecv)

int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype st, int dest, int stag, void *rb, int rn,
                 MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status *status)
{
    count(K_SENDRECV, sn, st);
    depth++;
    int rc = NEXT(PMPI_Sendrecv)(sb, sn, st, dest, stag, rb, rn, rt, src, rtag, c, status);
    depth--;
    return rc;
}
ALSO_PMPI(MPI_Sendrecv)

#ifndef TOOL_C_ONLY
/* ---- Fortran (mpif.h / `use mpi`, gfortran's lower-case mangling with one underscore) ----
 * Each counts and calls the MPI's Fortran profiling name, which a C program never loads: weak. */
typedef MPI_Fint F;
#define FORTRAN_PMPI(name, params) extern void name params __attribute__((weak));
FORTRAN_PMPI(pmpi_init_, (F *))
FORTRAN_PMPI(pmpi_finalize_, (F *))
FORTRAN_PMPI(pmpi_allreduce_, (void *, void *, F *, F *, F *, F *, F *))
FORTRAN_PMPI(pmpi_reduce_, (void *, void *, F *, F *, F *, F *, F *, F *))
FORTRAN_PMPI(pmpi_iallreduce_, (void *, void *, F *, F *, F *, F *, F *, F *))
FORTRAN_PMPI(pmpi_wait_, (F *, F *, F *))
FORTRAN_PMPI(pmpi_waitall_, (F *, F *, F *, F *))

void mpi_init_(F *ierr)
{
    count(K_INIT, 0, MPI_DATATYPE_NULL);
    depth++;
    pmpi_init_(ierr);
    depth--;
}

void mpi_finalize_(F *ierr)
{
    count(K_FINALIZE, 0, MPI_DATATYPE_NULL);
    write_report();
    depth++;
    pmpi_finalize_(ierr);
    depth--;
}

void mpi_allreduce_(void *s, void *r, F *n, F *t, F *o, F *c, F *ierr)
{
    count(K_ALLREDUCE, (int)*n, PMPI_Type_f2c(*t));
    depth++;
    pmpi_allreduce_(s, r, n, t, o, c, ierr);
    depth--;
}

void mpi_reduce_(void *s, void *r, F *n, F *t, F *o, F *root, F *c, F *ierr)
{
    count(K_REDUCE, (int)*n, PMPI_Type_f2c(*t));
    depth++;
    pmpi_reduce_(s, r, n, t, o, root, c, ierr);
    depth--;
}

void mpi_iallreduce_(void *s, void *r, F *n, F *t, F *o, F *c, F *q, F *ierr)
{
    count(K_IALLREDUCE, (int)*n, PMPI_Type_f2c(*t));
    depth++;
    pmpi_iallreduce_(s, r, n, t, o, c, q, ierr);
    depth--;
}

void mpi_wait_(F *q, F *st, F *ierr)
{
    count(K_WAIT, 0, MPI_DATATYPE_NULL);
    depth++;
    pmpi_wait_(q, st, ierr);
    depth--;
}

void mpi_waitall_(F *n, F *q, F *st, F *ierr)
{
    count(K_WAITALL, 0, MPI_DATATYPE_NULL);
    depth++;
    pmpi_waitall_(n, q, st, ierr);
    depth--;
}
#endif
