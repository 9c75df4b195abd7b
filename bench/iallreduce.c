/* mpiopt-iallreduce: an osu_iallreduce-style overlap benchmark of MPI_Iallreduce, the vendor's
 * against mpiopt's nonblocking algorithms (mpiopt_iallreduce).
 *
 * OSU's method, per message size and column (an algorithm):
 *   t_pure     average time of (start; wait)                        -- the communication alone
 *   t_total    average time of (start; compute; wait)               -- compute placed in between
 *   t_compute  average time of the compute loop run on its own
 *   overlap %  100 * (1 - (t_total - t_compute) / t_pure), kept within 0..100
 * The compute loop is busy floating-point work (not a sleep: a sleeping rank frees its core,
 * which would flatter a library that polls), calibrated once at start-up to a rate of work units
 * per second and sized per column so that it takes that column's t_pure. As in OSU's default, no
 * MPI_Test is called during the compute: communication then progresses only inside MPI calls
 * (the start and the wait) or in whatever the library runs in the background.
 * Statistics are OSU's: each rank's average over iterations, averaged over ranks. The columns
 * run interleaved in a new order each iteration (as mpiopt-allreduce), so machine noise hits
 * every column alike. "vendor" is PMPI_Iallreduce + PMPI_Wait; any other name is
 * mpiopt_iallreduce with that algorithm + mpiopt_request_wait. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpiopt.h"
#include "fail.h"
#include "shuffle.h"

static int rank, nranks;

typedef struct {
    long long min_size, max_size;
    int iterations, warmup, json, ncolumns;
    mpiopt_algorithm columns[MPIOPT_ALG_COUNT];
} options;

typedef struct {
    double avg_us;     /* OSU's: the mean over ranks of each rank's average over iterations */
    double median_us;  /* the median over iterations of the slowest rank's time */
} stat;

typedef struct {
    stat pure, total, compute;
    double overlap_pct, overlap_median_pct;  /* from the averages (OSU's), from the medians */
} column_result;

enum { PURE, OVERLAPPED, COMPUTE_ONLY };  /* what a timed slot runs */

BENCH_DEFINE_FAIL(static, "mpiopt-iallreduce")

static void usage(void)
{
    printf("Usage: mpiopt-iallreduce [options]\n"
           "osu_iallreduce-style overlap of MPI_Iallreduce (MPI_DOUBLE, MPI_SUM) with computation:\n"
           "the vendor's against mpiopt's nonblocking algorithms. No MPI_Test during the compute.\n\n"
           "  -m, --message-size [MIN:]MAX  sizes in bytes, doubling from MIN (default 8:1048576)\n"
           "  -i, --iterations N            timed iterations per size and column (default 100)\n"
           "  -w, -x, --warmup N            untimed warm-up iterations (default 10)\n"
           "  -a, --algorithms LIST         comma-separated columns (default vendor,auto); vendor =\n"
           "                                PMPI_Iallreduce, any other = mpiopt_iallreduce with it\n"
           "  -j, --json                    a JSON list of rows instead of the table\n"
           "  -h, --help                    this help\n\n"
           "Columns: Pure(us) = start+wait; Overall(us) = start+compute+wait; Compute(us) = the\n"
           "compute alone (sized to take Pure); Overlap(%%) = 100*(1-(Overall-Compute)/Pure);\n"
           "Ovl-med(%%) = the same from medians; Lat/vendor = Pure / the vendor's Pure.\n\nAlgorithms:");
    for (int a = 0; a < MPIOPT_ALG_COUNT; a++)
        printf(" %s", mpiopt_algorithm_name((mpiopt_algorithm)a));
    printf("\n\nExample:\n  mpirun -np 2 mpiopt-iallreduce -m 1024:1048576 -i 200 --algorithms vendor,auto,ring\n");
}

