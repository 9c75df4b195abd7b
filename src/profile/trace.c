/* The timeline (MPIOPT_PROFILE_TRACE=1, `mpiopt profile --trace`): every wrapped call (enter and
 * leave time, bytes, peer or root, communicator) and every user region, per thread, into a
 * buffer of a fixed number of events (MPIOPT_PROFILE_TRACE_EVENTS, allocated once at the
 * thread's first event); what does not fit is dropped and counted. Nothing is written while the
 * program runs: at MPI_Finalize the ranks write one OTF2 archive together (the OTF2 library,
 * file per location, its MPI collective callbacks on PMPI), DIR/mpiopt-trace/traces.otf2.
 *
 * Clocks: each rank's events are on its own clock (prof_now). A barrier at MPI_Init and another
 * at MPI_Finalize give two moments every rank shares (to within the barrier's exit skew, a few
 * microseconds); a rank's times are mapped linearly so that both land on rank 0's, which corrects
 * both the offset and the drift of clocks on different nodes. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "profile.h"
#include "report.h"
#ifdef MPIOPT_HAVE_OTF2
#define OTF2_MPI_USE_PMPI
#include <otf2/otf2.h>
#include <otf2/OTF2_MPI_Collectives.h>
#endif

int prof_trace;

enum { EV_CALL, EV_REGION_BEGIN, EV_REGION_END };

struct trace_event {
    double t0, t1;                  /* prof_now() units; t1 of a call only */
    uint64_t bytes;
    int32_t what;                   /* enum prof_call, or the index in prof_regions */
    int32_t peer;                   /* rank in the communicator, or -1 */
    int32_t comm;                   /* MPI_Comm_c2f of the communicator, or -1 */
    uint8_t type;
};

#define TRACE_THREADS 64
#define TRACE_DEFAULT_EVENTS (1 << 18)

struct trace_buffer {
    struct trace_event *ev;
    uint64_t n, dropped;
};

static __thread struct trace_buffer *my_buffer MPIOPT_TLS_FAST;
static struct trace_buffer buffers[TRACE_THREADS];
static int nbuffers;
static uint64_t capacity = TRACE_DEFAULT_EVENTS;
static uint64_t untracked;          /* events of threads beyond TRACE_THREADS */
static double sync_begin, sync_end; /* prof_now() after the barriers at init and finalize */

void prof_trace_start(void)
{
    const char *on = getenv("MPIOPT_PROFILE_TRACE");
    const char *events = getenv("MPIOPT_PROFILE_TRACE_EVENTS");
    prof_trace = on && strcmp(on, "1") == 0;
    if (events && atoll(events) > 0)
        capacity = (uint64_t)atoll(events);
    /* the barrier needs every rank: MPIOPT_PROFILE_TRACE must be the same on all (a launcher
     * passes the environment to every rank) */
    if (prof_trace) {
        PMPI_Barrier(MPI_COMM_WORLD);
        sync_begin = prof_now();
    }
}

void prof_trace_stop(void)
{
    if (!prof_trace)
        return;
    PMPI_Barrier(MPI_COMM_WORLD);
    sync_end = prof_now();
}

static struct trace_event *next_event(void)
{
    struct trace_buffer *b = my_buffer;
    if (!b) {
        int i = __atomic_fetch_add(&nbuffers, 1, __ATOMIC_RELAXED);
        if (i >= TRACE_THREADS) {
            __atomic_fetch_add(&untracked, 1, __ATOMIC_RELAXED);
            return NULL;
        }
        b = my_buffer = &buffers[i];
        b->ev = malloc(capacity * sizeof *b->ev);
    }
    if (!b->ev || b->n == capacity) {
        b->dropped++;
        return NULL;
    }
    return &b->ev[b->n++];
}

/* The communicator as an integer: its Fortran handle, or where the MPI has no Fortran handles
 * (the MPI standard ABI, CMakeLists.txt) MPI 5.0's integer form of it. */
#ifdef MPIOPT_HAVE_MPI_FINT
#define COMM_INT(comm) ((int32_t)PMPI_Comm_c2f(comm))
#else
#define COMM_INT(comm) ((int32_t)PMPI_Comm_toint(comm))
#endif

