/* Fortran (mpif.h / `use mpi`) entry points of libmpiopt-profile.
 *
 * Open MPI's Fortran bindings call PMPI_* (nm libmpi_mpifh.so: U PMPI_Send), so a C MPI_Send
 * wrapper never sees a Fortran call: the Fortran symbols themselves are wrapped here, each
 * forwarding to the next definition of its name (the vendor's, or libmpiopt's drop-in when it is
 * preloaded after this library). MPICH's bindings call the C MPI_* functions, which prof_depth
 * then forwards uncounted, so a call is counted once with either MPI. `use mpi_f08` goes through
 * other symbols (Open MPI: ompi_*_f) and is not profiled.
 *
 * Fortran passes every argument by reference; a wrapper takes N pointers and forwards them
 * unchanged, reading only count, datatype, peer and communicator (at the positions the table
 * gives) to count bytes. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"
#include "mpiopt_profile.h"
#include "../interpose/fortran.h"

/* Fortran handles (MPI_Fint, PMPI_*_f2c) are not in the MPI standard ABI: without them (CMakeLists.txt,
 * MPIOPT_HAVE_MPI_FINT) this file is left out, as no Fortran call can reach a C-only build. */
#ifdef MPIOPT_HAVE_MPI_FINT

#define FP_2 void *a0, void *a1
#define FP_3 FP_2, void *a2
#define FP_4 FP_3, void *a3
#define FP_5 FP_4, void *a4
#define FP_6 FP_5, void *a5
#define FP_7 FP_6, void *a6
#define FP_8 FP_7, void *a7
#define FP_9 FP_8, void *a8
#define FP_10 FP_9, void *a9
#define FP_13 FP_10, void *a10, void *a11, void *a12
#define FA_2 a0, a1
#define FA_3 FA_2, a2
#define FA_4 FA_3, a3
#define FA_5 FA_4, a4
#define FA_6 FA_5, a5
#define FA_7 FA_6, a6
#define FA_8 FA_7, a7
#define FA_9 FA_8, a8
#define FA_10 FA_9, a9
#define FA_13 FA_10, a10, a11, a12

/* How a call's bytes follow from its arguments (positions C, T, COMM). */
enum fortran_bytes { FB_NONE, FB_COUNT, FB_SIZE, FB_V, FB_INIT, FB_START, FB_STARTALL };

static MPI_Comm comm_of(void *const *a, int i)
{
    return i < 0 ? MPI_COMM_NULL : PMPI_Comm_f2c(*(MPI_Fint *)a[i]);
}

static uint64_t fortran_bytes(enum fortran_bytes shape, void *const *a, int c, int t, int peer,
                              int comm)
{
    MPI_Datatype type = t >= 0 ? PMPI_Type_f2c(*(MPI_Fint *)a[t]) : MPI_DATATYPE_NULL;
    switch (shape) {
    case FB_COUNT:
        return prof_bytes(*(MPI_Fint *)a[c], type);
    case FB_SIZE:
        return prof_bytes(*(MPI_Fint *)a[c], type) * (uint64_t)prof_comm_size(comm_of(a, comm));
    case FB_V: {
        int n = prof_comm_size(comm_of(a, comm));
        uint64_t elements = 0;
        for (int i = 0; i < n; i++)
            elements += (uint64_t)((MPI_Fint *)a[c])[i];
        return elements * prof_bytes(1, type);
    }
    case FB_INIT: /* *_init(buf, count, type, peer, tag, comm, request, ierr) */
        return prof_persistent(PMPI_Request_f2c(*(MPI_Fint *)a[6]),
                               prof_bytes(*(MPI_Fint *)a[c], type), peer >= 0 ? *(MPI_Fint *)a[peer] : -1,
                               comm_of(a, comm));
    case FB_START: {
        MPI_Request r = PMPI_Request_f2c(*(MPI_Fint *)a[0]);
        return prof_started(1, &r);
    }
    case FB_STARTALL: {
        int n = *(MPI_Fint *)a[0];
        uint64_t bytes = 0;
        for (int i = 0; i < n; i++) {
            MPI_Request r = PMPI_Request_f2c(((MPI_Fint *)a[1])[i]);
            bytes += prof_started(1, &r);
        }
        return bytes;
    }
    default:
        return 0;
    }
}

