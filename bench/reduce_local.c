/* mpiopt-reduce-local: MPI_Reduce_local timings, compatible with Open MPI's
 * test/datatype/reduce_local options and output lines, plus --compare: the vendor's
 * PMPI_Reduce_local, mpiopt on one thread, mpiopt threaded and a stream-add over the same bytes,
 * timed in one process so that their ratios are meaningful on a shared machine.
 *
 * Timing: every variant runs in batches sized to take ~1 ms; the best batch of several counts
 * (the least disturbed by other processes). Variants are interleaved batch by batch so that
 * noise hits them alike. Bandwidth counts 3 × count × element bytes (two reads, one write). */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpiopt.h"
#include "op_kernel.h"
#include <omp.h>

static const struct { const char *name, *mpi_name; MPI_Op op; } all_ops[] = {
    { "max", "MPI_MAX", MPI_MAX }, { "min", "MPI_MIN", MPI_MIN }, { "sum", "MPI_SUM", MPI_SUM },
    { "prod", "MPI_PROD", MPI_PROD }, { "land", "MPI_LAND", MPI_LAND },
    { "band", "MPI_BAND", MPI_BAND }, { "lor", "MPI_LOR", MPI_LOR }, { "bor", "MPI_BOR", MPI_BOR },
    { "lxor", "MPI_LXOR", MPI_LXOR }, { "bxor", "MPI_BXOR", MPI_BXOR },
};
#define NOPS ((int)(sizeof all_ops / sizeof all_ops[0]))

/* --threads-always: the threaded column uses every thread at every size */
static int force_threads;

typedef struct {
    long lower, upper;
    int repeats, max_shift, type_bits, shift1, shift2, verbose, check, compare, json;
    char types[8];
    int ops[NOPS], nops;
} options;