void prof_trace_call(enum prof_call id, double t0, double t1, uint64_t bytes, int peer,
                     MPI_Comm comm)
{
    struct trace_event *e = next_event();
    if (e)
        *e = (struct trace_event){t0, t1, bytes, (int32_t)id, peer,
                                  comm == MPI_COMM_NULL ? -1 : COMM_INT(comm),
                                  EV_CALL};
}

void prof_trace_region(int index, int begin, double t)
{
    struct trace_event *e = next_event();
    if (e)
        *e = (struct trace_event){t, t, 0, index, -1, -1,
                                  begin ? EV_REGION_BEGIN : EV_REGION_END};
}

#ifdef MPIOPT_HAVE_OTF2

static OTF2_FlushType pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef location,
                                void *caller, bool final)
{
    return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *user, OTF2_FileType type, OTF2_LocationRef location)
{
    return 0;
}

static OTF2_FlushCallbacks flush_callbacks = {.otf2_pre_flush = pre_flush,
                                              .otf2_post_flush = post_flush};

enum { ATTR_BYTES, ATTR_PEER, ATTR_COMM };
#define LOCATIONS_PER_RANK TRACE_THREADS

/* Region refs: the MPI calls first, then the user regions (names unified over the ranks). */
static uint32_t region_ref(int local_index, int nregions, char (*names)[PROF_REGION_NAME])
{
    for (int i = 0; i < nregions; i++)
        if (strcmp(names[i], prof_regions[local_index].name) == 0)
            return (uint32_t)(PROF_NCALLS + i);
    return PROF_NCALLS;
}

static OTF2_TimeStamp stamp(double t, double scale, double ratio)
{
    double ns = (t - sync_begin) * scale * ratio * 1e9;
    return ns > 0 ? (OTF2_TimeStamp)ns : 0;
}

/* One thread's events; returns how many were written. */
static uint64_t write_location(OTF2_Archive *archive, OTF2_LocationRef location,
                               const struct trace_buffer *b, double scale, double ratio,
                               int nregions, char (*names)[PROF_REGION_NAME])
{
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(archive, location);
    OTF2_AttributeList *attrs = OTF2_AttributeList_New();
    uint32_t open[PROF_MAX_REGIONS];
    int depth = 0;
    OTF2_TimeStamp last = 0;
    for (uint64_t i = 0; w && attrs && i < b->n; i++) {
        const struct trace_event *e = &b->ev[i];
        OTF2_TimeStamp t0 = stamp(e->t0, scale, ratio);
        if (t0 < last)
            t0 = last;      /* OTF2 wants the times of a location in order */
        if (e->type == EV_CALL) {
            OTF2_TimeStamp t1 = stamp(e->t1, scale, ratio);
            if (t1 < t0)
                t1 = t0;
            OTF2_AttributeList_AddUint64(attrs, ATTR_BYTES, e->bytes);
            OTF2_AttributeList_AddInt32(attrs, ATTR_PEER, e->peer);
            OTF2_AttributeList_AddInt32(attrs, ATTR_COMM, e->comm);
            OTF2_EvtWriter_Enter(w, attrs, t0, (OTF2_RegionRef)e->what);
            OTF2_EvtWriter_Leave(w, NULL, t1, (OTF2_RegionRef)e->what);
            last = t1;
        } else if (e->type == EV_REGION_BEGIN && depth < PROF_MAX_REGIONS) {
            open[depth] = region_ref(e->what, nregions, names);
            OTF2_EvtWriter_Enter(w, NULL, t0, open[depth++]);
            last = t0;
        } else if (e->type == EV_REGION_END && depth > 0) {
            /* regions close innermost first (mpiopt_region_end closes the named one; a
             * region closed out of order ends the ones opened inside it here) */
            uint32_t ref = region_ref(e->what, nregions, names);
            int k = depth - 1;
            while (k >= 0 && open[k] != ref)
                k--;
            while (k >= 0 && depth > k) {
                OTF2_EvtWriter_Leave(w, NULL, t0, open[--depth]);
            }
            last = t0;
        }
    }
    while (w && depth > 0)  /* open at the end (their end was dropped) */
        OTF2_EvtWriter_Leave(w, NULL, last, open[--depth]);
    uint64_t n = 0;
    if (w) {
        OTF2_EvtWriter_GetNumberOfEvents(w, &n);
        OTF2_Archive_CloseEvtWriter(archive, w);
    }
    if (attrs)
        OTF2_AttributeList_Delete(attrs);
    return n;
}

