/* MPIOPT_REPORT (report.h): counts of the reduction calls per entry point, and the table that
 * rank 0 prints at MPI_Finalize. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/engine/report.h"

int mpiopt_report_on;
_Thread_local unsigned char mpiopt_report_door_now;

/* Per entry point: calls run by each algorithm (index: the algorithm), then calls handed to the
 * vendor by reason (index: MPIOPT_ALG_COUNT + reason; MPIOPT_TAKEN's slot stays 0). */
#define COLUMNS (MPIOPT_ALG_COUNT + MPIOPT_WHY_COUNT)
#define ENTRIES (MPIOPT_CALL_KINDS * MPIOPT_DOORS)
static uint64_t counts[ENTRIES][COLUMNS];
/* shared_memory's calls not taken whole: [0] by message passing, [1] in pieces; by reason */
static uint64_t node_counts[2][MPIOPT_NODE_REASONS];
static int printed;
/* hierarchical's levels: [level][way], a count a rank a call */
static uint64_t level_counts[MPIOPT_LEVELS][MPIOPT_WAYS];

static const char *const kind_names[MPIOPT_CALL_KINDS] = {
    "Allreduce", "Reduce", "Reduce_local", "Iallreduce", "Ireduce", "Allreduce_init",
    "Reduce_init", "Scan", "Exscan", "Iscan", "Iexscan", "Scan_init", "Exscan_init",
    "Reduce_scatter_block", "Reduce_scatter", "Ireduce_scatter_block", "Ireduce_scatter",
    "Reduce_scatter_block_init", "Reduce_scatter_init"};

static const char *const reasons[MPIOPT_WHY_COUNT] = {
    [MPIOPT_WHY_FASTER] = "vendor faster at this size",
    [MPIOPT_WHY_MEASURED] = "vendor faster in auto's trials",
    [MPIOPT_WHY_REQUESTED] = "vendor asked for by the caller",
    [MPIOPT_WHY_ENV] = "MPIOPT_<COLLECTIVE>=vendor",
    [MPIOPT_WHY_ARGUMENTS] = "arguments the vendor judges",
    [MPIOPT_WHY_INTERCOMM] = "intercommunicator",
    [MPIOPT_WHY_DATATYPE] = "datatype (derived with holes, or no kernel)",
    [MPIOPT_WHY_ALGORITHM] = "op or count the forced algorithm cannot take",
    [MPIOPT_WHY_NO_PRIVATE_COMM] =
        "no record of the communicator yet (made by its constructor or a blocking call)",
    [MPIOPT_WHY_NONBLOCKING_OFF] = "MPIOPT_NONBLOCKING=0",
    [MPIOPT_WHY_LARGE_COUNT] = "count > INT_MAX",
    [MPIOPT_WHY_USER_OP] = "user-defined op",
};

static const char *const node_reasons[MPIOPT_NODE_REASONS] = {
    [MPIOPT_NODE_NO_CONTEXT_ID] = "no context id (MPIOPT_SHM_COMMS)",
    [MPIOPT_NODE_BUDGET] = "shared-memory budget spent",
    [MPIOPT_NODE_NO_ROOM] = "no room in /dev/shm",
    [MPIOPT_NODE_ALLOC_FAILED] = "the MPI could not allocate it",
    [MPIOPT_NODE_SPANS_NODES] = "ranks on more than one node",
    [MPIOPT_NODE_SCHEDULE] = "nonblocking or persistent (a schedule of messages)",
};

__attribute__((constructor)) static void read_setting(void)
{
    const char *v = getenv("MPIOPT_REPORT");
    mpiopt_report_on = v && *v && strcmp(v, "0") != 0;
}

void mpiopt_report_count_call(mpiopt_call_kind kind, mpiopt_algorithm algorithm,
                              mpiopt_vendor_reason why)
{
    unsigned door = mpiopt_report_door_now;
    mpiopt_report_door_now = MPIOPT_DOOR_C;
    if ((unsigned)kind >= MPIOPT_CALL_KINDS || door >= MPIOPT_DOORS ||
        (unsigned)why >= MPIOPT_WHY_COUNT || (unsigned)algorithm >= MPIOPT_ALG_COUNT)
        return;
    int column = why == MPIOPT_TAKEN ? (int)algorithm : MPIOPT_ALG_COUNT + (int)why;
    __atomic_fetch_add(&counts[kind * MPIOPT_DOORS + door][column], 1, __ATOMIC_RELAXED);
}

