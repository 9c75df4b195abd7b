/* An unmodified MPI program for the profiler's call sites (tests/python/test_profile_sites.py):
 * the same MPI_Allreduce at several lines and depths. Each marked line's count per rank:
 *
 *   site:A  in first(), 3 times          site:B  in second(), 5 times
 *   site:H  in helper(), 3 times: twice from first() (site:F), once from second() (site:S)
 *   site:M  in main(), once              site:R  MPI_Barrier in main(), once
 *
 * The test finds the lines by their markers; built with -g -O0 (CMakeLists.txt) so that every
 * function keeps its frame and its lines. */
#include <mpi.h>
#include <stdio.h>

static double x = 1, y;

static __attribute__((noinline)) void helper(void)
{
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* site:H */
}

static __attribute__((noinline)) void first(void)
{
    for (int i = 0; i < 3; i++)
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* site:A */
    for (int i = 0; i < 2; i++)
        helper(); /* site:F */
}

static __attribute__((noinline)) void second(void)
{
    for (int i = 0; i < 5; i++)
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* site:B */
    helper(); /* site:S */
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    first();
    second();
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* site:M */
    MPI_Barrier(MPI_COMM_WORLD); /* site:R */
    if (rank == 0)
        printf("sites: %g\n", y);
    MPI_Finalize();
    return 0;
}
