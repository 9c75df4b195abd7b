/* Multi-rank checker for mpiopt_allreduce / mpiopt_reduce, driven by tests/python/test_coll.py.
 *
 * Every rank generates every rank's input from (rank, element, case), so each rank computes the
 * reference itself: the inputs reduced in rank order by plain loops written here (not mpiopt's
 * kernels, not the vendor's MPI_Reduce_local, which has known bugs). Inputs are chosen so that
 * every order of reduction gives exactly the same value (small integers and dyadic fractions in
 * floating point), except one case with inexact doubles that checks only that all ranks get the
 * same bits and that the value is close. Allreduce results are also hashed and compared across
 * ranks, bit for bit. The sendbuf of every call not in place (allreduce, and reduce on every
 * rank) must come back bitwise unchanged.
 *
 *   test-coll_check [--algorithms all|auto,vendor,…] [--counts 0,1,…] [--roots all|ends|last]
 *                   [--cases all|quick|minimal] [--big-cases all|quick|minimal]
 *                   [--comms world,dup,split,self] [--reduce 0|1]
 *                   [--mode blocking|nonblocking|persistent]
 * --big-cases: the cases run at counts >= 10000 (default: as --cases).
 * --mode: the calls checked (see call() below); every algorithm, case and count as blocking.
 * Prints "coll_check: N checks, F failures" on rank 0; exit code 1 on any failure. */
#include <complex.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpiopt.h"

typedef struct { double v; int i; } double_int;

typedef struct test_case test_case;
struct test_case {
    const char *name;
    MPI_Datatype type;          /* set in setup_cases (handles are not constants in Open MPI) */
    MPI_Op op;
    size_t extent, sig;         /* bytes per element, and how many of them carry the value */
    int exact;                  /* 1: bitwise; 0: inexact doubles, compared with a tolerance;
                                   2: float pairs compared with == (the sign of a zero imaginary
                                   part depends on the order of complex products) */
    int quick;                  /* 1: part of the quick set; 2: also of the minimal set */
    int vendor_bug;             /* the vendor's own result is known to be wrong: not checked */
    void (*gen)(void *buf, int rank, size_t n);
    void (*ref)(const void *in, void *acc, size_t n);   /* acc = acc op in (acc: lower ranks) */
};

static unsigned hash32(unsigned x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}
#define H(rank, i) hash32((unsigned)(rank) * 2654435761U + (unsigned)(i) * 40503U + 17U)

/* ---- generators ---- */
static void gen_int_small(void *b, int r, size_t n)
{ int *x = b; for (size_t i = 0; i < n; i++) x[i] = (int)(H(r, i) % 1001) - 500; }
static void gen_int_prod(void *b, int r, size_t n)
{ int *x = b; for (size_t i = 0; i < n; i++) { unsigned h = H(r, i) % 6; x[i] = h == 0 ? 2 : h == 1 ? -1 : h == 2 ? 3 : 1; } }
static void gen_int_bits(void *b, int r, size_t n)
{ int *x = b; for (size_t i = 0; i < n; i++) x[i] = (int)H(r, i); }
static void gen_int_bool(void *b, int r, size_t n)
{ int *x = b; for (size_t i = 0; i < n; i++) x[i] = H(r, i) % 9 != 0 ? (int)(H(r, i) % 3) + 1 : 0; }
static void gen_dbl_dyadic(void *b, int r, size_t n)
{ double *x = b; for (size_t i = 0; i < n; i++) x[i] = ((int)(H(r, i) % 257) - 128) / 8.0; }
static void gen_dbl_prod(void *b, int r, size_t n)
{ double *x = b; for (size_t i = 0; i < n; i++) { unsigned h = H(r, i) % 5; x[i] = h == 0 ? 2.0 : h == 1 ? -1.0 : h == 2 ? 0.5 : h == 3 ? -0.25 : 1.0; } }
static void gen_dbl_any(void *b, int r, size_t n)
{ double *x = b; for (size_t i = 0; i < n; i++) x[i] = sin(r * 1.37 + (double)i * 0.71) * 1e3 / (1 + r); }
/* zeros of random sign: max(+0, -0) is +0 or -0 depending on the operand order, so only an
 * allreduce whose ranks all apply the op the same way gives every rank the same bits */
