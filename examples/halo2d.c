/* Halo exchange on a 2-D Cartesian grid of ranks: the communication skeleton of a stencil code
 * (WRF-like), used by `mpiopt simulate halo` to show what rank placement does to step time.
 *
 * The ranks form an X x Y grid made by MPI_Cart_create (reorder = 0, so rank = x*Y + y: the last
 * dimension varies fastest, grid_order's -R numbering). Every step each rank posts a receive
 * from and a send to each of its four neighbours (MPI_Irecv/MPI_Isend of HALO_BYTES bytes),
 * waits for all eight, and updates its value from what it received:
 *     v <- v/2 + (sum of the four neighbours' v)/8,   a missing neighbour counting 0,
 * so the final checksum (the sum of v over all ranks, v starting at rank+1) depends on every
 * message arriving from the right neighbour, not on where the ranks run.
 *
 * Usage: halo2d X Y [STEPS=10] [HALO_BYTES=8192] [PERIODIC=0]
 *
 * Output (rank 0): one line
 *     halo2d grid=XxY steps=N bytes=B periodic=P time_per_step=T checksum=C
 * where T is the slowest rank's wall time per step (simulated time under SMPI).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long parse_positive(const char *text, const char *what)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*end != '\0' || v < 0) {
        fprintf(stderr, "halo2d: %s must be a non-negative integer, got '%s'\n", what, text);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, world_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (argc < 3) {
        if (world_rank == 0)
            fprintf(stderr, "usage: halo2d X Y [STEPS] [HALO_BYTES] [PERIODIC]\n");
        MPI_Finalize();
        return 2;
    }
    int dims[2] = {(int)parse_positive(argv[1], "X"), (int)parse_positive(argv[2], "Y")};
    long steps = argc > 3 ? parse_positive(argv[3], "STEPS") : 10;
    long bytes = argc > 4 ? parse_positive(argv[4], "HALO_BYTES") : 8192;
    int periodic = argc > 5 ? (int)parse_positive(argv[5], "PERIODIC") != 0 : 0;
    if ((long)dims[0] * dims[1] != size) {
        if (world_rank == 0)
            fprintf(stderr, "halo2d: grid %dx%d needs %ld ranks, running on %d\n", dims[0], dims[1],
                    (long)dims[0] * dims[1], size);
        MPI_Finalize();
        return 2;
    }
    /* at least one double per message: the value travels in the first element */
    size_t count = bytes < (long)sizeof(double) ? 1 : (size_t)bytes / sizeof(double);

    int periods[2] = {periodic, periodic};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    int rank;
    MPI_Comm_rank(cart, &rank);
    int nbr[4]; /* -x, +x, -y, +y */
    MPI_Cart_shift(cart, 0, 1, &nbr[0], &nbr[1]);
    MPI_Cart_shift(cart, 1, 1, &nbr[2], &nbr[3]);

    double *sendbuf = malloc(count * sizeof(double));
    double *recvbuf = malloc(4 * count * sizeof(double));
    if (!sendbuf || !recvbuf) {
        fprintf(stderr, "halo2d: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double v = rank + 1.0;

    MPI_Barrier(cart);
    double t0 = MPI_Wtime();
    for (long s = 0; s < steps; s++) {
        MPI_Request req[8];
        MPI_Status status[8]; /* not MPI_STATUSES_IGNORE: GCC 12 warns on MPICH's definition */
        for (size_t i = 0; i < count; i++)
            sendbuf[i] = v;
        for (int k = 0; k < 4; k++) {
            recvbuf[k * count] = 0.0; /* stays 0 when the neighbour is MPI_PROC_NULL */
            /* tag = direction of travel, so the two messages between a pair of ranks on a
             * periodic grid of extent 2 cannot be confused */
            MPI_Irecv(recvbuf + k * count, (int)count, MPI_DOUBLE, nbr[k], k ^ 1, cart, &req[k]);
        }
        for (int k = 0; k < 4; k++)
            MPI_Isend(sendbuf, (int)count, MPI_DOUBLE, nbr[k], k, cart, &req[4 + k]);
        MPI_Waitall(8, req, status);
        double sum = 0.0;
        for (int k = 0; k < 4; k++)
            sum += recvbuf[k * count];
        v = 0.5 * v + 0.125 * sum;
    }
    double elapsed = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, cart);

    /* gather the values in rank order so the checksum is summed in one fixed order */
    double *all = rank == 0 ? malloc((size_t)size * sizeof(double)) : NULL;
    MPI_Gather(&v, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, cart);
    if (rank == 0) {
        double checksum = 0.0;
        for (int r = 0; r < size; r++)
            checksum += all[r];
        printf("halo2d grid=%dx%d steps=%ld bytes=%ld periodic=%d time_per_step=%.9e checksum=%.17g\n",
               dims[0], dims[1], steps, (long)(count * sizeof(double)), periodic,
               steps ? slowest / (double)steps : 0.0, checksum);
        free(all);
    }
    free(sendbuf);
    free(recvbuf);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
