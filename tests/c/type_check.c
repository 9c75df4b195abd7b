/* Every predefined datatype mpiopt reduces, with every op it allows, through every algorithm
 * (auto included) of mpiopt_allreduce and mpiopt_reduce, against a reference each rank computes
 * on its own from the other ranks' (deterministic) inputs — OSU's `-c` validation, for all types.
 *
 * The inputs are chosen so the reference does not depend on the reduction order: integers wrap
 * (8- and 16-bit sums overflow at two ranks, where Open MPI's avx component saturates),
 * floating-point values are small integers (exact sums and products), MINLOC/MAXLOC ties are
 * broken by index. Odd counts run on buffers one byte off alignment. The types mpiopt leaves to
 * the vendor whole (MPI_WCHAR, MPI_CHARACTER, …: docs/kernels.md) are not in the list.
 *
 * usage: type_check [--counts N,N,...] [--algorithms a,b,...]
 *   default counts 1,3,67,1001,4096; default algorithms every one but vendor (the vendor is
 *   checked only when named: Open MPI's MPI_CHAR sum then fails, which shows the check can)
 * prints "type_check: N checks, M failed" on rank 0; exit status 1 on any failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpiopt.h"

#define QUAD 17     /* the size code of IEEE binary128 (16 bytes, like x87 long double) */
enum kind { K_INT, K_UINT, K_BOOL, K_BYTE, K_FLOAT, K_COMPLEX, K_PAIR };
#define ARITH "SUM PROD MAX MIN"
#define INT_OPS "SUM PROD MAX MIN LAND LOR LXOR BAND BOR BXOR"
#define FINT_OPS "SUM PROD MAX MIN BAND BOR BXOR"

typedef struct {
    const char *name;
    MPI_Datatype dt;
    enum kind kind;
    int size;           /* of the value (a complex: one part; a pair: which pair; QUAD: binary128) */
    const char *ops;
} type_case;

#define T(DT, KIND, SIZE, OPS) { #DT, DT, KIND, SIZE, OPS }
static const type_case types[] = {
    T(MPI_CHAR, (char)-1 < 0 ? K_INT : K_UINT, 1, INT_OPS),
    T(MPI_SIGNED_CHAR, K_INT, 1, INT_OPS), T(MPI_UNSIGNED_CHAR, K_UINT, 1, INT_OPS),
    T(MPI_SHORT, K_INT, 2, INT_OPS), T(MPI_UNSIGNED_SHORT, K_UINT, 2, INT_OPS),
    T(MPI_INT, K_INT, 4, INT_OPS), T(MPI_UNSIGNED, K_UINT, 4, INT_OPS),
    T(MPI_LONG, K_INT, sizeof(long), INT_OPS), T(MPI_UNSIGNED_LONG, K_UINT, sizeof(long), INT_OPS),
    T(MPI_LONG_LONG, K_INT, 8, INT_OPS), T(MPI_UNSIGNED_LONG_LONG, K_UINT, 8, INT_OPS),
    T(MPI_INT8_T, K_INT, 1, INT_OPS), T(MPI_UINT8_T, K_UINT, 1, INT_OPS),
    T(MPI_INT16_T, K_INT, 2, INT_OPS), T(MPI_UINT16_T, K_UINT, 2, INT_OPS),
    T(MPI_INT32_T, K_INT, 4, INT_OPS), T(MPI_UINT32_T, K_UINT, 4, INT_OPS),
    T(MPI_INT64_T, K_INT, 8, INT_OPS), T(MPI_UINT64_T, K_UINT, 8, INT_OPS),
    T(MPI_INTEGER, K_INT, 4, FINT_OPS), T(MPI_INTEGER1, K_INT, 1, FINT_OPS),
    T(MPI_INTEGER2, K_INT, 2, FINT_OPS), T(MPI_INTEGER4, K_INT, 4, FINT_OPS),
    T(MPI_INTEGER8, K_INT, 8, FINT_OPS),
    T(MPI_AINT, K_INT, sizeof(MPI_Aint), FINT_OPS), T(MPI_OFFSET, K_INT, sizeof(MPI_Offset), FINT_OPS),
    T(MPI_COUNT, K_INT, sizeof(MPI_Count), FINT_OPS),
    T(MPI_C_BOOL, K_BOOL, 1, "LAND LOR LXOR"), T(MPI_CXX_BOOL, K_BOOL, 1, "LAND LOR LXOR"),
    T(MPI_LOGICAL, K_BOOL, 4, "LAND LOR LXOR"), T(MPI_BYTE, K_BYTE, 1, "BAND BOR BXOR"),
    T(MPI_FLOAT, K_FLOAT, 4, ARITH), T(MPI_DOUBLE, K_FLOAT, 8, ARITH),
    T(MPI_LONG_DOUBLE, K_FLOAT, 16, ARITH), T(MPI_REAL, K_FLOAT, 4, ARITH),
    T(MPI_DOUBLE_PRECISION, K_FLOAT, 8, ARITH), T(MPI_REAL4, K_FLOAT, 4, ARITH),
    T(MPI_REAL8, K_FLOAT, 8, ARITH),
    T(MPI_C_FLOAT_COMPLEX, K_COMPLEX, 4, "SUM PROD"), T(MPI_C_DOUBLE_COMPLEX, K_COMPLEX, 8, "SUM PROD"),
    T(MPI_C_LONG_DOUBLE_COMPLEX, K_COMPLEX, 16, "SUM PROD"), T(MPI_COMPLEX, K_COMPLEX, 4, "SUM PROD"),
    T(MPI_DOUBLE_COMPLEX, K_COMPLEX, 8, "SUM PROD"), T(MPI_COMPLEX8, K_COMPLEX, 4, "SUM PROD"),
    T(MPI_COMPLEX16, K_COMPLEX, 8, "SUM PROD"),
    T(MPI_REAL16, K_FLOAT, QUAD, ARITH), T(MPI_COMPLEX32, K_COMPLEX, QUAD, "SUM PROD"),
    T(MPI_CXX_FLOAT_COMPLEX, K_COMPLEX, 4, "SUM PROD"), T(MPI_CXX_DOUBLE_COMPLEX, K_COMPLEX, 8, "SUM PROD"),
    T(MPI_2INT, K_PAIR, 0, "MINLOC MAXLOC"), T(MPI_DOUBLE_INT, K_PAIR, 1, "MINLOC MAXLOC"),
    T(MPI_FLOAT_INT, K_PAIR, 2, "MINLOC MAXLOC"),
};

