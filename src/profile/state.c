/* Per-rank bookkeeping of libmpiopt-profile: start and end of the measurement, sizes of
 * messages, the communication matrix, persistent requests and user regions. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"
#include "mpiopt_profile.h"
#include "../interpose/chain.h"

struct prof_state prof;
int prof_use_tsc;
__thread int prof_depth MPIOPT_TLS_FAST;
struct prof_region prof_regions[PROF_MAX_REGIONS];
int prof_nregions;

const char *const prof_call_names[PROF_NCALLS] = {
#define X(KIND, NAME, P, A, B, PEER, COMM, TPEER) "MPI_" #NAME,
#ifdef PROF_PERSISTENT_COLL_PREFIX
#define XP(KIND, NAME, P, A, B, PEER, COMM, TPEER) PROF_PERSISTENT_COLL_PREFIX #NAME,
#else
#define XP X
#endif
#include "calls.def"
#undef X
#undef XP
};

const enum prof_kind prof_call_kinds[PROF_NCALLS] = {
#define X(KIND, NAME, P, A, B, PEER, COMM, TPEER) PROF_##KIND,
#define XP X
#include "calls.def"
#undef X
#undef XP
};

/* The next tool's `name` (libmpiopt's, with the profiler in front of it), else the first
 * `pmpi_name` of the process: libmpiopt's where the profiler is behind it (chain.h), else the
 * vendor's. */
void *prof_next(const char *name, const char *pmpi_name)
{
    void *f = mpiopt_chain_next(name);
    if (!f)
        f = dlsym(RTLD_DEFAULT, pmpi_name);
    if (!f) {
        fprintf(stderr, "libmpiopt-profile: neither %s nor %s found (a program linked with "
                "-lmpiopt-profile needs -Wl,--no-as-needed before it, or the linker drops the "
                "MPI library this forwards to)\n", name, pmpi_name);
        abort();
    }
    return f;
}

uint64_t prof_bytes(int count, MPI_Datatype type)
{
    int size = 0;
    if (count <= 0 || type == MPI_DATATYPE_NULL)
        return 0;
    PMPI_Type_size(type, &size);
    return (uint64_t)count * (uint64_t)size;
}

uint64_t prof_bytes_v(const int *counts, MPI_Datatype type, int n)
{
    uint64_t elements = 0;
    for (int i = 0; counts && i < n; i++)
        elements += counts[i] > 0 ? (uint64_t)counts[i] : 0;
    return elements ? elements * prof_bytes(1, type) : 0;
}

uint64_t prof_bytes_w(const int *counts, const MPI_Datatype *types, int n)
{
    uint64_t bytes = 0;
    for (int i = 0; counts && types && i < n; i++)
        bytes += prof_bytes(counts[i], types[i]);
    return bytes;
}

int prof_comm_size(MPI_Comm comm)
{
    int inter = 0, size = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_size(comm, &size);
    else
        PMPI_Comm_size(comm, &size);
    return size;
}

int prof_out_degree(MPI_Comm comm)
{
    int topo = MPI_UNDEFINED, n = 0, indegree = 0, weighted = 0;
    PMPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
        PMPI_Cartdim_get(comm, &n);
        return 2 * n;
    }
    if (topo == MPI_GRAPH) {
        int rank;
        PMPI_Comm_rank(comm, &rank);
        PMPI_Graph_neighbors_count(comm, rank, &n);
        return n;
    }
    if (topo == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(comm, &indegree, &n, &weighted);
        return n;
    }
    return 0;
}

/* ---- communication matrix: destinations are world ranks; a communicator's map from its
 * ranks to world ranks is cached on it as an attribute (freed with it) ---- */

static int world_map_key = MPI_KEYVAL_INVALID;

static int free_world_map(MPI_Comm comm, int key, void *map, void *extra)
{
    free(map);
    return MPI_SUCCESS;
}

