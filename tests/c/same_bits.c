/* Two algorithms give every rank the same bits: mpiopt_allreduce with algorithm A and with
 * algorithm B, on random doubles (not exact sums), SUM and PROD, several counts; each rank
 * compares the two results byte for byte. shared_memory must match recursive_doubling and
 * rabenseifner, the algorithms a nonblocking call records in its place (docs/collectives.md); a
 * pair with another bracketing (binomial) differs at p >= 3, which shows the check can fail.
 * Then float sums of values of many magnitudes and both signs (each order of the p terms rounds
 * differently), 1-1000 floats: up to 4 KiB, the sizes the shared-memory tree takes (tree.c,
 * MPIOPT_SHM_TREE), whose brackets must be recursive doubling's.
 *
 * usage: same_bits A B [small]   prints "same_bits: N checks, M differ" on rank 0; `small`: only
 * the calls of up to 4 KiB (the tree's; cheap at 64 oversubscribed ranks) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpiopt.h"

static int algorithm(const char *name)
{
    for (int a = 0; a < MPIOPT_ALG_COUNT; a++)
        if (!strcmp(mpiopt_algorithm_name((mpiopt_algorithm)a), name))
            return a;
    return -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int a = argc >= 3 ? algorithm(argv[1]) : -1, b = argc >= 3 ? algorithm(argv[2]) : -1;
    int small = argc == 4 && !strcmp(argv[3], "small");
    if (a < 0 || b < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: same_bits ALGORITHM ALGORITHM\n");
        MPI_Finalize();
        return 2;
    }
    /* 600: shared memory in one piece, reduce-scattered; 5000, 30001: through the stages, in one
     * and in four chunks (from 64 KiB read where it is, single_copy.c, where the ranks may;
     * through the stages with MPIOPT_SHM_SINGLE_COPY=0);
     * 600001 (4.6 MiB): its result streamed past the caches, odd shares unaligned */
    const int counts[] = {1, 7, 100, 600, 5000, 30001, 600001};
    MPI_Op ops[] = {MPI_SUM, MPI_PROD};
    int checks = 0, differ = 0;
    srand(12345u + 7919u * (unsigned)rank);
    for (int ci = 0; ci < (int)(sizeof counts / sizeof counts[0]); ci++)
        for (int oi = 0; oi < 2; oi++) {
            int n = counts[ci];
            if (small && n * (int)sizeof(double) > 4096)
                continue;
            double *in = malloc(sizeof(double) * n), *ra = malloc(sizeof(double) * n),
                   *rb = malloc(sizeof(double) * n);
            for (int i = 0; i < n; i++)    /* around 1, so products stay normal numbers */
                in[i] = 0.5 + (double)rand() / RAND_MAX;
            mpiopt_allreduce(in, ra, n, MPI_DOUBLE, ops[oi], MPI_COMM_WORLD, (mpiopt_algorithm)a);
            mpiopt_allreduce(in, rb, n, MPI_DOUBLE, ops[oi], MPI_COMM_WORLD, (mpiopt_algorithm)b);
            checks++;
            int mine = memcmp(ra, rb, sizeof(double) * n) != 0, any;
            MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
            differ += any;
            free(in), free(ra), free(rb);
        }
    const int float_counts[] = {1, 13, 255, 1000};
    for (int ci = 0; ci < (int)(sizeof float_counts / sizeof float_counts[0]); ci++) {
        int n = float_counts[ci];
        float *in = malloc(sizeof(float) * n), *ra = malloc(sizeof(float) * n),
              *rb = malloc(sizeof(float) * n);
        for (int i = 0; i < n; i++) {   /* +-[0.5, 1.5) * 2^(-12..12) */
            float m = 0.5f + (float)rand() / (float)RAND_MAX;
            int e = rand() % 25 - 12;
            in[i] = (rand() % 2 ? -m : m) * (float)ldexp(1.0, e);
        }
        mpiopt_allreduce(in, ra, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, (mpiopt_algorithm)a);
        mpiopt_allreduce(in, rb, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, (mpiopt_algorithm)b);
        checks++;
        int mine = memcmp(ra, rb, sizeof(float) * n) != 0, any;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        differ += any;
        free(in), free(ra), free(rb);
    }
    if (rank == 0)
        printf("same_bits: %d checks, %d differ\n", checks, differ);
    MPI_Finalize();
    return 0;
}
