/* The reduction family in the shape programs use it: every step each rank owns a changing
 * number of items (particles, rows, non-zeros), and
 *   - MPI_Exscan gives each rank the global index of its first item (where it writes in a shared
 *     file or a distributed array),
 *   - MPI_Scan gives the running total of a weight, for a load balancer's cut points,
 *   - MPI_Reduce_scatter_block sums a histogram of NBINS bins a rank over all ranks, each rank
 *     receiving its own bins (sparse-matrix assembly, a distributed histogram),
 *   - MPI_Reduce_scatter does the same with a different number of bins a rank (rank r gets r % 3
 *     bins: one gets none).
 * Between each call and the use of its result the rank does work of its own (it moves its items),
 * which is what `mpiopt transform` lets overlap with the reduction. Integer data throughout, so
 * every version of the program prints the same numbers, whatever order a reduction sums in.
 *
 * Usage: prefix_offsets [-i STEPS] [-n ITEMS]   (ITEMS: about how many items a rank holds)
 * Output (rank 0): one line a step with the step's totals, then a checksum of every rank's
 * results. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBINS 8
#define MAX_ITEMS 4096

/* The item count of `rank` at `step`: changes from step to step and rank to rank. */
static long items_of(int rank, int step, int base)
{
    return base + (rank * 37 + step * 11) % (base / 2 + 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, steps = 10, base = 64;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-i") == 0)
            steps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-n") == 0)
            base = atoi(argv[i + 1]);
    }
    if (steps < 1 || base < 2 || base * 3 / 2 + 1 > MAX_ITEMS) {
        if (rank == 0)
            fprintf(stderr, "usage: prefix_offsets [-i STEPS >= 1] [-n ITEMS 2..%d]\n",
                    (MAX_ITEMS - 1) * 2 / 3);
        MPI_Finalize();
        return 1;
    }

    long *position = malloc(sizeof(long) * MAX_ITEMS);
    long *histogram = malloc(sizeof(long) * NBINS * size);
    long *my_bins = malloc(sizeof(long) * NBINS);
    long *uneven = malloc(sizeof(long) * 3 * size);
    long uneven_mine[3];
    int *counts = malloc(sizeof(int) * size);
    int total_uneven = 0;
    for (int r = 0; r < size; r++)
        total_uneven += counts[r] = r % 3;
    for (int k = 0; k < MAX_ITEMS; k++)
        position[k] = (rank * 7919L + k * 104729L) % 1000003L;

    /* outside the loop: the same buffers every step, so the calls can become persistent */
    long checksum = 0, n, first, weight, running;
    for (int step = 0; step < steps; step++) {
        n = items_of(rank, step, base);
        first = running = 0;
        weight = n * (rank + 1);
        for (int b = 0; b < NBINS * size; b++)
            histogram[b] = 0;
        for (long k = 0; k < n; k++)
            histogram[position[k] % (NBINS * size)]++;
        for (int b = 0; b < total_uneven; b++)
            uneven[b] = (rank + 1) * (b + step);

        MPI_Exscan(&n, &first, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Scan(&weight, &running, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Reduce_scatter_block(histogram, my_bins, NBINS, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Reduce_scatter(uneven, uneven_mine, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

        /* the rank's own work: move its items (touches none of the reductions' buffers) */
        for (int k = 0; k < MAX_ITEMS; k++)
            position[k] = (position[k] * 31 + step + 1) % 1000003L;

        if (rank == 0)
            first = 0;     /* MPI_Exscan leaves rank 0's result undefined */
        long bins = 0, mine = 0;
        for (int b = 0; b < NBINS; b++)
            bins += my_bins[b] * (b + 1);
        for (int b = 0; b < counts[rank]; b++)
            mine += uneven_mine[b];
        long step_sum[2] = {first + running + bins + mine, n}, totals[2];
        MPI_Reduce(step_sum, totals, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("step %d items %ld sum %ld\n", step, totals[1], totals[0]);
        checksum = (checksum * 131 + first * 7 + running * 3 + bins + mine) % 1000000007L;
    }
    long all;
    MPI_Reduce(&checksum, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("prefix_offsets ranks %d steps %d checksum %ld\n", size, steps, all);
    free(position);
    free(histogram);
    free(my_bins);
    free(uneven);
    free(counts);
    MPI_Finalize();
    return 0;
}
