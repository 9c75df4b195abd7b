/* mpiopt-allreduce: the command line, and the types, ops and algorithms it names. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "allreduce_bench.h"
#include "../fail.h"
#include "coll/algorithms/algorithms.h"   /* the algorithm registry */

int rank, nranks;

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


BENCH_DEFINE_FAIL(, "mpiopt-allreduce")

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
          "      --fresh                   write the send buffer before every call, untimed, as an\n"
          "                                application does (OSU leaves it unchanged: the other\n"
          "                                rank may then find it in its cache from the last call)\n"
          "  -a, --algorithms LIST|all     comma-separated algorithms (below; default auto);\n"
          "                                all = every one, measured interleaved; memcpy =\n"
          "                                the floor: every rank copies input to output at once\n"
          "      --overhead                ns per call that the interposed MPI_Allreduce/MPI_Reduce\n"
          "                                add to the vendor's where auto hands the call over (8 B)\n"
          "      --list-algorithms         print the algorithms and their restrictions and exit\n"
          "                                (with --json: one JSON document)\n"
          "      --op NAME                 sum (default), prod, max, min\n"
          "      --reduce                  benchmark MPI_Reduce to root 0 instead of MPI_Allreduce\n"
          "      --scan, --exscan          benchmark MPI_Scan / MPI_Exscan (columns vendor, auto)\n"
          "      --reduce-scatter-block, --reduce-scatter\n"
          "                                benchmark MPI_Reduce_scatter_block / MPI_Reduce_scatter;\n"
          "                                the size is the whole send buffer, each rank gets a\n"
          "                                p-th, as OSU's (columns vendor, auto, shared_memory,\n"
          "                                rabenseifner, ring, binomial, memcpy)\n"
          "      --mpi-symbol              the auto column calls MPI_Allreduce / MPI_Reduce (mpiopt's,\n"
          "                                as libmpiopt is linked) instead of mpiopt_allreduce, so a\n"
          "                                preloaded tool such as libmpiopt-profile.so sees each call\n"
          "      --time-limit SECONDS      stop a size's iterations after about this long (at least 3\n"
          "                                timed ones; for oversubscribed, loaded machines)\n"
          "      --live-comms N            first make N duplicates of MPI_COMM_WORLD, an 8-byte and a\n"
          "                                64 KiB allreduce (auto) on each, keep them alive, and\n"
          "                                measure on a duplicate made after them (what a program\n"
          "                                with many communicators leaves the next one)\n"
          "  -j, --json                    print one JSON document instead of the table\n"
          "  -h, --help                    this help\n\n"
          "Example:\n"
          "  mpirun -np 4 mpiopt-allreduce -m 8:16777216 --algorithms all -T double\n\n",
          out);
    char names[512];
    mpiopt_algorithm_names(names, sizeof names);
    fprintf(out, "Algorithms: %s\n", names);
}

/* --list-algorithms: the registry, for people (a line each) or for scripts (--json; the Python
 * layer reads this instead of keeping its own list). */
static void list_algorithms(int json)
{
    for (int a = 0; a < MPIOPT_ALG_COUNT; a++) {
        const mpiopt_algorithm_info *x = &mpiopt_algorithms[a];
        const char *kind = a == MPIOPT_ALG_AUTO ? "auto" : a == MPIOPT_ALG_VENDOR ? "vendor" : "mpiopt";
        int keeps = (x->flags & MPIOPT_KEEPS_ORDER) != 0, pow2 = (x->flags & MPIOPT_NEEDS_POW2) != 0,
            predef = (x->flags & MPIOPT_PREDEFINED_OP) != 0;
        /* the rest of the family: a row of MPIOPT_FAMILY_LIST (the selectors take every one) */
        int selector = a == MPIOPT_ALG_AUTO || a == MPIOPT_ALG_VENDOR;
        int scatter = selector || mpiopt_family_fits(MPIOPT_FAMILY_REDUCE_SCATTER, a, 1);
        int scan = selector || mpiopt_family_fits(MPIOPT_FAMILY_SCAN, a, 1);
        if (json) {
            printf("%s{\"id\": %d, \"name\": \"%s\", \"short\": \"%s\", \"kind\": \"%s\", "
                   "\"allreduce\": true, \"reduce\": true, \"reduce_scatter\": %s, \"scan\": %s, "
                   "\"keeps_order\": %s, \"needs_pow2\": %s, \"predefined_op_only\": %s, "
                   "\"min_count\": %d}",
                   a ? ",\n  " : "{\"algorithms\": [\n  ", a, mpiopt_algorithm_name(a),
                   mpiopt_algorithm_short_name(a), kind, scatter ? "true" : "false",
                   scan ? "true" : "false", keeps ? "true" : "false", pow2 ? "true" : "false",
                   predef ? "true" : "false", x->min_count);
        } else {
            printf("%-20s %-7s%s%s%s%s%s%s\n", mpiopt_algorithm_name(a), kind,
                   a == MPIOPT_ALG_AUTO ? "  chosen per call" : keeps ? "  keeps rank order" :
                                                                 "  commutative ops only",
                   pow2 ? ", power-of-two p only" : "", predef ? ", predefined ops only" : "",
                   x->min_count > 0 ? ", a minimum count" : "",
                   scatter && !selector ? ", also reduce-scatters" : "",
                   scan && !selector ? ", also scans" : "");
        }
    }
    if (json)
        printf("\n]}\n");
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
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), tok);
        int found = len >= sizeof name ? -1 : strcmp(name, "memcpy") == 0 ? (int)MEMCPY_COLUMN
                                                 : mpiopt_algorithm_from_name(name);
        if (found < 0) {
            char names[512];
            mpiopt_algorithm_names(names, sizeof names);
            fail(1, "unknown algorithm '%.*s' in --algorithms (expected 'all' or a list of %s, "
                 "memcpy)",
                 (int)len, tok, names);
        }
        for (int c = 0; c < o->ncolumns; c++)
            if ((int)o->columns[c] == found)
                fail(1, "algorithm '%.*s' repeated in --algorithms", (int)len, tok);
        o->columns[o->ncolumns++] = (mpiopt_algorithm)found;
        if (!tok[len])
            break;
        tok += len + 1;
    }
}

