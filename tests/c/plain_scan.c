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
#include "reference_ops.h"

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
    reference_ops_init();
    int counts[] = {0, 1, 7, 1001, max_count};
#ifdef SCAN_INIT
    int have_persistent = 1;
#else
    int have_persistent = 0;
#endif
    for (int exclusive = 0; exclusive < 2; exclusive++)
        run_cases(check, exclusive, have_persistent, 0, counts);
    /* bad arguments come back through the communicator's handler with the standard's class */
    MPI_Comm errs;
    MPI_Comm_dup(MPI_COMM_WORLD, &errs);
    MPI_Comm_set_errhandler(errs, MPI_ERRORS_RETURN);
    int one = 1, out;
    check_error_class(MPI_Scan(&one, &out, -1, MPI_INT, MPI_SUM, errs), MPI_ERR_COUNT,
                      "scan count -1");
    check_error_class(MPI_Exscan(&one, &out, 1, MPI_INT, MPI_OP_NULL, errs), MPI_ERR_OP,
                      "exscan MPI_OP_NULL");
    check_error_class(MPI_Scan(&one, &out, 1, MPI_DATATYPE_NULL, MPI_SUM, errs), MPI_ERR_TYPE,
                      "scan MPI_DATATYPE_NULL");
    MPI_Comm_free(&errs);
    print_checks();
    MPI_Op_free(&ops[MATMUL]);
    MPI_Finalize();
    return 0;
}
