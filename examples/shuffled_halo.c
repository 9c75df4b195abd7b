/* A halo exchange whose neighbours are not near in rank numbers: the PX x PY periodic grid of
 * cells is dealt to the ranks in a shuffled order (a fixed pseudo-random permutation, as an
 * unstructured mesh partitioned without regard to rank numbers would be). SMP placement, which
 * puts consecutive ranks on a node, then sends most halo bytes off-node; `mpiopt place search
 * --matrix` on its profile finds the nodes that keep neighbours together (docs/profiling.md).
 *
 *   shuffled_halo PX PY [STEPS=4] [BYTES=8192] [SEED=12345]
 *
 * Every step each rank exchanges BYTES with its four grid neighbours (MPI_Irecv/MPI_Isend,
 * MPI_Waitall) and averages what it received. Output (rank 0):
 *     shuffled_halo grid=PXxPY steps=N bytes=B checksum=C */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* cell_owner[c] = rank of cell c: Fisher-Yates with a 64-bit LCG, the same on every rank. */
static void shuffle(int *cell_owner, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++)
        cell_owner[i] = i;
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int)((seed >> 33) % (uint64_t)(i + 1));
        int t = cell_owner[i];
        cell_owner[i] = cell_owner[j];
        cell_owner[j] = t;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: shuffled_halo PX PY [STEPS=4] [BYTES=8192] [SEED=12345]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int px = atoi(argv[1]), py = atoi(argv[2]);
    int steps = argc > 3 ? atoi(argv[3]) : 4;
    int bytes = argc > 4 ? atoi(argv[4]) : 8192;
    uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 12345;
    if (px < 1 || py < 1 || px * py != size || steps < 0 || bytes < 8) {
        if (rank == 0)
            fprintf(stderr, "shuffled_halo: PX*PY must equal the %d ranks, BYTES >= 8\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int *owner = malloc(sizeof(int) * (size_t)size), cell = -1;
    shuffle(owner, size, seed);
    for (int c = 0; c < size; c++)
        if (owner[c] == rank)
            cell = c;
    int x = cell % px, y = cell / px;
    int nb[4] = {owner[y * px + (x + 1) % px], owner[y * px + (x + px - 1) % px],
                 owner[((y + 1) % py) * px + x], owner[((y + py - 1) % py) * px + x]};
    int n = bytes / (int)sizeof(double);
    double *send = malloc(4 * sizeof(double) * (size_t)n), *recv = malloc(4 * sizeof(double) * (size_t)n);
    double v = rank + 1;
    MPI_Request req[8];
    MPI_Status status[8];
    for (int s = 0; s < steps; s++) {
        for (int k = 0; k < 4 * n; k++)
            send[k] = v;
        /* direction k's message arrives as the neighbour's opposite direction k ^ 1 */
        for (int k = 0; k < 4; k++) {
            MPI_Irecv(recv + k * n, n, MPI_DOUBLE, nb[k], k ^ 1, MPI_COMM_WORLD, &req[k]);
            MPI_Isend(send + k * n, n, MPI_DOUBLE, nb[k], k, MPI_COMM_WORLD, &req[4 + k]);
        }
        MPI_Waitall(8, req, status);
        v = v / 2 + (recv[0] + recv[n] + recv[2 * n] + recv[3 * n]) / 8;
    }
    double sum = 0;
    MPI_Reduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("shuffled_halo grid=%dx%d steps=%d bytes=%d checksum=%.6f\n", px, py, steps, bytes, sum);
    free(owner);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