static void write_global_defs(OTF2_Archive *archive, const uint64_t *events, int nregions,
                              char (*names)[PROF_REGION_NAME], uint64_t length)
{
    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(archive);
    if (!g)
        return;
    OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 0, length, OTF2_UNDEFINED_TIMESTAMP);
    uint32_t s = 0;
    char text[64];
    OTF2_GlobalDefWriter_WriteString(g, s++, "");                  /* 0 */
    OTF2_GlobalDefWriter_WriteString(g, s++, "node");              /* 1 */
    OTF2_GlobalDefWriter_WriteString(g, s++, "MPI call");          /* 2 */
    OTF2_GlobalDefWriter_WriteString(g, s++, "user region (MPI_Pcontrol)"); /* 3 */
    static const char *const attr[3][2] = {{"bytes", "bytes this rank sends (receives)"},
                                           {"peer", "peer or root, a rank of the communicator"},
                                           {"communicator", "MPI_Comm_c2f of the communicator"}};
    for (int a = 0; a < 3; a++) {
        OTF2_GlobalDefWriter_WriteString(g, s, attr[a][0]);
        OTF2_GlobalDefWriter_WriteString(g, s + 1, attr[a][1]);
        OTF2_GlobalDefWriter_WriteAttribute(g, (OTF2_AttributeRef)a, s, s + 1,
                                            a == ATTR_BYTES ? OTF2_TYPE_UINT64 : OTF2_TYPE_INT32);
        s += 2;
    }
    for (int c = 0; c < PROF_NCALLS + nregions; c++) {
        const char *name = c < PROF_NCALLS ? prof_call_names[c] : names[c - PROF_NCALLS];
        OTF2_GlobalDefWriter_WriteString(g, s, name);
        OTF2_GlobalDefWriter_WriteRegion(g, (OTF2_RegionRef)c, s, s, c < PROF_NCALLS ? 2 : 3,
                                         c < PROF_NCALLS ? OTF2_REGION_ROLE_FUNCTION
                                                         : OTF2_REGION_ROLE_CODE,
                                         c < PROF_NCALLS ? OTF2_PARADIGM_MPI : OTF2_PARADIGM_USER,
                                         OTF2_REGION_FLAG_NONE, 0, 0, 0);
        s++;
    }
    OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, 1, 1, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    for (int r = 0; r < prof.size; r++) {
        snprintf(text, sizeof text, "rank %d", r);
        OTF2_GlobalDefWriter_WriteString(g, s, text);
        OTF2_GlobalDefWriter_WriteLocationGroup(g, (OTF2_LocationGroupRef)r, s++,
                                                OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                OTF2_UNDEFINED_LOCATION_GROUP);
        for (int t = 0; t < LOCATIONS_PER_RANK; t++) {
            uint64_t n = events[(size_t)r * (LOCATIONS_PER_RANK + 1) + 1 + t];
            if (t >= (int)events[(size_t)r * (LOCATIONS_PER_RANK + 1)])
                break;
            snprintf(text, sizeof text, "rank %d thread %d", r, t);
            OTF2_GlobalDefWriter_WriteString(g, s, text);
            OTF2_GlobalDefWriter_WriteLocation(g, (OTF2_LocationRef)r * LOCATIONS_PER_RANK + t,
                                               s++, OTF2_LOCATION_TYPE_CPU_THREAD, n,
                                               (OTF2_LocationGroupRef)r);
        }
    }
    OTF2_Archive_CloseGlobalDefWriter(archive, g);
}