/* F(lower, UPPER, NAME, KIND, NARGS, BYTES, count, type, peer, comm): positions, -1 if none */
#define FORTRAN_CALLS                                                   \
    F(mpi_send, MPI_SEND, Send, P2P, 7, FB_COUNT, 1, 2, 3, 5)           \
    F(mpi_bsend, MPI_BSEND, Bsend, P2P, 7, FB_COUNT, 1, 2, 3, 5)        \
    F(mpi_ssend, MPI_SSEND, Ssend, P2P, 7, FB_COUNT, 1, 2, 3, 5)        \
    F(mpi_rsend, MPI_RSEND, Rsend, P2P, 7, FB_COUNT, 1, 2, 3, 5)        \
    F(mpi_isend, MPI_ISEND, Isend, P2P, 8, FB_COUNT, 1, 2, 3, 5)        \
    F(mpi_ibsend, MPI_IBSEND, Ibsend, P2P, 8, FB_COUNT, 1, 2, 3, 5)     \
    F(mpi_issend, MPI_ISSEND, Issend, P2P, 8, FB_COUNT, 1, 2, 3, 5)     \
    F(mpi_irsend, MPI_IRSEND, Irsend, P2P, 8, FB_COUNT, 1, 2, 3, 5)     \
    F(mpi_recv, MPI_RECV, Recv, P2P, 8, FB_COUNT, 1, 2, -1, 5)          \
    F(mpi_irecv, MPI_IRECV, Irecv, P2P, 8, FB_COUNT, 1, 2, -1, 5)       \
    F(mpi_sendrecv, MPI_SENDRECV, Sendrecv, P2P, 13, FB_COUNT, 1, 2, 3, 10) \
    F(mpi_sendrecv_replace, MPI_SENDRECV_REPLACE, Sendrecv_replace, P2P, 10, FB_COUNT, 1, 2, 3, 7) \
    F(mpi_send_init, MPI_SEND_INIT, Send_init, INIT, 8, FB_INIT, 1, 2, 3, 5) \
    F(mpi_ssend_init, MPI_SSEND_INIT, Ssend_init, INIT, 8, FB_INIT, 1, 2, 3, 5) \
    F(mpi_recv_init, MPI_RECV_INIT, Recv_init, INIT, 8, FB_INIT, 1, 2, -1, 5) \
    F(mpi_start, MPI_START, Start, START, 2, FB_START, -1, -1, -1, -1) \
    F(mpi_startall, MPI_STARTALL, Startall, START, 3, FB_STARTALL, -1, -1, -1, -1) \
    F(mpi_wait, MPI_WAIT, Wait, WAIT, 3, FB_NONE, -1, -1, -1, -1)       \
    F(mpi_waitall, MPI_WAITALL, Waitall, WAIT, 4, FB_NONE, -1, -1, -1, -1) \
    F(mpi_waitany, MPI_WAITANY, Waitany, WAIT, 5, FB_NONE, -1, -1, -1, -1) \
    F(mpi_waitsome, MPI_WAITSOME, Waitsome, WAIT, 6, FB_NONE, -1, -1, -1, -1) \
    F(mpi_test, MPI_TEST, Test, WAIT, 4, FB_NONE, -1, -1, -1, -1)       \
    F(mpi_testall, MPI_TESTALL, Testall, WAIT, 5, FB_NONE, -1, -1, -1, -1) \
    F(mpi_testany, MPI_TESTANY, Testany, WAIT, 6, FB_NONE, -1, -1, -1, -1) \
    F(mpi_testsome, MPI_TESTSOME, Testsome, WAIT, 6, FB_NONE, -1, -1, -1, -1) \
    F(mpi_probe, MPI_PROBE, Probe, WAIT, 5, FB_NONE, -1, -1, -1, 2)     \
    F(mpi_iprobe, MPI_IPROBE, Iprobe, WAIT, 6, FB_NONE, -1, -1, -1, 2)  \
    F(mpi_barrier, MPI_BARRIER, Barrier, COLL, 2, FB_NONE, -1, -1, -1, 0) \
    F(mpi_bcast, MPI_BCAST, Bcast, COLL, 6, FB_COUNT, 1, 2, -1, 4)      \
    F(mpi_gather, MPI_GATHER, Gather, COLL, 9, FB_COUNT, 1, 2, -1, 7)   \
    F(mpi_gatherv, MPI_GATHERV, Gatherv, COLL, 10, FB_COUNT, 1, 2, -1, 8) \
    F(mpi_scatter, MPI_SCATTER, Scatter, COLL, 9, FB_COUNT, 4, 5, -1, 7) \
    F(mpi_allgather, MPI_ALLGATHER, Allgather, COLL, 8, FB_COUNT, 1, 2, -1, 6) \
    F(mpi_allgatherv, MPI_ALLGATHERV, Allgatherv, COLL, 9, FB_COUNT, 1, 2, -1, 7) \
    F(mpi_alltoall, MPI_ALLTOALL, Alltoall, COLL, 8, FB_SIZE, 1, 2, -1, 6) \
    F(mpi_alltoallv, MPI_ALLTOALLV, Alltoallv, COLL, 10, FB_V, 1, 3, -1, 8) \
    F(mpi_reduce, MPI_REDUCE, Reduce, COLL, 8, FB_COUNT, 2, 3, -1, 6)   \
    F(mpi_allreduce, MPI_ALLREDUCE, Allreduce, COLL, 7, FB_COUNT, 2, 3, -1, 5) \
    F(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, Reduce_scatter_block, COLL, 7, FB_SIZE, 2, 3, -1, 5) \
    F(mpi_scan, MPI_SCAN, Scan, COLL, 7, FB_COUNT, 2, 3, -1, 5)         \
    F(mpi_exscan, MPI_EXSCAN, Exscan, COLL, 7, FB_COUNT, 2, 3, -1, 5)   \
    F(mpi_ibarrier, MPI_IBARRIER, Ibarrier, ICOLL, 3, FB_NONE, -1, -1, -1, 0) \
    F(mpi_ibcast, MPI_IBCAST, Ibcast, ICOLL, 7, FB_COUNT, 1, 2, -1, 4)  \
    F(mpi_ireduce, MPI_IREDUCE, Ireduce, ICOLL, 9, FB_COUNT, 2, 3, -1, 6) \
    F(mpi_iallreduce, MPI_IALLREDUCE, Iallreduce, ICOLL, 8, FB_COUNT, 2, 3, -1, 5) \
    F(mpi_iallgather, MPI_IALLGATHER, Iallgather, ICOLL, 9, FB_COUNT, 1, 2, -1, 6) \
    F(mpi_ialltoall, MPI_IALLTOALL, Ialltoall, ICOLL, 9, FB_SIZE, 1, 2, -1, 6)

