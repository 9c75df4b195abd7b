/* mpiopt-exchange: the cost of the message patterns mpiopt's allreduce algorithms are made of,
 * measured with every process sending at once, as the algorithms do.
 *
 * The plain α–β model prices a message by its size alone. On a real network (or a simulated
 * torus) the partner 2^k ranks away may be several hops off, and when every process talks to its
 * partner at the same time the far steps share links. So this measures, for the communicator it
 * runs on, one (α, β) per pattern:
 *   step k   group member g swaps with g XOR 2^k (recursive doubling, Rabenseifner's halving and
 *            doubling), with the same fold of p - 2^floor(log2 p) surplus ranks as those
 *            algorithms (src/coll/algorithms/halving_doubling.c): members are ranks 2i+1 for i < surplus,
 *            then rank i + surplus
 *   fold     rank 2i sends to rank 2i+1 for i < surplus (the fold itself)
 *   ring     every rank sends to rank+1 and receives from rank-1 (the ring algorithm)
 *   doubling, halving_doubling   the step sequences of recursive doubling (k = 0 … L-1) and of
 *            Rabenseifner (0 … L-1, then L-1 … 0) with the small message: their latency
 * Each pattern is timed at a small and a large size; the time of a run is that of the slowest
 * process, the figure the median over iterations. α = time(small) - small*β, β = the slope.
 * libmpiopt's cost model reads the result from a tuning file's "model": {"exchange": …}.
 *
 * With --levels it measures instead the two levels of the node-aware model (hierarchical.c):
 *   intra_node   inside every node at once, local rank j swaps with local rank j XOR 1 (the
 *                first step of a flat algorithm among the node's ranks)
 *   inter_node   one rank a node (its lowest), node i's with node i XOR 1's: one flow on each
 *                node's link, as the model's alpha, beta mean (hierarchical.c scales beta by
 *                the flows that share the link)
 * The nodes: --ranks-per-node K (each run of K consecutive ranks a pretend node), else
 * MPIOPT_RANKS_PER_NODE as libmpiopt reads it (node_layout.c), else MPI_Comm_split_type
 * (MPI_COMM_TYPE_SHARED). On one node, or with one rank a node, there is no second level: the
 * layout is printed and no pattern measured (`mpiopt tune` then writes one level). Where the
 * machine runs more of the ranks than it has cores (pretend nodes), waits yield the core as
 * libmpiopt's do (MPIOPT_YIELD as there; see `yielding`).
 *
 * Plain MPI C (no mpiopt calls): it also builds with SimGrid's smpicc. */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include "mpiopt.h"   /* the pattern names tuning files use */
#include "fail.h"
#include "start_together.h"

#define MAX_LEVELS 30

typedef struct {
    long small, large;  /* bytes */
    int iterations;
    int json;
    int levels;         /* --levels: intra_node and inter_node instead */
    int ranks_per_node; /* --ranks-per-node K (0: MPIOPT_RANKS_PER_NODE, or the MPI's nodes) */
    int warmup;         /* untimed runs before a pattern's timed ones */
    int repeat;         /* passes of a one-step pattern a timed run */
    long distances;     /* --distances: bit k set = measure the step of distance 2^k (0: all) */
} options;

static int rank, nranks;

static void usage(FILE *out)
{
    if (rank == 0)
        fprintf(out,
                "usage: mpiopt-exchange [--small BYTES] [--large BYTES] [-i N] [--json]\n"
                "                       [--warmup N] [--repeat N] [--distances D,D,...]\n"
                "                       [--levels [--ranks-per-node K]]\n"
                "Times the concurrent exchanges of recursive doubling / halving (one per distance\n"
                "2^k), the fold of surplus ranks and the ring, and prints alpha and beta of each.\n"
                "  --small BYTES   small message (default 8)\n"
                "  --large BYTES   large message (default 262144)\n"
                "  -i N            timed iterations, median reported (default 20)\n"
                "  --warmup N      untimed runs of each pattern first (default 1)\n"
                "  --repeat N      passes of a one-step pattern a timed run (default 8)\n"
                "  --distances D,...  only the steps of these distances (powers of two below\n"
                "                  the ranks; default every one); the sequences still run whole\n"
                "  --json          one JSON document (as tuning files hold it)\n"
                "  --levels        instead: the two levels of the node-aware model, intra_node\n"
                "                  (ranks of one node in pairs) and inter_node (one rank a node)\n"
                "  --ranks-per-node K   with --levels: K consecutive ranks a pretend node\n"
                "                  (default MPIOPT_RANKS_PER_NODE, else MPI_Comm_split_type)\n"
                "examples: mpirun -np 16 mpiopt-exchange --json\n"
                "          mpirun -np 4 mpiopt-exchange --levels --ranks-per-node 2 --json\n");
}

