/* The program packaging/spack/check.sh runs under `mpiopt run` with a Spack-installed mpiopt:
 * a plain MPI program (not linked with libmpiopt) whose MPI_Allreduce calls the preloaded
 * drop-in takes. Sums and maxima of doubles and ints, small to large, checked against the
 * values every rank can compute alone; exit status 1 on any wrong element. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double dvalue(int rank, long i) { return (double)((rank + 1) * (i % 97 + 1)); }
static int ivalue(int rank, long i) { return (int)((rank * 31 + i) % 1000); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long counts[] = {1, 7, 1000, 65536, 1 << 20};
    long wrong = 0, calls = 0;
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        long n = counts[c];
        double *dx = malloc(n * sizeof *dx), *dy = malloc(n * sizeof *dy);
        int *ix = malloc(n * sizeof *ix), *iy = malloc(n * sizeof *iy);
        for (long i = 0; i < n; i++) {
            dx[i] = dvalue(rank, i);
            ix[i] = ivalue(rank, i);
        }
        MPI_Allreduce(dx, dy, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(ix, iy, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        /* in place too */
        MPI_Allreduce(MPI_IN_PLACE, dx, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        calls += 3;
        for (long i = 0; i < n; i++) {
            double sum = 0;
            int max = ivalue(0, i);
            for (int r = 0; r < size; r++) {
                sum += dvalue(r, i);      /* small integers: exact in any order */
                if (ivalue(r, i) > max) max = ivalue(r, i);
            }
            wrong += (dy[i] != sum) + (dx[i] != sum) + (iy[i] != max);
        }
        free(dx); free(dy); free(ix); free(iy);
    }
    long all_wrong = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("allreduce check: %s (%ld MPI_Allreduce calls a rank, %d ranks, %ld wrong elements)\n",
               all_wrong ? "WRONG" : "ok", calls, size, all_wrong);
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
