/* libmpiopt-profile: state shared by the wrappers (wrappers.c, fortran.c), the per-rank
 * bookkeeping (state.c) and the report written at MPI_Finalize (output.c).
 *
 * Every counter is a plain per-process array indexed by call: no locks on the hot path (with
 * MPI_THREAD_MULTIPLE, concurrent calls from several threads may lose an increment). */
#ifndef MPIOPT_PROFILE_H
#define MPIOPT_PROFILE_H

#include <mpi.h>
#include <stdint.h>
#include <time.h>
#include "tls_model.h"
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#if MPI_VERSION >= 4
#define PROF_PERSISTENT_COLL_PREFIX "MPI_"
#define PROF_HAVE_PERSISTENT_COLL 1
#elif defined(OMPI_MAJOR_VERSION)
/* Open MPI's own header (an MPI-3 MPICH, e.g. Intel MPI 2021, has none) */
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PROF_PERSISTENT_COLL_PREFIX "MPIX_"
#define PROF_HAVE_PERSISTENT_COLL 1
#endif
#endif

enum prof_kind { PROF_P2P, PROF_WAIT, PROF_COLL, PROF_ICOLL, PROF_START, PROF_INIT };

enum prof_call {
#define X(KIND, NAME, P, A, B, PEER, COMM, TPEER) PROF_ID_##NAME,
#define XP X
#include "calls.def"
#undef X
#undef XP
    PROF_NCALLS
};

struct prof_call_stats {
    uint64_t calls;
    uint64_t bytes;
    double time;
};

/* One rank's totals (seconds; time_* by kind of call). */
struct prof_state {
    int active;                  /* between MPI_Init and MPI_Finalize */
    int sync;                    /* MPIOPT_PROFILE_SYNC=1 */
    int rank, size;
    double t_init, t_final;      /* prof_now() units until prof_finish, then seconds */
    double mono_init;            /* CLOCK_MONOTONIC seconds at t_init */
    double scale;                /* seconds a prof_now() unit (set by prof_finish) */
    double time_kind[6];
    double sync_time;
    struct prof_call_stats call[PROF_NCALLS];
    double *matrix_bytes;        /* [size]: bytes this rank sent to each world rank */
    uint64_t *matrix_msgs;
};

extern struct prof_state prof;
/* 1 while a wrapper runs: a call it makes through another MPI_ symbol (MPICH's Fortran
 * bindings call the C MPI_ functions) is not counted twice. */
extern __thread int prof_depth MPIOPT_TLS_FAST;

extern const char *const prof_call_names[PROF_NCALLS];
extern const enum prof_kind prof_call_kinds[PROF_NCALLS];

/* 1: prof_now() reads the time-stamp counter (a few ns, against some 20-40 for clock_gettime,
 * which matters at a 1 us MPI_Allreduce); every time is then in TSC ticks until prof_finish
 * converts them to seconds with the ticks per second measured over the whole run. Only where the
 * kernel itself trusts the TSC as its clock source (so it is constant-rate and synchronised
 * across cores); MPIOPT_PROFILE_CLOCK=monotonic turns it off. */
extern int prof_use_tsc;

static inline double prof_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double prof_now(void)
{
#if defined(__x86_64__)
    if (prof_use_tsc)
        return (double)__rdtsc();
#endif
    return prof_monotonic();
}

/* The definition a wrapper forwards to: the next one in library search order (so a libmpiopt.so
 * preloaded after this library keeps its MPI_Allreduce), else the vendor's PMPI one. */
void *prof_next(const char *name, const char *pmpi_name);

/* Bytes of count elements of type; of sum(counts[0..n)) elements; of an Alltoallw. */
uint64_t prof_bytes(int count, MPI_Datatype type);
uint64_t prof_bytes_v(const int *counts, MPI_Datatype type, int n);
uint64_t prof_bytes_w(const int *counts, const MPI_Datatype *types, int n);
int prof_comm_size(MPI_Comm comm);
int prof_out_degree(MPI_Comm comm);

/* Persistent requests: remember what a request sends (returns 0: its init call counts no
 * bytes), and count what Start/Startall start (returns the bytes). */
uint64_t prof_persistent(MPI_Request request, uint64_t bytes, int dest, MPI_Comm comm);
uint64_t prof_started(int count, const MPI_Request *requests);
void prof_forget_request(MPI_Request request);

/* One message of `bytes` to rank `dest` of `comm`, into the matrix. */
void prof_matrix_add(int dest, MPI_Comm comm, uint64_t bytes);
/* Barrier before a collective when MPIOPT_PROFILE_SYNC=1. */
void prof_sync(MPI_Comm comm);

static inline void prof_record(enum prof_call id, enum prof_kind kind, double t, uint64_t bytes,
                               int peer, MPI_Comm comm)
{
    struct prof_call_stats *s = &prof.call[id];
    s->calls++;
    s->bytes += bytes;
    s->time += t;
    prof.time_kind[kind] += t;
    if (peer >= 0)
        prof_matrix_add(peer, comm, bytes);
}

/* Call sites (sites.c): 0 off, else the return addresses kept a site (1: the caller's only;
 * MPIOPT_PROFILE_STACK=N: N more). Only a wrapper that finds it set calls prof_site_record. */
#define PROF_SITE_FRAMES 9
extern int prof_sites;
void prof_sites_start(void);
void prof_site_record(enum prof_call id, const void *caller, double t, uint64_t bytes);
void prof_sites_to_seconds(double scale);

/* The timeline (trace.c): MPIOPT_PROFILE_TRACE=1. Only a wrapper that finds prof_trace set
 * calls prof_trace_call. */
extern int prof_trace;
void prof_trace_start(void);    /* in prof_start: a barrier, the common zero of the ranks' clocks */
void prof_trace_stop(void);     /* in prof_finish: a barrier, the common end */
void prof_trace_call(enum prof_call id, double t0, double t1, uint64_t bytes, int peer,
                     MPI_Comm comm);
void prof_trace_region(int index, int begin, double t);

void prof_start(void);          /* after MPI_Init */
/* Around the vendor's MPI_Init / MPI_Init_thread (C or Fortran): the MPI_Init a Fortran binding
 * calls is not a second start. */
int prof_init_enter(void);
void prof_init_leave(int nested, int ok);
void prof_finish(void);         /* before MPI_Finalize: reduce and write */

/* Hardware counters (papi.c): read from prof_start to prof_finish where PAPI works; otherwise
 * reason says why not. */
#define PROF_PAPI_MAX 4
#define PROF_PAPI_NAME 48
struct prof_papi {
    int nevents, running, available;
    char names[PROF_PAPI_MAX][PROF_PAPI_NAME];
    long long values[PROF_PAPI_MAX];
    char reason[200];
};
extern struct prof_papi prof_papi;
void prof_papi_start(void);
void prof_papi_stop(void);

/* output.c */
void prof_write_report(void);

/* regions (state.c) */
#define PROF_MAX_REGIONS 64
#define PROF_REGION_NAME 48
struct prof_region {
    char name[PROF_REGION_NAME];
    uint64_t count;
    double time, mpi_time;
    double t_begin, mpi_begin;
    int open;
};
extern struct prof_region prof_regions[PROF_MAX_REGIONS];
extern int prof_nregions;
double prof_mpi_time(void);

#endif