BENCH_DEFINE_FAIL(static, "mpiopt-exchange")

/* A one-step pattern's passes a timed run, by default (see `timed`) */
#define REPEAT 8

/* "1,2,16": a set of powers of two as bits (bit k: 2^k) */
static long parse_distances(const char *text)
{
    long set = 0;
    const char *at = text;
    while (*at) {
        char *end;
        long d = strtol(at, &end, 10);
        if (end == at || d < 1 || d >= (1L << MAX_LEVELS) || (d & (d - 1)))
            fail(1, "--distances: a comma-separated list of powers of two, e.g. 1,2,16");
        set |= d;
        at = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            fail(1, "--distances: a comma-separated list of powers of two, e.g. 1,2,16");
    }
    if (!set)
        fail(1, "--distances: name at least one");
    return set;
}

static void parse_options(int argc, char **argv, options *o)
{
    static struct option longs[] = {
        {"small", required_argument, 0, 's'}, {"large", required_argument, 0, 'l'},
        {"iterations", required_argument, 0, 'i'}, {"json", no_argument, 0, 'j'},
        {"levels", no_argument, 0, 'L'}, {"ranks-per-node", required_argument, 0, 'k'},
        {"warmup", required_argument, 0, 'w'}, {"repeat", required_argument, 0, 'r'},
        {"distances", required_argument, 0, 'd'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    *o = (options){.small = 8, .large = 256 * 1024, .iterations = 20, .warmup = 1,
                   .repeat = REPEAT};
    int c;
    while ((c = getopt_long(argc, argv, "i:h", longs, NULL)) != -1) {
        char *end = NULL;
        if (c == 'd') {         /* a list, parsed here */
            o->distances = parse_distances(optarg);
            continue;
        }
        long v = optarg ? strtol(optarg, &end, 10) : 0;
        int bad = optarg && (*end || end == optarg);
        switch (c) {
        case 's': o->small = v; break;
        case 'l': o->large = v; break;
        case 'i': o->iterations = (int)v; break;
        case 'j': o->json = 1; break;
        case 'L': o->levels = 1; break;
        case 'w':
            if (v < 0 || v > 1000)
                fail(1, "--warmup must be 0 to 1000");
            o->warmup = (int)v;
            break;
        case 'r':
            if (v < 1 || v > 1000)
                fail(1, "--repeat must be 1 to 1000");
            o->repeat = (int)v;
            break;
        case 'k':
            if (v < 1 || v >= (1L << 30))
                fail(1, "--ranks-per-node must be a positive integer");
            o->ranks_per_node = (int)v;
            break;
        case 'h': usage(stdout); MPI_Finalize(); exit(0);
        default: usage(stderr); fail(1, "bad option");
        }
        if (bad)
            fail(1, "option values must be integers");
    }
    if (o->small < 1 || o->large <= o->small || o->large > (1L << 30) || o->iterations < 1)
        fail(1, "need 1 <= --small < --large <= 1 GiB and -i >= 1");
    if (o->ranks_per_node && !o->levels)
        fail(1, "--ranks-per-node goes with --levels");
    if (o->distances && o->levels)
        fail(1, "--distances goes with the flat patterns, not --levels");
    long p2 = 1;        /* the steps' distances are below the largest power of two <= ranks */
    while (2 * p2 <= nranks)
        p2 *= 2;
    if (o->distances >= p2)
        fail(1, "--distances: each must be below the largest power of two <= the ranks");
}

/* Processes leave a barrier at different times, and a process that leaves early waits for its
 * partner: timing one exchange would charge that skew to the pattern's latency. A run of a
 * one-step pattern is REPEAT passes back to back, and its time per pass is the figure. A
 * sequence of steps runs once after the barrier, as an allreduce does in a benchmark (repeated,
 * its passes would overlap). */
#define MAX_STAGES (2 * MAX_LEVELS)

/* A pattern: each pass is `stages` sendrecvs in sequence, to to[i] and from from[i]
 * (MPI_PROC_NULL: none at that stage). */
typedef struct {
    const char *name;
    int distance;       /* step patterns: 2^k; 0 for the others */
    int stages;
    int to[MAX_STAGES], from[MAX_STAGES];
    int latency_only;   /* sequences of steps: only their small-message time means something */
    double small_s, large_s, alpha, beta;
} pattern;

/* Where this node runs more ranks than it has cores (--levels with pretend nodes on one
 * machine), every wait tests its request and yields the core between tests, as libmpiopt's
 * algorithms then wait (src/coll/p2p.c): an MPI that polls (MPICH) would hold a core the rank it
 * waits for needs until the kernel's time slice ends, milliseconds against microseconds. */
static int yielding;

static void wait_yielding(int n, MPI_Request *reqs)
{
    for (int i = 0; i < n; i++) {
        int done = 0;
        while (MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE), !done)
            sched_yield();
    }
}

static void barrier(void)
{
    MPI_Request req;
    if (!yielding) {
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    wait_yielding(1, &req);
}

static void sendrecv(char *sbuf, char *rbuf, long bytes, int to, int from)
{
    MPI_Request reqs[2];
    if (!yielding) {
        MPI_Sendrecv(sbuf, (int)bytes, MPI_BYTE, to, 7, rbuf, (int)bytes, MPI_BYTE, from, 7,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, from, 7, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(sbuf, (int)bytes, MPI_BYTE, to, 7, MPI_COMM_WORLD, &reqs[1]);
    wait_yielding(2, reqs);
}

static double max_over_ranks(double t)
{
    double slowest;
    MPI_Request req;
    if (!yielding) {
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        return slowest;
    }
    MPI_Iallreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &req);
    wait_yielding(1, &req);
    return slowest;
}

/* Passes of the pattern; returns the slowest process's seconds per pass. */
static double timed(const options *o, const pattern *pat, char *sbuf, char *rbuf, long bytes)
{
    int passes = pat->stages == 1 ? o->repeat : 1;
    barrier();
    start_together(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int r = 0; r < passes; r++)
        for (int i = 0; i < pat->stages; i++)
            sendrecv(sbuf, rbuf, bytes, pat->to[i], pat->from[i]);
    return max_over_ranks((MPI_Wtime() - t) / passes);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_seconds(const options *o, const pattern *pat, char *sbuf, char *rbuf,
                             long bytes, double *times)
{
    for (int it = 0; it < o->warmup; it++)   /* first-touch, connection set-up */
        timed(o, pat, sbuf, rbuf, bytes);
    for (int it = 0; it < o->iterations; it++)
        times[it] = timed(o, pat, sbuf, rbuf, bytes);
    qsort(times, (size_t)o->iterations, sizeof *times, compare_doubles);
    return times[o->iterations / 2];
}

static void measure(const options *o, char *sbuf, char *rbuf, double *times, pattern *pat)
{
    pat->small_s = median_seconds(o, pat, sbuf, rbuf, o->small, times);
    pat->alpha = pat->small_s;
    if (pat->latency_only)
        return;
    pat->large_s = median_seconds(o, pat, sbuf, rbuf, o->large, times);
    pat->beta = (pat->large_s - pat->small_s) / (double)(o->large - o->small);
    if (pat->beta < 0)
        pat->beta = 0;
    pat->alpha = pat->small_s - (double)o->small * pat->beta;
    if (pat->alpha < 0)
        pat->alpha = 0;
}

static void print_pattern(const options *o, const pattern *p, int last)
{
    if (o->json)
        printf("   {\"pattern\": \"%s\", \"distance\": %d, \"alpha\": %.6e, \"beta\": %.6e, "
               "\"small_seconds\": %.6e, \"large_seconds\": %.6e}%s\n", p->name, p->distance,
               p->alpha, p->beta, p->small_s, p->large_s, last ? "" : ",");
    else
        printf("%-18s %9d %12.3f %12.3f %12.3f %12.3f\n", p->name, p->distance, p->small_s * 1e6,
               p->large_s * 1e6, p->alpha * 1e6, p->beta * 1e12);
}

/* The rank of folded-group member m (as mpiopt_fold_in maps them). */
static int member_rank(int m, int surplus)
{
    return m < surplus ? 2 * m + 1 : m + surplus;
}

/* The patterns of mpiopt's flat algorithms (the default): measured into pats, their number. */
static int flat_patterns(const options *o, char *sbuf, char *rbuf, double *times, pattern *pats)
{
    int levels = 0;
    while ((2 << levels) <= nranks)
        levels++;
    int p2 = 1 << levels, surplus = nranks - p2;
    /* my member number in the folded group, -1 if I sit out (the even rank of a fold pair) */
    int g = rank >= 2 * surplus ? rank - surplus : (rank % 2 ? rank / 2 : -1);
    int n = 0;
    pattern up = {.name = MPIOPT_PATTERN_DOUBLING, .latency_only = 1};
    pattern down = {.name = MPIOPT_PATTERN_HALVING_DOUBLING, .latency_only = 1};
    for (int k = 0; k < levels; k++) {
        int peer = g >= 0 ? member_rank(g ^ (1 << k), surplus) : MPI_PROC_NULL;
        if (!o->distances || (o->distances >> k & 1)) {
            pats[n] = (pattern){.name = MPIOPT_PATTERN_STEP, .distance = 1 << k, .stages = 1,
                                .to = {peer}, .from = {peer}};
            measure(o, sbuf, rbuf, times, &pats[n++]);
        }
        up.to[k] = up.from[k] = down.to[k] = down.from[k] = peer;
        down.to[2 * levels - 1 - k] = down.from[2 * levels - 1 - k] = peer;
    }
    if (surplus > 0) {
        pattern *f = &pats[n++];
        *f = (pattern){.name = MPIOPT_PATTERN_FOLD, .stages = 1, .to = {MPI_PROC_NULL},
                       .from = {MPI_PROC_NULL}};
        if (rank < 2 * surplus && rank % 2 == 0)
            f->to[0] = rank + 1;
        if (rank < 2 * surplus && rank % 2 == 1)
            f->from[0] = rank - 1;
        measure(o, sbuf, rbuf, times, f);
    }
    if (nranks > 1) {
        pats[n] = (pattern){.name = MPIOPT_PATTERN_RING, .stages = 1, .to = {(rank + 1) % nranks},
                            .from = {(rank + nranks - 1) % nranks}};
        measure(o, sbuf, rbuf, times, &pats[n++]);
    }
    if (levels > 0) {
        /* whole sequences with the smallest message: step latencies partly overlap across
         * processes, so a sequence costs less than the sum of its steps' latencies */
        up.stages = levels;
        down.stages = 2 * levels;
        pats[n] = up;
        measure(o, sbuf, rbuf, times, &pats[n++]);
        pats[n] = down;
        measure(o, sbuf, rbuf, times, &pats[n++]);
    }
    return n;
}

/* The node layout --levels measures on: how many nodes, the most ranks one has, where it came
 * from, and for this rank its node, its place in it and the node's ranks. */
typedef struct {
    int nodes, most;
    const char *source;
    int node, local, size;      /* this rank's node, local rank, the node's number of ranks */
    int *members;               /* the world ranks of this rank's node, in rank order */
    int *leader;                /* leader[i]: the lowest rank of node i (nodes numbered by it) */
} node_layout;

static int env_ranks_per_node(void)
{
    const char *s = getenv("MPIOPT_RANKS_PER_NODE");
    if (!s || !*s)
        return 0;
    char *end;
    long k = strtol(s, &end, 10);
    return *end == '\0' && k > 0 && k < (1L << 30) ? (int)k : 0;
}

/* Each rank's node named by the node's lowest rank: blocks of k ranks, or MPI's nodes. */
static void find_nodes(const options *o, node_layout *nl)
{
    int k = o->ranks_per_node, name, here;
    MPI_Comm machine;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &machine);
    MPI_Comm_size(machine, &here);
    const char *forced = getenv("MPIOPT_YIELD");
#ifdef OMPI_MAJOR_VERSION
    int polls = 0;      /* Open MPI yields by itself when oversubscribed */
#else
    int polls = here > sysconf(_SC_NPROCESSORS_ONLN);
#endif
    yielding = forced && *forced ? atoi(forced) != 0 : polls;
    nl->source = "--ranks-per-node";
    if (!k && (k = env_ranks_per_node()) > 0)
        nl->source = "MPIOPT_RANKS_PER_NODE";
    if (k) {
        name = rank / k * k;
    } else {
        nl->source = "MPI_Comm_split_type";
        MPI_Allreduce(&rank, &name, 1, MPI_INT, MPI_MIN, machine);
    }
    MPI_Comm_free(&machine);
    int *names = malloc(sizeof(int) * (size_t)nranks);
    nl->members = malloc(sizeof(int) * (size_t)nranks);
    nl->leader = malloc(sizeof(int) * (size_t)nranks);
    int *count = calloc((size_t)nranks, sizeof(int));
    if (!names || !nl->members || !nl->leader || !count)
        fail(1, "out of memory");
    MPI_Allgather(&name, 1, MPI_INT, names, 1, MPI_INT, MPI_COMM_WORLD);
    /* names are lowest ranks, so numbering them as they first appear numbers nodes by them */
    nl->nodes = nl->most = nl->size = 0;
    for (int r = 0; r < nranks; r++) {
        if (names[r] == r)
            nl->leader[nl->nodes++] = r;
        if (++count[names[r]] > nl->most)
            nl->most = count[names[r]];
        if (names[r] == name) {
            if (r == rank)
                nl->local = nl->size;
            nl->members[nl->size++] = r;
        }
    }
    for (int i = 0; i < nl->nodes; i++)
        if (nl->leader[i] == name)
            nl->node = i;
    free(names);
    free(count);
}

/* --levels: intra_node and inter_node measured into pats, their number (0 without two levels). */
static int level_patterns(const options *o, char *sbuf, char *rbuf, double *times, pattern *pats,
                          node_layout *nl)
{
    find_nodes(o, nl);
    if (nl->nodes < 2 || nl->most < 2)
        return 0;
    int partner = nl->local ^ 1, other = nl->node ^ 1;
    int peer = partner < nl->size ? nl->members[partner] : MPI_PROC_NULL;
    pats[0] = (pattern){.name = "intra_node", .stages = 1, .to = {peer}, .from = {peer}};
    peer = nl->local == 0 && other < nl->nodes ? nl->leader[other] : MPI_PROC_NULL;
    pats[1] = (pattern){.name = "inter_node", .stages = 1, .to = {peer}, .from = {peer}};
    for (int i = 0; i < 2; i++)
        measure(o, sbuf, rbuf, times, &pats[i]);
    return 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    options o;
    parse_options(argc, argv, &o);
    char *sbuf = malloc((size_t)o.large), *rbuf = malloc((size_t)o.large);
    double *times = malloc(sizeof(double) * (size_t)o.iterations);
    pattern *pats = calloc(MAX_LEVELS + 4, sizeof(pattern));
    if (!sbuf || !rbuf || !times || !pats)
        fail(1, "out of memory");
    memset(sbuf, 1, (size_t)o.large);
    node_layout nl = {0};
    int n = o.levels ? level_patterns(&o, sbuf, rbuf, times, pats, &nl)
                     : flat_patterns(&o, sbuf, rbuf, times, pats);

    if (rank == 0) {
        if (o.json) {
            printf("{\"ranks\": %d, \"small_bytes\": %ld, \"large_bytes\": %ld, "
                   "\"iterations\": %d, ", nranks, o.small, o.large, o.iterations);
            if (o.levels)
                printf("\"nodes\": %d, \"ranks_per_node\": %d, \"node_layout\": \"%s\", ",
                       nl.nodes, nl.most, nl.source);
            printf("\"patterns\": [\n");
        } else {
            printf("# mpiopt-exchange: %d processes, %ld and %ld bytes, median of %d\n", nranks,
                   o.small, o.large, o.iterations);
            if (o.levels)
                printf("# %d nodes, at most %d ranks a node (%s)%s\n", nl.nodes, nl.most,
                       nl.source, n ? "" : ": no second level to measure");
            printf("%-18s %9s %12s %12s %12s %12s\n", "# pattern", "distance", "small(us)",
                   "large(us)", "alpha(us)", "beta(ps/B)");
        }
        for (int i = 0; i < n; i++)
            print_pattern(&o, &pats[i], i == n - 1);
        if (o.json)
            printf("]}\n");
    }
    free(sbuf);
    free(rbuf);
    free(times);
    free(pats);
    free(nl.members);
    free(nl.leader);
    MPI_Finalize();
    return 0;
}
