/* An unmodified MPI program for MPIOPT_REPORT (tests/python/test_report.py): reduction calls that
 * mpiopt takes and calls it must hand to the vendor, each for a reason the report names. Every
 * result is checked.
 *   plain_report            the calls below, MPI_THREAD_SINGLE
 *   plain_report multiple   the same under MPI_THREAD_MULTIPLE
 *   plain_report none       no reduction at all
 * Calls per rank: MPI_Allreduce 3 (int sum) + 2 (the checks' tally at the end) + 1 (a vector
 * type with a hole and a user op: datatype) + 1 (on an intercommunicator, p >= 2);
 * MPI_Iallreduce 2; MPI_Reduce 1; MPI_Reduce_local 1 (MPI_SUM) + 1 (a user-defined op). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int checks, failures;

static void check(int ok, const char *what)
{
    checks++;
    if (!ok) {
        failures++;
        fprintf(stderr, "plain_report: FAILED %s\n", what);
    }
}

static void max_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = a[i] > b[i] ? a[i] : b[i];
}

/* for one element of the vector type: ints 0 and 2 */
static void strided_sum_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        b[3 * i] += a[3 * i];
        b[3 * i + 2] += a[3 * i + 2];
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int provided, rank, p;
    if (!strcmp(mode, "multiple"))
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (!strcmp(mode, "none")) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            printf("plain_report: 0 checks, 0 failures\n");
        MPI_Finalize();
        return 0;
    }

    int in[4], out[4];
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 4; i++)
            in[i] = rank + i + k;
        MPI_Allreduce(in, out, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        check(out[3] == p * (p - 1) / 2 + p * (3 + k), "allreduce int sum");
    }

    /* ints 0 and 2 of 3: a derived type with a hole goes to the vendor whole (the vendors
     * define no predefined op on it: a user-defined op) */
    MPI_Datatype strided;
    MPI_Op strided_sum;
    MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    MPI_Op_create(strided_sum_op, 1, &strided_sum);
    int vin[3] = {rank, -1, 2 * rank}, vout[3] = {0, 7, 0};
    MPI_Allreduce(vin, vout, 1, strided, strided_sum, MPI_COMM_WORLD);
    check(vout[0] == p * (p - 1) / 2 && vout[2] == p * (p - 1) && vout[1] == 7, "vector type");
    MPI_Op_free(&strided_sum);
    MPI_Type_free(&strided);

    if (p >= 2) {
        MPI_Comm half, inter;
        int colour = rank < p / 2;
        MPI_Comm_split(MPI_COMM_WORLD, colour, rank, &half);
        /* the other group's leader in MPI_COMM_WORLD: rank 0 leads colour 1, rank p/2 colour 0 */
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, colour ? p / 2 : 0, 5, &inter);
        int one = 1, remote_size = 0, sum = 0;
        MPI_Comm_remote_size(inter, &remote_size);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter);
        check(sum == remote_size, "intercommunicator allreduce");
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }

    MPI_Request req;
    for (int k = 0; k < 2; k++) {
        int x = rank + k, y = -1;
        MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        check(y == p - 1 + k, "iallreduce max");
    }

    int r = rank, total = -1;
    MPI_Reduce(&r, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    check(rank != 0 || total == p * (p - 1) / 2, "reduce");

    int a[3] = {1, 5, 3}, b[3] = {4, 2, 6};
    MPI_Reduce_local(a, b, 3, MPI_INT, MPI_SUM);
    check(b[0] == 5 && b[1] == 7 && b[2] == 9, "reduce_local sum");
    MPI_Op user;
    MPI_Op_create(max_op, 1, &user);
    int c[3] = {9, 0, 9};
    MPI_Reduce_local(c, b, 3, MPI_INT, user);
    check(b[0] == 9 && b[1] == 7 && b[2] == 9, "reduce_local user op");
    MPI_Op_free(&user);

    int all_failures = 0, all_checks = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &all_checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("plain_report: %d checks, %d failures\n", all_checks, all_failures);
    MPI_Finalize();
    return all_failures != 0;
}