static void gen_dbl_zeros(void *b, int r, size_t n)
{ double *x = b; for (size_t i = 0; i < n; i++) x[i] = H(r, i) % 2 ? -0.0 : 0.0; }
static void gen_cf_small(void *b, int r, size_t n)
{ float complex *x = b; for (size_t i = 0; i < n; i++) x[i] = CMPLXF((float)(H(r, i) % 64) - 32, (float)(H(r, i + 7) % 64) - 32); }
static void gen_cf_prod(void *b, int r, size_t n)
{
    static const float complex units[4] = {1.0f, I, -1.0f, 2.0f};
    float complex *x = b;
    for (size_t i = 0; i < n; i++) x[i] = units[H(r, i) % 4];
}
static void gen_i8(void *b, int r, size_t n)
{ int8_t *x = b; for (size_t i = 0; i < n; i++) x[i] = (int8_t)H(r, i); }
static void gen_dint(void *b, int r, size_t n)
{
    double_int *x = b;
    memset(b, 0, n * sizeof *x);
    for (size_t i = 0; i < n; i++) { x[i].v = (double)(H(r, i) % 3); x[i].i = r; }
}
static void gen_mat(void *b, int r, size_t n)
{ uint64_t *x = b; for (size_t i = 0; i < 4 * n; i++) x[i] = H(r, i) % 1000 + ((uint64_t)H(r + 99, i) << 20); }

/* ---- reference ops: acc = acc op in ---- */
#define REF(NAME, T, EXPR) \
    static void NAME(const void *in_, void *acc_, size_t n) \
    { const T *in = in_; T *acc = acc_; for (size_t i = 0; i < n; i++) { T a = acc[i], b = in[i]; acc[i] = (EXPR); } }
REF(ref_int_sum, int, (int)((unsigned)a + (unsigned)b))
REF(ref_int_prod, int, (int)((unsigned)a * (unsigned)b))
REF(ref_int_max, int, a > b ? a : b)
REF(ref_int_bxor, int, a ^ b)
REF(ref_int_land, int, (a && b) ? 1 : 0)
REF(ref_dbl_sum, double, a + b)
REF(ref_dbl_prod, double, a * b)
REF(ref_dbl_max, double, a > b ? a : b)
REF(ref_cf_sum, float complex, a + b)
REF(ref_cf_prod, float complex, a * b)
REF(ref_i8_sum, int8_t, (int8_t)(uint8_t)((uint8_t)a + (uint8_t)b))
REF(ref_i8_max, int8_t, a > b ? a : b)
REF(ref_i8_bxor, int8_t, (int8_t)(a ^ b))
REF(ref_int_usersum, int, (int)((unsigned)a + (unsigned)b))

static void ref_minloc(const void *in_, void *acc_, size_t n)
{
    const double_int *in = in_;
    double_int *acc = acc_;
    for (size_t i = 0; i < n; i++)
        if (in[i].v < acc[i].v || (in[i].v == acc[i].v && in[i].i < acc[i].i))
            acc[i] = in[i];
}
static void ref_maxloc(const void *in_, void *acc_, size_t n)
{
    const double_int *in = in_;
    double_int *acc = acc_;
    for (size_t i = 0; i < n; i++)
        if (in[i].v > acc[i].v || (in[i].v == acc[i].v && in[i].i < acc[i].i))
            acc[i] = in[i];
}
/* 2x2 matrix product modulo 2^64: associative, exact, and not commutative. */
static void mat_mul(const uint64_t *a, const uint64_t *b, uint64_t *c)
{
    uint64_t r0 = a[0] * b[0] + a[1] * b[2], r1 = a[0] * b[1] + a[1] * b[3];
    uint64_t r2 = a[2] * b[0] + a[3] * b[2], r3 = a[2] * b[1] + a[3] * b[3];
    c[0] = r0; c[1] = r1; c[2] = r2; c[3] = r3;
}
static void ref_mat(const void *in_, void *acc_, size_t n)
{
    const uint64_t *in = in_;
    uint64_t *acc = acc_;
    for (size_t i = 0; i < n; i++)
        mat_mul(acc + 4 * i, in + 4 * i, acc + 4 * i);
}

