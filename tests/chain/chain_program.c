/* An ordinary MPI program for the PMPI-chain tests (tests/python/test_pmpi_chain.py): the
 * reductions the drop-in takes, blocking, nonblocking and persistent, with the waits, a
 * duplicated communicator and one point-to-point exchange, each result checked exactly
 * (integers, and doubles holding integers). Prints "chain: ok, N checks" or what was wrong, and how many MPI_Test calls rank 0 made. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1000

static long checks, wrong;

static void expect(const char *what, double got, double want, int i)
{
    checks++;
    if (got != want && wrong++ < 5)
        printf("chain: %s: element %d is %g, expected %g\n", what, i, got, want);
}

int main(int argc, char **argv)
{
    int rank, p;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    double a[N], b[N], c[N];
    int ia[N], ib[N];
    const double ranks = p * (p - 1) / 2.0;    /* sum of r + i over ranks: ranks + p*i */
    for (int i = 0; i < N; i++) {
        a[i] = rank + i;
        ia[i] = rank * 3 + i;
    }

    MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        expect("allreduce", b[i], ranks + p * i, i);
    MPI_Allreduce(ia, ib, N - 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < N - 1; i++)
        expect("allreduce max", ib[i], (p - 1) * 3 + i, i);
    for (int i = 0; i < N; i++)
        c[i] = a[i];
    MPI_Allreduce(MPI_IN_PLACE, c, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        expect("allreduce in place", c[i], ranks + p * i, i);

    for (int root = 0; root < p; root += p > 1 ? p - 1 : 1) {
        MPI_Reduce(a, b, N, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
        if (rank == root)
            for (int i = 0; i < N; i++)
                expect("reduce", b[i], ranks + p * i, i);
    }

    MPI_Request r[3];
    MPI_Iallreduce(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
        expect("iallreduce", b[i], ranks + p * i, i);

    /* a nonblocking reduce completed beside point-to-point in one MPI_Waitall */
    int token = rank, got = -1, right = (rank + 1) % p, left = (rank + p - 1) % p;
    MPI_Ireduce(a, c, N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&token, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &r[1]);
    MPI_Irecv(&got, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &r[2]);
    MPI_Status statuses[3];
    MPI_Waitall(3, r, statuses);
    expect("isend/irecv", got, left, 0);
    if (rank == 0)
        for (int i = 0; i < N; i++)
            expect("ireduce", c[i], ranks + p * i, i);

    /* completed by MPI_Test */
    int done = 0;
    long tests = 0;     /* as many as it takes: printed, for a tool's count to match */
    MPI_Iallreduce(ia, ib, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
    while (!done && ++tests)
        MPI_Test(&r[0], &done, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
        expect("iallreduce test", ib[i], 3 * ranks + p * i, i);

#if MPI_VERSION >= 4
#define ALLREDUCE_INIT MPI_Allreduce_init
#elif defined(OMPI_MAJOR_VERSION)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define ALLREDUCE_INIT MPIX_Allreduce_init
#endif
#endif
#ifdef ALLREDUCE_INIT
    MPI_Request pr;
    ALLREDUCE_INIT(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++)
            a[i] = rank + i + round;
        MPI_Start(&pr);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        for (int i = 0; i < N; i++)
            expect("persistent allreduce", b[i], ranks + p * (i + round), i);
    }
    MPI_Request_free(&pr);
    for (int i = 0; i < N; i++)
        a[i] = rank + i;
#endif

    MPI_Scan(ia, ib, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        expect("scan", ib[i], 3 * (rank * (rank + 1) / 2) + (rank + 1) * i, i);

    /* element i of block k is the sum over ranks of r*3 + k*B + i */
    enum { B = 7 };
    int *blocks = malloc(sizeof(int) * B * p), mine[B];
    for (int k = 0; k < p; k++)
        for (int i = 0; i < B; i++)
            blocks[k * B + i] = rank * 3 + k * B + i;
    MPI_Reduce_scatter_block(blocks, mine, B, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < B; i++)
        expect("reduce_scatter_block", mine[i], 3 * ranks + p * (rank * B + i), i);
    free(blocks);

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, dup);
    for (int i = 0; i < N; i++)
        expect("allreduce on a dup", b[i], ranks + p * i, i);
    MPI_Comm_free(&dup);

    long all_wrong = 0, all_checks = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all_wrong)
            printf("chain: %ld of %ld checks wrong\n", all_wrong, all_checks);
        else
            printf("chain: ok, %ld checks\n", all_checks);
        printf("chain: rank 0 made %ld MPI_Test calls\n", tests);
    }
    MPI_Finalize();
    return all_wrong != 0;
}