static const int *world_map(MPI_Comm comm)
{
    int *map = NULL, found = 0;
    if (world_map_key == MPI_KEYVAL_INVALID)
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_world_map, &world_map_key, NULL);
    PMPI_Comm_get_attr(comm, world_map_key, &map, &found);
    if (found)
        return map;
    int n = 0, inter = 0;
    MPI_Group group, world;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_group(comm, &group);
    else
        PMPI_Comm_group(comm, &group);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    PMPI_Group_size(group, &n);
    map = malloc(2 * (size_t)n * sizeof *map + sizeof *map);
    if (!map)
        return NULL;
    for (int i = 0; i < n; i++)
        map[n + i] = i;
    PMPI_Group_translate_ranks(group, n, map + n, world, map);
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
    PMPI_Comm_set_attr(comm, world_map_key, map);
    return map;
}

void prof_matrix_add(int dest, MPI_Comm comm, uint64_t bytes)
{
    if (dest < 0 || comm == MPI_COMM_NULL || !prof.matrix_bytes)
        return;
    int world = dest;
    if (comm != MPI_COMM_WORLD) {
        const int *map = world_map(comm);
        world = map ? map[dest] : MPI_UNDEFINED;
    }
    if (world < 0 || world >= prof.size)
        return;
    prof.matrix_bytes[world] += (double)bytes;
    prof.matrix_msgs[world]++;
}

void prof_sync(MPI_Comm comm)
{
    double t0 = prof_now();
    PMPI_Barrier(comm);
    prof.sync_time += prof_now() - t0;
}

/* ---- persistent requests: open addressing on the handle's bits ---- */

#define PERSISTENT_SLOTS 4096
struct persistent {
    MPI_Request request;
    int used;
    int dest;            /* world rank, or -1 */
    uint64_t bytes;
};
static struct persistent persistent[PERSISTENT_SLOTS];

static size_t slot_of(MPI_Request r)
{
    uint64_t h = 0;
    memcpy(&h, &r, sizeof r < sizeof h ? sizeof r : sizeof h);
    h *= 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 52) % PERSISTENT_SLOTS;
}

static struct persistent *find(MPI_Request r, int insert)
{
    size_t s = slot_of(r);
    for (size_t i = 0; i < PERSISTENT_SLOTS; i++) {
        struct persistent *p = &persistent[(s + i) % PERSISTENT_SLOTS];
        if (p->used && p->request == r)
            return p;
        if (!p->used)
            return insert ? p : NULL;
    }
    return NULL;    /* full: that request goes uncounted */
}

uint64_t prof_persistent(MPI_Request request, uint64_t bytes, int dest, MPI_Comm comm)
{
    struct persistent *p = find(request, 1);
    if (!p)
        return 0;
    int world = dest;
    if (dest >= 0 && comm != MPI_COMM_WORLD) {
        const int *map = world_map(comm);
        world = map ? map[dest] : -1;
    }
    *p = (struct persistent){request, 1, world, bytes};
    return 0;
}

uint64_t prof_started(int count, const MPI_Request *requests)
{
    uint64_t bytes = 0;
    for (int i = 0; i < count; i++) {
        struct persistent *p = find(requests[i], 0);
        if (!p)
            continue;
        bytes += p->bytes;
        if (p->dest >= 0)
            prof_matrix_add(p->dest, MPI_COMM_WORLD, p->bytes);
    }
    return bytes;
}

void prof_forget_request(MPI_Request request)
{
    struct persistent *p = find(request, 0);
    if (!p)
        return;
    /* re-insert the rest of the cluster so that lookups past this slot still find theirs */
    p->used = 0;
    size_t s = (size_t)(p - persistent);
    for (size_t i = 1; i < PERSISTENT_SLOTS; i++) {
        struct persistent *q = &persistent[(s + i) % PERSISTENT_SLOTS];
        if (!q->used)
            break;
        struct persistent moved = *q;
        q->used = 0;
        *find(moved.request, 1) = moved;
    }
}

/* ---- start and end ---- */

double prof_mpi_time(void)
{
    double t = prof.sync_time;
    for (int k = 0; k < 6; k++)
        t += prof.time_kind[k];
    return t;
}

/* The TSC is used where the kernel's clock source is it (see prof_use_tsc). */
static int tsc_trusted(void)
{
#if defined(__x86_64__)
    const char *clock = getenv("MPIOPT_PROFILE_CLOCK");
    if (clock && strcmp(clock, "monotonic") == 0)
        return 0;
    char source[32] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f) {
        if (!fgets(source, sizeof source, f))
            source[0] = 0;
        fclose(f);
    }
    return strncmp(source, "tsc", 3) == 0 && (source[3] == '\n' || source[3] == 0);
