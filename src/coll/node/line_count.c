/* The counting build's counters (line_count.h says what is counted and why). Compiled to nothing
 * unless CMake's MPIOPT_COUNT_LINES is on. */
#include "coll/node/line_count.h"

#ifdef MPIOPT_COUNT_LINES
#include <ctype.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The lines one call has read, to count each once: open addressing, an entry valid for the call
 * whose number it carries (no clearing between calls). A flat 4 KiB reduce's root at p = 128
 * reads about 8,300 lines a call; past LINES_SEEN_MAX a line counts as often as it is read. */
#define LINES_SEEN_MAX (1u << 15)
static struct {
    uintptr_t line;
    uint32_t call;
} seen[LINES_SEEN_MAX];

/* One call's counts, or their sum over calls */
typedef struct {
    uint64_t read, flags, numa, socket;             /* slot lines, and the stages' flag lines */
    uint64_t stage, stage_numa, stage_socket;       /* stage data lines, every read */
    uint64_t message, message_numa, message_socket; /* bytes received */
} counts;

typedef struct {
    uint64_t calls, read_max;
    counts all, first;
} totals;

static const char *const kind_name[MPIOPT_COUNT_KINDS] = {"allreduce", "reduce"};
static totals kinds[MPIOPT_COUNT_KINDS];

static struct {
    int active, depth, kind, windowed, received;
    uint32_t number;                /* the calls begun, for `seen` */
    uint64_t seen_used;
    counts c;
} now;

/* the windows of the current call: the slots and the stages */
static char *const *slots, *const *stages;
static size_t slot_bytes, stage_bytes;
static int size, rank, world_rank = -1, last_size, last_rank;

/* the described node: cores, and cores a NUMA node and a package */
static int topology_read, cores = 1, cores_numa = 1, cores_package = 1;
static char topology[256];

/* HWLOC_SYNTHETIC's levels ("package:2 numa:2 l3:1 core:16 pu:1", attributes in brackets
 * ignored): the product of the counts down to each level is how many of it the node has. */
static void read_topology(void)
{
    topology_read = 1;
    const char *s = getenv("HWLOC_SYNTHETIC");
    if (!s)
        return;
    snprintf(topology, sizeof topology, "%s", s);
    long product = 1, packages = 0, numas = 0, core_level = 0, pus = 0;
    while (*s) {
        while (*s && isspace((unsigned char)*s))
            s++;
        const char *name = s;
        while (*s && *s != ':' && !isspace((unsigned char)*s))
            s++;
        size_t len = (size_t)(s - name);
        if (*s != ':')
            break;
        long n = strtol(s + 1, (char **)&s, 10);
        while (*s == '(' || (*s && !isspace((unsigned char)*s))) {   /* "(memory=...)" */
            if (*s == '(')
                while (*s && *s != ')')
                    s++;
            if (*s)
                s++;
        }
        if (n < 1 || product > (1L << 24))
            break;
        product *= n;
        if (!strncasecmp(name, "pack", 4) || !strncasecmp(name, "socket", len < 6 ? 6 : len))
            packages = product;
        else if (!strncasecmp(name, "numa", 4) || (len == 4 && !strncasecmp(name, "node", 4)))
            numas = product;
        else if (len == 4 && !strncasecmp(name, "core", 4))
            core_level = product;
        else if (len == 2 && !strncasecmp(name, "pu", 2))
            pus = product;
    }
    cores = (int)(core_level ? core_level : pus ? pus : product);
    cores_package = packages ? cores / (int)packages : cores;
    cores_numa = numas ? cores / (int)numas : cores_package;
    if (cores_package < 1)
        cores_package = 1;
    if (cores_numa < 1)
        cores_numa = 1;
}

static void count_message(int peer, size_t bytes);

void mpiopt_count_begin(int kind)
{
    if (now.active) {   /* an algorithm run within a counted call: part of that call */
        now.depth++;
        return;
    }
    uint32_t number = now.number + 1;
    if (number == 0)
        number = 1, memset(seen, 0, sizeof seen);
    memset(&now, 0, sizeof now);
    now.number = number;
    now.active = 1;
    now.kind = kind;
    slots = stages = NULL;
    mpiopt_count_message_hook = count_message;
}

/* this rank is `me` of p in the current call */
static void place(int p, int me)
{
    if (!topology_read)
        read_topology();
    if (world_rank < 0)
        PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    size = last_size = p;
    rank = last_rank = me;
}

