/* The C MPI_* entry points of libmpiopt-profile, one per line of calls.def.
 *
 * Each wrapper forwards to the next definition of its own name (prof_next), not to PMPI_*: with
 * LD_PRELOAD=libmpiopt-profile.so:libmpiopt.so, MPI_Allreduce is timed here and then runs
 * mpiopt's algorithm. Calls made while a wrapper runs are forwarded uncounted (prof_depth). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <string.h>
#include "profile.h"
#include "mpiopt_profile.h"

#define PRE_P2P(comm)
#define PRE_WAIT(comm)
#define PRE_COLL(comm) if (prof.sync) prof_sync(comm);
#define PRE_ICOLL(comm)
#define PRE_START(comm)
#define PRE_INIT(comm)

#define WRAPPER(KIND, PREFIX, NAME, PARAMS, ARGS, BYTES, PEER, COMM, TPEER)          \
    int PREFIX##NAME PARAMS                                                     \
    {                                                                           \
        static int (*next) PARAMS;                                              \
        if (!next)                                                              \
            next = prof_next(#PREFIX #NAME, "P" #PREFIX #NAME);                 \
        if (prof_depth || !prof.active)                                         \
            return next ARGS;                                                   \
        prof_depth = 1;                                                         \
        PRE_##KIND(COMM)                                                        \
        double t0 = prof_now();                                                 \
        int rc = next ARGS;                                                     \
        double t = prof_now() - t0;                                             \
        uint64_t bytes = BYTES;                                                 \
        prof_record(PROF_ID_##NAME, PROF_##KIND, t, bytes, PEER, COMM);         \
        if (prof_sites)                                                         \
            prof_site_record(PROF_ID_##NAME, __builtin_return_address(0), t, bytes); \
        if (prof_trace)                                                         \
            prof_trace_call(PROF_ID_##NAME, t0, t0 + t, bytes, TPEER, COMM);    \
        prof_depth = 0;                                                         \
        return rc;                                                              \
    }

#define X(KIND, NAME, P, A, B, PEER, COMM, TPEER) WRAPPER(KIND, MPI_, NAME, P, A, B, PEER, COMM, TPEER)
#if MPI_VERSION >= 4
#define XP(KIND, NAME, P, A, B, PEER, COMM, TPEER) WRAPPER(KIND, MPI_, NAME, P, A, B, PEER, COMM, TPEER)
#elif defined(PROF_HAVE_PERSISTENT_COLL)
#define XP(KIND, NAME, P, A, B, PEER, COMM, TPEER) WRAPPER(KIND, MPIX_, NAME, P, A, B, PEER, COMM, TPEER)
#else
#define XP(KIND, NAME, P, A, B, PEER, COMM, TPEER)
#endif
#include "calls.def"
#undef X
#undef XP

/* ---- setup, teardown, requests ---- */

int MPI_Init(int *argc, char ***argv)
{
    static int (*next)(int *, char ***);
    if (!next)
        next = prof_next("MPI_Init", "PMPI_Init");
    int nested = prof_init_enter();
    int rc = next(argc, argv);
    prof_init_leave(nested, rc == MPI_SUCCESS);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    static int (*next)(int *, char ***, int, int *);
    if (!next)
        next = prof_next("MPI_Init_thread", "PMPI_Init_thread");
    int nested = prof_init_enter();
    int rc = next(argc, argv, required, provided);
    prof_init_leave(nested, rc == MPI_SUCCESS);
    return rc;
}

int MPI_Finalize(void)
{
    static int (*next)(void);
    if (!next)
        next = prof_next("MPI_Finalize", "PMPI_Finalize");
    if (!prof_depth && prof.active) {
        prof_depth = 1;
        prof_finish();
        prof_depth = 0;
    }
    return next();
}

int MPI_Request_free(MPI_Request *request)
{
    static int (*next)(MPI_Request *);
    if (!next)
        next = prof_next("MPI_Request_free", "PMPI_Request_free");
    prof_forget_request(*request);
    return next(request);
}

/* MPI_Pcontrol(MPIOPT_PCONTROL_BEGIN, "name") opens a user region, MPI_Pcontrol(
 * MPIOPT_PCONTROL_END) closes the innermost open one (mpiopt_profile.h). Other levels, such as
 * the common MPI_Pcontrol(1) / MPI_Pcontrol(0) without a name, are ignored: a name is read only
 * at the one level where the caller promises to pass it. */
int MPI_Pcontrol(const int level, ...)
{
    if (level == MPIOPT_PCONTROL_BEGIN) {
        va_list ap;
        va_start(ap, level);
        const char *name = va_arg(ap, const char *);
        va_end(ap);
        mpiopt_region_begin(name ? name : "pcontrol");
    } else if (level == MPIOPT_PCONTROL_END) {
        mpiopt_region_end(NULL);
    }
    return MPI_SUCCESS;
}
