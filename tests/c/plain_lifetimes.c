/* Conformance of the drop-in with MPI's rules for what a program may do while a collective is
 * pending (issue 21): a plain MPI program (not linked with mpiopt), run with and without
 * LD_PRELOAD by tests/python/test_lifetimes.py: one case a run, or a list of them in one run (each
 * prints its line as it ends).
 *
 *   plain_lifetimes CASE[,CASE...] [COUNT]
 *
 * Cases:
 *   op         a user op freed between start and wait, while another op (likely the same handle
 *              again) is created and used by collectives that start and complete in between;
 *              nonblocking and persistent (restarted many times with new contents)
 *   type       the same for a derived datatype
 *   comm       the same for a communicator (MPI_Comm_free with collectives pending)
 *   fresh      a nonblocking collective as the first call on a new communicator, which is freed
 *              before the wait; two such communicators at once, started in opposite orders on
 *              even and odd ranks (issue 37: Open MPI crashed in its libnbc)
 *   persistent persistent requests restarted many times with new contents, and freed while
 *              active
 *   errors     every bad argument under MPI_ERRORS_RETURN and under a user error handler (which
 *              must be called once per bad call), for the blocking, nonblocking and persistent
 *              allreduce and reduce
 *   threads    MPI_THREAD_MULTIPLE, each thread with its own communicator, blocking and
 *              nonblocking collectives at once: allreduce and reduce, and every fifth round the
 *              scans and reduce-scatters
 *   idup       MPI_Comm_idup's interleaved with MPI_Iallreduce, waited in one MPI_Waitall, and
 *              started in opposite orders on different ranks (MPICH's comm_idup_iallreduce shape)
 *   order      vendor and mpiopt nonblocking collectives in flight together, completed in
 *              reverse order, with blocking point-to-point in between
 *
 * Prints "lifetimes CASE: N checks, M failures" on rank 0 for each case; exits 1 on any failure. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPI-4's persistent collectives; Open MPI 4.1 has them as MPIX_ (its pcollreq extension), and
 * Open MPI 5.0, which says MPI 3.1, as MPI_ (CMake's check: MPIOPT_HAVE_PERSISTENT_COLL) */
#if MPI_VERSION < 4 && defined(OMPI_MAJOR_VERSION) && !defined(MPIOPT_HAVE_PERSISTENT_COLL)
#include <mpi-ext.h>
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Reduce_init MPIX_Reduce_init
#endif

static int rank, size, checks, failures;

#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        checks++;                                                                \
        if (!(cond)) {                                                           \
            failures++;                                                          \
            if (failures < 20) {                                                 \
                fprintf(stderr, "rank %d: line %d: ", rank, __LINE__);           \
                fprintf(stderr, __VA_ARGS__);                                    \
                fprintf(stderr, "\n");                                           \
            }                                                                    \
        }                                                                        \
    } while (0)

