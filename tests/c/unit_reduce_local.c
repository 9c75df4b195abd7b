/* Every (MPI datatype, op) pair mpiopt claims, both forms, against a scalar reference written
 * independently of the kernels: counts 0..70 and large, byte-misaligned buffers, the vendor-bug
 * cases, NaN and signed-zero rules. Run by ctest once per forced ISA and once threaded. */
#include <complex.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpiopt.h"
#include "op_kernel.h"

static int failures, checks;
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_random(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

#define FAIL(...) do { if (failures++ < 20) { fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* Random values that exercise edge cases: for integers all bit patterns (so sums overflow);
 * for floating types a mix of small integers (ties, exact equality), ±0, NaN and wide values. */
static void fill_int(void *p, size_t bytes)
{
    unsigned char *c = p;
    for (size_t i = 0; i < bytes; i++) {
        uint64_t r = next_random();
        /* one byte in 4 small, so equal values and zeros occur */
        c[i] = (r & 3) ? (unsigned char)(r >> 8) : (unsigned char)((r >> 8) & 1);
    }
}
static double random_double(void)
{
    uint64_t r = next_random();
    switch (r % 8) {
    case 0: return (double)(int)((r >> 8) % 5) - 2;   /* small integers: ties */
    case 1: return (r & 256) ? -0.0 : 0.0;
    case 2: return (r & 256) ? NAN : 1.5;
    default: return ((double)(int64_t)(r >> 11) / 1e12) * ((r & 512) ? 1e-3 : 1e3);
    }
}

/* ---- reference operations, element by element, via memcpy so misaligned data is fine ---- */
#define REF_INT(T, U, opname, a, b)                                              \
    (!strcmp(opname, "SUM") ? (T)(U)((U)a + (U)b) :                            \
     !strcmp(opname, "PROD") ? (T)(U)((U)a * (U)b) :                           \
     !strcmp(opname, "MAX") ? (a > b ? a : b) :                                \
     !strcmp(opname, "MIN") ? (a < b ? a : b) :                                \
     !strcmp(opname, "LAND") ? (T)((a != 0) && (b != 0)) :                     \
     !strcmp(opname, "LOR") ? (T)((a != 0) || (b != 0)) :                      \
     !strcmp(opname, "LXOR") ? (T)((a != 0) != (b != 0)) :                     \
     !strcmp(opname, "BAND") ? (T)(a & b) :                                    \
     !strcmp(opname, "BOR") ? (T)(a | b) : (T)(a ^ b))
#define REF_FLOAT(T, opname, a, b)                                              \
    (!strcmp(opname, "SUM") ? a + b :                                          \
     !strcmp(opname, "PROD") ? a * b :                                         \
     !strcmp(opname, "MAX") ? (isnan(a) ? a : isnan(b) ? b : a > b ? a : b) :  \
     (isnan(a) ? a : isnan(b) ? b : a < b ? a : b))

typedef struct {
    const char *name;
    MPI_Datatype dt;
    size_t size;        /* extent */
    size_t cmp_bytes;   /* bytes of each element that carry the value (long double: 10) */
    void (*ref)(const char *op, const void *a, const void *b, void *out);
    void (*fill)(void *p, size_t n);
    const char *ops;    /* the ops the standard allows, space separated */
} type_case;

#define INT_CASE(DT, T, U)                                                         \
    static void ref_##DT(const char *op, const void *pa, const void *pb, void *po) \
    {                                                                              \
        T a, b, r; memcpy(&a, pa, sizeof a); memcpy(&b, pb, sizeof b);             \
        r = REF_INT(T, U, op, a, b); memcpy(po, &r, sizeof r);                     \
    }                                                                              \
    static void fill_##DT(void *p, size_t n) { fill_int(p, n * sizeof(T)); }
#define FLOAT_CASE(DT, T)                                                          \
    static void ref_##DT(const char *op, const void *pa, const void *pb, void *po) \
    {                                                                              \
        T a, b, r; memcpy(&a, pa, sizeof a); memcpy(&b, pb, sizeof b);             \
        r = REF_FLOAT(T, op, a, b); memcpy(po, &r, sizeof r);                      \
    }                                                                              \
    static void fill_##DT(void *p, size_t n)                                       \
    {                                                                              \
        for (size_t i = 0; i < n; i++) { T v = (T)random_double(); memcpy((char *)p + i * sizeof(T), &v, sizeof v); } \
    }
#define COMPLEX_CASE(DT, R)                                                        \
    static void ref_##DT(const char *op, const void *pa, const void *pb, void *po) \
    {                                                                              \
        R a[2], b[2], r[2]; memcpy(a, pa, sizeof a); memcpy(b, pb, sizeof b);      \
        if (!strcmp(op, "SUM")) { r[0] = a[0] + b[0]; r[1] = a[1] + b[1]; }        \
        else { R t1 = a[0] * b[0], t2 = a[1] * b[1], t3 = a[0] * b[1], t4 = a[1] * b[0]; \
               r[0] = t1 - t2; r[1] = t3 + t4; }                                   \
        memcpy(po, r, sizeof r);                                                   \
    }                                                                              \
    static void fill_##DT(void *p, size_t n)                                       \
    {                                                                              \
        for (size_t i = 0; i < 2 * n; i++) { R v = (R)random_double(); memcpy((char *)p + i * sizeof(R), &v, sizeof v); } \
    }
#define PAIR_CASE(DT, V, I)                                                        \
    typedef struct { V v; I i; } pair_##DT;                                        \
    static void ref_##DT(const char *op, const void *pa, const void *pb, void *po) \
    {                                                                              \
        pair_##DT a, b, r; memcpy(&a, pa, sizeof a); memcpy(&b, pb, sizeof b);     \
        memcpy(&r, pb, sizeof r);                                                  \
        int better = !strcmp(op, "MINLOC") ? a.v < b.v : a.v > b.v;                \
        if (better || (a.v == b.v && a.i < b.i)) { r.v = a.v; r.i = a.i; }         \
        else { r.v = b.v; r.i = b.i; }                                             \
        memcpy(po, &r, sizeof r);                                                  \
    }                                                                              \
    static void fill_##DT(void *p, size_t n)                                       \
    {                                                                              \
        for (size_t k = 0; k < n; k++) {                                           \
            pair_##DT e; memset(&e, 0, sizeof e);                                  \
            uint64_t r = next_random();                                            \
            e.v = (V)(int)(r % 7); e.i = (I)(int)((r >> 8) % 5);                   \
            memcpy((char *)p + k * sizeof e, &e, sizeof e);                        \
        }                                                                          \
    }

INT_CASE(MPI_INT8_T, int8_t, uint8_t)
INT_CASE(MPI_UINT8_T, uint8_t, uint8_t)
INT_CASE(MPI_INT16_T, int16_t, uint16_t)
INT_CASE(MPI_UINT16_T, uint16_t, uint16_t)
INT_CASE(MPI_INT, int, unsigned)
INT_CASE(MPI_UNSIGNED, unsigned, unsigned)
INT_CASE(MPI_LONG, long, unsigned long)
INT_CASE(MPI_UNSIGNED_LONG, unsigned long, unsigned long)
INT_CASE(MPI_LONG_LONG, long long, unsigned long long)
INT_CASE(MPI_UINT64_T, uint64_t, uint64_t)
INT_CASE(MPI_SIGNED_CHAR, signed char, unsigned char)
INT_CASE(MPI_SHORT, short, unsigned short)
/* plain char: signed or unsigned as the platform's C char, which is what the reference computes */
INT_CASE(MPI_CHAR, char, unsigned char)
INT_CASE(MPI_UNSIGNED_CHAR, unsigned char, unsigned char)
INT_CASE(MPI_UNSIGNED_SHORT, unsigned short, unsigned short)
INT_CASE(MPI_UNSIGNED_LONG_LONG, unsigned long long, unsigned long long)
INT_CASE(MPI_INT32_T, int32_t, uint32_t)
INT_CASE(MPI_INT64_T, int64_t, uint64_t)
INT_CASE(MPI_UINT32_T, uint32_t, uint32_t)
INT_CASE(MPI_INTEGER1, int8_t, uint8_t)
INT_CASE(MPI_INTEGER2, int16_t, uint16_t)
INT_CASE(MPI_INTEGER4, int32_t, uint32_t)
INT_CASE(MPI_OFFSET, MPI_Offset, uint64_t)
INT_CASE(MPI_COUNT, MPI_Count, uint64_t)
INT_CASE(MPI_INTEGER, int, unsigned)
INT_CASE(MPI_INTEGER8, int64_t, uint64_t)
INT_CASE(MPI_AINT, MPI_Aint, uint64_t)
FLOAT_CASE(MPI_FLOAT, float)
FLOAT_CASE(MPI_DOUBLE, double)
FLOAT_CASE(MPI_LONG_DOUBLE, long double)
FLOAT_CASE(MPI_REAL, float)
FLOAT_CASE(MPI_DOUBLE_PRECISION, double)
COMPLEX_CASE(MPI_C_FLOAT_COMPLEX, float)
COMPLEX_CASE(MPI_C_DOUBLE_COMPLEX, double)
COMPLEX_CASE(MPI_C_LONG_DOUBLE_COMPLEX, long double)
COMPLEX_CASE(MPI_DOUBLE_COMPLEX, double)
/* Fortran REAL(16) / COMPLEX(16): IEEE binary128 */
FLOAT_CASE(MPI_REAL16, __float128)
COMPLEX_CASE(MPI_COMPLEX32, __float128)
INT_CASE(MPI_C_BOOL, uint8_t, uint8_t)     /* values 0/1 and others: any non-zero is true */
INT_CASE(MPI_CXX_BOOL, uint8_t, uint8_t)
INT_CASE(MPI_LOGICAL, int, unsigned)
INT_CASE(MPI_BYTE, uint8_t, uint8_t)
PAIR_CASE(MPI_FLOAT_INT, float, int)
PAIR_CASE(MPI_DOUBLE_INT, double, int)
PAIR_CASE(MPI_LONG_INT, long, int)
PAIR_CASE(MPI_2INT, int, int)
PAIR_CASE(MPI_SHORT_INT, short, int)
PAIR_CASE(MPI_LONG_DOUBLE_INT, long double, int)
PAIR_CASE(MPI_2REAL, float, float)
PAIR_CASE(MPI_2DOUBLE_PRECISION, double, double)
PAIR_CASE(MPI_2INTEGER, int, int)

#define ALL_INT_OPS "SUM PROD MAX MIN LAND LOR LXOR BAND BOR BXOR"
/* Fortran and multi-language integers: no logical ops in the standard */
#define FINT_OPS "SUM PROD MAX MIN BAND BOR BXOR"
#define T(DT, SIZE, CMP, OPS) { #DT, DT, SIZE, CMP, ref_##DT, fill_##DT, OPS }
static type_case *cases;
static size_t ncases;
static void build_cases(void)
{
    static type_case all[] = {
        T(MPI_INT8_T, 1, 1, ALL_INT_OPS), T(MPI_UINT8_T, 1, 1, ALL_INT_OPS),
        T(MPI_INT16_T, 2, 2, ALL_INT_OPS), T(MPI_UINT16_T, 2, 2, ALL_INT_OPS),
        T(MPI_INT, 4, 4, ALL_INT_OPS), T(MPI_UNSIGNED, 4, 4, ALL_INT_OPS),
        T(MPI_LONG, 8, 8, ALL_INT_OPS), T(MPI_UNSIGNED_LONG, 8, 8, ALL_INT_OPS),
        T(MPI_LONG_LONG, 8, 8, ALL_INT_OPS), T(MPI_UINT64_T, 8, 8, ALL_INT_OPS),
        T(MPI_SIGNED_CHAR, 1, 1, ALL_INT_OPS), T(MPI_SHORT, 2, 2, ALL_INT_OPS),
        T(MPI_INTEGER, 4, 4, FINT_OPS), T(MPI_INTEGER8, 8, 8, FINT_OPS),
        T(MPI_AINT, 8, 8, FINT_OPS),
        T(MPI_CHAR, 1, 1, ALL_INT_OPS), T(MPI_UNSIGNED_CHAR, 1, 1, ALL_INT_OPS),
        T(MPI_UNSIGNED_SHORT, 2, 2, ALL_INT_OPS), T(MPI_UNSIGNED_LONG_LONG, 8, 8, ALL_INT_OPS),
        T(MPI_INT32_T, 4, 4, ALL_INT_OPS), T(MPI_INT64_T, 8, 8, ALL_INT_OPS),
        T(MPI_UINT32_T, 4, 4, ALL_INT_OPS),
        T(MPI_INTEGER1, 1, 1, FINT_OPS), T(MPI_INTEGER2, 2, 2, FINT_OPS),
        T(MPI_INTEGER4, 4, 4, FINT_OPS), T(MPI_OFFSET, 8, 8, FINT_OPS), T(MPI_COUNT, 8, 8, FINT_OPS),
        T(MPI_CXX_BOOL, 1, 1, "LAND LOR LXOR"),
        T(MPI_FLOAT, 4, 4, "SUM PROD MAX MIN"), T(MPI_DOUBLE, 8, 8, "SUM PROD MAX MIN"),
        T(MPI_LONG_DOUBLE, sizeof(long double), 10, "SUM PROD MAX MIN"),
        T(MPI_REAL, 4, 4, "SUM PROD MAX MIN"), T(MPI_DOUBLE_PRECISION, 8, 8, "SUM PROD MAX MIN"),
        T(MPI_C_FLOAT_COMPLEX, 8, 8, "SUM PROD"), T(MPI_C_DOUBLE_COMPLEX, 16, 16, "SUM PROD"),
        T(MPI_C_LONG_DOUBLE_COMPLEX, 2 * sizeof(long double), 0, "SUM PROD"),
        T(MPI_DOUBLE_COMPLEX, 16, 16, "SUM PROD"),
        T(MPI_REAL16, 16, 16, "SUM PROD MAX MIN"), T(MPI_COMPLEX32, 32, 32, "SUM PROD"),
        T(MPI_C_BOOL, 1, 1, "LAND LOR LXOR"), T(MPI_LOGICAL, 4, 4, "LAND LOR LXOR"),
        T(MPI_BYTE, 1, 1, "BAND BOR BXOR"),
        T(MPI_FLOAT_INT, 8, 8, "MINLOC MAXLOC"), T(MPI_DOUBLE_INT, 16, 12, "MINLOC MAXLOC"),
        T(MPI_LONG_INT, 16, 12, "MINLOC MAXLOC"), T(MPI_2INT, 8, 8, "MINLOC MAXLOC"),
        T(MPI_SHORT_INT, 8, 0, "MINLOC MAXLOC"), T(MPI_LONG_DOUBLE_INT, 32, 0, "MINLOC MAXLOC"),
        T(MPI_2REAL, 8, 8, "MINLOC MAXLOC"), T(MPI_2DOUBLE_PRECISION, 16, 16, "MINLOC MAXLOC"),
        T(MPI_2INTEGER, 8, 8, "MINLOC MAXLOC"),
    };
    cases = all;
    ncases = sizeof all / sizeof all[0];
}

static MPI_Op op_handle(const char *name)
{
    static const struct { const char *n; MPI_Op op; } ops[] = {
        { "SUM", MPI_SUM }, { "PROD", MPI_PROD }, { "MAX", MPI_MAX }, { "MIN", MPI_MIN },
        { "LAND", MPI_LAND }, { "LOR", MPI_LOR }, { "LXOR", MPI_LXOR }, { "BAND", MPI_BAND },
        { "BOR", MPI_BOR }, { "BXOR", MPI_BXOR }, { "MINLOC", MPI_MINLOC }, { "MAXLOC", MPI_MAXLOC },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(ops[i].n, name))
            return ops[i].op;
    return MPI_OP_NULL;
}

/* Compares the value-carrying bytes of an element: whole element, the first `cmp_bytes`, or for
 * cmp_bytes 0 the members one by one (types with padding inside). */
static int is_nan_of(const type_case *tc, const unsigned char *p)
{
    float f; double d; long double l; __float128 q;
    MPI_Datatype t = tc->dt;
    if (t == MPI_REAL16 || t == MPI_COMPLEX32) { memcpy(&q, p, 16); return isnan(q); }
    if (t == MPI_FLOAT || t == MPI_REAL || t == MPI_C_FLOAT_COMPLEX) { memcpy(&f, p, 4); return isnan(f); }
    if (t == MPI_DOUBLE || t == MPI_DOUBLE_PRECISION || t == MPI_C_DOUBLE_COMPLEX || t == MPI_DOUBLE_COMPLEX) { memcpy(&d, p, 8); return isnan(d); }
    if (t == MPI_LONG_DOUBLE || t == MPI_C_LONG_DOUBLE_COMPLEX) { memcpy(&l, p, sizeof l); return isnan(l); }
    return 0;
}
/* A NaN result must be NaN, but which NaN (sign, payload) depends on operand order inside the
 * CPU, which the compiler may swap for commutative ops: NaNs compare equal to any NaN. */
static int element_equal(const type_case *tc, const unsigned char *x, const unsigned char *y)
{
    size_t half = tc->size / 2;
    if (tc->dt == MPI_C_FLOAT_COMPLEX || tc->dt == MPI_C_DOUBLE_COMPLEX || tc->dt == MPI_DOUBLE_COMPLEX ||
        tc->dt == MPI_C_LONG_DOUBLE_COMPLEX || tc->dt == MPI_COMPLEX32) {
        size_t vb = tc->dt == MPI_C_LONG_DOUBLE_COMPLEX ? 10 : half;
        for (int c = 0; c < 2; c++) {
            const unsigned char *xc = x + c * half, *yc = y + c * half;
            if (is_nan_of(tc, xc) && is_nan_of(tc, yc)) continue;
            if (memcmp(xc, yc, vb)) return 0;
        }
        return 1;
    }
    if (is_nan_of(tc, x) && is_nan_of(tc, y))
        return 1;
    if (tc->cmp_bytes)
        return !memcmp(x, y, tc->cmp_bytes);
    if (tc->dt == MPI_C_LONG_DOUBLE_COMPLEX)
        return !memcmp(x, y, 10) && !memcmp(x + sizeof(long double), y + sizeof(long double), 10);
    if (tc->dt == MPI_SHORT_INT)
        return !memcmp(x, y, 2) && !memcmp(x + 4, y + 4, 4);
    /* MPI_LONG_DOUBLE_INT */
    return !memcmp(x, y, 10) && !memcmp(x + 16, y + 16, 4);
}

static void check_case(const type_case *tc, const char *opname, size_t count, size_t misalign)
{
    MPI_Op op = op_handle(opname);
    size_t bytes = count * tc->size;
    unsigned char *raw = malloc(4 * (bytes + 64));
    unsigned char *a = raw + misalign, *b = raw + bytes + 64 + misalign;
    unsigned char *out = raw + 2 * (bytes + 64) + misalign, *ref = raw + 3 * (bytes + 64);
    tc->fill(a, count);
    tc->fill(b, count);
    for (size_t i = 0; i < count; i++)
        tc->ref(opname, a + i * tc->size, b + i * tc->size, ref + i * tc->size);

    /* 3-buffer form */
    memset(out, 0xA5, bytes);
    int rc = mpiopt_reduce_local3(a, b, out, (int)count, tc->dt, op);
    checks++;
    if (rc != MPI_SUCCESS) FAIL("%s %s n=%zu: reduce_local3 rc=%d", tc->name, opname, count, rc);
    for (size_t i = 0; i < count; i++)
        if (!element_equal(tc, out + i * tc->size, ref + i * tc->size)) {
            FAIL("%s %s n=%zu misalign=%zu: 3-buffer element %zu differs", tc->name, opname, count, misalign, i);
            break;
        }
    /* 2-buffer form: b = a op b */
    rc = mpiopt_reduce_local(a, b, (int)count, tc->dt, op);
    checks++;
    if (rc != MPI_SUCCESS) FAIL("%s %s n=%zu: reduce_local rc=%d", tc->name, opname, count, rc);
    for (size_t i = 0; i < count; i++)
        if (!element_equal(tc, b + i * tc->size, ref + i * tc->size)) {
            FAIL("%s %s n=%zu misalign=%zu: 2-buffer element %zu differs", tc->name, opname, count, misalign, i);
            break;
        }
    free(raw);
}

static void check_coverage(const type_case *tc, const char *opname)
{
    checks++;
    if (!mpiopt_has_kernel(tc->dt, op_handle(opname)))
        FAIL("%s %s: no mpiopt kernel (would go to the vendor)", tc->name, opname);
}

/* Cases where Open MPI 4.1.4 or MPICH 4.0.2 give wrong answers. */
static void check_vendor_bugs(void)
{
    int8_t a8[40], b8[40];
    for (int i = 0; i < 40; i++) { a8[i] = 100; b8[i] = 100; }
    mpiopt_reduce_local(a8, b8, 40, MPI_INT8_T, MPI_SUM);
    checks++;
    for (int i = 0; i < 40; i++)
        if (b8[i] != (int8_t)-56) { FAIL("int8 100+100 gave %d, want -56 (wrap-around)", b8[i]); break; }
    int16_t a16[40], b16[40];
    for (int i = 0; i < 40; i++) { a16[i] = 30000; b16[i] = 30000; }
    mpiopt_reduce_local(a16, b16, 40, MPI_SHORT, MPI_SUM);
    checks++;
    if (b16[7] != (int16_t)-5536) FAIL("int16 30000+30000 gave %d, want -5536", b16[7]);

    /* MPI_CHAR, OSU's default type: Open MPI's avx component saturates its sums too */
    char c8[40], d8[40];
    for (int i = 0; i < 40; i++) { c8[i] = 100; d8[i] = 100; }
    mpiopt_reduce_local(c8, d8, 40, MPI_CHAR, MPI_SUM);
    checks++;
    for (int i = 0; i < 40; i++)
        if (d8[i] != (char)200) { FAIL("MPI_CHAR 100+100 gave %d, want %d (wrap-around)", d8[i], (char)200); break; }

    unsigned long ua[33], ub[33];
    for (int i = 0; i < 33; i++) { ua[i] = ULONG_MAX; ub[i] = 1; }
    mpiopt_reduce_local(ua, ub, 33, MPI_UNSIGNED_LONG, MPI_MAX);
    checks++;
    if (ub[32] != ULONG_MAX) FAIL("MAX(ULONG_MAX, 1) gave %lu", ub[32]);
    unsigned ia[33], ib[33];
    for (int i = 0; i < 33; i++) { ia[i] = 3000000000u; ib[i] = 1; }
    mpiopt_reduce_local(ia, ib, 33, MPI_UNSIGNED, MPI_MAX);
    checks++;
    if (ib[0] != 3000000000u) FAIL("MAX(3e9, 1) unsigned gave %u", ib[0]);
    for (int i = 0; i < 33; i++) { ia[i] = 3000000000u; ib[i] = 1; }
    mpiopt_reduce_local(ia, ib, 33, MPI_UNSIGNED, MPI_MIN);
    checks++;
    if (ib[5] != 1) FAIL("MIN(3e9, 1) unsigned gave %u", ib[5]);

    struct { double v; int i; } pa[17], pb[17];
    for (int i = 0; i < 17; i++) { pa[i].v = 2.0; pa[i].i = 9; pb[i].v = 2.0; pb[i].i = 4; }
    mpiopt_reduce_local(pa, pb, 17, MPI_DOUBLE_INT, MPI_MAXLOC);
    checks++;
    if (pb[16].i != 4) FAIL("MAXLOC tie took index %d, want 4", pb[16].i);
    for (int i = 0; i < 17; i++) { pa[i].v = 2.0; pa[i].i = 1; pb[i].v = 2.0; pb[i].i = 4; }
    mpiopt_reduce_local(pa, pb, 17, MPI_DOUBLE_INT, MPI_MINLOC);
    checks++;
    if (pb[3].i != 1) FAIL("MINLOC tie took index %d, want 1", pb[3].i);
}

/* Documented NaN and signed-zero rules of MAX/MIN (README "Semantics"). */
static void check_float_rules(void)
{
    double in[4] = { NAN, 1.0, -0.0, 0.0 }, io[4] = { 1.0, NAN, 0.0, -0.0 };
    mpiopt_reduce_local(in, io, 4, MPI_DOUBLE, MPI_MAX);
    checks++;
    if (!isnan(io[0]) || !isnan(io[1])) FAIL("MAX with a NaN operand must give NaN");
    if (signbit(io[2]) || !signbit(io[3])) FAIL("MAX of equal zeros must give the inout operand");
    double in2[2] = { NAN, 5.0 }, io2[2] = { -1.0, NAN };
    mpiopt_reduce_local(in2, io2, 2, MPI_DOUBLE, MPI_MIN);
    checks++;
    if (!isnan(io2[0]) || !isnan(io2[1])) FAIL("MIN with a NaN operand must give NaN");
}

/* What mpiopt does not handle must still work, through the vendor. */
static void user_op_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] = 2 * ((int *)inout)[i] + ((int *)in)[i];
}
/* sums the 3 ints of one MPI_Type_vector(3, 1, 2, MPI_INT) element */
static void vec_op_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    for (int k = 0; k < 3 * *len; k++)
        ((int *)inout)[2 * k] += ((int *)in)[2 * k];
}
static void check_fallbacks(void)
{
    MPI_Op op;
    MPI_Op_create(user_op_fn, 0, &op);
    int a[5] = { 1, 2, 3, 4, 5 }, b[5] = { 10, 20, 30, 40, 50 }, out[5];
    checks++;
    if (mpiopt_has_kernel(MPI_INT, op)) FAIL("a user op must not have a kernel");
    mpiopt_reduce_local3(a, b, out, 5, MPI_INT, op);
    checks++;
    if (out[4] != 105) FAIL("user op 3-buffer: got %d want 105", out[4]);
    MPI_Reduce_local(a, b, 5, MPI_INT, op);
    checks++;
    if (b[0] != 21) FAIL("user op through MPI_Reduce_local: got %d want 21", b[0]);
    MPI_Op_free(&op);

    /* a derived type with a user op: the 3-buffer form copies in2 through MPI, then reduces */
    MPI_Datatype vec;   /* non-contiguous: every other int, 3 of them */
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Op_create(vec_op_fn, 1, &op);
    int va[6] = { 1, -1, 2, -1, 3, -1 }, vb[6] = { 10, 7, 20, 7, 30, 7 }, vo[6] = { 0, 99, 0, 99, 0, 99 };
    mpiopt_reduce_local3(va, vb, vo, 1, vec, op);
    checks++;
    if (vo[0] != 11 || vo[1] != 99 || vo[4] != 33) FAIL("vector type with user op: got %d %d %d", vo[0], vo[1], vo[4]);
    MPI_Op_free(&op);
    MPI_Type_free(&vec);
}