#define F_PRE_P2P(a, comm)
#define F_PRE_WAIT(a, comm)
#define F_PRE_COLL(a, comm) if (prof.sync) prof_sync(comm_of(a, comm));
#define F_PRE_ICOLL(a, comm)
#define F_PRE_START(a, comm)
#define F_PRE_INIT(a, comm)

/* Inlined into each mangling (mpi_send_, MPI_SEND, ...), so that __builtin_return_address(0)
 * is the Fortran caller's: the call site the sites report names. */
#define F(LOWER, UPPER, NAME, KIND, N, SHAPE, C, T, PEER, COMM)                          \
    static inline __attribute__((always_inline)) void LOWER##_profiled(FP_##N)          \
    {                                                                                    \
        static void (*next)(FP_##N);                                                     \
        if (!next)                                                                       \
            next = prof_next(#LOWER "_", "p" #LOWER "_");                                \
        if (prof_depth || !prof.active) {                                                \
            next(FA_##N);                                                                \
            return;                                                                      \
        }                                                                                \
        void *a[N] = {FA_##N};                                                           \
        prof_depth = 1;                                                                  \
        F_PRE_##KIND(a, COMM)                                                            \
        double t0 = prof_now();                                                          \
        next(FA_##N);                                                                    \
        double t = prof_now() - t0;                                                      \
        uint64_t bytes = fortran_bytes(SHAPE, a, C, T, PEER, COMM);                      \
        int peer = (PEER) >= 0 && PROF_##KIND == PROF_P2P ? *(MPI_Fint *)a[(PEER) < 0 ? 0 : (PEER)] : -1; \
        prof_record(PROF_ID_##NAME, PROF_##KIND, t, bytes, peer, comm_of(a, COMM));       \
        if (prof_sites)                                                                  \
            prof_site_record(PROF_ID_##NAME, __builtin_return_address(0), t, bytes);     \
        if (prof_trace)                                                                  \
            prof_trace_call(PROF_ID_##NAME, t0, t0 + t, bytes, peer, comm_of(a, COMM));  \
        prof_depth = 0;                                                                  \
    }                                                                                    \
    MPIOPT_FORTRAN_SYMBOLS(LOWER##_profiled, (FP_##N), (FA_##N), LOWER, UPPER)
FORTRAN_CALLS
#undef F

/* ---- setup and teardown ---- */

static void init_profiled(void *ierr)
{
    static void (*next)(void *);
    if (!next)
        next = prof_next("mpi_init_", "pmpi_init_");
    int nested = prof_init_enter();
    next(ierr);
    prof_init_leave(nested, *(MPI_Fint *)ierr == MPI_SUCCESS);
}
MPIOPT_FORTRAN_SYMBOLS(init_profiled, (void *ierr), (ierr), mpi_init, MPI_INIT)

static void init_thread_profiled(void *required, void *provided, void *ierr)
{
    static void (*next)(void *, void *, void *);
    if (!next)
        next = prof_next("mpi_init_thread_", "pmpi_init_thread_");
    int nested = prof_init_enter();
    next(required, provided, ierr);
    prof_init_leave(nested, *(MPI_Fint *)ierr == MPI_SUCCESS);
}
MPIOPT_FORTRAN_SYMBOLS(init_thread_profiled, (void *a, void *b, void *c), (a, b, c),
                       mpi_init_thread, MPI_INIT_THREAD)

static void finalize_profiled(void *ierr)
{
    static void (*next)(void *);
    if (!next)
        next = prof_next("mpi_finalize_", "pmpi_finalize_");
    if (!prof_depth && prof.active) {
        prof_depth = 1;
        prof_finish();
        prof_depth = 0;
    }
    int nested = prof_depth;
    prof_depth = 1;     /* MPICH's binding calls MPI_Finalize: already done above */
    next(ierr);
    prof_depth = nested;
}
MPIOPT_FORTRAN_SYMBOLS(finalize_profiled, (void *ierr), (ierr), mpi_finalize, MPI_FINALIZE)

/* ---- regions: call mpiopt_region_begin('name'), hidden length argument last ---- */

static void region_name(const char *name, size_t len, char *out, size_t size)
{
    while (len && name[len - 1] == ' ')
        len--;
    if (len >= size)
        len = size - 1;
    memcpy(out, name, len);
    out[len] = 0;
}

static void region_begin_f(const char *name, size_t len)
{
    char buf[PROF_REGION_NAME];
    region_name(name, len, buf, sizeof buf);
    mpiopt_region_begin(buf);
}

static void region_end_f(const char *name, size_t len)
{
    char buf[PROF_REGION_NAME];
    region_name(name, len, buf, sizeof buf);
    mpiopt_region_end(buf[0] ? buf : NULL);
}

void mpiopt_region_begin_(const char *n, size_t l) { region_begin_f(n, l); }
void mpiopt_region_begin__(const char *n, size_t l) { region_begin_f(n, l); }
void MPIOPT_REGION_BEGIN(const char *n, size_t l) { region_begin_f(n, l); }
void mpiopt_region_end_(const char *n, size_t l) { region_end_f(n, l); }
void mpiopt_region_end__(const char *n, size_t l) { region_end_f(n, l); }
void MPIOPT_REGION_END(const char *n, size_t l) { region_end_f(n, l); }

/* MPI_PCONTROL(level), the one call without an ierror argument: Fortran passes no name, so
 * MPIOPT_PCONTROL_BEGIN opens the region "pcontrol" and MPIOPT_PCONTROL_END closes the innermost.
 * Not forwarded: MPICH's binding would call the C MPI_Pcontrol, which reads a name after
 * MPIOPT_PCONTROL_BEGIN that Fortran never passed. */
static void pcontrol_profiled(void *level)
{
    int l = *(MPI_Fint *)level;
    if (l == MPIOPT_PCONTROL_BEGIN)
        mpiopt_region_begin("pcontrol");
    else if (l == MPIOPT_PCONTROL_END)
        mpiopt_region_end(NULL);
}
MPIOPT_FORTRAN_SYMBOLS(pcontrol_profiled, (void *level), (level), mpi_pcontrol, MPI_PCONTROL)
#endif