#else
    return 0;
#endif
}

/* Every accumulated time from prof_now() units to seconds. */
static void to_seconds(double scale)
{
    prof.t_init *= scale;
    prof.t_final *= scale;
    prof.sync_time *= scale;
    for (int k = 0; k < 6; k++)
        prof.time_kind[k] *= scale;
    for (int c = 0; c < PROF_NCALLS; c++)
        prof.call[c].time *= scale;
    for (int i = 0; i < prof_nregions; i++) {
        prof_regions[i].time *= scale;
        prof_regions[i].mpi_time *= scale;
    }
    prof_sites_to_seconds(scale);
}

void prof_start(void)
{
    const char *sync = getenv("MPIOPT_PROFILE_SYNC");
    prof.sync = sync && strcmp(sync, "1") == 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &prof.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &prof.size);
    prof.matrix_bytes = calloc((size_t)prof.size, sizeof *prof.matrix_bytes);
    prof.matrix_msgs = calloc((size_t)prof.size, sizeof *prof.matrix_msgs);
    prof_papi_start();
    prof_sites_start();
    prof_use_tsc = tsc_trusted();
    /* on prof_now()'s clock, chosen just above; its barrier before the measured interval */
    prof_trace_start();
    prof.mono_init = prof_monotonic();
    prof.t_init = prof_now();
    prof.active = 1;
}

int prof_init_enter(void)
{
    int nested = prof_depth;
    prof_depth = 1;
    return nested;
}

void prof_init_leave(int nested, int ok)
{
    prof_depth = nested;
    if (!nested && ok)
        prof_start();
}

void prof_finish(void)
{
    prof.t_final = prof_now();
    double seconds = prof_monotonic() - prof.mono_init;
    prof_trace_stop();          /* its barrier after the measured interval */
    prof_papi_stop();
    for (int i = prof_nregions - 1; i >= 0; i--)
        if (prof_regions[i].open)
            mpiopt_region_end(prof_regions[i].name);
    prof.active = 0;
    double units = prof.t_final - prof.t_init;
    prof.scale = prof_use_tsc && units > 0 ? seconds / units : 1.0;
    to_seconds(prof.scale);
    prof_write_report();
}

/* ---- user regions ---- */

static struct prof_region *region(const char *name, int create)
{
    for (int i = 0; i < prof_nregions; i++)
        if (strncmp(prof_regions[i].name, name, PROF_REGION_NAME - 1) == 0)
            return &prof_regions[i];
    if (!create || prof_nregions == PROF_MAX_REGIONS)
        return NULL;
    struct prof_region *r = &prof_regions[prof_nregions++];
    snprintf(r->name, sizeof r->name, "%s", name);
    return r;
}

static int open_stack[PROF_MAX_REGIONS], open_depth;

void mpiopt_region_begin(const char *name)
{
    struct prof_region *r = region(name ? name : "?", 1);
    if (!r || r->open || open_depth == PROF_MAX_REGIONS)
        return;
    r->open = 1;
    r->t_begin = prof_now();
    if (prof_trace)
        prof_trace_region((int)(r - prof_regions), 1, r->t_begin);
    r->mpi_begin = prof_mpi_time();
    open_stack[open_depth++] = (int)(r - prof_regions);
}

void mpiopt_region_end(const char *name)
{
    struct prof_region *r = NULL;
    if (name)
        r = region(name, 0);
    else if (open_depth)
        r = &prof_regions[open_stack[open_depth - 1]];
    if (!r || !r->open)
        return;
    r->open = 0;
    r->count++;
    double now = prof_now();
    if (prof_trace)
        prof_trace_region((int)(r - prof_regions), 0, now);
    r->time += now - r->t_begin;
    r->mpi_time += prof_mpi_time() - r->mpi_begin;
    for (int i = open_depth - 1; i >= 0; i--)
        if (open_stack[i] == (int)(r - prof_regions)) {
            memmove(open_stack + i, open_stack + i + 1, (size_t)(open_depth - i - 1) * sizeof(int));
            open_depth--;
            break;
        }
}