/* Every predefined (type, op) either has a kernel or goes to the vendor whole; user ops never do. */
static void check_vendor_takes(void)
{
    static const struct { const char *name; MPI_Datatype dt; MPI_Op op; int want; } cases[] = {
        { "MPI_CHAR SUM", MPI_CHAR, MPI_SUM, 0 }, { "MPI_CHAR BXOR", MPI_CHAR, MPI_BXOR, 0 },
        { "MPI_INT MINLOC", MPI_INT, MPI_MINLOC, 1 }, { "MPI_BYTE SUM", MPI_BYTE, MPI_SUM, 1 },
        { "MPI_FLOAT LAND", MPI_FLOAT, MPI_LAND, 1 }, { "MPI_WCHAR SUM", MPI_WCHAR, MPI_SUM, 1 },
        { "MPI_CHARACTER SUM", MPI_CHARACTER, MPI_SUM, 1 }, { "MPI_PACKED BOR", MPI_PACKED, MPI_BOR, 1 },
        { "MPI_REAL16 SUM", MPI_REAL16, MPI_SUM, 0 }, { "MPI_COMPLEX32 SUM", MPI_COMPLEX32, MPI_SUM, 0 },
        { "MPI_REAL16 LAND", MPI_REAL16, MPI_LAND, 1 }, { "MPI_COMPLEX32 MAX", MPI_COMPLEX32, MPI_MAX, 1 },
        { "MPI_INT REPLACE", MPI_INT, MPI_REPLACE, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        checks++;
        if (mpiopt_vendor_takes(cases[i].dt, cases[i].op) != cases[i].want)
            FAIL("mpiopt_vendor_takes(%s) should be %d", cases[i].name, cases[i].want);
    }
    MPI_Datatype quad;
    MPI_Type_contiguous(4, MPI_INT, &quad);
    MPI_Type_commit(&quad);
    checks++;
    if (!mpiopt_vendor_takes(quad, MPI_SUM)) FAIL("a derived type with MPI_SUM has no kernel: vendor");
    MPI_Op op;
    MPI_Op_create(user_op_fn, 0, &op);
    checks++;
    if (mpiopt_vendor_takes(quad, op) || mpiopt_vendor_takes(MPI_INT, op))
        FAIL("a user op runs in mpiopt's algorithms");
    MPI_Op_free(&op);
    MPI_Type_free(&quad);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    build_cases();
    static const size_t big[] = { 1000, 4099, 65539 };
    for (size_t c = 0; c < ncases; c++) {
        char ops[64];
        snprintf(ops, sizeof ops, "%s", cases[c].ops);
        for (char *save, *op = strtok_r(ops, " ", &save); op; op = strtok_r(NULL, " ", &save)) {
            check_coverage(&cases[c], op);
            for (size_t n = 0; n <= 70; n++)
                check_case(&cases[c], op, n, 0);
            for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
                check_case(&cases[c], op, big[i], 0);
                check_case(&cases[c], op, big[i] / 3 + 1, 1 + i);   /* byte-misaligned */
            }
        }
    }
    check_vendor_bugs();
    check_float_rules();
    check_fallbacks();
    check_vendor_takes();
    printf("unit_reduce_local [isa %s]: %d checks, %d failed\n", mpiopt_kernel_isa(), checks, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