/* ---- user ops as MPI calls them: inout = in op inout ---- */
static void user_mat(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    uint64_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        mat_mul(a + 4 * i, b + 4 * i, b + 4 * i);
}
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = (int)((unsigned)a[i] + (unsigned)b[i]);
}

static test_case cases[32];
static int ncases;
static MPI_Datatype mat_type;
static MPI_Op mat_op, usersum_op;

static void add(const char *name, MPI_Datatype t, MPI_Op op, size_t extent, size_t sig, int exact,
                int quick, void (*gen)(void *, int, size_t), void (*ref)(const void *, void *, size_t))
{
    cases[ncases++] = (test_case){name, t, op, extent, sig, exact, quick, 0, gen, ref};
}

static void setup_cases(void)
{
    MPI_Type_contiguous(4, MPI_UINT64_T, &mat_type);
    MPI_Type_commit(&mat_type);
    MPI_Op_create(user_mat, 0, &mat_op);
    MPI_Op_create(user_sum, 1, &usersum_op);
    add("int SUM", MPI_INT, MPI_SUM, 4, 4, 1, 2, gen_int_small, ref_int_sum);
    add("int PROD", MPI_INT, MPI_PROD, 4, 4, 1, 0, gen_int_prod, ref_int_prod);
    add("int MAX", MPI_INT, MPI_MAX, 4, 4, 1, 0, gen_int_bits, ref_int_max);
    add("int BXOR", MPI_INT, MPI_BXOR, 4, 4, 1, 0, gen_int_bits, ref_int_bxor);
    add("int LAND", MPI_INT, MPI_LAND, 4, 4, 1, 0, gen_int_bool, ref_int_land);
    add("double SUM", MPI_DOUBLE, MPI_SUM, 8, 8, 1, 1, gen_dbl_dyadic, ref_dbl_sum);
    add("double PROD", MPI_DOUBLE, MPI_PROD, 8, 8, 1, 0, gen_dbl_prod, ref_dbl_prod);
    add("double MAX", MPI_DOUBLE, MPI_MAX, 8, 8, 1, 0, gen_dbl_any, ref_dbl_max);
    add("double SUM inexact", MPI_DOUBLE, MPI_SUM, 8, 8, 0, 2, gen_dbl_any, ref_dbl_sum);
    add("double MAX signed zeros", MPI_DOUBLE, MPI_MAX, 8, 8, 0, 2, gen_dbl_zeros, ref_dbl_max);
#ifdef MPICH_VERSION
    cases[ncases - 1].vendor_bug = 1;   /* MPICH's own allreduce: ranks differ in zero's sign */
#endif
    add("float complex SUM", MPI_C_FLOAT_COMPLEX, MPI_SUM, 8, 8, 2, 0, gen_cf_small, ref_cf_sum);
    add("float complex PROD", MPI_C_FLOAT_COMPLEX, MPI_PROD, 8, 8, 2, 1, gen_cf_prod, ref_cf_prod);
    add("int8 SUM", MPI_INT8_T, MPI_SUM, 1, 1, 1, 0, gen_i8, ref_i8_sum);
#ifdef OMPI_MAJOR_VERSION
    cases[ncases - 1].vendor_bug = 1;   /* Open MPI's avx op component saturates 8-bit sums */
#endif
    add("int8 MAX", MPI_INT8_T, MPI_MAX, 1, 1, 1, 0, gen_i8, ref_i8_max);
    add("int8 BXOR", MPI_INT8_T, MPI_BXOR, 1, 1, 1, 0, gen_i8, ref_i8_bxor);
    add("double_int MINLOC", MPI_DOUBLE_INT, MPI_MINLOC, 16, 12, 1, 1, gen_dint, ref_minloc);
    add("double_int MAXLOC", MPI_DOUBLE_INT, MPI_MAXLOC, 16, 12, 1, 0, gen_dint, ref_maxloc);
    add("user 2x2 matrix product (non-commutative)", mat_type, mat_op, 32, 32, 1, 2, gen_mat,
        ref_mat);
    add("user int sum (commutative)", MPI_INT, usersum_op, 4, 4, 1, 1, gen_int_small,
        ref_int_usersum);
}

