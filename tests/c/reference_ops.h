/* The reference the plain reduction tests (plain_scan.c, plain_reduce_scatter.c) check against:
 * the ops by name, one C fold a type, values that keep every sum and product exact (so any
 * bracketing gives the same bits) and that make unsigned char and short sums wrap, and a
 * non-commutative user op, 2x2 integer matrix products, whose order shows. */
#ifndef MPIOPT_TEST_REFERENCE_OPS_H
#define MPIOPT_TEST_REFERENCE_OPS_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SUM, PROD, MAX, MIN, BAND, BOR, BXOR, LAND, LOR, LXOR, MATMUL, NOPS };
static const char *const op_names[NOPS] = {"sum", "prod", "max", "min", "band", "bor",
                                           "bxor", "land", "lor", "lxor", "matmul"};
static MPI_Op ops[NOPS];

/* b[i] = a[i] op b[i] for n elements of one C type; the reference, one rank at a time. */
#define FOLD(NAME, T, INTEGER)                                                                  \
    static void fold_##NAME(int op, const void *av, void *bv, int n)                           \
    {                                                                                           \
        T a, b;                                                                                 \
        for (int i = 0; i < n; i++) {                                                           \
            memcpy(&a, (const char *)av + i * sizeof(T), sizeof(T));                            \
            memcpy(&b, (char *)bv + i * sizeof(T), sizeof(T));                                  \
            switch (op) {                                                                       \
            case SUM: b = (T)(a + b); break;                                                    \
            case PROD: b = (T)(a * b); break;                                                   \
            case MAX: b = a > b ? a : b; break;                                                 \
            case MIN: b = a < b ? a : b; break;                                                 \
            case LAND: b = (T)(a && b); break;                                                  \
            case LOR: b = (T)(a || b); break;                                                   \
            case LXOR: b = (T)(!a != !b); break;                                                \
            default: if (INTEGER) b = int_op_##NAME(op, a, b);                                  \
            }                                                                                   \
            memcpy((char *)bv + i * sizeof(T), &b, sizeof(T));                                  \
        }                                                                                       \
    }
#define INT_OP(NAME, T)                                                                         \
    static T int_op_##NAME(int op, T a, T b)                                                    \
    {                                                                                           \
        return op == BAND ? (T)(a & b) : op == BOR ? (T)(a | b) : (T)(a ^ b);                   \
    }
#define FLOAT_OP(NAME, T)                                                                       \
    static T int_op_##NAME(int op, T a, T b) { (void)op; (void)a; return b; }

INT_OP(int, int) FOLD(int, int, 1)
INT_OP(uchar, unsigned char) FOLD(uchar, unsigned char, 1)
INT_OP(short, short) FOLD(short, short, 1)
INT_OP(long, long) FOLD(long, long, 1)
FLOAT_OP(float, float) FOLD(float, float, 0)
FLOAT_OP(double, double) FOLD(double, double, 0)

typedef struct {
    const char *name;
    MPI_Datatype type;
    size_t size;
    int integer;
    void (*fold)(int op, const void *a, void *b, int n);
} type_case;

/* The value of element i on rank r for op: small, so sums and products stay exact. */
static double value(int op, int r, int i, const type_case *t)
{
    if (op == PROD)
        return (r + i) % 5 == 0 ? 2 : (r + i) % 7 == 0 ? -1 : 1;
    if (op == SUM && t->integer && t->size == 1)
        return 150 + (r * 7 + i) % 100;     /* unsigned char sums wrap past 255 */
    if (op == SUM && t->integer && t->size == 2)
        return 30000 + (r * 5 + i) % 1000;  /* short sums wrap */
    if (op >= LAND && op <= LXOR)
        return (r * 3 + i) % 4 == 0;
    return (r * 13 + i * 7) % 101 - (t->integer && t->size == 1 ? 0 : 50);
}

static void fill(void *buf, int op, int r, int n, const type_case *t)
{
    for (int i = 0; i < n; i++) {
        double v = value(op, r, i, t);
        char *at = (char *)buf + (size_t)i * t->size;
        if (t->type == MPI_INT) { int x = (int)v; memcpy(at, &x, sizeof x); }
        else if (t->type == MPI_UNSIGNED_CHAR) { unsigned char x = (unsigned char)v; memcpy(at, &x, 1); }
        else if (t->type == MPI_SHORT) { short x = (short)v; memcpy(at, &x, sizeof x); }
        else if (t->type == MPI_LONG) { long x = (long)v; memcpy(at, &x, sizeof x); }
        else if (t->type == MPI_FLOAT) { float x = (float)v; memcpy(at, &x, sizeof x); }
        else { memcpy(at, &v, sizeof v); }
    }
}

