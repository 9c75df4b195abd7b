/* The guard checker (issue 69): no collective of the reduction family writes where the standard
 * puts no result, or reads where it puts no input. Driven by tests/python/test_guards.py.
 *
 * Every buffer lies between two guard regions, and every byte the call may not write is poisoned
 * with a pattern of its own place: the guards, the holes between the elements of a strided
 * datatype, a reduce's receive buffer on the ranks that are not its root, and the part of an
 * in-place reduce-scatter's buffer past the rank's own block (which must still hold the caller's
 * input afterwards: the vendors leave it so and mpi4py's tests check it). Inputs must come back
 * unchanged. After each call every byte of both buffers is compared with what it must be, and
 * the first one that differs is reported with its place, the collective, its door (blocking,
 * nonblocking, persistent: started twice, with new inputs the second time) and the algorithm.
 * The results are checked too, against a reference folded here in rank order by plain loops.
 *
 * Each collective runs every algorithm that can be asked for it through the C API (an algorithm
 * that cannot take a call leaves it to auto, which is then checked again), in place and not, on
 * an int sum, a non-commutative product of 2x2 integer matrices (a contiguous datatype of 4
 * ints) and the same product on a strided type (that datatype resized to 20 bytes: a hole of 4
 * bytes after every element, which mpiopt hands to the vendor), at several counts, with buffers one byte off
 * their alignment every other call.
 *
 *   test-guard_check [--quick]      (--quick: counts 1 and 7 only)
 * Prints "guard_check: N checks, F failures" on rank 0; exit code 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpiopt.h"

enum { ALLREDUCE, REDUCE, SCAN, EXSCAN, RS_BLOCK, RS, NFAMILIES };
static const char *const family_names[NFAMILIES] = {
    "allreduce", "reduce", "scan", "exscan", "reduce_scatter_block", "reduce_scatter"};
enum { BLOCKING, NONBLOCKING, PERSISTENT, NDOORS };
static const char *const door_names[NDOORS] = {"blocking", "nonblocking", "persistent"};

#define GUARD 64    /* bytes of guard before and after every buffer */

typedef struct {
    const char *name;
    MPI_Datatype type;
    MPI_Op op;
    int ints;       /* ints of value per element */
    int stride;     /* ints per element in memory (more than `ints`: a hole after each) */
} value_kind;

static int rank, size, checks, failures, vendor_writes;
static value_kind kinds[3];

/* 2x2 matrix product, four ints an element, elements `extent` bytes apart (a hole after each in
 * the strided type): inout = in x inout (in: the lower ranks'). */
static void matrix_product(void *in, void *inout, int *len, MPI_Datatype *type)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(*type, &lb, &extent);
    size_t stride = (size_t)extent / sizeof(int);
    int *a = in, *b = inout;
    for (size_t k = 0; k < (size_t)*len * stride; k += stride) {
        int c0 = a[k] * b[k] + a[k + 1] * b[k + 2], c1 = a[k] * b[k + 1] + a[k + 1] * b[k + 3];
        int c2 = a[k + 2] * b[k] + a[k + 3] * b[k + 2], c3 = a[k + 2] * b[k + 1] + a[k + 3] * b[k + 3];
        b[k] = c0, b[k + 1] = c1, b[k + 2] = c2, b[k + 3] = c3;
    }
}

/* Rank r's value of element e, int j of it, in the call's repetition `rep`. Matrices with 1 on
 * the diagonal and small entries elsewhere, so that products of 17 stay small. */
static int value(const value_kind *k, int r, size_t e, int j, int rep)
{
    if (k->ints == 4)
        return j == 0 || j == 3 ? 1 : (int)((r + e + (size_t)j + (size_t)rep) % 3) - 1;
    return (int)(((size_t)r * 31 + e * 7 + (size_t)rep * 5) % 19) - 9;
}