void mpiopt_report_count_node(int pieces, mpiopt_node_reason why)
{
    if ((unsigned)why < MPIOPT_NODE_REASONS)
        __atomic_fetch_add(&node_counts[pieces != 0][why], 1, __ATOMIC_RELAXED);
}

void mpiopt_report_count_level(mpiopt_level level, int way)
{
    if ((unsigned)level < MPIOPT_LEVELS && way >= 0 && way < MPIOPT_WAYS)
        __atomic_fetch_add(&level_counts[level][way], 1, __ATOMIC_RELAXED);
}

/* "MPI_Allreduce", "MPI_Allreduce_c", "MPI_ALLREDUCE (Fortran)" */
static void entry_name(int entry, char *out, size_t len)
{
    const char *kind = kind_names[entry / MPIOPT_DOORS];
    int door = entry % MPIOPT_DOORS;
    if (door == MPIOPT_DOOR_FORTRAN) {
        char upper[32];
        size_t i = 0;
        for (; kind[i] && i + 1 < sizeof upper; i++)
            upper[i] = (char)(kind[i] >= 'a' && kind[i] <= 'z' ? kind[i] - 32 : kind[i]);
        upper[i] = 0;
        snprintf(out, len, "MPI_%s (Fortran)", upper);
    } else {
        snprintf(out, len, "MPI_%s%s", kind, door == MPIOPT_DOOR_LARGE_COUNT ? "_c" : "");
    }
}

/* Appends ", what n" to a cell. */
static void add_part(char *cell, size_t len, const char *what, uint64_t n)
{
    size_t used = strlen(cell);
    if (used < len)
        snprintf(cell + used, len - used, "%s%s %llu", used ? ", " : "", what,
                 (unsigned long long)n);
}

/* The lines on shared_memory's calls that a node's limit kept from taking them whole. */
static void print_node_lines(FILE *out, uint64_t (*sum)[MPIOPT_NODE_REASONS])
{
    static const char *const what[2] = {"ran message passing instead of shared memory",
                                        "took large calls in pieces (no stages)"};
    for (int k = 0; k < 2; k++) {
        char why[256] = "";
        uint64_t n = 0;
        for (int r = 0; r < MPIOPT_NODE_REASONS; r++)
            if (sum[k][r]) {
                n += sum[k][r];
                add_part(why, sizeof why, node_reasons[r], sum[k][r]);
            }
        if (n)
            fprintf(out, "mpiopt: shared_memory %s for %llu calls: %s\n", what[k],
                    (unsigned long long)n, why);
    }
}

static const char *way_name(int way)
{
    switch (way) {
    case MPIOPT_WAY_HALVING: return "halving reduce-scatter and back";
    case MPIOPT_WAY_DIRECT: return "reduce at each share's owner and back";
    case MPIOPT_WAY_RADIX: return "radix rounds";
    case MPIOPT_WAY_SHARE_ROUNDS: return "share rounds";
    default: return mpiopt_algorithm_name((mpiopt_algorithm)way);
    }
}

/* The line on what hierarchical's blocking calls ran within the nodes and between them. */
static void print_level_line(FILE *out, uint64_t (*sum)[MPIOPT_WAYS])
{
    static const char *const level_names[MPIOPT_LEVELS] = {"within the node", "between nodes"};
    char line[512] = "";
    for (int l = 0; l < MPIOPT_LEVELS; l++) {
        char ways[256] = "";
        for (int w = 0; w < MPIOPT_WAYS; w++)
            if (sum[l][w])
                add_part(ways, sizeof ways, way_name(w), sum[l][w]);
        if (*ways) {
            size_t used = strlen(line);
            snprintf(line + used, sizeof line - used, "%s%s: %s", used ? "; " : "",
                     level_names[l], ways);
        }
    }
    if (*line)
        fprintf(out, "mpiopt: hierarchical's levels (a count a rank a blocking call): %s\n", line);
}

