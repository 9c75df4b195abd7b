/* The four-MPI_Allreduce kernel of figure 12 of the Petal paper (after James Tullos' Intel
 * benchmark): three distributed arrays; the element-wise sum of the first gives its average, which
 * scales the second; the element-wise min and max of the second, together with that average,
 * update the third, whose element-wise sum is the result. Between the min/max reductions and
 * the use of their results, the third array can already be shifted by the average: that is the
 * computation a nonblocking MPI_Iallreduce overlaps.
 *
 * The kernel runs ITERS times on fresh data (derived from the iteration number), so the
 * benchmark can time many repetitions with the same buffers, as persistent collectives need.
 *
 * Usage: four_allreduce [-n ELEMENTS_PER_RANK] [-i ITERS]
 *
 * Output: floating results printed with %.10e. A nonblocking or persistent version may differ
 * from the blocking one in the last bits, because MPI may combine the ranks' contributions in
 * another order; compare with a relative tolerance (1e-8 in tests/python/difftest.py).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A deterministic value in [0, 1) for element `index` of array `which` at iteration `iter`. */
static double pseudo_random(long index, int which, int iter)
{
    unsigned long h = (unsigned long)index * 2654435761UL + (unsigned long)which * 40503UL
                      + (unsigned long)iter * 2246822519UL;
    h ^= h >> 13;
    h *= 0x5bd1e995UL;
    h ^= h >> 15;
    return (double)(h % 1000003UL) / 1000003.0;
}

static double sum(const double *a, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += a[i];
    return s;
}

static double min(const double *a, int n)
{
    double m = a[0];
    for (int i = 1; i < n; i++)
        if (a[i] < m)
            m = a[i];
    return m;
}

static double max(const double *a, int n)
{
    double m = a[0];
    for (int i = 1; i < n; i++)
        if (a[i] > m)
            m = a[i];
    return m;
}

static void scalarMultiply(double *a, int n, double factor)
{
    for (int i = 0; i < n; i++)
        a[i] *= factor;
}

static void scalarAdd(double *a, int n, double term)
{
    for (int i = 0; i < n; i++)
        a[i] += term;
}

static int parse_args(int argc, char **argv, int *size, int *iters)
{
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "-n") == 0)
            *size = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-i") == 0)
            *iters = atoi(argv[++i]);
        else
            return -1;
    }
    return (*size > 0 && *iters > 0) ? 0 : -1;
}

int main(int argc, char **argv)
{
    int rank, p;
    int num_elements = 256, iters = 3;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (parse_args(argc, argv, &num_elements, &iters) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: four_allreduce [-n ELEMENTS_PER_RANK] [-i ITERS]  (both > 0)\n");
        MPI_Finalize();
        return 2;
    }

    double *sub_arr1 = malloc(sizeof(double) * num_elements);
    double *sub_arr2 = malloc(sizeof(double) * num_elements);
    double *sub_arr3 = malloc(sizeof(double) * num_elements);
    double *sumA1temp = malloc(sizeof(double) * num_elements);
    double *minA2temp = malloc(sizeof(double) * num_elements);
    double *maxA2temp = malloc(sizeof(double) * num_elements);
    double *sumA3temp = malloc(sizeof(double) * num_elements);
    double sumA1, avgA1, minA2 = 0.0, maxA2 = 0.0, finalsum = 0.0, total = 0.0;

    double t0 = MPI_Wtime();
    for (int iter = 0; iter < iters; iter++) {
        for (int i = 0; i < num_elements; i++) {
            long global = (long)rank * num_elements + i;
            sub_arr1[i] = pseudo_random(global, 1, iter);
            sub_arr2[i] = pseudo_random(global, 2, iter);
            sub_arr3[i] = pseudo_random(global, 3, iter);
        }

        MPI_Allreduce(sub_arr1, sumA1temp, num_elements, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        sumA1 = sum(sumA1temp, num_elements);
        avgA1 = sumA1 / ((double)num_elements * p);
        scalarMultiply(sub_arr2, num_elements, avgA1);
        MPI_Allreduce(sub_arr2, minA2temp, num_elements, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(sub_arr2, maxA2temp, num_elements, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        scalarAdd(sub_arr3, num_elements, avgA1);
        minA2 = min(minA2temp, num_elements);
        maxA2 = max(maxA2temp, num_elements);
        scalarMultiply(sub_arr3, num_elements, (minA2 + maxA2) * 0.5);
        MPI_Allreduce(sub_arr3, sumA3temp, num_elements, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        finalsum = sum(sumA3temp, num_elements);

        total += finalsum;
    }
    double elapsed = MPI_Wtime() - t0;

    if (rank == 0) {
        printf("four_allreduce elements_per_rank %d ranks %d iterations %d\n", num_elements, p, iters);
        printf("minA2 %.10e\n", minA2);
        printf("maxA2 %.10e\n", maxA2);
        printf("finalsum %.10e\n", finalsum);
        printf("total %.10e\n", total);
        fprintf(stderr, "time %.6f\n", elapsed);
    }

    free(sub_arr1);
    free(sub_arr2);
    free(sub_arr3);
    free(sumA1temp);
    free(minA2temp);
    free(maxA2temp);
    free(sumA3temp);
    MPI_Finalize();
    return 0;
}
