/* MPI_Reduce_scatter_block and MPI_Reduce_scatter against a rank-order reference, in a plain MPI
 * program (run with and without the drop-in): blocking, nonblocking (waited, and tested in a
 * loop) and persistent (started twice, with new contents the second time); every predefined op
 * on integer and floating types, unsigned char and short sums that wrap, a non-commutative user
 * op (reference_ops.h), equal blocks and uneven ones with empty blocks among them, MPI_IN_PLACE,
 * buffers one byte off their alignment; and the error classes of bad arguments under
 * MPI_ERRORS_RETURN.
 *
 * usage: test-plain_reduce_scatter [max_count [few]]; `few`: int, unsigned char and double only
 * (for many ranks on few cores, where each call costs context switches, not bytes); prints one "FAIL …" line a wrong case and, on
 * rank 0, "N checks, M failures". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reference_ops.h"

#if MPI_VERSION >= 4 || defined(MPIOPT_HAVE_PERSISTENT_COLL)
#define RSB_INIT MPI_Reduce_scatter_block_init
#define RS_INIT MPI_Reduce_scatter_init
#elif defined(OMPI_MAJOR_VERSION)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define RSB_INIT MPIX_Reduce_scatter_block_init
#define RS_INIT MPIX_Reduce_scatter_init
#endif
#endif

/* the matrix product on whole matrices: its elements are matrices (reference_ops.h) */
static MPI_Datatype matrix;
static MPI_Op matrix_product;

/* Rank r's block for a base count n: n everywhere (block form), or uneven: every third rank
 * empty, the others n plus a few (whole matrices for the user op: `unit` elements). */
static int block_count(int block_form, int n, int r, int unit)
{
    if (block_form)
        return n;
    return r % 3 == 1 ? 0 : (n + (r % 4) * unit) / unit * unit;
}