void parse_options(int argc, char **argv, options *o)
{
    enum { OPT_ITER_LARGE = 256, OPT_WARMUP_LARGE, OPT_OP, OPT_REDUCE, OPT_SCAN, OPT_EXSCAN, OPT_REDUCE_SCATTER_BLOCK, OPT_REDUCE_SCATTER, OPT_TIME_LIMIT, OPT_MPI_SYMBOL,
           OPT_LIST_ALGORITHMS, OPT_OVERHEAD, OPT_LIVE_COMMS, OPT_FRESH };
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
        { "scan", no_argument, 0, OPT_SCAN },
        { "exscan", no_argument, 0, OPT_EXSCAN },
        { "reduce-scatter-block", no_argument, 0, OPT_REDUCE_SCATTER_BLOCK },
        { "reduce-scatter", no_argument, 0, OPT_REDUCE_SCATTER },
        { "time-limit", required_argument, 0, OPT_TIME_LIMIT },
        { "mpi-symbol", no_argument, 0, OPT_MPI_SYMBOL },
        { "list-algorithms", no_argument, 0, OPT_LIST_ALGORITHMS },
        { "overhead", no_argument, 0, OPT_OVERHEAD },
        { "live-comms", required_argument, 0, OPT_LIVE_COMMS },
        { "fresh", no_argument, 0, OPT_FRESH },
        { "json", no_argument, 0, 'j' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    long long iter_large = -1, warm_large = -1, v;
    int list = 0;
    *o = (options){ .min_size = DEFAULT_MIN_SIZE, .max_size = DEFAULT_MAX_SIZE,
                    .iterations = DEFAULT_ITERATIONS, .iterations_large = DEFAULT_ITERATIONS_LARGE,
                    .warmup = DEFAULT_WARMUP, .warmup_large = DEFAULT_WARMUP_LARGE,
                    .type = find_type("double"), .op = &OPS[0],
                    .ncolumns = 1, .columns = { MPIOPT_ALG_AUTO }, .comm = MPI_COMM_WORLD };
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
        case OPT_REDUCE: o->operation = BENCH_REDUCE; break;
        case OPT_SCAN: o->operation = BENCH_SCAN; break;
        case OPT_EXSCAN: o->operation = BENCH_EXSCAN; break;
        case OPT_REDUCE_SCATTER_BLOCK: o->operation = BENCH_REDUCE_SCATTER_BLOCK; break;
        case OPT_REDUCE_SCATTER: o->operation = BENCH_REDUCE_SCATTER; break;
        case OPT_MPI_SYMBOL: o->mpi_symbol = 1; break;
        case OPT_LIST_ALGORITHMS: list = 1; break;
        case OPT_OVERHEAD: o->overhead = 1; break;
        case OPT_FRESH: o->fresh = 1; break;
        case OPT_LIVE_COMMS:
            if (parse_int(optarg, 0, 100000, &v))
                fail(1, "bad --live-comms '%s' (expected an integer from 0 to 100000)", optarg);
            o->live_comms = (int)v;
            break;
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
    if (list) {
        if (rank == 0)
            list_algorithms(o->json);
        MPI_Finalize();
        exit(0);
    }
    if (iter_large > 0)
        o->iterations_large = (int)iter_large;
    if (warm_large >= 0)
        o->warmup_large = (int)warm_large;
    if (o->operation >= BENCH_SCAN) {
        if (o->validate)
            fail(1, "--validation checks allreduce and reduce results only");
        int scatter = o->operation >= BENCH_REDUCE_SCATTER_BLOCK;
        mpiopt_family family = scatter ? MPIOPT_FAMILY_REDUCE_SCATTER : MPIOPT_FAMILY_SCAN;
        for (int k = 0; k < o->ncolumns; k++) {
            mpiopt_algorithm a = o->columns[k];
            if (a == MPIOPT_ALG_AUTO || a == MPIOPT_ALG_VENDOR || a == MEMCPY_COLUMN ||
                mpiopt_family_fits(family, a, 1))
                continue;
            fail(1, "%s has no algorithm '%s' (--list-algorithms: the ones marked \"also %s\")",
                 scatter ? "a reduce-scatter" : "a scan", column_name(a),
                 scatter ? "reduce-scatters" : "scans");
        }
    }
    if (o->min_size > o->max_size)
        fail(1, "minimum message size %lld is larger than the maximum %lld", o->min_size, o->max_size);
    if (o->max_size / (long long)o->type->size > INT_MAX)
        fail(1, "maximum message size %lld is more than INT_MAX elements", o->max_size);
}
