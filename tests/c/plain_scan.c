/* MPI_Scan and MPI_Exscan against a rank-order reference, in a plain MPI program (run with and
 * without the drop-in): blocking, nonblocking (waited, and tested in a loop) and persistent
 * (started twice, with new contents the second time); every predefined op on integer and
 * floating types (the values keep every sum and product exact, so any bracketing gives the same
 * bits), unsigned char and short sums that wrap, a non-commutative user op (2x2 integer matrix
 * products: its order shows), counts 0, 1, odd and large, MPI_IN_PLACE, and buffers one byte off
 * their alignment; and the error classes of bad arguments under MPI_ERRORS_RETURN.
 *
 * usage: test-plain_scan [max_count]; prints one "FAIL …" line a wrong case and, on rank 0,
 * "N checks, M failures". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4 || defined(MPIOPT_HAVE_PERSISTENT_COLL)
#define SCAN_INIT MPI_Scan_init
#define EXSCAN_INIT MPI_Exscan_init
#elif defined(OMPI_MAJOR_VERSION)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define SCAN_INIT MPIX_Scan_init
#define EXSCAN_INIT MPIX_Exscan_init
#endif
#endif

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

static void fill_matrices(int *m, int r, int n)
{
    for (int i = 0; i < n; i++)
        m[i] = (i % 4 == 0 || i % 4 == 3) ? 1 : ((r + i) % 3) - (i % 4 == 1 ? 0 : 1);
}

static int rank, size, checks, failures;

enum { BLOCKING, WAITED, TESTED, PERSISTENT, NFORMS };
static const char *const form_names[NFORMS] = {"blocking", "waited", "tested", "persistent"};

/* One case: every rank's result against the reference. */
static void check(int exclusive, int form, int op, const type_case *t, int n, int in_place)
{
    size_t bytes = (size_t)n * t->size;
    char *send_raw = malloc(bytes + 1), *recv_raw = malloc(bytes + 1), *ref = malloc(bytes + 1);
    char *mine = malloc(bytes + 1);
    char *send = send_raw + 1, *recv = recv_raw + 1;  /* one byte off their alignment */
    for (int round = 0; round < (form == PERSISTENT ? 2 : 1); round++) {
        int shift = round * 3;  /* a persistent call's second start: new contents */
        if (op == MATMUL) fill_matrices((int *)mine, rank + shift, n);
        else fill(mine, op, rank + shift, n, t);
        memset(ref, 0, bytes);
        int last = exclusive ? rank - 1 : rank;
        for (int r = 0; r <= last; r++) {   /* ref = ref op v, in rank order */
            char *v = malloc(bytes + 1);
            if (op == MATMUL) fill_matrices((int *)v, r + shift, n);
            else fill(v, op, r + shift, n, t);
            if (r > 0 && op == MATMUL) { int len = n; matmul(ref, v, &len, NULL); }
            else if (r > 0) t->fold(op, ref, v, n);
            memcpy(ref, v, bytes);
            free(v);
        }
        memcpy(in_place ? recv : send, mine, bytes);
        if (!in_place) memset(recv, 0x5a, bytes);
        const void *sbuf = in_place ? MPI_IN_PLACE : send;
        static MPI_Request req = MPI_REQUEST_NULL;
        int rc = MPI_SUCCESS;
        if (form == BLOCKING)
            rc = exclusive ? MPI_Exscan(sbuf, recv, n, t->type, ops[op], MPI_COMM_WORLD)
                           : MPI_Scan(sbuf, recv, n, t->type, ops[op], MPI_COMM_WORLD);
        else if (form == WAITED || form == TESTED) {
            rc = exclusive ? MPI_Iexscan(sbuf, recv, n, t->type, ops[op], MPI_COMM_WORLD, &req)
                           : MPI_Iscan(sbuf, recv, n, t->type, ops[op], MPI_COMM_WORLD, &req);
            if (form == WAITED) MPI_Wait(&req, MPI_STATUS_IGNORE);
            else for (int done = 0; !done;) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        }
#ifdef SCAN_INIT
        else {
            if (round == 0)
                rc = exclusive ? EXSCAN_INIT(sbuf, recv, n, t->type, ops[op], MPI_COMM_WORLD, MPI_INFO_NULL, &req)
                               : SCAN_INIT(sbuf, recv, n, t->type, ops[op], MPI_COMM_WORLD, MPI_INFO_NULL, &req);
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (round == 1) MPI_Request_free(&req);
        }
#endif
        checks++;
        if (rc != MPI_SUCCESS || (!(exclusive && rank == 0) && memcmp(recv, ref, bytes) != 0)) {
            failures++;
            size_t at = 0;
            while (at < bytes && recv[at] == ref[at]) at++;
            printf("FAIL rank %d %s %s %s %s n=%d%s round %d: rc %d, byte %zu differs\n", rank,
                   exclusive ? "exscan" : "scan", form_names[form], op_names[op], t->name, n,
                   in_place ? " in place" : "", round, rc, at);
        }
    }
    free(send_raw), free(recv_raw), free(ref), free(mine);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int max_count = argc > 1 ? atoi(argv[1]) : 20001;
    MPI_Op predefined[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR,
                           MPI_LAND, MPI_LOR, MPI_LXOR};
    memcpy(ops, predefined, sizeof predefined);
    MPI_Op_create(matmul, 0, &ops[MATMUL]);
    type_case types[] = {{"int", MPI_INT, sizeof(int), 1, fold_int},
                         {"unsigned char", MPI_UNSIGNED_CHAR, 1, 1, fold_uchar},
                         {"short", MPI_SHORT, sizeof(short), 1, fold_short},
                         {"long", MPI_LONG, sizeof(long), 1, fold_long},
                         {"float", MPI_FLOAT, sizeof(float), 0, fold_float},
                         {"double", MPI_DOUBLE, sizeof(double), 0, fold_double}};
    int counts[] = {0, 1, 7, 1001, max_count};
    for (int exclusive = 0; exclusive < 2; exclusive++)
        for (int form = 0; form < NFORMS; form++) {
#ifndef SCAN_INIT
            if (form == PERSISTENT) continue;
#endif
            for (size_t t = 0; t < sizeof types / sizeof *types; t++)
                for (int op = 0; op < MATMUL; op++) {
                    if (!types[t].integer && op >= BAND && op <= LXOR) continue;
                    for (int c = 0; c < 5; c++)
                        if (form == BLOCKING || c == 2 || c == 4)
                            check(exclusive, form, op, &types[t], counts[c], c == 3);
                }
            for (int c = 0; c < 5; c++)     /* the user op, counts of whole matrices */
                check(exclusive, form, MATMUL, &types[0], counts[c] / 4 * 4, c % 2);
        }
    /* bad arguments come back through the communicator's handler with the standard's class */
    MPI_Comm errs;
    MPI_Comm_dup(MPI_COMM_WORLD, &errs);
    MPI_Comm_set_errhandler(errs, MPI_ERRORS_RETURN);
    int one = 1, out, cls;
    struct { int rc, want; const char *what; } bad[] = {
        {MPI_Scan(&one, &out, -1, MPI_INT, MPI_SUM, errs), MPI_ERR_COUNT, "scan count -1"},
        {MPI_Exscan(&one, &out, 1, MPI_INT, MPI_OP_NULL, errs), MPI_ERR_OP, "exscan MPI_OP_NULL"},
        {MPI_Scan(&one, &out, 1, MPI_DATATYPE_NULL, MPI_SUM, errs), MPI_ERR_TYPE,
         "scan MPI_DATATYPE_NULL"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        checks++;
        MPI_Error_class(bad[i].rc, &cls);
        if (cls != bad[i].want) {
            failures++;
            printf("FAIL rank %d %s: error class %d, not %d\n", rank, bad[i].what, cls, bad[i].want);
        }
    }
    MPI_Comm_free(&errs);
    int total[2], mine[2] = {checks, failures};
    MPI_Reduce(mine, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d checks, %d failures\n", total[0], total[1]);
    MPI_Op_free(&ops[MATMUL]);
    MPI_Finalize();
    return 0;
}
