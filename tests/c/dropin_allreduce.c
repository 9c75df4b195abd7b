/* An ordinary MPI program (no mpiopt header, no mpiopt link) for the LD_PRELOAD drop-in test
 * (tests/python/test_dropin.py compiles it with the plain mpicc): MPI_Allreduce and MPI_Reduce
 * on MPI_COMM_WORLD and a split communicator, in place and not, including MPI_IN_PLACE at a
 * non-zero root of MPI_Reduce (which MPICH 4.0.2 crashes on by itself). Prints "dropin: ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 100003

static int check(const char *what, const double *got, double want0, double step, int n)
{
    for (int i = 0; i < n; i++)
        if (got[i] != want0 + step * i) {
            printf("dropin: %s: element %d is %g, expected %g\n", what, i, got[i], want0 + step * i);
            return 1;
        }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, p, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    double ranks = p * (p - 1) / 2.0;
    /* element i of rank r is r + i: the sum is ranks + p*i */
    for (int n = 1; n <= N; n = n * 10 + 3) {
        for (int i = 0; i < n; i++)
            a[i] = rank + i;
        MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        bad |= check("allreduce", b, ranks, p, n);
        MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        bad |= check("allreduce in place", a, ranks, p, n);
        int root = p - 1;
        for (int i = 0; i < n; i++)
            a[i] = rank + i;
        MPI_Reduce(rank == root ? MPI_IN_PLACE : a, a, n, MPI_DOUBLE, MPI_SUM, root,
                   MPI_COMM_WORLD);
        if (rank == root)
            bad |= check("reduce in place at the last rank", a, ranks, p, n);
    }
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hp, hr, total;
    MPI_Comm_size(half, &hp);
    MPI_Comm_rank(half, &hr);
    MPI_Reduce(&rank, &total, 1, MPI_INT, MPI_SUM, 0, half);
    int want = 0;
    for (int r = rank % 2; r < p; r += 2)
        want += r;
    if (hr == 0 && total != want) {
        printf("dropin: reduce on a split communicator gave %d, expected %d\n", total, want);
        bad = 1;
    }
    MPI_Comm_free(&half);
    int any_bad;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("dropin: %s\n", any_bad ? "FAILED" : "ok");
    free(a);
    free(b);
    MPI_Finalize();
    return any_bad;
}