/* A whole decimal integer in [lo, INT_MAX], or -1. */
static int parse_int(const char *s, int lo)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno || end == s || *end || v < lo || v > INT_MAX ? -1 : (int)v;
}

/* [MIN:]MAX, whole numbers of bytes >= 1 */
static int parse_sizes(const char *arg, options *o)
{
    char *end;
    errno = 0;
    long long lo = strtoll(arg, &end, 10), hi = lo;
    if (*end == ':')
        hi = strtoll(end + 1, &end, 10);
    else
        lo = o->min_size;
    if (errno || *end || lo < 1 || hi < 1)
        return -1;
    o->min_size = lo;
    o->max_size = hi;
    return 0;
}

/* Names as mpiopt_algorithm_name prints them, looked up by looping over the ids. */
static void parse_algorithms(const char *arg, options *o)
{
    o->ncolumns = 0;
    for (const char *tok = arg;; tok += strcspn(tok, ",") + 1) {
        int len = (int)strcspn(tok, ","), found = -1;
        for (int a = 0; a < MPIOPT_ALG_COUNT; a++)
            if ((int)strlen(mpiopt_algorithm_name((mpiopt_algorithm)a)) == len &&
                strncmp(tok, mpiopt_algorithm_name((mpiopt_algorithm)a), (size_t)len) == 0)
                found = a;
        if (found < 0)
            fail(2, "unknown algorithm '%.*s' in --algorithms (see --help)", len, tok);
        for (int c = 0; c < o->ncolumns; c++)
            if ((int)o->columns[c] == found)
                fail(2, "algorithm '%.*s' repeated in --algorithms", len, tok);
        o->columns[o->ncolumns++] = (mpiopt_algorithm)found;
        if (!tok[len])
            break;
    }
}

