/* MPI-4's large-count calls under the drop-in (issue 27): a plain MPI program (not linked with
 * mpiopt) calling MPI_Allreduce_c, MPI_Reduce_c, MPI_Reduce_local_c, MPI_Iallreduce_c,
 * MPI_Ireduce_c, MPI_Allreduce_init_c and MPI_Reduce_init_c with small counts (results exact; the
 * drop-in's MPIOPT_VERBOSE log shows which algorithm took them), and with `huge` a count above
 * 2^31 elements (MPI_UNSIGNED_CHAR, MPI_BOR, in place: 2 GiB a rank), which the drop-in hands to
 * the vendor's large-count call.
 *
 *   plain_large_count [huge]
 *
 * Prints "large_count: N checks, M failures" (or "large_count: not in this MPI"). */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, checks, failures;

static void check(int ok, const char *what)
{
    checks++;
    if (!ok) {
        failures++;
        fprintf(stderr, "rank %d: %s\n", rank, what);
    }
}

#if defined(MPI_VERSION) && MPI_VERSION >= 4
enum { N = 1001 };

static int is_sum(const double *x, int k)
{
    for (int i = 0; i < N; i++)
        if (x[i] != (double)size * (i + k) + size * (size - 1) / 2.0)
            return 0;
    return 1;
}

static void fill(double *x, int k)
{
    for (int i = 0; i < N; i++)
        x[i] = rank + i + k;
}

static void small_counts(void)
{
    double in[N], out[N], out2[N];
    MPI_Count n = N;
    MPI_Request req[2];

    fill(in, 0);
    MPI_Allreduce_c(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check(is_sum(out, 0), "MPI_Allreduce_c");
    fill(out, 1);
    MPI_Allreduce_c(MPI_IN_PLACE, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check(is_sum(out, 1), "MPI_Allreduce_c in place");
    fill(in, 2);
    MPI_Reduce_c(in, out, n, MPI_DOUBLE, MPI_SUM, size - 1, MPI_COMM_WORLD);
    check(rank != size - 1 || is_sum(out, 2), "MPI_Reduce_c");
    for (int i = 0; i < N; i++)
        out[i] = 1;
    MPI_Reduce_local_c(in, out, n, MPI_DOUBLE, MPI_SUM);
    check(out[N - 1] == in[N - 1] + 1 && out[0] == in[0] + 1, "MPI_Reduce_local_c");

    fill(in, 3);
    MPI_Iallreduce_c(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[0]);
    MPI_Ireduce_c(in, out2, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    check(is_sum(out, 3), "MPI_Iallreduce_c");
    check(rank != 0 || is_sum(out2, 3), "MPI_Ireduce_c");

    MPI_Allreduce_init_c(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPI_Reduce_init_c(in, out2, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                      &req[1]);
    for (int k = 4; k < 10; k++) {
        fill(in, k);
        MPI_Startall(2, req);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        check(is_sum(out, k), "MPI_Allreduce_init_c");
        check(rank != 0 || is_sum(out2, k), "MPI_Reduce_init_c");
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);

    /* a negative count: the standard's class, as for the int calls */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Allreduce_c(in, out, (MPI_Count)-5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), cls;
    MPI_Error_class(rc, &cls);
    check(cls == MPI_ERR_COUNT, "MPI_Allreduce_c with a negative count: not MPI_ERR_COUNT");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void huge_count(void)
{
    MPI_Count n = (MPI_Count)INT_MAX + 9;
    unsigned char *buf = malloc((size_t)n);
    if (!buf) {
        check(0, "no memory for the huge count");
        return;
    }
    memset(buf, 1u << (rank % 8), (size_t)n);
    int rc = MPI_Allreduce_c(MPI_IN_PLACE, buf, n, MPI_UNSIGNED_CHAR, MPI_BOR, MPI_COMM_WORLD);
    unsigned char all = 0;
    for (int r = 0; r < size; r++)
        all |= (unsigned char)(1u << (r % 8));
    check(rc == MPI_SUCCESS && buf[0] == all && buf[(size_t)INT_MAX] == all &&
              buf[(size_t)n - 1] == all,
          "MPI_Allreduce_c above INT_MAX elements");
    free(buf);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if defined(MPI_VERSION) && MPI_VERSION >= 4
    small_counts();
    if (argc > 1 && !strcmp(argv[1], "huge"))
        huge_count();
    int all[2] = {checks, failures}, total[2];
    MPI_Reduce(all, total, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("large_count: %d checks, %d failures\n", total[0], total[1]);
#else
    if (rank == 0)
        printf("large_count: not in this MPI\n");
#endif
    MPI_Finalize();
    return failures ? 1 : 0;
}