static void usage(const char *prog, FILE *f)
{
    fprintf(f,
            "usage: %s [options]\n"
            "MPI_Reduce_local timings (Open MPI reduce_local compatible), through mpiopt.\n\n"
            " -l N   lowest count (default 1)          -u N   highest count (default 1000000)\n"
            "        counts double from -l up to -u\n"
            " -r N   repetitions per measurement (default 1)\n"
            " -t S   element types among i (signed), u (unsigned), f (float), d (double),\n"
            "        c (MPI_CHAR, 8 bits: OSU's default type); default uifd\n"
            " -o L   comma-separated ops (max,min,sum,prod,land,band,lor,bor,lxor,bxor) or all\n"
            " -i N   shifts: repeat with all buffers shifted by 0..N-1 elements (default 1)\n"
            " -s B   integer element size in bits: 8, 16, 32 or 64 (default 64)\n"
            " -1 N   misalignment of the first operand, in elements\n"
            " -2 N   misalignment of the result, in elements\n"
            " -v     verbose        -f  no correctness checks        -h  this help\n"
            " --compare   vendor vs mpiopt 1 thread vs mpiopt threaded vs stream-add, GB/s and ratios\n"
            " --json      with --compare: one JSON array of records\n"
            " --threads-always  with --compare: the threaded column uses all threads at every size\n"
            "             (default: as mpiopt does, threads only from MPIOPT_THREAD_MIN_BYTES up)\n\n"
            "example: %s --compare -o sum,max,prod -t d -l 1000 -u 1000 -r 2000\n",
            prog, prog);
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){ .lower = 1, .upper = 1000000, .repeats = 1, .max_shift = 1, .type_bits = 64,
                    .check = 1, .types = "uifd" };
    static struct option longopts[] = { { "compare", no_argument, 0, 'C' },
                                        { "json", no_argument, 0, 'J' },
                                        { "threads-always", no_argument, 0, 'T' },
                                        { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
    int c;
    while ((c = getopt_long(argc, argv, "l:u:r:t:o:i:s:1:2:vfh", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': o->lower = atol(optarg); if (o->lower <= 0) { fprintf(stderr, "-l: the lowest count must be positive\n"); return -1; } break;
        case 'u': o->upper = atol(optarg); if (o->upper <= 0) { fprintf(stderr, "-u: the highest count must be positive\n"); return -1; } break;
        case 'r': o->repeats = atoi(optarg); if (o->repeats <= 0) { fprintf(stderr, "-r: repetitions must be positive\n"); return -1; } break;
        case 'i': o->max_shift = atoi(optarg); if (o->max_shift <= 0) { fprintf(stderr, "-i: shifts must be positive\n"); return -1; } break;
        case 's':
            o->type_bits = atoi(optarg);
            if (o->type_bits != 8 && o->type_bits != 16 && o->type_bits != 32 && o->type_bits != 64) {
                fprintf(stderr, "-s: element size must be 8, 16, 32 or 64, not %s\n", optarg);
                return -1;
            }
            break;
        case 't':
            if (strlen(optarg) == 0 || strlen(optarg) >= sizeof o->types || strspn(optarg, "iufdc") != strlen(optarg)) {
                fprintf(stderr, "-t: types are letters among i (signed), u (unsigned), f (float), d (double), c (char)\n");
                return -1;
            }
            strcpy(o->types, optarg);
            break;
        case 'o': {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", optarg);
            o->nops = 0;
            for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int found = 0;
                for (int i = 0; i < NOPS; i++)
                    if (!strcmp(t, "all") || !strcmp(t, all_ops[i].name)) {
                        int dup = 0;
                        for (int k = 0; k < o->nops; k++) dup |= o->ops[k] == i;
                        if (!dup) o->ops[o->nops++] = i;
                        found = 1;
                    }
                if (!found) { fprintf(stderr, "-o: unknown op '%s'\n", t); return -1; }
            }
            break;
        }
        case '1': o->shift1 = atoi(optarg); if (o->shift1 < 0) { fprintf(stderr, "-1: must be >= 0\n"); return -1; } break;
        case '2': o->shift2 = atoi(optarg); if (o->shift2 < 0) { fprintf(stderr, "-2: must be >= 0\n"); return -1; } break;
        case 'v': o->verbose++; break;
        case 'f': o->check = 0; break;
        case 'C': o->compare = 1; break;
        case 'J': o->json = 1; break;
        case 'T': force_threads = 1; break;
        case 'h': usage(argv[0], stdout); return 1;
        default: usage(argv[0], stderr); return -1;
        }
    }
    if (optind < argc) { fprintf(stderr, "unexpected argument '%s'\n", argv[optind]); return -1; }
    if (o->lower > o->upper) { fprintf(stderr, "-l %ld is above -u %ld\n", o->lower, o->upper); return -1; }
    if (o->nops == 0)
        for (int i = 0; i < NOPS; i++) o->ops[o->nops++] = i;
    return 0;
}

/* ---- element types ---- */
typedef struct { char kind; int bytes; MPI_Datatype dt; const char *name; } elem_type;

static elem_type type_for(char kind, int bits)
{
    if (kind == 'f') return (elem_type){ 'f', 4, MPI_FLOAT, "MPI_FLOAT" };
    if (kind == 'd') return (elem_type){ 'd', 8, MPI_DOUBLE, "MPI_DOUBLE" };
    if (kind == 'c') return (elem_type){ 'c', 1, MPI_CHAR, "MPI_CHAR" };
    static const char *snames[] = { "MPI_INT8_T", "MPI_INT16_T", "MPI_INT32_T", "MPI_INT64_T" };
    static const char *unames[] = { "MPI_UINT8_T", "MPI_UINT16_T", "MPI_UINT32_T", "MPI_UINT64_T" };
    MPI_Datatype s[] = { MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T };
    MPI_Datatype u[] = { MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T };
    int k = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : 3;
    return kind == 'i' ? (elem_type){ 'i', bits / 8, s[k], snames[k] }
                       : (elem_type){ 'u', bits / 8, u[k], unames[k] };
}

/* Input values: small and positive, and 1 for PROD, so that repeated application in timing
 * batches stays in range (no overflow to inf, no denormals that would time a slow path). */
static void fill(const elem_type *t, void *p, long n, int for_prod, unsigned seed)
{
    for (long i = 0; i < n; i++) {
        long v = for_prod ? 1 : (long)((i * 7 + seed) % 13) + 1;
        switch (t->kind) {
        case 'f': ((float *)p)[i] = (float)v; break;
        case 'd': ((double *)p)[i] = (double)v; break;
        default:
            if (t->bytes == 1) ((uint8_t *)p)[i] = (uint8_t)v;
            else if (t->bytes == 2) ((uint16_t *)p)[i] = (uint16_t)v;
            else if (t->bytes == 4) ((uint32_t *)p)[i] = (uint32_t)v;
            else ((uint64_t *)p)[i] = (uint64_t)v;
        }
    }
}

/* The scalar reference for the check (-f turns it off). */
#define REF_BODY(T, U, IS_FLOAT)                                                               \
    for (long i = 0; i < n; i++) {                                                             \
        T x = ((const T *)a)[i], y = ((const T *)b)[i], r = 0;                                 \
        if (op == MPI_SUM) r = IS_FLOAT ? (T)(x + y) : (T)(U)((U)x + (U)y);                    \
        else if (op == MPI_PROD) r = IS_FLOAT ? (T)(x * y) : (T)(U)((U)x * (U)y);              \
        else if (op == MPI_MAX) r = x > y ? x : y;                                             \
        else if (op == MPI_MIN) r = x < y ? x : y;                                             \
        else if (op == MPI_LAND) r = (T)(x && y);                                              \
        else if (op == MPI_LOR) r = (T)(x || y);                                               \
        else if (op == MPI_LXOR) r = (T)(!x != !y);                                            \
        else if (!IS_FLOAT && op == MPI_BAND) r = (T)((U)x & (U)y);                            \
        else if (!IS_FLOAT && op == MPI_BOR) r = (T)((U)x | (U)y);                             \
        else if (!IS_FLOAT && op == MPI_BXOR) r = (T)((U)x ^ (U)y);                            \
        if (memcmp(&r, &((const T *)got)[i], sizeof r)) return (int)i;                         \
    }                                                                                          \
    return -1;
/* Index of the first element of `got` that differs from a op b, or -1. */
static int first_error(const elem_type *t, MPI_Op op, const void *a, const void *b, const void *got, long n)
{
    if (t->kind == 'f') { REF_BODY(float, uint32_t, 1) }
    if (t->kind == 'd') { REF_BODY(double, uint64_t, 1) }
    if (t->kind == 'c') { REF_BODY(char, unsigned char, 0) }
    switch (t->bytes * (t->kind == 'i' ? 1 : -1)) {
    case 1: { REF_BODY(int8_t, uint8_t, 0) }
    case 2: { REF_BODY(int16_t, uint16_t, 0) }
    case 4: { REF_BODY(int32_t, uint32_t, 0) }
    case 8: { REF_BODY(int64_t, uint64_t, 0) }
    case -1: { REF_BODY(uint8_t, uint8_t, 0) }
    case -2: { REF_BODY(uint16_t, uint16_t, 0) }
    case -4: { REF_BODY(uint32_t, uint32_t, 0) }
    default: { REF_BODY(uint64_t, uint64_t, 0) }
    }
}

static int op_allowed(const elem_type *t, MPI_Op op)
{
    int is_float = t->kind == 'f' || t->kind == 'd';
    return !(is_float && (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR || op == MPI_BAND ||
                          op == MPI_BOR || op == MPI_BXOR));
}

/* ---- the classic mode: one line per (op, type, count), Open MPI's format ---- */
static int run_classic(const options *o, char *in, char *inout, char *init_in, char *init_inout, char *check)
{
    int errors = 0;
    for (const char *tk = o->types; *tk; tk++) {
        elem_type t = type_for(*tk, o->type_bits);
        for (int oi = 0; oi < o->nops; oi++) {
            MPI_Op op = all_ops[o->ops[oi]].op;
            if (!op_allowed(&t, op))
                continue;
            for (long count = o->lower; count <= o->upper; count *= 2) {
                size_t eb = (size_t)t.bytes;
                fill(&t, init_in, count + o->shift1 + o->max_shift, op == MPI_PROD, 1);
                fill(&t, init_inout, count + o->shift2 + o->max_shift, op == MPI_PROD, 5);
                for (int k = 0; k < o->max_shift && k < count; k++) {
                    char *a = in + (k + o->shift1) * eb, *b = inout + (k + o->shift2) * eb;
                    double total = 0;
                    int bad = -1;
                    for (int r = 0; r < o->repeats; r++) {
                        memcpy(in, init_in, (count + o->shift1 + o->max_shift) * eb);
                        memcpy(inout, init_inout, (count + o->shift2 + o->max_shift) * eb);
                        double t0 = MPI_Wtime();
                        MPI_Reduce_local(a, b, (int)(count - k), t.dt, op);
                        total += MPI_Wtime() - t0;
                        if (o->check && bad < 0) {
                            memcpy(check, b, (count - k) * eb);
                            bad = first_error(&t, op, init_in + (k + o->shift1) * eb,
                                              init_inout + (k + o->shift2) * eb, check, count - k);
                        }
                    }
                    if (bad >= 0) {
                        printf("First error at alignment %d position %d\n", k, bad);
                        errors++;
                    }
                    printf("%-10s %-10s %-11d count  %-11ld time (seconds) %.8f seconds\n",
                           all_ops[o->ops[oi]].mpi_name, t.name, t.bytes * 8, count - k,
                           total / o->repeats);
                }
            }
        }
    }
    return errors;
}

/* ---- --compare: the same bytes through four paths ---- */
typedef enum { V_VENDOR, V_ONE_THREAD, V_THREADED, V_STREAM1, V_STREAMT, NVARIANTS } variant;
static const char *variant_names[NVARIANTS] = { "vendor", "mpiopt_1t", "mpiopt_mt", "stream_add_1t", "stream_add_mt" };

/* The memory-bandwidth yardstick: c = a + b over doubles, as STREAM's add. */
/* target_clones: the yardstick gets the best vector unit of the CPU, as the kernels do. */
#if defined(__x86_64__)
__attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#endif
static void stream_add_1t(const double *restrict a, const double *restrict b, double *restrict c,
                          size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}

static void stream_add(const double *a, const double *b, double *c, size_t n, int threads)
{
    if (threads <= 1) {
        stream_add_1t(a, b, c, n);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        /* contiguous halves, as the threaded kernels split */
        size_t per = (n + threads - 1) / threads, lo = per * omp_get_thread_num();
        if (lo < n)
            stream_add_1t(a + lo, b + lo, c + lo, lo + per > n ? n - lo : per);
    }
}

static void run_variant(variant v, const elem_type *t, MPI_Op op, const mpiopt_op_kernel *k,
                        char *a, char *b, char *c, long count, int threads)
{
    size_t bytes = (size_t)count * t->bytes;
    switch (v) {
    case V_VENDOR: PMPI_Reduce_local(a, b, (int)count, t->dt, op); break;
    case V_ONE_THREAD: k->k2(a, b, (size_t)count); break;
    case V_THREADED:
        /* as a user gets it: threads above MPIOPT_THREAD_MIN_BYTES, or forced with --threads-always */
        if (force_threads)
            mpiopt_run2_threads(k->k2, a, b, (size_t)count, k->elem_size, threads);
        else
            mpiopt_run2(k->k2, a, b, (size_t)count, k->elem_size);
        break;
    case V_STREAM1: stream_add((double *)a, (double *)b, (double *)c, bytes / 8, 1); break;
    case V_STREAMT:
        stream_add((double *)a, (double *)b, (double *)c, bytes / 8,
                   force_threads ? threads : mpiopt_threads_for(bytes));
        break;
    default: break;
    }
}

static int run_compare(const options *o, char *a, char *b, char *c)
{
    int threads = mpiopt_max_threads();
    int first = 1;
    if (o->json)
        printf("[");
    else
        printf("# isa %s, threaded columns: up to %d threads (process affinity / MPIOPT_THREADS)%s\n"
               "# %-8s %-12s %10s %10s %9s %9s %9s %9s %9s %8s %8s %8s\n",
               mpiopt_kernel_isa(), threads, force_threads ? ", at every size" : ", from MPIOPT_THREAD_MIN_BYTES", "op", "type", "count", "bytes", "vendor", "mpiopt1t",
               "mpioptMT", "stream1t", "streamMT", "1t/vend", "MT/1t", "1t/strm");
    for (const char *tk = o->types; *tk; tk++) {
        elem_type t = type_for(*tk, o->type_bits);
        for (int oi = 0; oi < o->nops; oi++) {
            MPI_Op op = all_ops[o->ops[oi]].op;
            mpiopt_op_kernel k;
            if (!op_allowed(&t, op) || !mpiopt_find_kernel(t.dt, op, &k))
                continue;
            for (long count = o->lower; count <= o->upper; count = count * 2 > o->upper && count != o->upper ? o->upper : count * 2) {
                size_t bytes = (size_t)count * t.bytes;
                fill(&t, a, count, op == MPI_PROD, 1);
                fill(&t, b, count, op == MPI_PROD, 5);
                memset(c, 0, bytes);
                /* per variant, a batch of calls that takes about 1 ms (at least one call) */
                int batch[NVARIANTS];
                for (int v = 0; v < NVARIANTS; v++) {
                    batch[v] = 1;
                    for (;;) {
                        double t0 = MPI_Wtime();
                        for (int i = 0; i < batch[v]; i++) run_variant(v, &t, op, &k, a, b, c, count, threads);
                        if (MPI_Wtime() - t0 > 1e-3 || batch[v] > (1 << 24)) break;
                        batch[v] *= 2;
                    }
                }
                double best[NVARIANTS];
                for (int v = 0; v < NVARIANTS; v++) best[v] = INFINITY;
                int rounds = o->repeats < 3 ? 3 : o->repeats;
                for (int r = 0; r < rounds; r++)
                    for (int v = 0; v < NVARIANTS; v++) {
                        double t0 = MPI_Wtime();
                        for (int i = 0; i < batch[v]; i++) run_variant(v, &t, op, &k, a, b, c, count, threads);
                        double dt = (MPI_Wtime() - t0) / batch[v];
                        if (dt < best[v]) best[v] = dt;
                    }
                double gbs[NVARIANTS];
                for (int v = 0; v < NVARIANTS; v++) gbs[v] = 3.0 * bytes / best[v] / 1e9;
                if (o->json) {
                    printf("%s\n {\"op\": \"%s\", \"type\": \"%s\", \"count\": %ld, \"bytes\": %zu, \"isa\": \"%s\", \"threads\": %d",
                           first ? "" : ",", all_ops[o->ops[oi]].mpi_name, t.name, count, bytes, mpiopt_kernel_isa(), threads);
                    for (int v = 0; v < NVARIANTS; v++)
                        printf(", \"%s_seconds\": %.4e, \"%s_gbs\": %.3f", variant_names[v], best[v], variant_names[v], gbs[v]);
                    printf("}");
                    first = 0;
                } else {
                    printf("  %-8s %-12s %10ld %10zu %9.1f %9.1f %9.1f %9.1f %9.1f %8.2f %8.2f %8.2f\n",
                           all_ops[o->ops[oi]].mpi_name, t.name, count, bytes, gbs[V_VENDOR], gbs[V_ONE_THREAD],
                           gbs[V_THREADED], gbs[V_STREAM1], gbs[V_STREAMT], gbs[V_ONE_THREAD] / gbs[V_VENDOR],
                           gbs[V_THREADED] / gbs[V_ONE_THREAD], gbs[V_ONE_THREAD] / gbs[V_STREAM1]);
                }
                fflush(stdout);
                if (count == o->upper) break;
            }
        }
    }
    if (o->json)
        printf("\n]\n");
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : 2;
    MPI_Init(&argc, &argv);
    size_t room = (size_t)(o.upper + o.shift1 + o.shift2 + o.max_shift + 8) * 8;
    char *in = aligned_alloc(64, room), *inout = aligned_alloc(64, room);
    char *init_in = aligned_alloc(64, room), *init_inout = aligned_alloc(64, room), *check = aligned_alloc(64, room);
    if (!in || !inout || !init_in || !init_inout || !check) {
        fprintf(stderr, "cannot allocate %zu bytes\n", 5 * room);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* touch everything once so page faults are not timed */
    memset(in, 0, room); memset(inout, 0, room); memset(init_in, 0, room); memset(init_inout, 0, room);
    int errors = o.compare ? run_compare(&o, in, inout, init_in)
                           : run_classic(&o, in, inout, init_in, init_inout, check);
    MPI_Finalize();
    return errors ? 1 : 0;
}