/* ---- checking ---- */
static long checks, failures;
static int world_rank;

static void fail(const char *what, const test_case *t, const char *alg, int p, int count,
                 int inplace, int root, const char *comm_name, const char *detail)
{
    failures++;
    if (failures <= 20)
        fprintf(stderr, "FAIL rank %d: %s %s alg=%s comm=%s p=%d count=%d in_place=%d root=%d: %s\n",
                world_rank, what, t->name, alg, comm_name, p, count, inplace, root, detail);
}

static uint64_t fnv(const test_case *t, const void *buf, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    const unsigned char *b = buf;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < t->sig; j++)
            h = (h ^ b[i * t->extent + j]) * 1099511628211ULL;
    return h;
}

/* 0 if got == want (bitwise on the value bytes, or within a tolerance when !exact). */
static long first_mismatch(const test_case *t, const void *got, const void *want, size_t n)
{
    const unsigned char *g = got, *w = want;
    for (size_t i = 0; i < n; i++) {
        if (t->exact == 0) {
            double a = ((const double *)got)[i], b = ((const double *)want)[i];
            if (fabs(a - b) > 1e-9 * (fabs(b) + 1e3))
                return (long)i;
        } else if (t->exact == 2) {
            const float *a = (const float *)got + 2 * i, *b = (const float *)want + 2 * i;
            if (a[0] != b[0] || a[1] != b[1])
                return (long)i;
        } else if (memcmp(g + i * t->extent, w + i * t->extent, t->sig)) {
            return (long)i;
        }
    }
    return -1;
}

/* The reference: inputs of comm ranks 0..p-1 (world ranks in `ranks`) reduced in that order. */
static void reference(const test_case *t, const int *ranks, int p, size_t n, void *acc, void *tmp)
{
    t->gen(acc, ranks[0], n);
    for (int r = 1; r < p; r++) {
        t->gen(tmp, ranks[r], n);
        t->ref(tmp, acc, n);
    }
}

static void check_result(const char *what, const test_case *t, const char *alg, MPI_Comm comm,
                         const char *comm_name, int count, int inplace, int root, int rc,
                         const void *got, const void *want)
{
    int p, rank;
    char detail[200];
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &rank);
    checks++;
    if (rc != MPI_SUCCESS) {
        snprintf(detail, sizeof detail, "returned error %d", rc);
        fail(what, t, alg, p, count, inplace, root, comm_name, detail);
    } else if (got) {
        long bad = first_mismatch(t, got, want, (size_t)count);
        if (bad >= 0) {
            snprintf(detail, sizeof detail, "element %ld differs from the rank-order reference", bad);
            fail(what, t, alg, p, count, inplace, root, comm_name, detail);
        }
    }
}

/* The sendbuf of a call not in place must be bitwise what it was (padding bytes included):
 * regenerates it into scratch and compares. */
static void check_input_unchanged(const char *what, const test_case *t, const char *alg,
                                  MPI_Comm comm, const char *comm_name, int count, int inplace,
                                  int root, const void *in, void *scratch)
{
    int p;
    char label[64];
    MPI_Comm_size(comm, &p);
    checks++;
    t->gen(scratch, world_rank, (size_t)count);
    if (memcmp(scratch, in, (size_t)count * t->extent)) {
        snprintf(label, sizeof label, "%s (sendbuf modified)", what);
        fail(label, t, alg, p, count, inplace, root, comm_name, "sendbuf changed");
    }
}

/* The checker's own collectives (not under test) wait by yielding the core between tests of a
 * nonblocking call: a blocking one polls, and with more ranks than cores (every p > 2 here) a
 * polling MPI (MPICH) spends whole time slices of the ranks it waits for; the same checks ran
 * 1.5-3x as long. */