static const struct { const char *name; MPI_Op op; } ops[] = {
    { "SUM", MPI_SUM }, { "PROD", MPI_PROD }, { "MAX", MPI_MAX }, { "MIN", MPI_MIN },
    { "LAND", MPI_LAND }, { "LOR", MPI_LOR }, { "LXOR", MPI_LXOR }, { "BAND", MPI_BAND },
    { "BOR", MPI_BOR }, { "BXOR", MPI_BXOR }, { "MINLOC", MPI_MINLOC }, { "MAXLOC", MPI_MAXLOC },
};

static int rank, nranks, checks, failures;

/* ---- values: element i of rank r, as a 64-bit integer or a long double ---- */
static int64_t int_value(const type_case *t, const char *op, int r, size_t i)
{
    int k = (int)((r * 7 + i * 3) % 38);
    if (t->kind == K_BOOL) return (r + i) % 3 == 0 ? 0 : 1;
    if (!strcmp(op, "PROD")) return (int64_t)(k % 5) - (t->kind == K_INT ? 2 : 0) + 3;
    /* near the top of the signed range, so two ranks' sum overflows; unsigned values straddle
     * it, so comparing them as signed (MPICH's MAX / MIN bug) gives wrong answers */
    uint64_t top = 1ull << (8 * t->size - 1), step = top / 128;
    int64_t v = (int64_t)(top - (t->kind == K_INT ? 38 : 19) * step + (uint64_t)k * step);
    return (t->kind == K_INT && (r + i) % 4 == 3) ? -v : v;
}
static long double float_value(const char *op, int r, size_t i, int part)
{
    int k = (int)((r * 7 + i * 3 + part * 5) % 9);
    if (!strcmp(op, "PROD")) { static const long double f[] = { 1, 2, 0.5L, -1, 1, -2, 1, 0.5L, 1 }; return f[k]; }
    return (long double)(k - 4);
}