/* 2x2 integer matrices, four ints each: inout = in x inout (in: the lower ranks'). */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    int *a = in, *b = inout;
    for (int k = 0; k + 3 < *len; k += 4) {
        int c0 = a[k] * b[k] + a[k + 1] * b[k + 2], c1 = a[k] * b[k + 1] + a[k + 1] * b[k + 3];
        int c2 = a[k + 2] * b[k] + a[k + 3] * b[k + 2], c3 = a[k + 2] * b[k + 1] + a[k + 3] * b[k + 3];
        b[k] = c0, b[k + 1] = c1, b[k + 2] = c2, b[k + 3] = c3;
    }
}

/* The same op on a datatype of one matrix (MPI_Type_contiguous(4, MPI_INT)): an MPI
 * implementation may split a call's elements among op calls at any element, which must then be
 * whole matrices. */
__attribute__((unused)) static void matmul_matrices(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int ints = *len * 4;
    matmul(in, inout, &ints, type);
}

static void fill_matrices(int *m, int r, int n)
{
    for (int i = 0; i < n; i++)
        m[i] = (i % 4 == 0 || i % 4 == 3) ? 1 : ((r + i) % 3) - (i % 4 == 1 ? 0 : 1);
}

/* The predefined ops in ops[] and the matrix product (freed by reference_ops_free). */
static void reference_ops_init(void)
{
    MPI_Op predefined[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR,
                           MPI_LAND, MPI_LOR, MPI_LXOR};
    memcpy(ops, predefined, sizeof predefined);
    MPI_Op_create(matmul, 0, &ops[MATMUL]);
}

#define REFERENCE_TYPES                                                                         \
    {{"int", MPI_INT, sizeof(int), 1, fold_int},                                                \
     {"unsigned char", MPI_UNSIGNED_CHAR, 1, 1, fold_uchar},                                    \
     {"short", MPI_SHORT, sizeof(short), 1, fold_short},                                        \
     {"long", MPI_LONG, sizeof(long), 1, fold_long},                                            \
     {"float", MPI_FLOAT, sizeof(float), 0, fold_float},                                        \
     {"double", MPI_DOUBLE, sizeof(double), 0, fold_double}}

/* ---- the programs' bookkeeping ---- */

static int rank, size, checks, failures;

enum { BLOCKING, WAITED, TESTED, PERSISTENT, NFORMS };
static const char *const form_names[NFORMS] = {"blocking", "waited", "tested", "persistent"};

/* One case of a program: variant (its collective), form, op, type, count, in place. */
typedef void (*case_fn)(int variant, int form, int op, const type_case *t, int n, int in_place);

/* Every form (persistent where the MPI has it) x type x op that applies to it x count of
 * counts[5]: the blocking form every count (in place at the fourth), the others the odd and the
 * largest; then the matrix product at each count of whole matrices (in place at every other).
 * few: int, unsigned char and double only. */
static void run_cases(case_fn check, int variant, int have_persistent, int few,
                      const int counts[5])
{
    type_case types[] = REFERENCE_TYPES;
    for (int form = 0; form < NFORMS; form++) {
        if (form == PERSISTENT && !have_persistent)
            continue;
        for (size_t t = 0; t < sizeof types / sizeof *types; t++)
            for (int op = 0; op < MATMUL; op++) {
                if (few && types[t].type != MPI_INT && types[t].type != MPI_UNSIGNED_CHAR &&
                    types[t].type != MPI_DOUBLE)
                    continue;
                if (!types[t].integer && op >= BAND && op <= LXOR)
                    continue;
                for (int c = 0; c < 5; c++)
                    if (form == BLOCKING || c == 2 || c == 4)
                        check(variant, form, op, &types[t], counts[c], c == 3);
            }
        for (int c = 0; c < 5; c++)
            check(variant, form, MATMUL, &types[0], counts[c] / 4 * 4, c % 2);
    }
}

/* A bad argument's call: its error class must be `want` (MPI_ERRORS_RETURN on its comm). */
static void check_error_class(int rc, int want, const char *what)
{
    int cls;
    checks++;
    MPI_Error_class(rc, &cls);
    if (cls != want) {
        failures++;
        printf("FAIL rank %d %s: error class %d, not %d\n", rank, what, cls, want);
    }
}

/* Rank 0 prints "N checks, M failures" over all ranks. */
static void print_checks(void)
{
    int total[2], mine[2] = {checks, failures};
    MPI_Reduce(mine, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d checks, %d failures\n", total[0], total[1]);
}

#endif
