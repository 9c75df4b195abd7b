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

typedef struct {
    uint64_t calls, read, read_max, flags, numa, socket;
    uint64_t first_read, first_flags, first_numa, first_socket;
} totals;

static const char *const kind_name[MPIOPT_COUNT_KINDS] = {"allreduce", "reduce"};
static totals kinds[MPIOPT_COUNT_KINDS];

static struct {
    int active, kind, windowed;
    uint32_t number;                /* the calls begun, for `seen` */
    uint64_t read, flags, numa, socket, seen_used;
} now;

/* the window of the current call */
static char *const *slots;
static size_t slot_bytes;
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

void mpiopt_count_begin(int kind)
{
    uint32_t number = now.number + 1;
    if (number == 0)
        number = 1, memset(seen, 0, sizeof seen);
    memset(&now, 0, sizeof now);
    now.number = number;
    now.active = 1;
    now.kind = kind;
    slots = NULL;
}

void mpiopt_count_window(void *const *all, size_t bytes, int p, int me)
{
    if (!now.active)
        return;
    if (!topology_read)
        read_topology();
    if (world_rank < 0)
        PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    slots = (char *const *)all;
    slot_bytes = bytes;
    size = last_size = p;
    rank = last_rank = me;
    now.windowed = 1;
}

/* The rank whose slot holds addr, or -1 */
static int owner(uintptr_t a)
{
    for (int r = 0; r < size; r++)
        if (a >= (uintptr_t)slots[r] && a < (uintptr_t)slots[r] + slot_bytes)
            return r;
    return -1;
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
    if (!now.active || !slots || bytes == 0)
        return;
    uintptr_t a = (uintptr_t)addr;
    int r = owner(a);
    if (r < 0 || r == rank)
        return;
    int core_me = rank % cores, core_r = r % cores;
    int numa = core_me / cores_numa != core_r / cores_numa;
    int socket = core_me / cores_package != core_r / cores_package;
    for (uintptr_t line = a & ~(uintptr_t)63; line < a + bytes; line += 64)
        if (first_sight(line)) {
            now.read++;
            now.numa += (uint64_t)numa;
            now.socket += (uint64_t)socket;
        }
}

void mpiopt_count_flag_write(void)
{
    if (now.active)
        now.flags++;
}

void mpiopt_count_end(void)
{
    if (!now.active)
        return;
    now.active = 0;
    if (!now.windowed)
        return;     /* the call took another algorithm */
    totals *t = &kinds[now.kind];
    if (t->calls++ == 0) {
        t->first_read = now.read;
        t->first_flags = now.flags;
        t->first_numa = now.numa;
        t->first_socket = now.socket;
    }
    t->read += now.read;
    t->flags += now.flags;
    t->numa += now.numa;
    t->socket += now.socket;
    if (now.read > t->read_max)
        t->read_max = now.read;
}

/* At exit: one JSON line of this rank's counts */
__attribute__((destructor)) static void write_counts(void)
{
    int any = 0;
    for (int k = 0; k < MPIOPT_COUNT_KINDS; k++)
        any |= kinds[k].calls > 0;
    if (!any)
        return;
    char line[2048];
    int n = snprintf(line, sizeof line,
                     "{\"rank\": %d, \"comm_rank\": %d, \"size\": %d, \"topology\": \"%s\", "
                     "\"cores\": %d, \"cores_per_numa\": %d, \"cores_per_package\": %d",
                     world_rank, last_rank, last_size, topology, cores, cores_numa, cores_package);
    for (int k = 0; k < MPIOPT_COUNT_KINDS && n < (int)sizeof line; k++) {
        const totals *t = &kinds[k];
        if (t->calls)
            n += snprintf(line + n, sizeof line - (size_t)n,
                          ", \"%s\": {\"calls\": %llu, \"lines_read\": %llu, \"lines_read_max\": "
                          "%llu, \"flag_lines_written\": %llu, \"numa_lines\": %llu, "
                          "\"socket_lines\": %llu, \"first\": {\"lines_read\": %llu, "
                          "\"flag_lines_written\": %llu, \"numa_lines\": %llu, "
                          "\"socket_lines\": %llu}}",
                          kind_name[k], (unsigned long long)t->calls, (unsigned long long)t->read,
                          (unsigned long long)t->read_max, (unsigned long long)t->flags,
                          (unsigned long long)t->numa, (unsigned long long)t->socket,
                          (unsigned long long)t->first_read, (unsigned long long)t->first_flags,
                          (unsigned long long)t->first_numa,
                          (unsigned long long)t->first_socket);
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
