/* mpiopt-allreduce: an osu_allreduce-compatible latency benchmark for mpiopt's allreduce and
 * reduce algorithms and the vendor's.
 *
 * Options and output follow OSU's osu_allreduce (-m [min:]max, -i, -x, -f, -T, -c; a
 * "# Size  Avg Latency(us)" table), so scripts written for OSU read it. Additions:
 *   -m A,B,C               a list of sizes instead of a doubling range (one run for sizes far
 *                          apart: a simulated 1023-rank job takes minutes just to start)
 *   --algorithms LIST|all  one column per algorithm; all of them are measured in the same run,
 *                          interleaved call by call, so machine noise hits every column alike
 *   --json                 one JSON document instead of the table
 *   --op NAME, --reduce    another reduction op; MPI_Reduce (root 0) instead of MPI_Allreduce
 *   bandwidth              bytes / average time (MB/s, 1 MB = 1e6 B), as in Rabenseifner's charts
 *
 * The "vendor" column calls PMPI_Allreduce / PMPI_Reduce directly, so it measures the MPI
 * library's own collective even when libmpiopt is LD_PRELOADed and interposes MPI_Allreduce.
 * Timing is OSU's: MPI_Wtime around each call, a barrier after it; the reported average is the
 * mean over ranks of each rank's average, min/max (-f) the extremes of those per-rank averages.
 * The barrier is mpiopt_barrier: the vendor's, except with more ranks than cores, where a
 * barrier that polls keeps the next call of every column from starting together.
 *
 * Plain MPI C: it also builds with SimGrid's smpicc (see the SMPI block in alloc_buffer). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mpi.h>
#include "mpiopt.h"

/* OSU's defaults and its switch to fewer iterations above 8 KiB */
#define DEFAULT_MIN_SIZE 1
#define DEFAULT_MAX_SIZE (1 << 20)
#define DEFAULT_ITERATIONS 1000
#define DEFAULT_ITERATIONS_LARGE 100
#define DEFAULT_WARMUP 200
#define DEFAULT_WARMUP_LARGE 10
#define LARGE_MESSAGE_SIZE 8192
#define FIELD_WIDTH 18
#define FLOAT_PRECISION 2
#define MIN_TIMED 3  /* --time-limit never cuts a size to fewer timed iterations */

/* The algorithm column "vendor" is PMPI_*; the others go through mpiopt_allreduce/_reduce. */
enum { MAX_COLUMNS = MPIOPT_ALG_COUNT };

typedef enum { KIND_SIGNED, KIND_UNSIGNED, KIND_FLOAT } value_kind;

typedef struct {
    const char *name;      /* as given to -T, without the optional "mpi_" prefix */
    MPI_Datatype datatype;
    const char *mpi_name;  /* printed in "# Datatype: ..." (OSU prints MPI_Type_get_name) */
    value_kind kind;
    size_t size;
} type_info;

typedef struct {
    const char *name;
    MPI_Op op;
    const char *mpi_name;
} op_info;

#define MAX_LISTED_SIZES 64

typedef struct {
    long long min_size, max_size;
    int nlisted;                            /* -m A,B,C: these sizes instead of doubling */
    long long listed[MAX_LISTED_SIZES];
    int iterations, iterations_large, warmup, warmup_large;
    int full, validate, json, reduce;
    int mpi_symbol;     /* --mpi-symbol: the auto column calls MPI_Allreduce / MPI_Reduce */
    double time_limit;  /* seconds per message size, 0 = none */
    const type_info *type;
    const op_info *op;
    int ncolumns;
    mpiopt_algorithm columns[MAX_COLUMNS];
} options;