/* acc = acc op (rank r's element e): the reference, lower ranks on the left. */
static void fold(const value_kind *k, int *acc, int r, size_t e, int rep)
{
    if (k->ints == 1) {
        acc[0] += value(k, r, e, 0, rep);
        return;
    }
    int b[4];
    for (int j = 0; j < 4; j++)
        b[j] = value(k, r, e, j, rep);
    int c0 = acc[0] * b[0] + acc[1] * b[2], c1 = acc[0] * b[1] + acc[1] * b[3];
    int c2 = acc[2] * b[0] + acc[3] * b[2], c3 = acc[2] * b[1] + acc[3] * b[3];
    acc[0] = c0, acc[1] = c1, acc[2] = c2, acc[3] = c3;
}

/* The fold of ranks [0, upto] (upto: the last rank included) of element e into out. */
static void reference(const value_kind *k, int upto, size_t e, int rep, int *out)
{
    for (int j = 0; j < k->ints; j++)
        out[j] = value(k, 0, e, j, rep);
    for (int r = 1; r <= upto; r++)
        fold(k, out, r, e, rep);
}

static unsigned char poison(size_t i) { return (unsigned char)(0xA5 + i * 29); }

/* A buffer of `elements` elements of a kind between guards, `mis` bytes off its alignment; its
 * image is what every byte must be after the call, `free_byte` marks those that may be anything
 * (an undefined result); `what` names each byte's place for a failure's message. */
typedef struct {
    unsigned char *mem, *image, *free_byte;
    char *data;
    size_t bytes;       /* of the data, holes included */
    size_t elements;
} guarded;

static void guarded_make(guarded *g, const value_kind *k, size_t elements, int mis)
{
    g->elements = elements;
    g->bytes = elements * (size_t)k->stride * sizeof(int);
    size_t all = 2 * GUARD + g->bytes + 8;
    g->mem = malloc(all);
    g->image = malloc(all);
    g->free_byte = calloc(all, 1);
    for (size_t i = 0; i < all; i++)
        g->mem[i] = g->image[i] = poison(i);
    g->data = (char *)g->mem + GUARD + mis;
}

static void guarded_free(guarded *g)
{
    free(g->mem);
    free(g->image);
    free(g->free_byte);
}

static size_t offset_of(const guarded *g) { return (size_t)((unsigned char *)g->data - g->mem); }

/* Element e's ints set to v (in memory and in the image, or in the image alone). */
static void put(guarded *g, const value_kind *k, size_t e, const int *v, int image_only)
{
    size_t at = offset_of(g) + e * (size_t)k->stride * sizeof(int);
    if (!image_only)
        memcpy(g->mem + at, v, (size_t)k->ints * sizeof(int));
    memcpy(g->image + at, v, (size_t)k->ints * sizeof(int));
}

static void input(guarded *g, const value_kind *k, size_t first, size_t n, int rep)
{
    int v[4];
    for (size_t e = 0; e < n; e++) {
        for (int j = 0; j < k->ints; j++)
            v[j] = value(k, rank, first + e, j, rep);
        put(g, k, e, v, 0);
    }
}

static void mark_free(guarded *g, const value_kind *k, size_t e)
{
    size_t at = offset_of(g) + e * (size_t)k->stride * sizeof(int);
    memset(g->free_byte + at, 1, (size_t)k->ints * sizeof(int));
}

static const char *call_text;   /* what the running call is, for messages */