/* ---- the element layout in memory ---- */
static size_t extent_of(const type_case *t)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t->dt, &lb, &extent);
    return (size_t)extent;
}
static void store_int(void *p, int size, int64_t v)
{
    if (size == 1) { int8_t x = (int8_t)v; memcpy(p, &x, 1); }
    else if (size == 2) { int16_t x = (int16_t)v; memcpy(p, &x, 2); }
    else if (size == 4) { int32_t x = (int32_t)v; memcpy(p, &x, 4); }
    else memcpy(p, &v, 8);
}
static void store_float(void *p, int size, long double v)
{
    if (size == 4) { float x = (float)v; memcpy(p, &x, 4); }
    else if (size == 8) { double x = (double)v; memcpy(p, &x, 8); }
    else if (size == QUAD) { __float128 x = (__float128)v; memcpy(p, &x, 16); }
    else memcpy(p, &v, sizeof v);
}
/* x op y in the representation, for the reference (wrap-around by truncation of 64 bits) */
static int64_t int_op(const type_case *t, const char *op, int64_t x, int64_t y)
{
    int bits = 8 * t->size;
    if (bits < 64 && t->kind != K_INT) {   /* unsigned: compare as values of the type */
        uint64_t m = (1ull << bits) - 1;
        x = (int64_t)((uint64_t)x & m); y = (int64_t)((uint64_t)y & m);
    } else if (bits < 64) {
        x = (int64_t)((uint64_t)x << (64 - bits)) >> (64 - bits);
        y = (int64_t)((uint64_t)y << (64 - bits)) >> (64 - bits);
    }
    int unsigned64 = bits == 64 && t->kind != K_INT;
    if (!strcmp(op, "SUM")) return (int64_t)((uint64_t)x + (uint64_t)y);
    if (!strcmp(op, "PROD")) return (int64_t)((uint64_t)x * (uint64_t)y);
    if (!strcmp(op, "MAX")) return unsigned64 ? ((uint64_t)x > (uint64_t)y ? x : y) : (x > y ? x : y);
    if (!strcmp(op, "MIN")) return unsigned64 ? ((uint64_t)x < (uint64_t)y ? x : y) : (x < y ? x : y);
    if (!strcmp(op, "LAND")) return (x != 0) && (y != 0);
    if (!strcmp(op, "LOR")) return (x != 0) || (y != 0);
    if (!strcmp(op, "LXOR")) return (x != 0) != (y != 0);
    if (!strcmp(op, "BAND")) return x & y;
    if (!strcmp(op, "BOR")) return x | y;
    return x ^ y;
}

/* Fills rank r's contribution, or (r < 0) the reduction of all ranks' contributions. */
static void fill(const type_case *t, const char *op, void *buf, size_t count, int r)
{
    size_t ext = extent_of(t);
    memset(buf, 0, count * ext);
    for (size_t i = 0; i < count; i++) {
        char *e = (char *)buf + i * ext;
        int first = r < 0 ? 0 : r, last = r < 0 ? nranks - 1 : r;
        if (t->kind == K_FLOAT || t->kind == K_COMPLEX) {
            long double re = float_value(op, first, i, 0), im = float_value(op, first, i, 1);
            for (int q = first + 1; q <= last; q++) {
                long double a = float_value(op, q, i, 0), b = float_value(op, q, i, 1);
                if (!strcmp(op, "SUM")) { re += a; im += b; }
                else if (!strcmp(op, "MAX")) re = re > a ? re : a;
                else if (!strcmp(op, "MIN")) re = re < a ? re : a;
                else if (t->kind == K_FLOAT) re *= a;
                else { long double nr = re * a - im * b; im = re * b + im * a; re = nr; }
            }
            store_float(e, t->size, re);
            if (t->kind == K_COMPLEX) store_float(e + ext / 2, t->size, im);
        } else if (t->kind == K_PAIR) {
            /* value in 0..3 (ties between ranks), index the rank: ties go to the lower index */
            int best_v = (first * 5 + (int)i) % 4, best_i = first;
            for (int q = first + 1; q <= last; q++) {
                int v = (q * 5 + (int)i) % 4;
                if (!strcmp(op, "MINLOC") ? v < best_v : v > best_v) { best_v = v; best_i = q; }
            }
            if (t->size == 0) { int pv[2] = { best_v, best_i }; memcpy(e, pv, 8); }
            else if (t->size == 1) { double v = best_v; memcpy(e, &v, 8); memcpy(e + 8, &best_i, 4); }
            else { float v = (float)best_v; memcpy(e, &v, 4); memcpy(e + 4, &best_i, 4); }
        } else {
            int64_t v = int_value(t, op, first, i);
            for (int q = first + 1; q <= last; q++)
                v = int_op(t, op, v, int_value(t, op, q, i));
            store_int(e, t->size, v);
        }
    }
}