static int write_otf2(const char *dir, struct prof_trace_summary *out, int nregions,
                      char (*names)[PROF_REGION_NAME], double scale)
{
    /* the linear map of this rank's clock onto rank 0's (see the top of this file) */
    double span = (sync_end - sync_begin) * scale, span0 = span;
    PMPI_Bcast(&span0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double ratio = span > 0 ? span0 / span : 1.0;
    /* OTF2 does not write over an archive (it crashed when asked to): rank 0 picks the first
     * of mpiopt-trace, mpiopt-trace.1, ... that does not exist */
    if (prof.rank == 0) {
        struct stat st;
        out->path[0] = 0;
        for (int k = 0; k < 100 && !out->path[0]; k++) {
            char name[4096];
            snprintf(name, sizeof name, k ? "%s/mpiopt-trace.%d" : "%s/mpiopt-trace", dir, k);
            if (stat(name, &st) != 0 && errno == ENOENT)
                snprintf(out->path, sizeof out->path, "%s", name);
        }
    }
    PMPI_Bcast(out->path, (int)sizeof out->path, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (!out->path[0])
        return -1;
    OTF2_Archive *archive = OTF2_Archive_Open(out->path, "traces", OTF2_FILEMODE_WRITE,
                                              1 << 20, 4 << 20, OTF2_SUBSTRATE_POSIX,
                                              OTF2_COMPRESSION_NONE);
    int ok = archive != NULL;
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        if (archive)
            OTF2_Archive_Close(archive);
        return -1;
    }
    OTF2_Archive_SetFlushCallbacks(archive, &flush_callbacks, NULL);
    OTF2_MPI_Archive_SetCollectiveCallbacks(archive, MPI_COMM_WORLD, MPI_COMM_NULL);
    OTF2_Archive_SetCreator(archive, "mpiopt libmpiopt-profile");
    OTF2_Archive_OpenEvtFiles(archive);
    /* [threads, events of each] per rank, for the global definitions */
    uint64_t mine[LOCATIONS_PER_RANK + 1] = {0};
    int nthreads = nbuffers < TRACE_THREADS ? nbuffers : TRACE_THREADS;
    mine[0] = (uint64_t)nthreads;
    for (int t = 0; t < nthreads; t++)
        mine[1 + t] = write_location(archive, (OTF2_LocationRef)prof.rank * LOCATIONS_PER_RANK + t,
                                     &buffers[t], scale, ratio, nregions, names);
    OTF2_Archive_CloseEvtFiles(archive);
    OTF2_Archive_OpenDefFiles(archive);
    for (int t = 0; t < nthreads; t++) {
        OTF2_DefWriter *d = OTF2_Archive_GetDefWriter(
            archive, (OTF2_LocationRef)prof.rank * LOCATIONS_PER_RANK + t);
        if (d)
            OTF2_Archive_CloseDefWriter(archive, d);
    }
    OTF2_Archive_CloseDefFiles(archive);
    uint64_t *all = prof.rank == 0
                        ? calloc((size_t)prof.size * (LOCATIONS_PER_RANK + 1), sizeof *all) : NULL;
    PMPI_Gather(mine, LOCATIONS_PER_RANK + 1, MPI_UINT64_T, all, LOCATIONS_PER_RANK + 1,
                MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (prof.rank == 0 && all)
        write_global_defs(archive, all, nregions, names, (uint64_t)(span0 * 1e9));
    free(all);
    OTF2_Archive_Close(archive);
    return 0;
}
#endif

void prof_trace_write(const char *dir, struct prof_trace_summary *out, int nregions,
                      char (*names)[PROF_REGION_NAME], double scale)
{
    memset(out, 0, sizeof *out);
    int on = prof_trace;
    PMPI_Allreduce(MPI_IN_PLACE, &on, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!on)
        return;
    out->enabled = 1;
    out->capacity = (double)capacity;
    double counts[2] = {(double)untracked, 0};
    for (int t = 0; t < nbuffers && t < TRACE_THREADS; t++) {
        counts[0] += (double)buffers[t].dropped;
        counts[1] += (double)buffers[t].n;
    }
    double sums[2];
    PMPI_Reduce(counts, sums, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    out->dropped = sums[0];
    out->recorded = sums[1];
#ifdef MPIOPT_HAVE_OTF2
    out->written = write_otf2(dir, out, nregions, names, scale) == 0;
    if (!out->written)
        snprintf(out->reason, sizeof out->reason, "cannot create the OTF2 archive in %.200s "
                 "(mpiopt-trace and mpiopt-trace.1 to .99 exist, or no permission)", dir);
#else
    snprintf(out->reason, sizeof out->reason, "libmpiopt-profile was built without OTF2 "
             "(Debian: libotf2-trace-dev)");
#endif
    for (int t = 0; t < nbuffers && t < TRACE_THREADS; t++) {
        free(buffers[t].ev);
        buffers[t].ev = NULL;
    }
}