/* Every byte of g against its image; the first that differs is a failure. */
static void compare(const guarded *g, const char *name, const value_kind *k, size_t result_lo,
                    size_t result_n)
{
    size_t all = 2 * GUARD + g->bytes + 8, start = offset_of(g), elem = (size_t)k->stride * 4;
    checks++;
    for (size_t i = 0; i < all; i++) {
        if (g->free_byte[i] || g->mem[i] == g->image[i])
            continue;
        char place[160];
        if (i < start)
            snprintf(place, sizeof place, "guard byte %zu before it", start - i);
        else if (i >= start + g->bytes)
            snprintf(place, sizeof place, "guard byte %zu after it", i - start - g->bytes);
        else if ((i - start) % elem >= (size_t)k->ints * 4)
            snprintf(place, sizeof place, "the hole after element %zu", (i - start) / elem);
        else if ((i - start) / elem >= result_lo && (i - start) / elem < result_lo + result_n)
            snprintf(place, sizeof place, "element %zu, a result: wrong value",
                     (i - start) / elem);
        else
            snprintf(place, sizeof place, "element %zu, where no result goes",
                     (i - start) / elem);
        printf("guard_check: FAIL rank %d of %d: %s: %s written at %s (byte %zu: %d, not %d)\n",
               rank, size, call_text, name, place, i - start, g->mem[i], g->image[i]);
        failures++;
        return;
    }
}

/* The counts of a reduce-scatter's blocks: all n (the block form), or uneven with empty ones. */
static int block_count(int family, int n, int r)
{
    return family == RS_BLOCK ? n : r % 3 == 1 ? 0 : n + r % 4;
}

/* The vendor's own in-place reduce-scatter on the same input: the bytes past the result that it
 * writes (Open MPI 4.1's, for a non-commutative op: the whole reduction on rank 0) are the
 * vendor's behaviour, which a call mpiopt hands to it keeps; marked free in `recv`'s image. */
static void allow_what_the_vendor_writes(guarded *recv, const value_kind *k, int family, int n,
                                         const int *counts, size_t total, size_t result_n)
{
    guarded control;
    guarded_make(&control, k, total, recv->data - (char *)recv->mem - GUARD);
    input(&control, k, 0, total, 0);
    if (family == RS_BLOCK)
        PMPI_Reduce_scatter_block(MPI_IN_PLACE, control.data, n, k->type, k->op, MPI_COMM_WORLD);
    else
        PMPI_Reduce_scatter(MPI_IN_PLACE, control.data, counts, k->type, k->op, MPI_COMM_WORLD);
    size_t from = offset_of(&control) + result_n * (size_t)k->stride * sizeof(int);
    int wrote = 0;
    for (size_t i = from; i < offset_of(&control) + control.bytes; i++)
        if (control.mem[i] != control.image[i])
            recv->free_byte[i] = 1, wrote = 1;
    vendor_writes += wrote;
    guarded_free(&control);
}