static void print_table(FILE *out, uint64_t (*sum)[COLUMNS],
                        uint64_t (*node_sum)[MPIOPT_NODE_REASONS],
                        uint64_t (*level_sum)[MPIOPT_WAYS], const char *scope)
{
    uint64_t all = 0, taken_all = 0;
    int any = 0;
    for (int e = 0; e < ENTRIES; e++) {
        uint64_t taken = 0, handed = 0;
        char algs[512] = "", why[512] = "", name[48];
        for (int a = 0; a < MPIOPT_ALG_COUNT; a++) {
            if (!sum[e][a])
                continue;
            taken += sum[e][a];
            add_part(algs, sizeof algs,
                     e / MPIOPT_DOORS == MPIOPT_CALL_REDUCE_LOCAL ? "mpiopt kernels"
                                                                  : mpiopt_algorithm_name(a),
                     sum[e][a]);
        }
        for (int r = 1; r < MPIOPT_WHY_COUNT; r++) {
            uint64_t n = sum[e][MPIOPT_ALG_COUNT + r];
            if (!n)
                continue;
            handed += n;
            add_part(why, sizeof why, reasons[r], n);
        }
        if (!taken && !handed)
            continue;
        if (!any)
            fprintf(out, "mpiopt report (MPIOPT_REPORT): reduction calls of %s\n"
                         "  %-26s %10s %10s %10s  %s\n", scope, "entry point", "calls",
                    "by mpiopt", "by vendor", "mpiopt's algorithms | why the vendor's");
        any = 1;
        entry_name(e, name, sizeof name);
        fprintf(out, "  %-26s %10llu %10llu %10llu  %s%s%s\n", name,
                (unsigned long long)(taken + handed), (unsigned long long)taken,
                (unsigned long long)handed, algs, *algs && *why ? " | " : "", why);
        all += taken + handed;
        taken_all += taken;
    }
    if (!any)
        fprintf(out, "mpiopt: warning: no reduction call reached mpiopt (%s): the program makes "
                     "none, or calls entry points mpiopt does not take (docs/collectives.md lists "
                     "them)\n", scope);
    else if (!taken_all)
        fprintf(out, "mpiopt: warning: none of the %llu reduction calls ran mpiopt's algorithms "
                     "(the reasons are above): no speed-up in this run comes from mpiopt\n",
                (unsigned long long)all);
    else
        fprintf(out, "mpiopt: %llu of %llu reduction calls ran mpiopt's algorithms\n",
                (unsigned long long)taken_all, (unsigned long long)all);
    print_node_lines(out, node_sum);
    print_level_line(out, level_sum);
    fflush(out);
}

/* The delete callback of an attribute on MPI_COMM_SELF: runs first thing in MPI_Finalize, on
 * every rank, while MPI still works. */
static int report_at_finalize(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    static uint64_t sum[ENTRIES][COLUMNS], node_sum[2][MPIOPT_NODE_REASONS];
    static uint64_t level_sum[MPIOPT_LEVELS][MPIOPT_WAYS];
    int rank = 0, size = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (PMPI_Reduce(counts, sum, ENTRIES * COLUMNS, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        memcpy(sum, counts, sizeof sum);
    if (PMPI_Reduce(node_counts, node_sum, 2 * MPIOPT_NODE_REASONS, MPI_UINT64_T, MPI_SUM, 0,
                    MPI_COMM_WORLD) != MPI_SUCCESS)
        memcpy(node_sum, node_counts, sizeof node_sum);
    if (PMPI_Reduce(level_counts, level_sum, MPIOPT_LEVELS * MPIOPT_WAYS, MPI_UINT64_T, MPI_SUM, 0,
                    MPI_COMM_WORLD) != MPI_SUCCESS)
        memcpy(level_sum, level_counts, sizeof level_sum);
    printed = 1;
    if (rank == 0) {
        char scope[64];
        snprintf(scope, sizeof scope, "all %d rank%s", size, size == 1 ? "" : "s");
        print_table(stderr, sum, node_sum, level_sum, scope);
    }
    return MPI_SUCCESS;
}

void mpiopt_report_start(void)
{
    static int keyval = MPI_KEYVAL_INVALID;
    if (!mpiopt_report_on || keyval != MPI_KEYVAL_INVALID)
        return;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, report_at_finalize, &keyval, NULL) ==
        MPI_SUCCESS)
        PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL);
}

/* A program whose MPI_Init mpiopt did not see (an init by a door it does not take): each
 * process prints its own counts at exit, if the launcher calls it rank 0. */
__attribute__((destructor)) static void report_at_exit(void)
{
    int init = 0, finalized = 0;
    if (!mpiopt_report_on || printed)
        return;
    /* the launcher runs preloaded too: only an MPI process has anything to say */
    PMPI_Initialized(&init);
    PMPI_Finalized(&finalized);
    if (!init && !finalized)
        return;
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) != 0)
            return;
    }
    print_table(stderr, counts, node_counts, level_counts,
                "this process only (mpiopt did not see MPI_Init)");
}

int mpiopt_verbose(void)
{
    static int verbose = -1;    /* -1: not read yet; the same answer for every thread */
    int v = __atomic_load_n(&verbose, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("MPIOPT_VERBOSE");
        v = e && *e && strcmp(e, "0") != 0;
        __atomic_store_n(&verbose, v, __ATOMIC_RELAXED);
    }
    return v;
}
