/* An ordinary MPI program for the counting build (bench/line_counts.py, test_line_counts.py):
 * `calls` allreduces (or reduces to rank 0, with "reduce") of `bytes` of doubles on
 * MPI_COMM_WORLD, each result checked exactly. Prints "plain_line_counts: ok" on rank 0, or
 * the first wrong element. Usage: test-plain_line_counts BYTES CALLS [reduce] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, p, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: %s BYTES CALLS [reduce]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    int n = atoi(argv[1]) / (int)sizeof(double), calls = atoi(argv[2]);
    int reduce = argc > 3 && !strcmp(argv[3], "reduce");
    n = n < 1 ? 1 : n;
    double *in = malloc(sizeof *in * (size_t)n), *out = malloc(sizeof *out * (size_t)n);
    if (!in || !out) {      /* bench/line_counts.py asks for up to 1 MiB; a bad size says so */
        fprintf(stderr, "plain_line_counts: no room for %d doubles\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int k = 0; k < calls && !bad; k++) {
        /* element i of rank r in call k: r + i + k, exact in a double: the sum is
         * p (p - 1) / 2 + p (i + k) */
        for (int i = 0; i < n; i++)
            in[i] = rank + i + k;
        if (reduce)
            MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        else
            MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < n && (!reduce || rank == 0); i++) {
            double want = p * (p - 1) / 2.0 + (double)p * (i + k);
            if (out[i] != want) {
                printf("plain_line_counts: rank %d call %d element %d is %g, expected %g\n",
                       rank, k, i, out[i], want);
                bad = 1;
                break;
            }
        }
    }
    /* a gather, not a reduction: not one of the counted calls */
    int any = 0, *all = malloc(sizeof *all * (size_t)p);
    MPI_Gather(&bad, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < p; r++)
        any |= all[r];
    if (rank == 0 && !any)
        printf("plain_line_counts: ok\n");
    free(all);
    free(in);
    free(out);
    MPI_Finalize();
    return any;
}