/* One call (or, persistent, two starts) of a family, checked. */
static void check_call(int family, int door, mpiopt_algorithm alg, int in_place,
                       const value_kind *k, int n, int mis)
{
    char text[200];
    snprintf(text, sizeof text, "%s (%s) algorithm %s%s, %s, count %d%s", family_names[family],
             door_names[door], mpiopt_algorithm_name(alg), in_place ? ", in place" : "",
             k->name, n, mis ? ", misaligned" : "");
    call_text = text;
    int root = (n + (int)alg) % size;
    int *counts = malloc(sizeof(int) * (size_t)size);
    size_t total = 0, lo = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = family >= RS_BLOCK ? block_count(family, n, r) : n;
        if (r < rank)
            lo += (size_t)counts[r];
        total += (size_t)counts[r];
    }
    size_t send_n = family >= RS_BLOCK ? total : (size_t)n;
    size_t recv_n = family >= RS_BLOCK ? (size_t)counts[rank] : (size_t)n;
    int is_root = family != REDUCE || rank == root;
    in_place = in_place && is_root;         /* a reduce: MPI_IN_PLACE at its root only */
    guarded send, recv;
    guarded_make(&send, k, send_n, mis);
    guarded_make(&recv, k, in_place ? send_n : recv_n, !mis);
    if (in_place && family >= RS_BLOCK)
        allow_what_the_vendor_writes(&recv, k, family, n, counts, total, recv_n);
    MPI_Request req = MPI_REQUEST_NULL;
    int reps = door == PERSISTENT ? 2 : 1, rc = MPI_SUCCESS;
    for (int rep = 0; rep < reps && rc == MPI_SUCCESS; rep++) {
        /* the inputs; the result's place in the image (input there in place) */
        guarded *in = in_place ? &recv : &send;
        input(in, k, 0, send_n, rep);
        /* the result where the standard puts one (elements [0, recv_n) of recv) */
        size_t result_n = is_root ? recv_n : 0;
        int v[4];
        for (size_t e = 0; e < result_n; e++) {
            if (family == EXSCAN && rank == 0) {
                mark_free(&recv, k, e);     /* undefined on rank 0 */
                continue;
            }
            int upto = family == SCAN ? rank : family == EXSCAN ? rank - 1 : size - 1;
            reference(k, upto, family >= RS_BLOCK ? lo + e : e, rep, v);
            put(&recv, k, e, v, 1);
        }
        const void *sbuf = in_place ? MPI_IN_PLACE : send.data;
        void *rbuf = recv.data;
        if (door == BLOCKING) {
            switch (family) {
            case ALLREDUCE: rc = mpiopt_allreduce(sbuf, rbuf, n, k->type, k->op, MPI_COMM_WORLD, alg); break;
            case REDUCE: rc = mpiopt_reduce(sbuf, rbuf, n, k->type, k->op, root, MPI_COMM_WORLD, alg); break;
            case SCAN: rc = mpiopt_scan(sbuf, rbuf, n, k->type, k->op, MPI_COMM_WORLD, alg); break;
            case EXSCAN: rc = mpiopt_exscan(sbuf, rbuf, n, k->type, k->op, MPI_COMM_WORLD, alg); break;
            case RS_BLOCK: rc = mpiopt_reduce_scatter_block(sbuf, rbuf, n, k->type, k->op, MPI_COMM_WORLD, alg); break;
            default: rc = mpiopt_reduce_scatter(sbuf, rbuf, counts, k->type, k->op, MPI_COMM_WORLD, alg);
            }
        } else if (door == NONBLOCKING || rep == 0) {
            int nb = door == NONBLOCKING;
            MPI_Comm w = MPI_COMM_WORLD;
            MPI_Info i = MPI_INFO_NULL;
            switch (family) {
            case ALLREDUCE: rc = nb ? mpiopt_iallreduce(sbuf, rbuf, n, k->type, k->op, w, alg, &req) : mpiopt_allreduce_init(sbuf, rbuf, n, k->type, k->op, w, i, alg, &req); break;
            case REDUCE: rc = nb ? mpiopt_ireduce(sbuf, rbuf, n, k->type, k->op, root, w, alg, &req) : mpiopt_reduce_init(sbuf, rbuf, n, k->type, k->op, root, w, i, alg, &req); break;
            case SCAN: rc = nb ? mpiopt_iscan(sbuf, rbuf, n, k->type, k->op, w, alg, &req) : mpiopt_scan_init(sbuf, rbuf, n, k->type, k->op, w, i, alg, &req); break;
            case EXSCAN: rc = nb ? mpiopt_iexscan(sbuf, rbuf, n, k->type, k->op, w, alg, &req) : mpiopt_exscan_init(sbuf, rbuf, n, k->type, k->op, w, i, alg, &req); break;
            case RS_BLOCK: rc = nb ? mpiopt_ireduce_scatter_block(sbuf, rbuf, n, k->type, k->op, w, alg, &req) : mpiopt_reduce_scatter_block_init(sbuf, rbuf, n, k->type, k->op, w, i, alg, &req); break;
            default: rc = nb ? mpiopt_ireduce_scatter(sbuf, rbuf, counts, k->type, k->op, w, alg, &req) : mpiopt_reduce_scatter_init(sbuf, rbuf, counts, k->type, k->op, w, i, alg, &req);
            }
        }
        if (rc == MPI_SUCCESS && door == PERSISTENT)
            rc = mpiopt_request_start(&req);
        if (rc == MPI_SUCCESS && door != BLOCKING)
            rc = mpiopt_request_wait(&req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            printf("guard_check: FAIL rank %d of %d: %s: error %d\n", rank, size, text, rc);
            failures++;
            break;
        }
        compare(&recv, "recvbuf", k, 0, result_n);
        if (!in_place)
            compare(&send, "sendbuf", k, 0, 0);
    }
    if (door == PERSISTENT && req != MPI_REQUEST_NULL)
        mpiopt_request_free(&req);
    guarded_free(&send);
    guarded_free(&recv);
    free(counts);
}