void mpiopt_count_comm(int me, int p)
{
    if (now.active)
        place(p, me);
}

void mpiopt_count_window(void *const *all, size_t bytes, int p, int me)
{
    if (!now.active)
        return;
    place(p, me);
    slots = (char *const *)all;
    slot_bytes = bytes;
    now.windowed = 1;
}

void mpiopt_count_stages(void *const *all, size_t bytes, int p, int me)
{
    if (!now.active)
        return;
    place(p, me);
    stages = (char *const *)all;
    stage_bytes = bytes;
    now.windowed = 1;
}

/* The rank whose part of `base` (size parts of `part` bytes) holds addr, or -1 */
static int owner_in(char *const *base, size_t part, uintptr_t a)
{
    for (int r = 0; base && r < size; r++)
        if (a >= (uintptr_t)base[r] && a < (uintptr_t)base[r] + part)
            return r;
    return -1;
}

static int owner(uintptr_t a)
{
    return owner_in(slots, slot_bytes, a);
}

/* whether rank / comm rank r's core is on another NUMA node (*numa) / package (*socket) than
 * this rank's: rank r on core r mod the cores */
static void crossing(int r, int *numa, int *socket)
{
    int core_me = rank % cores, core_r = r % cores;
    *numa = core_me / cores_numa != core_r / cores_numa;
    *socket = core_me / cores_package != core_r / cores_package;
}

static uint64_t lines_of(uintptr_t a, size_t bytes)
{
    return (uint64_t)(((a + bytes - 1) >> 6) - (a >> 6) + 1);
}

/* A read of lines rank r wrote in a stage: every line, every time. Where `data`, the stage
 * lines; else (a flag) the lines read. */
static void count_stage_lines(int r, uintptr_t a, size_t bytes, int data)
{
    if (r == rank)
        return;
    int numa, socket;
    crossing(r, &numa, &socket);
    uint64_t n = lines_of(a, bytes);
    if (data) {
        now.c.stage += n;
        now.c.stage_numa += numa ? n : 0;
        now.c.stage_socket += socket ? n : 0;
    } else {
        now.c.read += n;
        now.c.numa += numa ? n : 0;
        now.c.socket += socket ? n : 0;
    }
}

/* A read in the stage window, counted by the rank whose stage it is; 0 where a is not there */
static int stage_read(uintptr_t a, size_t bytes, int data)
{
    int r = owner_in(stages, stage_bytes, a);
    if (r < 0)
        return 0;
    count_stage_lines(r, a, bytes, data);
    return 1;
}

void mpiopt_count_read_each(const void *addr, size_t bytes)
{
    if (now.active && bytes > 0)
        stage_read((uintptr_t)addr, bytes, 1);
}

void mpiopt_count_read_written_by(const void *addr, size_t bytes, int writer)
{
    if (now.active && bytes > 0 && stages)
        count_stage_lines(writer, (uintptr_t)addr, bytes, 1);
}

/* MPIOPT_COUNT_MESSAGE, through the engine's hook while a call is counted */
static void count_message(int peer, size_t bytes)
{
    if (!now.active || peer == rank)
        return;
    if (!topology_read)
        read_topology();
    int numa, socket;
    crossing(peer, &numa, &socket);
    now.received = 1;
    now.c.message += bytes;
    now.c.message_numa += numa ? bytes : 0;
    now.c.message_socket += socket ? bytes : 0;
}

/* whether `line` is new to this call (and now recorded) */
static int first_sight(uintptr_t line)
{
    if (now.seen_used >= LINES_SEEN_MAX / 2)
        return 1;
    for (uint32_t h = (uint32_t)((line >> 6) * 2654435761u) & (LINES_SEEN_MAX - 1);;
         h = (h + 1) & (LINES_SEEN_MAX - 1)) {
        if (seen[h].call != now.number) {
            seen[h].call = now.number;
            seen[h].line = line;
            now.seen_used++;
            return 1;
        }
        if (seen[h].line == line)
            return 0;
    }
}