static void parse_options(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        { "message-size", required_argument, 0, 'm' }, { "iterations", required_argument, 0, 'i' },
        { "warmup", required_argument, 0, 'w' }, { "algorithms", required_argument, 0, 'a' },
        { "json", no_argument, 0, 'j' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
    };
    *o = (options){ .min_size = 8, .max_size = 1 << 20, .iterations = 100, .warmup = 10 };
    parse_algorithms("vendor,auto", o);
    opterr = 0;  /* our own messages, from rank 0 only */
    int c;
    while ((c = getopt_long(argc, argv, ":m:i:w:x:a:jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (parse_sizes(optarg, o))
                fail(2, "bad message size '%s' (expected [MIN:]MAX in bytes, at least 1)", optarg);
            break;
        case 'i':
            if ((o->iterations = parse_int(optarg, 1)) < 0)
                fail(2, "bad iteration count '%s' (expected an integer >= 1)", optarg);
            break;
        case 'w': case 'x':
            if ((o->warmup = parse_int(optarg, 0)) < 0)
                fail(2, "bad warm-up count '%s' (expected an integer >= 0)", optarg);
            break;
        case 'a': parse_algorithms(optarg, o); break;
        case 'j': o->json = 1; break;
        case 'h':
            if (rank == 0)
                usage();
            MPI_Finalize();
            exit(0);
        case ':': fail(2, "option '%s' needs a value (see --help)", argv[optind - 1]);
        default: fail(2, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fail(2, "unexpected argument '%s' (see --help)", argv[optind]);
    if (o->min_size > o->max_size)
        fail(2, "minimum message size %lld is larger than the maximum %lld", o->min_size, o->max_size);
    if (o->max_size / (long long)sizeof(double) > INT_MAX)
        fail(2, "maximum message size %lld is more than INT_MAX doubles", o->max_size);
}

/* ---- the compute loop ---- */

static volatile double compute_sink;  /* keeps the compiler from dropping the work */

/* `units` blocks of 64 dependent multiply-adds on four chains: floating-point work that touches
 * no memory (it does not compete with the message copies for cache or memory bandwidth) and that
 * the compiler can neither remove nor reassociate (no -ffast-math here). */
static void compute(long long units)
{
    double a = 1.0, b = 1.1, c = 1.2, d = 1.3;
    for (long long u = 0; u < units; u++)
        for (int k = 0; k < 64; k++) {
            a = a * 0.9999999 + 1e-7;
            b = b * 0.9999999 + 1e-7;
            c = c * 0.9999999 + 1e-7;
            d = d * 0.9999999 + 1e-7;
        }
    compute_sink = a + b + c + d;
}

/* Work units per second on this rank: the fastest of three runs of at least 20 ms each, all ranks
 * at once (so the rate is that of a loaded node, as during the benchmark). */
static double calibrate(void)
{
    long long units = 1;
    double best = 0;
    mpiopt_barrier(MPI_COMM_WORLD);
    for (int run = 0; run < 3;) {
        double t0 = MPI_Wtime();
        compute(units);
        double t = MPI_Wtime() - t0;
        if (t < 0.02)
            units *= 2;
        else if (run++, units / t > best)
            best = units / t;
    }
    return best;
}

/* ---- the measurement ---- */

/* One timed slot of column c: start; wait (PURE), start; compute; wait (OVERLAPPED, no MPI_Test
 * in between, as OSU's default), or the compute alone (COMPUTE_ONLY). The vendor column calls
 * PMPI_* so that it is the MPI library's own call even where libmpiopt interposes MPI_*. */
static double timed_call(const options *o, int c, int kind, const double *in, double *out,
                         int count, long long units)
{
    mpiopt_algorithm alg = o->columns[c];
    MPI_Request req;
    int rc = MPI_SUCCESS;
    double t0 = MPI_Wtime();
    if (kind != COMPUTE_ONLY)
        rc = alg == MPIOPT_ALG_VENDOR
            ? PMPI_Iallreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req)
            : mpiopt_iallreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, alg, &req);
    if (kind != PURE)
        compute(units);
    if (kind != COMPUTE_ONLY && rc == MPI_SUCCESS)
        rc = alg == MPIOPT_ALG_VENDOR ? PMPI_Wait(&req, MPI_STATUS_IGNORE)
                                      : mpiopt_request_wait(&req, MPI_STATUS_IGNORE);
    double t = MPI_Wtime() - t0;
    if (rc != MPI_SUCCESS)
        fail(1, "%s: MPI error %d in the allreduce", mpiopt_algorithm_name(alg), rc);
    mpiopt_barrier(MPI_COMM_WORLD);  /* every call of every column starts together */
    return t;
}

/* Once per size and column, untimed: each rank sets element i to rank + i % 16, so the sum is
 * p(p-1)/2 + p (i % 16), exact in doubles in any order of additions. */
static void verify(const options *o, int c, double *in, double *out, int count, long long size)
{
    for (int i = 0; i < count; i++)
        in[i] = rank + i % 16;
    memset(out, 0xff, (size_t)size);  /* NaN: a column that writes nothing fails */
    timed_call(o, c, PURE, in, out, count, 0);
    int bad = -1, any;
    double want = 0;
    for (int i = 0; i < count && bad < 0; i++)
        if (out[i] != (want = (double)nranks * (nranks - 1) / 2 + (double)nranks * (i % 16)))
            bad = i;
    PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (bad >= 0)  /* the rank that saw it says what it saw */
        fprintf(stderr, "mpiopt-iallreduce: error: rank %d: wrong result from %s at %lld bytes: "
                "element %d is %g, expected %g\n", rank, mpiopt_algorithm_name(o->columns[c]),
                size, bad, out[bad], want);
    if (any >= 0)
        fail(1, "DATA VALIDATION ERROR from %s at %lld bytes", mpiopt_algorithm_name(o->columns[c]), size);
}

static int compare_doubles(const void *a, const void *b)
{
    return (*(const double *)a > *(const double *)b) - (*(const double *)a < *(const double *)b);
}

/* One slot's `iterations` times on this rank -> OSU's figure (the mean over ranks of each rank's
 * average) and the robust one of mpiopt-allreduce (the median over iterations of the slowest
 * rank's time: on a shared machine one descheduled rank stretches single calls by milliseconds).
 * On every rank, in microseconds: the next phase sizes its compute from them. */
static stat summarize(const double *times, double *slowest, int iterations)
{
    double mine = 0, all = 0;
    for (int i = 0; i < iterations; i++)
        mine += times[i];
    mine = 1e6 * mine / iterations;
    PMPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(times, slowest, iterations, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(slowest, (size_t)iterations, sizeof *slowest, compare_doubles);
    double median = iterations % 2 ? slowest[iterations / 2]
                                   : 0.5 * (slowest[iterations / 2 - 1] + slowest[iterations / 2]);
    return (stat){ .avg_us = all / nranks, .median_us = 1e6 * median };
}

/* OSU's overlap: the share of the communication hidden behind the compute, within 0..100. */
static double overlap(double total, double compute, double pure)
{
    double p = pure > 0 ? 100 * (1 - (total - compute) / pure) : 0;
    return p < 0 ? 0 : p > 100 ? 100 : p;
}

/* Runs `nslots` slots per iteration in a fresh order, warm-up first; slot s is column s % n of
 * kind[s] with units[s] of compute; times[s * iterations + i] gets timed iteration i. */
static void run_phase(const options *o, int nslots, const int *kind, const long long *units,
                      const double *in, double *out, int count, double *times)
{
    int order[2 * MPIOPT_ALG_COUNT];
    for (int it = 0; it < o->warmup + o->iterations; it++) {
        shuffle_columns(order, nslots, (unsigned)it);
        for (int k = 0; k < nslots; k++) {
            int s = order[k];
            double t = timed_call(o, s % o->ncolumns, kind[s], in, out, count, units[s]);
            if (it >= o->warmup)
                times[(size_t)s * o->iterations + (it - o->warmup)] = t;
        }
    }
}

static void measure_size(const options *o, long long size, double *in, double *out, double rate,
                         double *times, double *slowest, column_result *res)
{
    int count = (int)(size / (long long)sizeof(double)), n = o->ncolumns, iters = o->iterations;
    int kind[2 * MPIOPT_ALG_COUNT];
    long long units[2 * MPIOPT_ALG_COUNT] = { 0 };
    for (int c = 0; c < n; c++)
        verify(o, c, in, out, count, size);
    /* (a) the communication alone */
    for (int c = 0; c < n; c++)
        kind[c] = PURE;
    run_phase(o, n, kind, units, in, out, count, times);
    for (int c = 0; c < n; c++) {
        res[c].pure = summarize(times + (size_t)c * iters, slowest, iters);
        /* sized from the median: an average stretched by one descheduled call would make the
         * compute far longer than the communication it is meant to hide */
        units[c] = units[n + c] = (long long)(res[c].pure.median_us * 1e-6 * rate + 0.5);
        kind[c] = OVERLAPPED;
        kind[n + c] = COMPUTE_ONLY;
    }
    /* (b) slots 0..n-1: start, compute, wait; slots n..2n-1: the same compute alone */
    run_phase(o, 2 * n, kind, units, in, out, count, times);
    for (int c = 0; c < n; c++) {
        res[c].total = summarize(times + (size_t)c * iters, slowest, iters);
        res[c].compute = summarize(times + (size_t)(n + c) * iters, slowest, iters);
        res[c].overlap_pct = overlap(res[c].total.avg_us, res[c].compute.avg_us, res[c].pure.avg_us);
        res[c].overlap_median_pct = overlap(res[c].total.median_us, res[c].compute.median_us,
                                            res[c].pure.median_us);
    }
}

/* ---- output (rank 0) ---- */

static void print_rows(const options *o, long long size, const column_result *res, int *first)
{
    const column_result *v = NULL;
    for (int c = 0; c < o->ncolumns; c++)
        if (o->columns[c] == MPIOPT_ALG_VENDOR)
            v = &res[c];
    for (int c = 0; c < o->ncolumns; c++) {
        const column_result *r = &res[c];
        const char *name = mpiopt_algorithm_name(o->columns[c]);
        /* the latency ratio this column / the vendor's; -1: no vendor column */
        double lat = v ? r->pure.avg_us / v->pure.avg_us : -1,
               lat_median = v ? r->pure.median_us / v->pure.median_us : -1;
        if (o->json) {
            printf("%s\n {\"bytes\": %lld, \"count\": %lld, \"algorithm\": \"%s\", \"ranks\": %d, "
                   "\"iterations\": %d, \"t_pure_us\": %.4f, \"t_total_us\": %.4f, "
                   "\"t_compute_us\": %.4f, \"overlap_pct\": %.2f, \"t_pure_median_us\": %.4f, "
                   "\"t_total_median_us\": %.4f, \"t_compute_median_us\": %.4f, "
                   "\"overlap_median_pct\": %.2f", *first ? "" : ",", size, size / 8, name, nranks,
                   o->iterations, r->pure.avg_us, r->total.avg_us, r->compute.avg_us, r->overlap_pct,
                   r->pure.median_us, r->total.median_us, r->compute.median_us, r->overlap_median_pct);
            printf(lat < 0 ? ", \"latency_ratio\": null" : ", \"latency_ratio\": %.4f", lat);
            printf(lat_median < 0 ? ", \"latency_ratio_median\": null}" : ", \"latency_ratio_median\": %.4f}",
                   lat_median);
            *first = 0;
        } else {
            printf("%-10lld %-20s %12.2f %12.2f %12.2f %11.2f %11.2f", size, name, r->pure.avg_us,
                   r->total.avg_us, r->compute.avg_us, r->overlap_pct, r->overlap_median_pct);
            if (lat < 0)
                printf(" %11s\n", "-");
            else
                printf(" %11.3f\n", lat);
        }
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    options o;
    parse_options(argc, argv, &o);

    double *in = malloc((size_t)o.max_size), *out = malloc((size_t)o.max_size);
    if (!in || !out)
        fail(1, "out of memory for two %lld-byte buffers", o.max_size);
    double rate = calibrate();
    if (rank == 0 && o.json)
        printf("[");
    if (rank == 0 && !o.json)
        printf("# mpiopt-iallreduce: MPI_Iallreduce overlap (OSU method, no MPI_Test), %d ranks, "
               "MPI_DOUBLE, MPI_SUM, %d iterations; averages (OSU), Ovl-med from medians\n"
               "%-10s %-20s %12s %12s %12s %11s %11s %11s\n", nranks, o.iterations, "# Size",
               "Algorithm", "Pure(us)", "Overall(us)", "Compute(us)", "Overlap(%)", "Ovl-med(%)",
               "Lat/vendor");
    column_result res[MPIOPT_ALG_COUNT];
    size_t slots = (size_t)2 * o.ncolumns * (size_t)o.iterations;
    double *times = malloc(slots * sizeof(double)), *slowest = malloc(slots * sizeof(double));
    if (!times || !slowest)
        fail(1, "out of memory for %d iterations", o.iterations);
    int first = 1;
    for (long long size = o.min_size; size <= o.max_size; size *= 2) {
        if (size < (long long)sizeof(double))
            continue;  /* below one element, as OSU */
        measure_size(&o, size, in, out, rate, times, slowest, res);
        if (rank == 0)
            print_rows(&o, size, res, &first);
        if (size > LLONG_MAX / 2)
            break;
    }
    if (rank == 0 && o.json)
        printf("\n]\n");
    MPI_Finalize();  /* the buffers go with the process */
    return 0;
}