static void polite_wait(MPI_Request *req)
{
    int done = 0;
    while (PMPI_Test(req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        sched_yield();
}

static void polite_allgather(const void *in, int count, MPI_Datatype type, void *out, MPI_Comm comm)
{
    MPI_Request req;
    PMPI_Iallgather(in, count, type, out, count, type, comm, &req);
    polite_wait(&req);
}

/* Every rank must hold bitwise the same allreduce result: the hashes of one batch of results
 * (one per algorithm and in-place mode) are compared in one collective, to keep the number of
 * extra messages small on an oversubscribed machine. */
static void check_same_bits(const test_case *t, MPI_Comm comm, const char *comm_name, int count,
                            const uint64_t *hashes, const int *algs, int nhashes)
{
    int p, rank;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &rank);
    uint64_t *all = malloc(sizeof(uint64_t) * (size_t)p * (size_t)nhashes);
    polite_allgather(hashes, 8 * nhashes, MPI_BYTE, all, comm);
    for (int h = 0; h < nhashes && rank == 0; h++) {
        checks++;
        for (int r = 1; r < p; r++)
            if (all[(size_t)r * (size_t)nhashes + (size_t)h] != all[h]) {
                char detail[100];
                snprintf(detail, sizeof detail, "rank %d's result differs bitwise from rank 0's", r);
                fail("allreduce", t, mpiopt_algorithm_name((mpiopt_algorithm)algs[h / 2]), p,
                     count, h % 2, -1, comm_name, detail);
                break;
            }
    }
    free(all);
}

/* How the checker calls the collectives (--mode): blocking (mpiopt_allreduce), nonblocking
 * (mpiopt_iallreduce, then a wait) or persistent (mpiopt_allreduce_init, started twice with the
 * output buffer restored in between, so the second run checks the replayed schedule). */
enum { BLOCKING, NONBLOCKING, PERSISTENT };
static int mode = BLOCKING;

/* Runs one call; is_reduce picks reduce (with root) or allreduce. */
static int call(int is_reduce, const void *in, void *out, size_t out_bytes, int count,
                const test_case *t, int root, MPI_Comm comm, mpiopt_algorithm alg)
{
    MPI_Request req;
    int rc;
    if (mode == BLOCKING)
        return is_reduce ? mpiopt_reduce(in, out, count, t->type, t->op, root, comm, alg)
                         : mpiopt_allreduce(in, out, count, t->type, t->op, comm, alg);
    if (mode == NONBLOCKING) {
        rc = is_reduce ? mpiopt_ireduce(in, out, count, t->type, t->op, root, comm, alg, &req)
                       : mpiopt_iallreduce(in, out, count, t->type, t->op, comm, alg, &req);
        if (rc == MPI_SUCCESS)
            rc = mpiopt_request_wait(&req, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && req != MPI_REQUEST_NULL)
            rc = MPI_ERR_REQUEST;   /* a completed nonblocking request must be gone */
        return rc;
    }
    rc = is_reduce ? mpiopt_reduce_init(in, out, count, t->type, t->op, root, comm,
                                        MPI_INFO_NULL, alg, &req)
                   : mpiopt_allreduce_init(in, out, count, t->type, t->op, comm, MPI_INFO_NULL,
                                           alg, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    char *initial = malloc(out_bytes);
    memcpy(initial, out, out_bytes);
    for (int run = 0; rc == MPI_SUCCESS && run < 2; run++) {
        memcpy(out, initial, out_bytes);
        rc = mpiopt_request_start(&req);
        if (rc == MPI_SUCCESS)
            rc = mpiopt_request_wait(&req, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && req == MPI_REQUEST_NULL)
            rc = MPI_ERR_REQUEST;   /* a persistent request stays until freed */
    }
    free(initial);
    int rc_free = mpiopt_request_free(&req);
    return rc != MPI_SUCCESS ? rc : rc_free;
}

static void run_comm(MPI_Comm comm, const char *comm_name, const int *algs, int nalgs,
                     const int *counts_in, int ncounts, int all_roots, int quick, int big_quick,
                     int do_reduce)
{
    int p, rank;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &rank);
    int *ranks = malloc(sizeof(int) * (size_t)p);
    polite_allgather(&world_rank, 1, MPI_INT, ranks, comm);
    for (int ci = 0; ci < ncounts; ci++) {
        int count = counts_in[ci] < 0 ? p + counts_in[ci] + 1000000 : counts_in[ci];
        if (count < 0)
            continue;
        for (int ti = 0; ti < ncases; ti++) {
            const test_case *t = &cases[ti];
            /* big counts cost the most: they get the smaller set of cases */
            int level = count >= 10000 && big_quick > quick ? big_quick : quick;
            if (t->quick < level)
                continue;
            size_t bytes = (size_t)count * t->extent + 1;
            char *want = malloc(bytes), *tmp = malloc(bytes), *in = malloc(bytes),
                 *out = malloc(bytes);
            reference(t, ranks, p, (size_t)count, want, tmp);
            uint64_t hashes[32] = {0};
            for (int ai = 0; ai < nalgs; ai++) {
                const char *alg = mpiopt_algorithm_name((mpiopt_algorithm)algs[ai]);
                if (algs[ai] == MPIOPT_ALG_VENDOR && t->vendor_bug)
                    continue;
                for (int inplace = 0; inplace < 2; inplace++) {
                    /* not in place: `in` and `out` are separate allocations, and out starts as
                     * garbage, so an algorithm that reads the sendbuf where it is must neither
                     * write it nor count on the recvbuf holding a copy */
                    t->gen(in, world_rank, (size_t)count);
                    memset(out, 0x5a, bytes);
                    if (inplace)
                        memcpy(out, in, (size_t)count * t->extent);
                    int rc = call(0, inplace ? MPI_IN_PLACE : in, out, bytes, count, t, 0, comm,
                                  (mpiopt_algorithm)algs[ai]);
                    check_result("allreduce", t, alg, comm, comm_name, count, inplace, -1, rc,
                                 out, want);
                    hashes[2 * ai + inplace] = fnv(t, out, (size_t)count);
                    if (!inplace)
                        check_input_unchanged("allreduce", t, alg, comm, comm_name, count, 0, -1,
                                              in, tmp);
                }
                if (!do_reduce)
                    continue;
                for (int root = 0; root < p; root++) {
                    if (all_roots == 0 && root != 0 && root != p - 1)
                        continue;
                    if (all_roots < 0 && root != p - 1)
                        continue;
                    /* in place at the root; at non-zero roots too (MPICH 4.0.2 crashes there) */
                    for (int inplace = 0; inplace < 2; inplace++) {
                        t->gen(in, world_rank, (size_t)count);
                        memset(out, 0x5a, bytes);
                        int here_in_place = inplace && rank == root;
                        if (here_in_place)
                            memcpy(out, in, (size_t)count * t->extent);
                        int rc = call(1, here_in_place ? MPI_IN_PLACE : in, out, bytes, count, t,
                                      root, comm, (mpiopt_algorithm)algs[ai]);
                        check_result("reduce", t, alg, comm, comm_name, count, inplace, root, rc,
                                     rank == root ? out : NULL, want);
                        if (!here_in_place)
                            check_input_unchanged("reduce", t, alg, comm, comm_name, count,
                                                  inplace, root, in, tmp);
                    }
                }
            }
            check_same_bits(t, comm, comm_name, count, hashes, algs, 2 * nalgs);
            free(want);
            free(tmp);
            free(in);
            free(out);
        }
    }
    free(ranks);
}

/* Parses a comma list of ints; the words p, p-1, p+1 are kept as negative codes. */
static int parse_counts(const char *s, int *out, int max)
{
    int n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "p"))
            out[n++] = -1000000;
        else if (!strcmp(tok, "p-1"))
            out[n++] = -1000001;
        else if (!strcmp(tok, "p+1"))
            out[n++] = -999999;
        else
            out[n++] = atoi(tok);
    }
    free(copy);
    return n;
}