void mpiopt_count_read(const void *addr, size_t bytes)
{
    if (!now.active || bytes == 0)
        return;
    uintptr_t a = (uintptr_t)addr;
    if (stage_read(a, bytes, 0))    /* a stage's flag: every read (line_count.h) */
        return;
    int r = owner(a), numa, socket;
    if (r < 0 || r == rank)
        return;
    crossing(r, &numa, &socket);
    for (uintptr_t line = a & ~(uintptr_t)63; line < a + bytes; line += 64)
        if (first_sight(line)) {
            now.c.read++;
            now.c.numa += (uint64_t)numa;
            now.c.socket += (uint64_t)socket;
        }
}

void mpiopt_count_flag_write(void)
{
    if (now.active)
        now.c.flags++;
}

static void add(counts *sum, const counts *x)
{
    uint64_t *s = (uint64_t *)sum;
    const uint64_t *v = (const uint64_t *)x;
    for (size_t i = 0; i < sizeof *x / sizeof *v; i++)
        s[i] += v[i];
}

void mpiopt_count_end(void)
{
    if (!now.active)
        return;
    if (now.depth > 0) {
        now.depth--;
        return;
    }
    now.active = 0;
    mpiopt_count_message_hook = NULL;
    if (!now.windowed && !now.received)
        return;     /* the call took another way (the vendor's, or nothing to receive) */
    totals *t = &kinds[now.kind];
    if (t->calls++ == 0)
        t->first = now.c;
    add(&t->all, &now.c);
    if (now.c.read > t->read_max)
        t->read_max = now.c.read;
}

/* x's fields ("lines_read": ..., "message_socket_bytes": ...) into line at n; the new length */
static int put_counts(char *line, int n, size_t room, const counts *x)
{
    if (n >= (int)room)
        return n;
    return n + snprintf(line + n, room - (size_t)n,
                        "\"lines_read\": %llu, \"flag_lines_written\": %llu, "
                        "\"numa_lines\": %llu, \"socket_lines\": %llu, \"stage_lines\": %llu, "
                        "\"stage_numa_lines\": %llu, \"stage_socket_lines\": %llu, "
                        "\"message_bytes\": %llu, \"message_numa_bytes\": %llu, "
                        "\"message_socket_bytes\": %llu",
                        (unsigned long long)x->read, (unsigned long long)x->flags,
                        (unsigned long long)x->numa, (unsigned long long)x->socket,
                        (unsigned long long)x->stage, (unsigned long long)x->stage_numa,
                        (unsigned long long)x->stage_socket, (unsigned long long)x->message,
                        (unsigned long long)x->message_numa,
                        (unsigned long long)x->message_socket);
}

/* At exit: one JSON line of this rank's counts */
__attribute__((destructor)) static void write_counts(void)
{
    int any = 0;
    for (int k = 0; k < MPIOPT_COUNT_KINDS; k++)
        any |= kinds[k].calls > 0;
    if (!any)
        return;
    char line[4096];
    int n = snprintf(line, sizeof line,
                     "{\"rank\": %d, \"comm_rank\": %d, \"size\": %d, \"topology\": \"%s\", "
                     "\"cores\": %d, \"cores_per_numa\": %d, \"cores_per_package\": %d",
                     world_rank, last_rank, last_size, topology, cores, cores_numa, cores_package);
    for (int k = 0; k < MPIOPT_COUNT_KINDS && n < (int)sizeof line; k++) {
        const totals *t = &kinds[k];
        if (!t->calls)
            continue;
        n += snprintf(line + n, sizeof line - (size_t)n,
                      ", \"%s\": {\"calls\": %llu, \"lines_read_max\": %llu, ", kind_name[k],
                      (unsigned long long)t->calls, (unsigned long long)t->read_max);
        n = put_counts(line, n, sizeof line, &t->all);
        if (n < (int)sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n, ", \"first\": {");
        n = put_counts(line, n, sizeof line, &t->first);
        if (n < (int)sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n, "}}");
    }
    if (n < (int)sizeof line - 2)
        n += snprintf(line + n, sizeof line - (size_t)n, "}\n");
    const char *path = getenv("MPIOPT_COUNT_LINES_FILE");
    int fd = path && *path ? open(path, O_WRONLY | O_APPEND | O_CREAT, 0644) : -1;
    if (fd >= 0) {
        ssize_t wrote = write(fd, line, (size_t)n);     /* one write: lines do not interleave */
        (void)wrote;
        close(fd);
    } else {
        fprintf(stderr, "mpiopt line counts: %s", line);
    }
}
#endif