/* ---- ops: a sum, and a different op that may take the freed one's handle ---- */
static void int_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int n = *len, mult = 1;
    if (*type != MPI_INT) {     /* a contiguous type of ints */
        int s;
        MPI_Type_size(*type, &s);
        mult = s / (int)sizeof(int);
    }
    for (int i = 0; i < n * mult; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void int_max_plus_1000(void *in, void *inout, int *len, MPI_Datatype *type)
{
    for (int i = 0; i < *len; i++) {
        int a = ((int *)in)[i], b = ((int *)inout)[i];
        ((int *)inout)[i] = (a > b ? a : b) + 1000;
    }
}

/* value of element i on rank r in round k */
static int value(int r, int i, int k)
{
    return (r + 1) * 3 + i % 7 + k;
}

static int sum_of(int i, int k)
{
    int s = 0;
    for (int r = 0; r < size; r++)
        s += value(r, i, k);
    return s;
}

static void fill(int *buf, int n, int k)
{
    for (int i = 0; i < n; i++)
        buf[i] = value(rank, i, k);
}

static void check_sum(const int *buf, int n, int k, const char *what)
{
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
        if (buf[i] != sum_of(i, k))
            bad = i;
    CHECK(bad < 0, "%s round %d: [%d] = %d, expected %d", what, k, bad,
          bad >= 0 ? buf[bad] : 0, bad >= 0 ? sum_of(bad, k) : 0);
}

/* collectives that start and complete while something is pending, with the new object */
static void traffic(MPI_Comm comm, MPI_Op op, MPI_Datatype type, int n)
{
    int *a = malloc(sizeof(int) * (size_t)n * 4), *b = malloc(sizeof(int) * (size_t)n * 4);
    for (int i = 0; i < n * 4; i++)
        a[i] = rank + i;
    MPI_Allreduce(a, b, n, type, op, comm);
    MPI_Request r;
    MPI_Iallreduce(a, b, n, type, op, comm, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Barrier(comm);
    free(a);
    free(b);
}

static void case_op(int n)
{
    int *in = malloc(sizeof(int) * (size_t)n), *out1 = malloc(sizeof(int) * (size_t)n),
        *out2 = malloc(sizeof(int) * (size_t)n), *out3 = malloc(sizeof(int) * (size_t)n);
    for (int round = 0; round < 3; round++) {
        MPI_Op op, other;
        MPI_Request req[3];
        MPI_Op_create(int_sum, 1, &op);
        fill(in, n, round);
        MPI_Iallreduce(in, out1, n, MPI_INT, op, MPI_COMM_WORLD, &req[0]);
        MPI_Ireduce(in, out2, n, MPI_INT, op, size - 1, MPI_COMM_WORLD, &req[1]);
        MPI_Allreduce_init(in, out3, n, MPI_INT, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req[2]);
        MPI_Op_free(&op);
        CHECK(op == MPI_OP_NULL, "MPI_Op_free left the handle set");
        MPI_Op_create(int_max_plus_1000, 1, &other);     /* may reuse the freed handle */
        traffic(MPI_COMM_WORLD, other, MPI_INT, n);
        MPI_Start(&req[2]);
        traffic(MPI_COMM_WORLD, other, MPI_INT, n);
        MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
        check_sum(out1, n, round, "iallreduce with a freed op");
        if (rank == size - 1)
            check_sum(out2, n, round, "ireduce with a freed op");
        check_sum(out3, n, round, "allreduce_init with a freed op");
        for (int k = 1; k < 20; k++) {      /* restarted with new contents */
            fill(in, n, round + k);
            MPI_Start(&req[2]);
            MPI_Wait(&req[2], MPI_STATUS_IGNORE);
            check_sum(out3, n, round + k, "allreduce_init restarted, op freed");
        }
        MPI_Request_free(&req[2]);
        MPI_Op_free(&other);
    }
    free(in);
    free(out1);
    free(out2);
    free(out3);
}

static void case_type(int n)
{
    int *in = malloc(sizeof(int) * 2 * (size_t)n), *out1 = malloc(sizeof(int) * 2 * (size_t)n),
        *out2 = malloc(sizeof(int) * 2 * (size_t)n);
    MPI_Op sum;     /* predefined ops take predefined types only */
    MPI_Op_create(int_sum, 1, &sum);
    for (int round = 0; round < 3; round++) {
        MPI_Datatype pair, triple;
        MPI_Request req[2];
        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        fill(in, 2 * n, round);
        MPI_Iallreduce(in, out1, n, pair, sum, MPI_COMM_WORLD, &req[0]);
        MPI_Reduce_init(in, out2, n, pair, sum, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
        MPI_Type_free(&pair);
        CHECK(pair == MPI_DATATYPE_NULL, "MPI_Type_free left the handle set");
        MPI_Type_contiguous(3, MPI_INT, &triple);       /* may reuse the freed handle */
        MPI_Type_commit(&triple);
        traffic(MPI_COMM_WORLD, sum, triple, n);
        for (int k = 0; k < 10; k++) {
            if (k > 0)
                fill(in, 2 * n, round + k);
            MPI_Start(&req[1]);
            traffic(MPI_COMM_WORLD, sum, triple, n);
            MPI_Wait(&req[1], MPI_STATUS_IGNORE);
            if (rank == 0)
                check_sum(out2, 2 * n, round + k, "reduce_init with a freed type");
            if (k == 0) {
                MPI_Wait(&req[0], MPI_STATUS_IGNORE);
                check_sum(out1, 2 * n, round, "iallreduce with a freed type");
            }
        }
        MPI_Request_free(&req[1]);
        MPI_Type_free(&triple);
    }
    MPI_Op_free(&sum);
    free(in);
    free(out1);
    free(out2);
}

static void case_comm(int n)
{
    int *in = malloc(sizeof(int) * (size_t)n), *out1 = malloc(sizeof(int) * (size_t)n),
        *out2 = malloc(sizeof(int) * (size_t)n), *out3 = malloc(sizeof(int) * (size_t)n);
    for (int round = 0; round < 3; round++) {
        MPI_Comm dup, other;
        MPI_Request req[3];
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Allreduce(in, out1, n, MPI_INT, MPI_SUM, dup);  /* the dup gets its private one */
        fill(in, n, round);
        MPI_Iallreduce(in, out1, n, MPI_INT, MPI_SUM, dup, &req[0]);
        MPI_Ireduce(in, out2, n, MPI_INT, MPI_SUM, 0, dup, &req[1]);
        MPI_Allreduce_init(in, out3, n, MPI_INT, MPI_SUM, dup, MPI_INFO_NULL, &req[2]);
        MPI_Comm_free(&dup);
        CHECK(dup == MPI_COMM_NULL, "MPI_Comm_free left the handle set");
        MPI_Comm_dup(MPI_COMM_WORLD, &other);           /* may reuse the freed handles */
        traffic(other, MPI_SUM, MPI_INT, n);
        MPI_Start(&req[2]);
        traffic(other, MPI_SUM, MPI_INT, n);
        MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
        check_sum(out1, n, round, "iallreduce on a freed communicator");
        if (rank == 0)
            check_sum(out2, n, round, "ireduce on a freed communicator");
        check_sum(out3, n, round, "allreduce_init on a freed communicator");
        for (int k = 1; k < 10; k++) {
            fill(in, n, round + k);
            MPI_Start(&req[2]);
            MPI_Wait(&req[2], MPI_STATUS_IGNORE);
            check_sum(out3, n, round + k, "allreduce_init restarted, communicator freed");
        }
        MPI_Request_free(&req[2]);
        MPI_Comm_free(&other);
    }
    free(in);
    free(out1);
    free(out2);
    free(out3);
}

static void case_fresh(int n)
{
    int *in = malloc(sizeof(int) * (size_t)n), *out[3];
    for (int i = 0; i < 3; i++)
        out[i] = malloc(sizeof(int) * (size_t)n);
    for (int round = 0; round < 4; round++) {
        MPI_Comm a, b, other;
        MPI_Request req[3];
        fill(in, n, round);
        MPI_Comm_dup(MPI_COMM_WORLD, &a);
        MPI_Iallreduce(in, out[0], n, MPI_INT, MPI_SUM, a, &req[0]);
        MPI_Comm_free(&a);
        MPI_Comm_dup(MPI_COMM_WORLD, &other);           /* may reuse the freed handle */
        traffic(other, MPI_SUM, MPI_INT, n);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        check_sum(out[0], n, round, "iallreduce first on a communicator freed before the wait");
        /* two first calls at once, in opposite orders on even and odd ranks (legal: they are on
         * different communicators) */
        MPI_Comm_dup(MPI_COMM_WORLD, &a);
        MPI_Comm_dup(MPI_COMM_WORLD, &b);
        if (rank % 2 == 0) {
            MPI_Iallreduce(in, out[1], n, MPI_INT, MPI_SUM, a, &req[1]);
            MPI_Ireduce(in, out[2], n, MPI_INT, MPI_SUM, 0, b, &req[2]);
        } else {
            MPI_Ireduce(in, out[2], n, MPI_INT, MPI_SUM, 0, b, &req[2]);
            MPI_Iallreduce(in, out[1], n, MPI_INT, MPI_SUM, a, &req[1]);
        }
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
        traffic(other, MPI_SUM, MPI_INT, n);
        MPI_Waitall(2, &req[1], MPI_STATUSES_IGNORE);
        check_sum(out[1], n, round, "iallreduce first, started in another order on other ranks");
        if (rank == 0)
            check_sum(out[2], n, round, "ireduce first, started in another order on other ranks");
        MPI_Comm_free(&other);
    }
    free(in);
    for (int i = 0; i < 3; i++)
        free(out[i]);
}

static void case_persistent(int n)
{
    int *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n),
        *out2 = malloc(sizeof(int) * (size_t)n);
    MPI_Request req[2];
    MPI_Allreduce_init(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPI_Reduce_init(in, out2, n, MPI_INT, MPI_SUM, size / 2, MPI_COMM_WORLD, MPI_INFO_NULL,
                    &req[1]);
    for (int k = 0; k < 200; k++) {
        fill(in, n, k);
        MPI_Startall(2, req);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        check_sum(out, n, k, "allreduce_init");
        if (rank == size / 2)
            check_sum(out2, n, k, "reduce_init");
    }
    /* freed while active: it completes on its own; a barrier and more collectives follow */
    MPI_Start(&req[0]);
    MPI_Request_free(&req[0]);
    CHECK(req[0] == MPI_REQUEST_NULL, "MPI_Request_free left the handle set");
    traffic(MPI_COMM_WORLD, MPI_SUM, MPI_INT, n);
    MPI_Request_free(&req[1]);
    /* one started and freed just before MPI_Finalize: drained there */
    MPI_Allreduce_init(in, out2, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
    MPI_Start(&req[1]);
    MPI_Request_free(&req[1]);
    free(in);
    free(out);
    /* out2 stays allocated: the last request may write it until MPI_Finalize */
}

/* ---- errors ---- */
static int handler_calls, handler_last;

static void count_handler(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_last = *code;
}

static int class_of(int code)
{
    int c = code;
    MPI_Error_class(code, &c);
    return c;
}

typedef struct {
    const char *what;
    int count, root, expected;
    MPI_Datatype type;
    MPI_Op op;
} bad_call;

/* kind: 0 allreduce, 1 reduce, 2 iallreduce, 3 ireduce, 4 allreduce_init, 5 reduce_init */
static int call(int kind, const bad_call *b, MPI_Comm comm, int *in, int *out)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc;
    switch (kind) {
    case 0: return MPI_Allreduce(in, out, b->count, b->type, b->op, comm);
    case 1: return MPI_Reduce(in, out, b->count, b->type, b->op, b->root, comm);
    case 2: rc = MPI_Iallreduce(in, out, b->count, b->type, b->op, comm, &req); break;
    case 3: rc = MPI_Ireduce(in, out, b->count, b->type, b->op, b->root, comm, &req); break;
    case 4:
        rc = MPI_Allreduce_init(in, out, b->count, b->type, b->op, comm, MPI_INFO_NULL, &req);
        break;
    default:
        rc = MPI_Reduce_init(in, out, b->count, b->type, b->op, b->root, comm, MPI_INFO_NULL,
                             &req);
        break;
    }
    if (rc == MPI_SUCCESS && req != MPI_REQUEST_NULL) {     /* should not happen: tidy up */
        MPI_Request_free(&req);
    }
    return rc;
}

static void case_errors(int n)
{
    static const char *const kinds[] = {"MPI_Allreduce", "MPI_Reduce", "MPI_Iallreduce",
                                        "MPI_Ireduce", "MPI_Allreduce_init", "MPI_Reduce_init"};
    int in[8] = {0}, out[8] = {0};
    bad_call bad[] = {
        {"negative count", -1, 0, MPI_ERR_COUNT, MPI_INT, MPI_SUM},
        {"null datatype", 2, 0, MPI_ERR_TYPE, MPI_DATATYPE_NULL, MPI_SUM},
        {"null op", 2, 0, MPI_ERR_OP, MPI_INT, MPI_OP_NULL},
        {"root = size", 2, size, MPI_ERR_ROOT, MPI_INT, MPI_SUM},
        {"root = -5", 2, -5, MPI_ERR_ROOT, MPI_INT, MPI_SUM},
    };
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Allreduce(in, out, 2, MPI_INT, MPI_SUM, comm);  /* planned and cached once, good */
    MPI_Errhandler counting;
    MPI_Comm_create_errhandler(count_handler, &counting);
    for (int with_handler = 0; with_handler < 2; with_handler++) {
        MPI_Comm_set_errhandler(comm, with_handler ? counting : MPI_ERRORS_RETURN);
        for (int kind = 0; kind < 6; kind++)
            for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
                if (bad[b].expected == MPI_ERR_ROOT && kind % 2 == 0)
                    continue;   /* allreduce has no root */
                handler_calls = 0;
                handler_last = MPI_SUCCESS;
                int rc = call(kind, &bad[b], comm, in, out);
                CHECK(class_of(rc) == bad[b].expected, "%s, %s%s: class %d, expected %d",
                      kinds[kind], bad[b].what, with_handler ? " (user handler)" : "",
                      class_of(rc), bad[b].expected);
                if (with_handler)
                    CHECK(handler_calls == 1 && class_of(handler_last) == bad[b].expected,
                          "%s, %s: the handler was called %d times (last class %d)",
                          kinds[kind], bad[b].what, handler_calls, class_of(handler_last));
            }
        /* a good call still works after the bad ones, and the handler is not called */
        handler_calls = 0;
        fill(in, 2, 0);
        int rc = MPI_Allreduce(in, out, 2, MPI_INT, MPI_SUM, comm);
        CHECK(rc == MPI_SUCCESS && handler_calls == 0, "good call after bad ones: rc %d", rc);
        check_sum(out, 2, 0, "allreduce after bad calls");
    }
    /* MPI_COMM_NULL: the vendor raises it (on MPI_COMM_WORLD or MPI_COMM_SELF by its version) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    bad_call ok = {"", 2, 0, MPI_SUCCESS, MPI_INT, MPI_SUM};
    for (int kind = 0; kind < 6; kind++)
        CHECK(class_of(call(kind, &ok, MPI_COMM_NULL, in, out)) == MPI_ERR_COMM,
              "%s on MPI_COMM_NULL: not MPI_ERR_COMM", kinds[kind]);
    MPI_Errhandler_free(&counting);
    MPI_Comm_free(&comm);
    (void)n;
}

/* ---- threads ---- */
typedef struct {
    MPI_Comm comm;
    int n, id, failures;
} thread_arg;

/* the sum of value(r, i, k) over ranks [0, upto) */
static int prefix_of(int i, int k, int upto)
{
    int s = 0;
    for (int r = 0; r < upto; r++)
        s += value(r, i, k);
    return s;
}

/* The rest of the reduction family on the thread's communicator: scan, exscan and both
 * reduce-scatters (n elements a rank: the block form's counts), blocking and nonblocking. */
static int family_failures(const thread_arg *t, const int *in, int kk)
{
    int failures = 0, n = t->n / size > 0 ? t->n / size : 1;
    int *counts = malloc(sizeof(int) * (size_t)size);
    int *whole = malloc(sizeof(int) * (size_t)n * (size_t)size);
    for (int r = 0; r < size; r++)
        counts[r] = n;
    for (int j = 0; j < n * size; j++)
        whole[j] = value(rank, j, kk);
    for (int nonblocking = 0; nonblocking < 2; nonblocking++) {
        MPI_Request req[4];
        int *scan = malloc(sizeof(int) * (size_t)t->n);
        int *exscan = malloc(sizeof(int) * (size_t)t->n);
        int *block = malloc(sizeof(int) * (size_t)n), *vector = malloc(sizeof(int) * (size_t)n);
        if (nonblocking) {
            MPI_Iscan(in, scan, t->n, MPI_INT, MPI_SUM, t->comm, &req[0]);
            MPI_Iexscan(in, exscan, t->n, MPI_INT, MPI_SUM, t->comm, &req[1]);
            MPI_Ireduce_scatter_block(whole, block, n, MPI_INT, MPI_SUM, t->comm, &req[2]);
            MPI_Ireduce_scatter(whole, vector, counts, MPI_INT, MPI_SUM, t->comm, &req[3]);
            MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        } else {
            MPI_Scan(in, scan, t->n, MPI_INT, MPI_SUM, t->comm);
            MPI_Exscan(in, exscan, t->n, MPI_INT, MPI_SUM, t->comm);
            MPI_Reduce_scatter_block(whole, block, n, MPI_INT, MPI_SUM, t->comm);
            MPI_Reduce_scatter(whole, vector, counts, MPI_INT, MPI_SUM, t->comm);
        }
        for (int i = 0; i < t->n; i++) {
            failures += scan[i] != prefix_of(i, kk, rank + 1);
            failures += rank > 0 && exscan[i] != prefix_of(i, kk, rank);
        }
        for (int i = 0; i < n; i++) {
            failures += block[i] != sum_of(rank * n + i, kk);
            failures += vector[i] != sum_of(rank * n + i, kk);
        }
        free(scan), free(exscan), free(block), free(vector);
    }
    free(counts), free(whole);
    return failures;
}

static void *thread_main(void *p)
{
    thread_arg *t = p;
    int *in = malloc(sizeof(int) * (size_t)t->n), *out = malloc(sizeof(int) * (size_t)t->n),
        *out2 = malloc(sizeof(int) * (size_t)t->n);
    for (int k = 0; k < 50; k++) {
        int kk = k + 100 * t->id;
        fill(in, t->n, kk);
        MPI_Allreduce(in, out, t->n, MPI_INT, MPI_SUM, t->comm);
        for (int i = 0; i < t->n; i++)
            t->failures += out[i] != sum_of(i, kk);
        MPI_Reduce(in, out, t->n, MPI_INT, MPI_SUM, k % size, t->comm);
        if (rank == k % size)
            for (int i = 0; i < t->n; i++)
                t->failures += out[i] != sum_of(i, kk);
        MPI_Request req[2];
        MPI_Iallreduce(in, out, t->n, MPI_INT, MPI_SUM, t->comm, &req[0]);
        MPI_Ireduce(in, out2, t->n, MPI_INT, MPI_SUM, 0, t->comm, &req[1]);
        if (k % 2)
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        else {
            MPI_Wait(&req[1], MPI_STATUS_IGNORE);
            MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        }
        for (int i = 0; i < t->n; i++) {
            t->failures += out[i] != sum_of(i, kk);
            if (rank == 0)
                t->failures += out2[i] != sum_of(i, kk);
        }
        if (k % 5 == 0)
            t->failures += family_failures(t, in, kk);
    }
    free(in);
    free(out);
    free(out2);
    return NULL;
}

static void case_threads(int n, int provided)
{
    enum { THREADS = 3 };
    if (provided < MPI_THREAD_MULTIPLE) {
        CHECK(0, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
        return;
    }
    thread_arg t[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        t[i] = (thread_arg){MPI_COMM_NULL, n, i, 0};
        MPI_Comm_dup(MPI_COMM_WORLD, &t[i].comm);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, thread_main, &t[i]);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK(t[i].failures == 0, "thread %d: %d wrong elements", i, t[i].failures);
        MPI_Comm_free(&t[i].comm);
    }
}

/* ---- progress ---- */
static void case_idup(int n)
{
    enum { ITERS = 8 };
    int in = 1, out[ITERS];
    MPI_Comm comms[ITERS];
    MPI_Request req[2 * ITERS];
    for (int round = 0; round < 5; round++) {
        /* a fresh communicator: mpiopt makes its private one inside the first MPI_Iallreduce,
         * with the program's idups pending (a blocking MPI_Comm_dup there deadlocked) */
        MPI_Comm base, other;
        MPI_Comm_dup(MPI_COMM_WORLD, &base);
        MPI_Comm_dup(MPI_COMM_WORLD, &other);
        /* odd rounds: the ranks start them in opposite orders, so on two communicators (MPI
         * orders the collectives of one communicator alike on every rank) */
        MPI_Comm reduce_on = round % 2 ? other : base;
        for (int i = 0; i < ITERS; i++) {
            int swap = round % 2 && rank % 2;   /* opposite orders on different ranks */
            if (!swap)
                MPI_Comm_idup(base, &comms[i], &req[i]);
            MPI_Iallreduce(&in, &out[i], 1, MPI_INT, MPI_SUM, reduce_on, &req[ITERS + i]);
            if (swap)
                MPI_Comm_idup(base, &comms[i], &req[i]);
        }
        MPI_Waitall(2 * ITERS, req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < ITERS; i++) {
            CHECK(out[i] == size, "iallreduce beside idup: %d, expected %d", out[i], size);
            int x = rank, y = -1;
            MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, comms[i]);
            CHECK(y == size - 1, "the idup'ed communicator: max %d", y);
            MPI_Comm_free(&comms[i]);
        }
        MPI_Comm_free(&base);
        MPI_Comm_free(&other);
    }
    (void)n;
}

static void case_order(int n)
{
    int *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n),
        *out2 = malloc(sizeof(int) * (size_t)n), *bc = malloc(sizeof(int) * (size_t)n);
    for (int k = 0; k < 30; k++) {
        MPI_Request req[4];
        fill(in, n, k);
        for (int i = 0; i < n; i++)
            bc[i] = rank == 0 ? i + k : -1;
        MPI_Ibarrier(MPI_COMM_WORLD, &req[0]);
        MPI_Iallreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[1]);
        MPI_Ibcast(bc, n, MPI_INT, 0, MPI_COMM_WORLD, &req[2]);
        MPI_Ireduce(in, out2, n, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD, &req[3]);
        /* blocking point-to-point around the ring while they are pending */
        int token = rank, got = -1;
        MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 5, &got, 1, MPI_INT,
                     (rank + size - 1) % size, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(got == (rank + size - 1) % size, "sendrecv: %d", got);
        for (int i = 3; i >= 0; i--) {
            if (k % 3 == 0)
                MPI_Wait(&req[i], MPI_STATUS_IGNORE);
            else {
                int flag = 0;
                while (!flag)
                    MPI_Test(&req[i], &flag, MPI_STATUS_IGNORE);
            }
        }
        check_sum(out, n, k, "iallreduce among vendor collectives");
        if (rank == size - 1)
            check_sum(out2, n, k, "ireduce among vendor collectives");
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad += bc[i] != i + k;
        CHECK(bad == 0, "ibcast: %d wrong", bad);
    }
    free(in);
    free(out);
    free(out2);
    free(bc);
}