static int case_level(const char *name)
{
    return !strcmp(name, "minimal") ? 2 : !strcmp(name, "quick") ? 1 : 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    const char *alg_list = "all";   /* every row of the registry: a new algorithm is tested as is */
    const char *count_list = "0,1,p-1,p,p+1,1000,65537";
    const char *comm_list = "world,dup,split,self";
    int all_roots = 0, quick = 0, big_quick = 0, do_reduce = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--algorithms")) alg_list = argv[i + 1];
        else if (!strcmp(argv[i], "--counts")) count_list = argv[i + 1];
        else if (!strcmp(argv[i], "--comms")) comm_list = argv[i + 1];
        else if (!strcmp(argv[i], "--roots"))
            all_roots = !strcmp(argv[i + 1], "all") ? 1 : !strcmp(argv[i + 1], "last") ? -1 : 0;
        else if (!strcmp(argv[i], "--cases")) quick = case_level(argv[i + 1]);
        else if (!strcmp(argv[i], "--big-cases")) big_quick = case_level(argv[i + 1]);
        else if (!strcmp(argv[i], "--reduce")) do_reduce = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mode"))
            mode = !strcmp(argv[i + 1], "nonblocking") ? NONBLOCKING
                   : !strcmp(argv[i + 1], "persistent") ? PERSISTENT : BLOCKING;
        else {
            if (world_rank == 0)
                fprintf(stderr, "coll_check: unknown option %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int algs[MPIOPT_ALG_COUNT], nalgs = 0, all = !strcmp(alg_list, "all");
    for (int k = 0; all && k < MPIOPT_ALG_COUNT; k++)
        algs[nalgs++] = k;
    char *copy = strdup(all ? "" : alg_list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && nalgs < MPIOPT_ALG_COUNT;
         tok = strtok_r(NULL, ",", &save)) {
        int a = -1;
        for (int k = 0; k < MPIOPT_ALG_COUNT; k++)
            if (!strcmp(tok, mpiopt_algorithm_name((mpiopt_algorithm)k)))
                a = k;
        if (a < 0) {
            if (world_rank == 0)
                fprintf(stderr, "coll_check: unknown algorithm %s\n", tok);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        algs[nalgs++] = a;
    }
    free(copy);
    int counts[32], ncounts = parse_counts(count_list, counts, 32);
    setup_cases();

    /* world: everything; the other communicators: the reduced set with the small counts */
    static const int small_counts[] = {0, 1, -1000001, -999999, 1000};
    if (strstr(comm_list, "world"))
        run_comm(MPI_COMM_WORLD, "world", algs, nalgs, counts, ncounts, all_roots, quick, big_quick,
                 do_reduce);
    if (strstr(comm_list, "dup")) {
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        run_comm(dup, "dup", algs, nalgs, small_counts, 5, 0, quick > 1 ? quick : 1, 0,
                 do_reduce);
        MPI_Comm_free(&dup);
    }
    if (strstr(comm_list, "split")) {
        /* uneven halves, ranks reversed: comm ranks differ from world ranks */
        MPI_Comm split;
        MPI_Comm_split(MPI_COMM_WORLD, world_rank % 3 == 0, -world_rank, &split);
        run_comm(split, "split", algs, nalgs, small_counts, 5, 0, quick > 1 ? quick : 1, 0,
                 do_reduce);
        MPI_Comm_free(&split);
    }
    if (strstr(comm_list, "self"))
        run_comm(MPI_COMM_SELF, "self", algs, nalgs, small_counts, 5, 0, quick > 1 ? quick : 1, 0,
                 do_reduce);

    long totals[2] = {checks, failures}, sums[2];
    PMPI_Allreduce(totals, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("coll_check: %ld checks, %ld failures\n", sums[0], sums[1]);
    MPI_Op_free(&mat_op);
    MPI_Op_free(&usersum_op);
    MPI_Type_free(&mat_type);
    MPI_Finalize();
    return sums[1] ? 1 : 0;
}