/* One case: every rank's block against the reference. */
static void check(int block_form, int form, int op, const type_case *t, int n, int in_place)
{
    int unit = op == MATMUL ? 4 : 1, *counts = malloc(sizeof(int) * (size_t)size), lo = 0, total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = block_count(block_form, n, r, unit);
        if (r < rank)
            lo += counts[r];
        total += counts[r];
    }
    int mine_n = counts[rank];
    size_t bytes = (size_t)total * t->size, block_bytes = (size_t)mine_n * t->size;
    char *send_raw = malloc(bytes + 1), *recv_raw = malloc(bytes + 1), *ref = malloc(bytes + 1);
    char *v = malloc(bytes + 1);
    char *send = send_raw + 1, *recv = recv_raw + 1;  /* one byte off their alignment */
    static MPI_Request req = MPI_REQUEST_NULL;
    /* the matrix product counts whole matrices (kept until a persistent request is freed) */
    MPI_Datatype type = op == MATMUL ? matrix : t->type;
    MPI_Op mpi_op = op == MATMUL ? matrix_product : ops[op];
    int n_call = n / unit, *counts_call = malloc(sizeof(int) * (size_t)size);
    for (int r = 0; r < size; r++)
        counts_call[r] = counts[r] / unit;
    for (int round = 0; round < (form == PERSISTENT ? 2 : 1); round++) {
        int shift = round * 3;  /* a persistent call's second start: new contents */
        /* ref = block of (rank 0's op rank 1's op …), one rank at a time */
        for (int r = 0; r < size; r++) {
            if (op == MATMUL) fill_matrices((int *)v, r + shift, total);
            else fill(v, op, r + shift, total, t);
            if (r == rank)
                memcpy(in_place ? recv : send, v, bytes);
            char *b = v + (size_t)lo * t->size;
            if (r > 0 && op == MATMUL) { int len = mine_n; matmul(ref, b, &len, NULL); }
            else if (r > 0) t->fold(op, ref, b, mine_n);
            memcpy(ref, b, block_bytes);
        }
        if (!in_place) memset(recv, 0x5a, block_bytes);
        const void *sbuf = in_place ? MPI_IN_PLACE : send;
        int rc = MPI_SUCCESS;
        if (form == BLOCKING)
            rc = block_form ? MPI_Reduce_scatter_block(sbuf, recv, n_call, type, mpi_op, MPI_COMM_WORLD)
                            : MPI_Reduce_scatter(sbuf, recv, counts_call, type, mpi_op, MPI_COMM_WORLD);
        else if (form == WAITED || form == TESTED) {
            rc = block_form ? MPI_Ireduce_scatter_block(sbuf, recv, n_call, type, mpi_op, MPI_COMM_WORLD, &req)
                            : MPI_Ireduce_scatter(sbuf, recv, counts_call, type, mpi_op, MPI_COMM_WORLD, &req);
            if (form == WAITED) MPI_Wait(&req, MPI_STATUS_IGNORE);
            else for (int done = 0; !done;) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        }
#ifdef RSB_INIT
        else {
            if (round == 0)
                rc = block_form ? RSB_INIT(sbuf, recv, n_call, type, mpi_op, MPI_COMM_WORLD, MPI_INFO_NULL, &req)
                                : RS_INIT(sbuf, recv, counts_call, type, mpi_op, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (round == 1) MPI_Request_free(&req);
        }
#endif
        checks++;
        if (rc != MPI_SUCCESS || memcmp(recv, ref, block_bytes) != 0) {
            failures++;
            size_t at = 0;
            while (at < block_bytes && recv[at] == ref[at]) at++;
            printf("FAIL rank %d %s %s %s %s n=%d%s round %d: rc %d, byte %zu differs\n", rank,
                   block_form ? "reduce_scatter_block" : "reduce_scatter", form_names[form],
                   op_names[op], t->name, n, in_place ? " in place" : "", round, rc, at);
        }
    }
    free(send_raw), free(recv_raw), free(ref), free(v), free(counts), free(counts_call);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int max_count = argc > 1 ? atoi(argv[1]) : 20001;
    reference_ops_init();
    MPI_Type_contiguous(4, MPI_INT, &matrix);
    MPI_Type_commit(&matrix);
    MPI_Op_create(matmul_matrices, 0, &matrix_product);
    int few = argc > 2 && !strcmp(argv[2], "few");
    int counts[] = {0, 1, 7, max_count / 3 | 1, max_count};
#ifdef RSB_INIT
    int have_persistent = 1;
#else
    int have_persistent = 0;
#endif
    for (int block_form = 1; block_form >= 0; block_form--)
        run_cases(check, block_form, have_persistent, few, counts);
    /* bad arguments come back through the communicator's handler with the standard's class */
    MPI_Comm errs;
    MPI_Comm_dup(MPI_COMM_WORLD, &errs);
    MPI_Comm_set_errhandler(errs, MPI_ERRORS_RETURN);
    int *one = calloc((size_t)size, sizeof(int)), *bad_counts = calloc((size_t)size, sizeof(int));
    int out[4];
    bad_counts[size - 1] = -1;
    check_error_class(MPI_Reduce_scatter_block(one, out, -1, MPI_INT, MPI_SUM, errs),
                      MPI_ERR_COUNT, "reduce_scatter_block count -1");
    check_error_class(MPI_Reduce_scatter(one, out, bad_counts, MPI_INT, MPI_SUM, errs),
                      MPI_ERR_COUNT, "reduce_scatter a count -1");
    check_error_class(MPI_Reduce_scatter_block(one, out, 1, MPI_INT, MPI_OP_NULL, errs),
                      MPI_ERR_OP, "reduce_scatter_block MPI_OP_NULL");
    check_error_class(MPI_Reduce_scatter_block(one, out, 1, MPI_DATATYPE_NULL, MPI_SUM, errs),
                      MPI_ERR_TYPE, "reduce_scatter_block MPI_DATATYPE_NULL");
    free(one), free(bad_counts);
    MPI_Comm_free(&errs);
    print_checks();
    MPI_Op_free(&ops[MATMUL]);
    MPI_Op_free(&matrix_product);
    MPI_Type_free(&matrix);
    MPI_Finalize();
    return 0;
}