/* one case by name; 0 where there is no such case */
static int run_case(const char *which, int n, int provided)
{
    if (!strcmp(which, "op"))
        case_op(n);
    else if (!strcmp(which, "type"))
        case_type(n);
    else if (!strcmp(which, "comm"))
        case_comm(n);
    else if (!strcmp(which, "fresh"))
        case_fresh(n);
    else if (!strcmp(which, "persistent"))
        case_persistent(n);
    else if (!strcmp(which, "errors"))
        case_errors(n);
    else if (!strcmp(which, "threads"))
        case_threads(n, provided);
    else if (!strcmp(which, "idup"))
        case_idup(n);
    else if (!strcmp(which, "order"))
        case_order(n);
    else
        return 0;
    return 1;
}

int main(int argc, char **argv)
{
    /* CASES: one case, or several joined by commas, run one after another in this one job (a
     * launch costs more than most cases here); each prints its own line as it ends, so a crash
     * is in the case after the last line printed */
    char cases[256];
    snprintf(cases, sizeof cases, "%s", argc > 1 ? argv[1] : "");
    int n = argc > 2 ? atoi(argv[2]) : 100, provided = 0;
    if (strstr(cases, "threads"))
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int all_failures = 0, ran = 0;
    char *save = NULL;
    for (char *which = strtok_r(cases, ",", &save); which; which = strtok_r(NULL, ",", &save)) {
        checks = failures = 0;
        if (!run_case(which, n, provided)) {
            if (rank == 0)
                fprintf(stderr, "plain_lifetimes: no case '%s'\n", which);
            ran = -1;
            break;
        }
        int mine[2] = {checks, failures}, total[2];
        MPI_Reduce(mine, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("lifetimes %s: %d checks, %d failures\n", which, total[0], total[1]);
            fflush(stdout);
        }
        all_failures += failures;
        ran++;
    }
    if (ran <= 0) {
        if (rank == 0)
            fprintf(stderr, "usage: plain_lifetimes CASE[,CASE...] [COUNT]: cases op, type, comm, "
                            "fresh, persistent, errors, threads, idup, order\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Finalize();
    return all_failures ? 1 : 0;
}
