/* The turns of shared_memory's two-rank allreduce (staged.c's allreduce_pair, and the numbered
 * lines of shared_memory.c's exchange_lines): calls of sizes that go round different numbers of
 * stages (so that a chunk lands on the stage the chunk before used), in place and not, one after
 * another in an order both ranks draw alike, each checked exactly (int sums). A rank that wrote a
 * slot the other still read (in place, the other reads its own copy there) gave a wrong sum about
 * once in ten runs of guard_check before the in-place wait.
 *
 * usage: pair_turns [CALLS (default 3000)]   prints "pair_turns: N checks, M wrong" on rank 0 */
#include <stdio.h>
#include <stdlib.h>
#include "mpiopt.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int calls = argc > 1 ? atoi(argv[1]) : 3000;
    /* ints: the lines (up to 4 KiB), and chunks of 9.6, 16, 20, 24, 32 and 64 KiB and two chunks,
     * which go round 8, 7, 6, 5, 4 and 4 stages */
    const int counts[] = {300, 1000, 2400, 4098, 5120, 6144, 8192, 16384, 20000};
    const int ncounts = (int)(sizeof counts / sizeof counts[0]);
    int *buf = malloc(sizeof(int) * 20000), *out = malloc(sizeof(int) * 20000);
    unsigned draw = 2026u;      /* the same on every rank */
    int checks = 0, wrong = 0;
    for (int k = 0; k < calls; k++) {
        draw = draw * 1103515245u + 12345u;
        int n = counts[(draw >> 8) % (unsigned)ncounts], in_place = (draw >> 20) & 1;
        for (int i = 0; i < n; i++)
            buf[i] = (rank + 1) * (i % 1000) + k;
        int *result = in_place ? buf : out;
        mpiopt_allreduce(in_place ? MPI_IN_PLACE : buf, result, n, MPI_INT, MPI_SUM,
                         MPI_COMM_WORLD, MPIOPT_ALG_SHARED_MEMORY);
        int bad = 0;
        for (int i = 0; i < n && !bad; i++)
            bad = result[i] != p * (p + 1) / 2 * (i % 1000) + p * k;
        checks++;
        wrong += bad;
    }
    int all_wrong = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("pair_turns: %d checks, %d wrong\n", checks * p, all_wrong);
    free(buf);
    free(out);
    MPI_Finalize();
    return all_wrong != 0;
}
