/* mpiopt-exchange: the cost of the message patterns mpiopt's allreduce algorithms are made of,
 * measured with every process sending at once, as the algorithms do.
 *
 * The plain α–β model prices a message by its size alone. On a real network (or a simulated
 * torus) the partner 2^k ranks away may be several hops off, and when every process talks to its
 * partner at the same time the far steps share links. So this measures, for the communicator it
 * runs on, one (α, β) per pattern:
 *   step k   group member g swaps with g XOR 2^k (recursive doubling, Rabenseifner's halving and
 *            doubling), with the same fold of p - 2^floor(log2 p) surplus ranks as those
 *            algorithms (src/coll/halving_doubling.c): members are ranks 2i+1 for i < surplus,
 *            then rank i + surplus
 *   fold     rank 2i sends to rank 2i+1 for i < surplus (the fold itself)
 *   ring     every rank sends to rank+1 and receives from rank-1 (the ring algorithm)
 *   doubling, halving_doubling   the step sequences of recursive doubling (k = 0 … L-1) and of
 *            Rabenseifner (0 … L-1, then L-1 … 0) with the small message: their latency
 * Each pattern is timed at a small and a large size; the time of a run is that of the slowest
 * process, the figure the median over iterations. α = time(small) - small*β, β = the slope.
 * libmpiopt's cost model reads the result from a tuning file's "model": {"exchange": …}.
 *
 * Plain MPI C (no mpiopt calls): it also builds with SimGrid's smpicc. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include "mpiopt.h"   /* the pattern names tuning files use */
#include "fail.h"

#define MAX_LEVELS 30

typedef struct {
    long small, large;  /* bytes */
    int iterations;
    int json;
} options;

static int rank, nranks;

static void usage(FILE *out)
{
    if (rank == 0)
        fprintf(out,
                "usage: mpiopt-exchange [--small BYTES] [--large BYTES] [-i N] [--json]\n"
                "Times the concurrent exchanges of recursive doubling / halving (one per distance\n"
                "2^k), the fold of surplus ranks and the ring, and prints alpha and beta of each.\n"
                "  --small BYTES   small message (default 8)\n"
                "  --large BYTES   large message (default 262144)\n"
                "  -i N            timed iterations, median reported (default 20)\n"
                "  --json          one JSON document (as tuning files hold it)\n"
                "example: mpirun -np 16 mpiopt-exchange --json\n");
}

BENCH_DEFINE_FAIL(static, "mpiopt-exchange")

static void parse_options(int argc, char **argv, options *o)
{
    static struct option longs[] = {
        {"small", required_argument, 0, 's'}, {"large", required_argument, 0, 'l'},
        {"iterations", required_argument, 0, 'i'}, {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    *o = (options){.small = 8, .large = 256 * 1024, .iterations = 20};
    int c;
    while ((c = getopt_long(argc, argv, "i:h", longs, NULL)) != -1) {
        char *end = NULL;
        long v = optarg ? strtol(optarg, &end, 10) : 0;
        int bad = optarg && (*end || end == optarg);
        switch (c) {
        case 's': o->small = v; break;
        case 'l': o->large = v; break;
        case 'i': o->iterations = (int)v; break;
        case 'j': o->json = 1; break;
        case 'h': usage(stdout); MPI_Finalize(); exit(0);
        default: usage(stderr); fail(1, "bad option");
        }
        if (bad)
            fail(1, "option values must be integers");
    }
    if (o->small < 1 || o->large <= o->small || o->large > (1L << 30) || o->iterations < 1)
        fail(1, "need 1 <= --small < --large <= 1 GiB and -i >= 1");
}

/* Processes leave a barrier at different times, and a process that leaves early waits for its
 * partner: timing one exchange would charge that skew to the pattern's latency. A run of a
 * one-step pattern is REPEAT passes back to back, and its time per pass is the figure. A
 * sequence of steps runs once after the barrier, as an allreduce does in a benchmark (repeated,
 * its passes would overlap). */
#define REPEAT 8
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

/* Passes of the pattern; returns the slowest process's seconds per pass. */
static double timed(const pattern *pat, char *sbuf, char *rbuf, long bytes)
{
    int passes = pat->stages == 1 ? REPEAT : 1;
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int r = 0; r < passes; r++)
        for (int i = 0; i < pat->stages; i++)
            MPI_Sendrecv(sbuf, (int)bytes, MPI_BYTE, pat->to[i], 7, rbuf, (int)bytes, MPI_BYTE,
                         pat->from[i], 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    t = (MPI_Wtime() - t) / passes;
    double slowest;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_seconds(const options *o, const pattern *pat, char *sbuf, char *rbuf,
                             long bytes, double *times)
{
    timed(pat, sbuf, rbuf, bytes);    /* warm-up: first-touch, connection set-up */
    for (int it = 0; it < o->iterations; it++)
        times[it] = timed(pat, sbuf, rbuf, bytes);
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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    options o;
    parse_options(argc, argv, &o);
    char *sbuf = malloc((size_t)o.large), *rbuf = malloc((size_t)o.large);
    double *times = malloc(sizeof(double) * (size_t)o.iterations);
    if (!sbuf || !rbuf || !times)
        fail(1, "out of memory");
    memset(sbuf, 1, (size_t)o.large);

    int levels = 0;
    while ((2 << levels) <= nranks)
        levels++;
    int p2 = 1 << levels, surplus = nranks - p2;
    /* my member number in the folded group, -1 if I sit out (the even rank of a fold pair) */
    int g = rank >= 2 * surplus ? rank - surplus : (rank % 2 ? rank / 2 : -1);
    pattern *pats = calloc(MAX_LEVELS + 4, sizeof(pattern));
    if (!pats)
        fail(1, "out of memory");
    int n = 0;
    pattern up = {.name = MPIOPT_PATTERN_DOUBLING, .latency_only = 1};
    pattern down = {.name = MPIOPT_PATTERN_HALVING_DOUBLING, .latency_only = 1};
    for (int k = 0; k < levels; k++) {
        int peer = g >= 0 ? member_rank(g ^ (1 << k), surplus) : MPI_PROC_NULL;
        pats[n] = (pattern){.name = MPIOPT_PATTERN_STEP, .distance = 1 << k, .stages = 1, .to = {peer},
                            .from = {peer}};
        measure(&o, sbuf, rbuf, times, &pats[n++]);
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
        measure(&o, sbuf, rbuf, times, f);
    }
    if (nranks > 1) {
        pats[n] = (pattern){.name = MPIOPT_PATTERN_RING, .stages = 1, .to = {(rank + 1) % nranks},
                            .from = {(rank + nranks - 1) % nranks}};
        measure(&o, sbuf, rbuf, times, &pats[n++]);
    }
    if (levels > 0) {
        /* whole sequences with the smallest message: step latencies partly overlap across
         * processes, so a sequence costs less than the sum of its steps' latencies */
        up.stages = levels;
        down.stages = 2 * levels;
        pats[n] = up;
        measure(&o, sbuf, rbuf, times, &pats[n++]);
        pats[n] = down;
        measure(&o, sbuf, rbuf, times, &pats[n++]);
    }

    if (rank == 0) {
        if (o.json) {
            printf("{\"ranks\": %d, \"small_bytes\": %ld, \"large_bytes\": %ld, "
                   "\"iterations\": %d, \"patterns\": [\n", nranks, o.small, o.large,
                   o.iterations);
        } else {
            printf("# mpiopt-exchange: %d processes, %ld and %ld bytes, median of %d\n", nranks,
                   o.small, o.large, o.iterations);
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
    MPI_Finalize();
    return 0;
}