/* Compares the bytes that carry the value (long double: 10 of 16). */
static int same(const type_case *t, const void *got, const void *want, size_t count)
{
    size_t ext = extent_of(t);
    for (size_t i = 0; i < count; i++) {
        const char *g = (const char *)got + i * ext, *w = (const char *)want + i * ext;
        int ok;
        if (t->size == 16 && t->kind == K_FLOAT) ok = !memcmp(g, w, 10);
        else if (t->size == 16 && t->kind == K_COMPLEX) ok = !memcmp(g, w, 10) && !memcmp(g + 16, w + 16, 10);
        else if (t->kind == K_PAIR && t->size == 1) ok = !memcmp(g, w, 12);
        else ok = !memcmp(g, w, ext);
        if (!ok) return (int)i;
    }
    return -1;
}

static void check(const type_case *t, const char *opname, MPI_Op op, mpiopt_algorithm alg,
                  size_t count, int reduce, int misalign)
{
    size_t bytes = count * extent_of(t) + 64;
    char *raw = malloc(3 * bytes), *send = raw + misalign, *recv = raw + bytes + misalign;
    char *want = raw + 2 * bytes;
    fill(t, opname, send, count, rank);
    fill(t, opname, want, count, -1);
    memset(recv, 0x5A, count * extent_of(t));
    int root = nranks - 1, rc;
    if (reduce)
        rc = mpiopt_reduce(send, recv, (int)count, t->dt, op, root, MPI_COMM_WORLD, alg);
    else
        rc = mpiopt_allreduce(send, recv, (int)count, t->dt, op, MPI_COMM_WORLD, alg);
    int bad = rc != MPI_SUCCESS ? 0 : (!reduce || rank == root) ? same(t, recv, want, count) : -1;
    checks++;
    if (rc != MPI_SUCCESS || bad >= 0) {
        if (failures++ < 200)
            fprintf(stderr, "FAIL rank %d: %s %s %s %s count %zu misalign %d: %s %d\n", rank,
                    reduce ? "reduce" : "allreduce", mpiopt_algorithm_name(alg), t->name, opname,
                    count, misalign, rc != MPI_SUCCESS ? "rc" : "element", rc != MPI_SUCCESS ? rc : bad);
    }
    free(raw);
}

static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ' || p[-1] == ',') && (p[n] == 0 || p[n] == ' ' || p[n] == ','))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    /* the vendor rejects some pairs mpiopt reduces (MPICH: MPI_COMPLEX32): a failure, not an abort */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *counts = "1,3,67,1001,4096", *algs = "auto,binomial,recursive_doubling,ring,rabenseifner,binary_blocks";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--counts")) counts = argv[i + 1];
        else if (!strcmp(argv[i], "--algorithms")) algs = argv[i + 1];
    }
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const type_case *t = &types[ti];
        if (t->dt == MPI_DATATYPE_NULL)
            continue;
        for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
            if (!listed(t->ops, ops[oi].name))
                continue;
            for (int a = MPIOPT_ALG_AUTO; a < MPIOPT_ALG_COUNT; a++) {
                if (!listed(algs, mpiopt_algorithm_name(a)))
                    continue;
                char list[256];
                snprintf(list, sizeof list, "%s", counts);
                for (char *s, *c = strtok_r(list, ",", &s); c; c = strtok_r(NULL, ",", &s)) {
                    size_t n = strtoul(c, NULL, 10);
                    for (int reduce = 0; reduce < 2; reduce++)
                        check(t, ops[oi].name, ops[oi].op, a, n, reduce, (int)(n % 2));
                }
            }
        }
    }
    int total[2] = { checks, failures }, sum[2];
    MPI_Reduce(total, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("type_check: %d checks, %d failed\n", sum[0], sum[1]);
    MPI_Finalize();
    return failures ? 1 : 0;
}