/* The algorithms a family can be asked for (others leave the call to auto: not repeated). */
static int asks_for(int family, mpiopt_algorithm alg)
{
    if (family == ALLREDUCE || family == REDUCE)
        return 1;
    if (alg == MPIOPT_ALG_AUTO || alg == MPIOPT_ALG_VENDOR || alg == MPIOPT_ALG_SHARED_MEMORY)
        return 1;
    if (family == SCAN || family == EXSCAN)
        return alg == MPIOPT_ALG_RECURSIVE_DOUBLING;
    return alg == MPIOPT_ALG_RABENSEIFNER || alg == MPIOPT_ALG_RING || alg == MPIOPT_ALG_BINOMIAL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    MPI_Datatype matrix, strided;
    MPI_Type_contiguous(4, MPI_INT, &matrix);
    MPI_Type_commit(&matrix);
    MPI_Type_create_resized(matrix, 0, 5 * sizeof(int), &strided);
    MPI_Type_commit(&strided);
    MPI_Op product;
    MPI_Op_create(matrix_product, 0, &product);
    kinds[0] = (value_kind){"int sum", MPI_INT, MPI_SUM, 1, 1};
    kinds[1] = (value_kind){"matrix product", matrix, product, 4, 4};
    kinds[2] = (value_kind){"strided matrix product", strided, product, 4, 5};
    /* 1, odd 7 and 1001 (more than a small path's buffer), 4099 (a shared-memory reduce-scatter
     * in pieces), 17000 (the allreduce's single copy, 64 KiB up: int sums only) */
    const int counts[] = {1, 7, 1001, 4099, 17000};
    int ncounts = quick ? 2 : 5, calls = 0;
    for (int family = 0; family < NFAMILIES; family++)
        for (int a = 0; a < MPIOPT_ALG_COUNT; a++) {
            if (!asks_for(family, (mpiopt_algorithm)a))
                continue;
            for (int door = 0; door < NDOORS; door++)
                for (int in_place = 0; in_place < 2; in_place++)
                    for (int ki = 0; ki < 3; ki++)
                        for (int ci = 0; ci < ncounts; ci++) {
                            if (counts[ci] > 5000 && (ki != 0 || family >= RS_BLOCK))
                                continue;
#ifdef MPICH_VERSION
                            /* MPICH 4.0.2's own reduce-scatters (which take the strided type)
                             * write past their scratch with it: wrong results and a corrupt
                             * heap, the vendor alone */
                            if (ki == 2 && family >= RS_BLOCK)
                                continue;
#endif
                            check_call(family, door, (mpiopt_algorithm)a, in_place, &kinds[ki],
                                       counts[ci], calls++ % 2);
                        }
        }
    int local[3] = {checks, failures, vendor_writes}, all[3];
    MPI_Allreduce(local, all, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("guard_check: %d checks, %d failures\n"
               "guard_check: %d in-place reduce-scatters where the vendor alone writes past the "
               "result (those bytes not checked)\n", all[0], all[1], all[2]);
    MPI_Op_free(&product);
    MPI_Type_free(&matrix);
    MPI_Type_free(&strided);
    MPI_Finalize();
    return all[1] == 0 ? 0 : 1;
}