static const type_info TYPES[] = {
    { "char", MPI_CHAR, "MPI_CHAR", KIND_SIGNED, sizeof(char) },
    { "signed_char", MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", KIND_SIGNED, sizeof(signed char) },
    { "unsigned_char", MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", KIND_UNSIGNED, sizeof(unsigned char) },
    { "short", MPI_SHORT, "MPI_SHORT", KIND_SIGNED, sizeof(short) },
    { "int", MPI_INT, "MPI_INT", KIND_SIGNED, sizeof(int) },
    { "unsigned", MPI_UNSIGNED, "MPI_UNSIGNED", KIND_UNSIGNED, sizeof(unsigned) },
    { "long", MPI_LONG, "MPI_LONG", KIND_SIGNED, sizeof(long) },
    { "unsigned_long", MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", KIND_UNSIGNED, sizeof(unsigned long) },
    { "long_long", MPI_LONG_LONG, "MPI_LONG_LONG", KIND_SIGNED, sizeof(long long) },
    { "int8_t", MPI_INT8_T, "MPI_INT8_T", KIND_SIGNED, 1 },
    { "int16_t", MPI_INT16_T, "MPI_INT16_T", KIND_SIGNED, 2 },
    { "int32_t", MPI_INT32_T, "MPI_INT32_T", KIND_SIGNED, 4 },
    { "int64_t", MPI_INT64_T, "MPI_INT64_T", KIND_SIGNED, 8 },
    { "uint8_t", MPI_UINT8_T, "MPI_UINT8_T", KIND_UNSIGNED, 1 },
    { "uint16_t", MPI_UINT16_T, "MPI_UINT16_T", KIND_UNSIGNED, 2 },
    { "uint32_t", MPI_UINT32_T, "MPI_UINT32_T", KIND_UNSIGNED, 4 },
    { "uint64_t", MPI_UINT64_T, "MPI_UINT64_T", KIND_UNSIGNED, 8 },
    { "float", MPI_FLOAT, "MPI_FLOAT", KIND_FLOAT, sizeof(float) },
    { "double", MPI_DOUBLE, "MPI_DOUBLE", KIND_FLOAT, sizeof(double) },
};

static const op_info OPS[] = {
    { "sum", MPI_SUM, "MPI_SUM" },
    { "prod", MPI_PROD, "MPI_PROD" },
    { "max", MPI_MAX, "MPI_MAX" },
    { "min", MPI_MIN, "MPI_MIN" },
};

#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int rank, nranks;

/* Only rank 0 talks; the others exit quietly with the same status. */
static void fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

static void fail(int status, const char *fmt, ...)
{
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fputs("mpiopt-allreduce: error: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputs("\n", stderr);
        va_end(ap);
    }
    MPI_Finalize();
    exit(status);
}

static void usage(FILE *out)
{
    fputs("Usage: mpiopt-allreduce [options]\n"
          "osu_allreduce-compatible latency benchmark of MPI_Allreduce, for mpiopt's algorithms\n"
          "and the vendor's.\n\n"
          "  -m, --message-size [MIN:]MAX  message sizes in bytes, doubling from MIN (default 1:1048576);\n"
          "                                or an ascending list A,B,C\n"
          "  -i, --iterations N            timed iterations per size (default 1000, 100 above 8 KiB)\n"
          "  -x, --warmup N                untimed warm-up iterations (default 200, 10 above 8 KiB)\n"
          "      --iterations-large N      timed iterations above 8 KiB (after -i)\n"
          "      --warmup-large N          warm-up iterations above 8 KiB (after -x)\n"
          "  -f, --full                    also print min/max latency over ranks and iterations\n"
          "  -T, --type TYPE               char, int, float, double (default), long, short, unsigned,\n"
          "                                long_long, signed_char, unsigned_char, unsigned_long,\n"
          "                                int8_t..int64_t, uint8_t..uint64_t (an mpi_ prefix is allowed)\n"
          "  -c, --validation              check every result (adds a Validation column)\n"
          "  -a, --algorithms LIST|all     comma-separated from vendor, auto, binomial,\n"
          "                                recursive_doubling, ring, rabenseifner, binary_blocks\n"
          "                                (default auto); all = every one, measured interleaved\n"
          "      --op NAME                 sum (default), prod, max, min\n"
          "      --reduce                  benchmark MPI_Reduce to root 0 instead of MPI_Allreduce\n"
          "      --mpi-symbol              the auto column calls MPI_Allreduce / MPI_Reduce (mpiopt's,\n"
          "                                as libmpiopt is linked) instead of mpiopt_allreduce, so a\n"
          "                                preloaded tool such as libmpiopt-profile.so sees each call\n"
          "      --time-limit SECONDS      stop a size's iterations after about this long (at least 3\n"
          "                                timed ones; for oversubscribed, loaded machines)\n"
          "  -j, --json                    print one JSON document instead of the table\n"
          "  -h, --help                    this help\n\n"
          "Example:\n"
          "  mpirun -np 4 mpiopt-allreduce -m 8:16777216 --algorithms all -T double\n",
          out);
}

/* Integers only, the whole string, within [lo, hi]. */
static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* -m A,B,C: ascending sizes */
static int parse_size_list(const char *arg, options *o)
{
    char item[64];
    o->nlisted = 0;
    for (const char *s = arg; *s;) {
        size_t len = strcspn(s, ",");
        if (len == 0 || len >= sizeof item || o->nlisted == MAX_LISTED_SIZES)
            return -1;
        memcpy(item, s, len);
        item[len] = 0;
        long long v;
        if (parse_int(item, 1, LLONG_MAX, &v) ||
            (o->nlisted && v <= o->listed[o->nlisted - 1]))
            return -1;
        o->listed[o->nlisted++] = v;
        s += len + (s[len] == ',');
    }
    if (o->nlisted == 0)
        return -1;
    o->min_size = o->listed[0];
    o->max_size = o->listed[o->nlisted - 1];
    return 0;
}

static int parse_sizes(const char *arg, options *o)
{
    if (strchr(arg, ','))
        return parse_size_list(arg, o);
    const char *colon = strchr(arg, ':');
    long long v;
    if (!colon)
        return parse_int(arg, 1, LLONG_MAX, &o->max_size);
    if (strchr(colon + 1, ':'))
        return -1;
    if (colon != arg) {
        char min[64];
        size_t len = (size_t)(colon - arg);
        if (len >= sizeof min)
            return -1;
        memcpy(min, arg, len);
        min[len] = 0;
        if (parse_int(min, 1, LLONG_MAX, &v))
            return -1;
        o->min_size = v;
    }
    if (colon[1]) {
        if (parse_int(colon + 1, 1, LLONG_MAX, &v))
            return -1;
        o->max_size = v;
    }
    return colon == arg && !colon[1] ? -1 : 0;
}

static const type_info *find_type(const char *name)
{
    if (strncasecmp(name, "mpi_", 4) == 0)
        name += 4;
    for (int i = 0; i < COUNT_OF(TYPES); i++)
        if (strcasecmp(name, TYPES[i].name) == 0)
            return &TYPES[i];
    return NULL;
}

static const op_info *find_op(const char *name)
{
    if (strncasecmp(name, "mpi_", 4) == 0)
        name += 4;
    for (int i = 0; i < COUNT_OF(OPS); i++)
        if (strcasecmp(name, OPS[i].name) == 0)
            return &OPS[i];
    return NULL;
}

/* "all" puts "vendor" first: the reference the others are compared with. */
static void parse_algorithms(const char *arg, options *o)
{
    o->ncolumns = 0;
    if (strcmp(arg, "all") == 0) {
        o->columns[o->ncolumns++] = MPIOPT_ALG_VENDOR;
        for (int a = 0; a < MPIOPT_ALG_COUNT; a++)
            if (a != MPIOPT_ALG_VENDOR)
                o->columns[o->ncolumns++] = (mpiopt_algorithm)a;
        return;
    }
    const char *tok = arg;
    while (1) {
        size_t len = strcspn(tok, ",");
        int found = -1;
        for (int a = 0; a < MPIOPT_ALG_COUNT; a++) {
            const char *name = mpiopt_algorithm_name((mpiopt_algorithm)a);
            if (strlen(name) == len && strncmp(tok, name, len) == 0)
                found = a;
        }
        if (found < 0)
            fail(1, "unknown algorithm '%.*s' in --algorithms (expected 'all' or a list of vendor, "
                 "auto, binomial, recursive_doubling, ring, rabenseifner, binary_blocks)", (int)len, tok);
        for (int c = 0; c < o->ncolumns; c++)
            if ((int)o->columns[c] == found)
                fail(1, "algorithm '%.*s' repeated in --algorithms", (int)len, tok);
        o->columns[o->ncolumns++] = (mpiopt_algorithm)found;
        if (!tok[len])
            break;
        tok += len + 1;
    }
}

static void parse_options(int argc, char **argv, options *o)
{
    enum { OPT_ITER_LARGE = 256, OPT_WARMUP_LARGE, OPT_OP, OPT_REDUCE, OPT_TIME_LIMIT, OPT_MPI_SYMBOL };
    static const struct option longopts[] = {
        { "message-size", required_argument, 0, 'm' },
        { "iterations", required_argument, 0, 'i' },
        { "warmup", required_argument, 0, 'x' },
        { "iterations-large", required_argument, 0, OPT_ITER_LARGE },
        { "warmup-large", required_argument, 0, OPT_WARMUP_LARGE },
        { "full", no_argument, 0, 'f' },
        { "type", required_argument, 0, 'T' },
        { "validation", no_argument, 0, 'c' },
        { "algorithms", required_argument, 0, 'a' },
        { "op", required_argument, 0, OPT_OP },
        { "reduce", no_argument, 0, OPT_REDUCE },
        { "time-limit", required_argument, 0, OPT_TIME_LIMIT },
        { "mpi-symbol", no_argument, 0, OPT_MPI_SYMBOL },
        { "json", no_argument, 0, 'j' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    long long iter_large = -1, warm_large = -1, v;
    *o = (options){ .min_size = DEFAULT_MIN_SIZE, .max_size = DEFAULT_MAX_SIZE,
                    .iterations = DEFAULT_ITERATIONS, .iterations_large = DEFAULT_ITERATIONS_LARGE,
                    .warmup = DEFAULT_WARMUP, .warmup_large = DEFAULT_WARMUP_LARGE,
                    .type = find_type("double"), .op = &OPS[0],
                    .ncolumns = 1, .columns = { MPIOPT_ALG_AUTO } };
    opterr = 0;  /* our own messages, from rank 0 only */
    int c;
    while ((c = getopt_long(argc, argv, ":m:i:x:fT:ca:jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (parse_sizes(optarg, o))
                fail(1, "bad message size '%s' (expected [MIN:]MAX in bytes, MIN >= 1, or an "
                     "ascending list A,B,C)", optarg);
            break;
        case 'i':
            if (parse_int(optarg, 1, INT_MAX, &v))
                fail(1, "bad iteration count '%s' (expected an integer >= 1)", optarg);
            o->iterations = o->iterations_large = (int)v;
            break;
        case 'x':
            if (parse_int(optarg, 0, INT_MAX, &v))
                fail(1, "bad warm-up count '%s' (expected an integer >= 0)", optarg);
            o->warmup = o->warmup_large = (int)v;
            break;
        case OPT_ITER_LARGE:
            if (parse_int(optarg, 1, INT_MAX, &iter_large))
                fail(1, "bad --iterations-large '%s' (expected an integer >= 1)", optarg);
            break;
        case OPT_WARMUP_LARGE:
            if (parse_int(optarg, 0, INT_MAX, &warm_large))
                fail(1, "bad --warmup-large '%s' (expected an integer >= 0)", optarg);
            break;
        case 'f': o->full = 1; break;
        case 'c': o->validate = 1; break;
        case 'j': o->json = 1; break;
        case OPT_REDUCE: o->reduce = 1; break;
        case OPT_MPI_SYMBOL: o->mpi_symbol = 1; break;
        case OPT_TIME_LIMIT: {
            char *end;
            o->time_limit = strtod(optarg, &end);
            if (end == optarg || *end || !(o->time_limit >= 0))
                fail(1, "bad --time-limit '%s' (expected seconds >= 0)", optarg);
            break;
        }
        case 'T':
            if (!(o->type = find_type(optarg)))
                fail(1, "unknown data type '%s' (see --help)", optarg);
            break;
        case OPT_OP:
            if (!(o->op = find_op(optarg)))
                fail(1, "unknown op '%s' (expected sum, prod, max or min)", optarg);
            break;
        case 'a':
            parse_algorithms(optarg, o);
            break;
        case 'h':
            if (rank == 0)
                usage(stdout);
            MPI_Finalize();
            exit(0);
        case ':':
            fail(1, "option '%s' needs a value (see --help)", argv[optind - 1]);
        default:
            fail(1, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fail(1, "unexpected argument '%s' (see --help)", argv[optind]);
    if (iter_large > 0)
        o->iterations_large = (int)iter_large;
    if (warm_large >= 0)
        o->warmup_large = (int)warm_large;
    if (o->min_size > o->max_size)
        fail(1, "minimum message size %lld is larger than the maximum %lld", o->min_size, o->max_size);
    if (o->max_size / (long long)o->type->size > INT_MAX)
        fail(1, "maximum message size %lld is more than INT_MAX elements", o->max_size);
}

/* ---- buffers and validation ---- */

static void *alloc_buffer(size_t bytes, int validate)
{
#ifdef SMPI_SHARED_MALLOC
    /* Under SimGrid every simulated rank lives in one process: share the timing buffers so
     * 1000 ranks x 8 MiB need no real memory. Validation needs private contents. */
    if (!validate)
        return SMPI_SHARED_MALLOC(bytes);
#endif
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        fail(1, "out of memory for a %zu-byte buffer", bytes);
    return p;
}

static void free_buffer(void *p, int validate)
{
#ifdef SMPI_SHARED_MALLOC
    if (!validate) {
        SMPI_SHARED_FREE(p);
        return;
    }
#endif
    free(p);
}

static void store(const type_info *t, void *buf, size_t i, long long value)
{
    char *p = (char *)buf + i * t->size;
    if (t->kind == KIND_FLOAT) {
        if (t->size == sizeof(float)) {
            float f = (float)value;
            memcpy(p, &f, sizeof f);
        } else {
            double d = (double)value;
            memcpy(p, &d, sizeof d);
        }
        return;
    }
    /* integers: the low t->size bytes (little- or big-endian alike via the fixed-width types) */
    switch (t->size) {
    case 1: { uint8_t v = (uint8_t)value; memcpy(p, &v, 1); break; }
    case 2: { uint16_t v = (uint16_t)value; memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)value; memcpy(p, &v, 4); break; }
    default: { uint64_t v = (uint64_t)value; memcpy(p, &v, 8); break; }
    }
}

/* The value rank r contributes at element i in iteration it: small integers, so floating-point
 * sums are exact in any order and results fit even 8-bit types up to 42 ranks (beyond, an 8-bit
 * sum wraps, and `store` wraps the expected value alike). */
static long long contribution(const op_info *op, long long i, int r, int it)
{
    if (op->op == MPI_PROD)
        return (i + it) % nranks == r ? 2 : 1;  /* one factor 2 per element: no overflow */
    if (op->op == MPI_SUM)
        return (i + r + it) % 4;
    return (i * 7 + r * 3 + it) % 11;            /* max, min */
}

static long long expected(const op_info *op, long long i, int it)
{
    long long acc = contribution(op, i, 0, it);
    for (int r = 1; r < nranks; r++) {
        long long v = contribution(op, i, r, it);
        if (op->op == MPI_SUM) acc += v;
        else if (op->op == MPI_PROD) acc *= v;
        else if (op->op == MPI_MAX) acc = v > acc ? v : acc;
        else acc = v < acc ? v : acc;
    }
    return acc;
}

static void fill_send(const options *o, void *sendbuf, int count, int it)
{
    for (int i = 0; i < count; i++)
        store(o->type, sendbuf, (size_t)i, contribution(o->op, i, rank, it));
}

/* Number of elements that differ bitwise from the exact result. */
static int count_errors(const options *o, const void *recvbuf, int count, int it)
{
    char want[16];
    int errors = 0;
    for (int i = 0; i < count; i++) {
        store(o->type, want, 0, expected(o->op, i, it));
        errors += memcmp(want, (const char *)recvbuf + (size_t)i * o->type->size, o->type->size) != 0;
    }
    return errors;
}

/* ---- measurement ---- */

static int call(const options *o, mpiopt_algorithm alg, const void *sendbuf, void *recvbuf, int count)
{
    MPI_Datatype t = o->type->datatype;
    if (alg == MPIOPT_ALG_AUTO && o->mpi_symbol)   /* through whatever is preloaded in front */
        return o->reduce ? MPI_Reduce(sendbuf, recvbuf, count, t, o->op->op, 0, MPI_COMM_WORLD)
                         : MPI_Allreduce(sendbuf, recvbuf, count, t, o->op->op, MPI_COMM_WORLD);
    if (o->reduce)
        return alg == MPIOPT_ALG_VENDOR ? PMPI_Reduce(sendbuf, recvbuf, count, t, o->op->op, 0, MPI_COMM_WORLD)
                                        : mpiopt_reduce(sendbuf, recvbuf, count, t, o->op->op, 0, MPI_COMM_WORLD, alg);
    return alg == MPIOPT_ALG_VENDOR ? PMPI_Allreduce(sendbuf, recvbuf, count, t, o->op->op, MPI_COMM_WORLD)
                                    : mpiopt_allreduce(sendbuf, recvbuf, count, t, o->op->op, MPI_COMM_WORLD, alg);
}

typedef struct {
    double avg_us, min_us, max_us;  /* over ranks, of each rank's average (OSU's statistics) */
    double median_us;               /* median over iterations of the slowest rank's time */
    int errors;                     /* wrong elements summed over ranks and iterations */
} column_result;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Measures every column at one size; returns the number of timed iterations done (fewer than
 * asked when --time-limit stops it). `times` and `slowest` have room for MAX_COLUMNS x the larger
 * iteration count. */
/* The order of the columns in iteration `it`: a fresh permutation each time, the same on every
 * rank (a fixed-seed generator). A rotation would not do: it keeps the cyclic order, so one column
 * would nearly always run right after another, and inherit its aftermath (skew between ranks, a
 * vendor call that polled away its ranks' time slices). */
static void shuffle_columns(int *order, int n, unsigned it)
{
    uint64_t x = 0x9E3779B97F4A7C15ull * (it + 1);
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        x ^= x >> 33;
        x *= 0xFF51AFD7ED558CCDull;
        x ^= x >> 29;
        int j = (int)(x % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static int measure_size(const options *o, long long size, void *sendbuf, void *recvbuf,
                        double *times, double *slowest, column_result *res)
{
    int count = (int)(size / (long long)o->type->size);
    int large = size > LARGE_MESSAGE_SIZE;
    int planned = large ? o->iterations_large : o->iterations;
    int warmup = large ? o->warmup_large : o->warmup;
    int done = 0;
    double total[MAX_COLUMNS] = { 0 };
    int errors[MAX_COLUMNS] = { 0 };
    int checks_here = o->validate && (!o->reduce || rank == 0);

    if (!o->validate)
        fill_send(o, sendbuf, count, 0);
    mpiopt_barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int it = 0; it < warmup + planned; it++) {
        int order[MAX_COLUMNS];
        shuffle_columns(order, o->ncolumns, (unsigned)it);
        for (int k = 0; k < o->ncolumns; k++) {
            int c = order[k];
            if (o->validate) {
                fill_send(o, sendbuf, count, it);
                memset(recvbuf, 0xff, (size_t)size);
                mpiopt_barrier(MPI_COMM_WORLD);
            }
            double t0 = MPI_Wtime();
            int rc = call(o, o->columns[c], sendbuf, recvbuf, count);
            double t1 = MPI_Wtime();
            mpiopt_barrier(MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS)
                fail(1, "%s returned MPI error %d", mpiopt_algorithm_name(o->columns[c]), rc);
            if (checks_here)
                errors[c] += count_errors(o, recvbuf, count, it);
            if (it >= warmup) {
                total[c] += t1 - t0;
                times[c * planned + (it - warmup)] = t1 - t0;
            }
        }
        done = it >= warmup ? it - warmup + 1 : 0;
        /* --time-limit: rank 0's clock decides for everyone. Over the limit, the warm-up ends
         * (after one round) and the timing stops after MIN_TIMED rounds. */
        if (o->time_limit > 0 && done < planned && (done >= MIN_TIMED || it < warmup - 1)) {
            int over = rank == 0 && MPI_Wtime() - start > o->time_limit;
            PMPI_Bcast(&over, 1, MPI_INT, 0, MPI_COMM_WORLD);
            mpiopt_barrier(MPI_COMM_WORLD);  /* the next call starts together, as after a call */
            if (over && done >= MIN_TIMED)
                break;
            if (over)
                warmup = it + 1;  /* the next round is the first timed one */
        }
    }
    /* On a shared machine one descheduled rank can stretch a single call by milliseconds and
     * dominate an average: the median over iterations of the slowest rank's time is the robust
     * figure that comparisons between columns (mpiopt bench, mpiopt tune) use. */
    PMPI_Reduce(times, slowest, o->ncolumns * planned, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    for (int c = 0; c < o->ncolumns; c++) {
        double *col = slowest + c * planned;
        qsort(col, (size_t)done, sizeof *col, compare_doubles);
        res[c].median_us = 1e6 * (done % 2 ? col[done / 2] : 0.5 * (col[done / 2 - 1] + col[done / 2]));
    }
    for (int c = 0; c < o->ncolumns; c++) {
        double mine = total[c] * 1e6 / done, sum = 0;
        PMPI_Reduce(&mine, &res[c].min_us, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        PMPI_Reduce(&mine, &res[c].max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        PMPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        PMPI_Allreduce(&errors[c], &res[c].errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        res[c].avg_us = sum / nranks;
    }
    return done;
}

/* ---- output ---- */

static const char *label(const options *o)
{
    return o->reduce ? "Reduce" : "Allreduce";
}

/* Wide enough for "<algorithm>-max(us)": the columns of a row line up with its header. */
static int column_width(const char *algorithm)
{
    int w = (int)strlen(algorithm) + 8;
    return w > FIELD_WIDTH ? w : FIELD_WIDTH;
}

static void print_table_header(const options *o)
{
    printf("# OSU MPI %s Latency Test (mpiopt-allreduce, %d ranks)\n", label(o), nranks);
    printf("# Datatype: %s.\n", o->type->mpi_name);
    if (o->op->op != MPI_SUM)
        printf("# Op: %s.\n", o->op->mpi_name);
    if (o->ncolumns == 1) {
        /* exactly osu_allreduce's columns; ours (algorithm, bandwidth) come after them */
        printf("# Algorithm: %s.\n", mpiopt_algorithm_name(o->columns[0]));
        printf("%-*s%*s", 10, "# Size", FIELD_WIDTH, "Avg Latency(us)");
        if (o->full)
            printf("%*s%*s%*s", FIELD_WIDTH, "Min Latency(us)", FIELD_WIDTH, "Max Latency(us)", 12,
                   "Iterations");
        if (o->validate)
            printf("%*s", FIELD_WIDTH, "Validation");
        printf("%*s\n", FIELD_WIDTH, "Bandwidth(MB/s)");
        return;
    }
    /* one average-latency column per algorithm, then one bandwidth column per algorithm */
    printf("%-*s", 10, "# Size");
    char name[64];
    for (int c = 0; c < o->ncolumns; c++) {
        const char *alg = mpiopt_algorithm_name(o->columns[c]);
        snprintf(name, sizeof name, "%s(us)", alg);
        printf(" %*s", column_width(alg), name);
        if (o->full) {
            snprintf(name, sizeof name, "%s-min(us)", alg);
            printf(" %*s", column_width(alg), name);
            snprintf(name, sizeof name, "%s-max(us)", alg);
            printf(" %*s", column_width(alg), name);
        }
    }
    for (int c = 0; c < o->ncolumns; c++) {
        snprintf(name, sizeof name, "%s(MB/s)", mpiopt_algorithm_name(o->columns[c]));
        printf(" %*s", column_width(mpiopt_algorithm_name(o->columns[c])), name);
    }
    if (o->full)
        printf(" %*s", 12, "Iterations");
    if (o->validate)
        printf(" %*s", FIELD_WIDTH, "Validation");
    printf("\n");
}

static double bandwidth(long long size, double us)
{
    return us > 0 ? (double)size / us : 0.0;  /* bytes per microsecond = MB/s */
}

static void print_table_row(const options *o, long long size, int iterations, const column_result *res)
{
    int errors = 0;
    for (int c = 0; c < o->ncolumns; c++)
        errors += res[c].errors;
    if (o->ncolumns == 1) {
        printf("%-*lld%*.*f", 10, size, FIELD_WIDTH, FLOAT_PRECISION, res[0].avg_us);
        if (o->full)
            printf("%*.*f%*.*f%*d", FIELD_WIDTH, FLOAT_PRECISION, res[0].min_us, FIELD_WIDTH,
                   FLOAT_PRECISION, res[0].max_us, 12, iterations);
        if (o->validate)
            printf("%*s", FIELD_WIDTH, errors ? "Fail" : "Pass");
        printf("%*.*f\n", FIELD_WIDTH, FLOAT_PRECISION, bandwidth(size, res[0].avg_us));
    } else {
        printf("%-*lld", 10, size);
        for (int c = 0; c < o->ncolumns; c++) {
            int w = column_width(mpiopt_algorithm_name(o->columns[c]));
            printf(" %*.*f", w, FLOAT_PRECISION, res[c].avg_us);
            if (o->full)
                printf(" %*.*f %*.*f", w, FLOAT_PRECISION, res[c].min_us, w, FLOAT_PRECISION,
                       res[c].max_us);
        }
        for (int c = 0; c < o->ncolumns; c++)
            printf(" %*.*f", column_width(mpiopt_algorithm_name(o->columns[c])), FLOAT_PRECISION,
                   bandwidth(size, res[c].avg_us));
        if (o->full)
            printf(" %*d", 12, iterations);
        if (o->validate)
            printf(" %*s", FIELD_WIDTH, errors ? "Fail" : "Pass");
        printf("\n");
    }
    fflush(stdout);
}

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void print_json_header(const options *o)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n")] = 0;  /* MPICH prints pages of configure options */
    printf("{\"benchmark\": \"mpiopt-allreduce\", \"operation\": \"%s\", \"ranks\": %d, ",
           o->reduce ? "reduce" : "allreduce", nranks);
    printf("\"datatype\": \"%s\", \"op\": \"%s\", \"validation\": %s, \"mpi_library\": ",
           o->type->mpi_name, o->op->mpi_name, o->validate ? "true" : "false");
    print_json_string(version);
    printf(", \"algorithms\": [");
    for (int c = 0; c < o->ncolumns; c++)
        printf("%s\"%s\"", c ? ", " : "", mpiopt_algorithm_name(o->columns[c]));
    printf("],\n \"results\": [");
}

static void print_json_rows(const options *o, long long size, int iterations, const column_result *res,
                            int *first)
{
    for (int c = 0; c < o->ncolumns; c++) {
        printf("%s\n  {\"algorithm\": \"%s\", \"bytes\": %lld, \"count\": %lld, \"iterations\": %d, "
               "\"avg_us\": %.4f, \"min_us\": %.4f, \"max_us\": %.4f, \"median_us\": %.4f, "
               "\"bandwidth_mb_s\": %.4f",
               *first ? "" : ",", mpiopt_algorithm_name(o->columns[c]), size,
               size / (long long)o->type->size, iterations, res[c].avg_us, res[c].min_us,
               res[c].max_us, res[c].median_us, bandwidth(size, res[c].avg_us));
        if (o->validate)
            printf(", \"valid\": %s, \"errors\": %d", res[c].errors ? "false" : "true", res[c].errors);
        printf("}");
        *first = 0;
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

    void *sendbuf = alloc_buffer((size_t)o.max_size, o.validate);
    void *recvbuf = alloc_buffer((size_t)o.max_size, o.validate);
    memset(recvbuf, 0, (size_t)o.max_size);

    if (rank == 0) {
        if (o.json)
            print_json_header(&o);
        else
            print_table_header(&o);
        fflush(stdout);
    }

    int most_iterations = o.iterations > o.iterations_large ? o.iterations : o.iterations_large;
    double *times = calloc((size_t)MAX_COLUMNS * (size_t)most_iterations, sizeof(double));
    double *slowest = calloc((size_t)MAX_COLUMNS * (size_t)most_iterations, sizeof(double));
    if (!times || !slowest)
        fail(1, "out of memory for %d iterations", most_iterations);
    column_result res[MAX_COLUMNS];
    int first = 1, failed_size = -1;
    char failed_algorithms[256] = "";
    for (int i = 0;; i++) {
        long long size = o.nlisted ? (i < o.nlisted ? o.listed[i] : LLONG_MAX)
                                   : (i < 62 ? o.min_size << i : LLONG_MAX);
        if (size > o.max_size)
            break;
        if (size / (long long)o.type->size == 0)
            continue;  /* as OSU: sizes below one element are skipped */
        int iterations = measure_size(&o, size, sendbuf, recvbuf, times, slowest, res);
        if (rank == 0) {
            if (o.json)
                print_json_rows(&o, size, iterations, res, &first);
            else
                print_table_row(&o, size, iterations, res);
        }
        for (int c = 0; c < o.ncolumns; c++)
            if (res[c].errors) {
                size_t used = strlen(failed_algorithms);
                snprintf(failed_algorithms + used, sizeof failed_algorithms - used, "%s%s",
                         used ? ", " : "", mpiopt_algorithm_name(o.columns[c]));
            }
        if (failed_algorithms[0]) {
            failed_size = (int)size;
            break;  /* as OSU: stop at the first size with wrong results */
        }
    }
    if (rank == 0 && o.json)
        printf("\n ]}\n");
    fflush(stdout);

    free(times);
    free(slowest);
    free_buffer(sendbuf, o.validate);
    free_buffer(recvbuf, o.validate);
    if (failed_size >= 0)
        fail(1, "DATA VALIDATION ERROR: wrong results at message size %d from: %s", failed_size,
             failed_algorithms);
    MPI_Finalize();
    return 0;
}
