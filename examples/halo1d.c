/* A 1-D halo exchange with blocking MPI_Sendrecv: the point-to-point example of
 * `mpiopt bench transform`. The ranks own consecutive blocks of ROWS rows of a COLS-wide grid; every
 * step each rank sends its first row up and its last row down and receives the neighbours' rows
 * into two ghost rows (MPI_Sendrecv, twice), then makes one Jacobi sweep: the inner rows first
 * (they need no ghost row, so a transformed version overlaps the messages with them), the two
 * edge rows last, and copies the new values back. Long rows and few of them per rank make the
 * messages a good share of a step.
 *
 * `mpiopt transform` makes each MPI_Sendrecv an MPI_Irecv + MPI_Isend with its waits before the
 * edge rows (nonblocking), or MPI_Recv_init + MPI_Send_init before the loop and MPI_Start in it
 * (persistent: every argument is the same in every step).
 *
 * Usage: halo1d [-n COLS] [-m ROWS_PER_RANK] [-i STEPS]
 *
 * Output (rank 0): the size and a checksum of the grid (%.10e); on stderr `time SECONDS`, the
 * slowest rank's time in the step loop.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_args(int argc, char **argv, int *cols, int *rows, int *steps)
{
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "-n") == 0)
            *cols = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-m") == 0)
            *rows = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-i") == 0)
            *steps = atoi(argv[++i]);
        else
            return -1;
    }
    return (*cols > 0 && *rows > 2 && *steps > 0) ? 0 : -1;
}

/* One row of the sweep: the average of the four neighbours (fixed left and right columns). */
static void sweep_row(const double *above, const double *row, const double *below, double *out, int cols)
{
    out[0] = row[0];
    out[cols - 1] = row[cols - 1];
    for (int j = 1; j < cols - 1; j++)
        out[j] = 0.25 * (above[j] + below[j] + row[j - 1] + row[j + 1]);
}

int main(int argc, char **argv)
{
    int rank, nprocs, cols = 512, rows = 8, steps = 10;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (parse_args(argc, argv, &cols, &rows, &steps) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: halo1d [-n COLS] [-m ROWS_PER_RANK > 2] [-i STEPS]\n");
        MPI_Finalize();
        return 2;
    }
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int down = rank < nprocs - 1 ? rank + 1 : MPI_PROC_NULL;
    double *u = malloc(sizeof(double) * rows * cols);
    double *next = malloc(sizeof(double) * rows * cols);
    double *ghost_up = malloc(sizeof(double) * cols);
    double *ghost_down = malloc(sizeof(double) * cols);
    double *last = u + (long)(rows - 1) * cols;
    for (long k = 0; k < (long)rows * cols; k++)
        u[k] = (double)((rank * rows + k / cols) % 7) + 0.001 * (k % cols);
    /* the outer boundary: fixed rows of zeros, which MPI_PROC_NULL leaves in place */
    memset(ghost_up, 0, sizeof(double) * cols);
    memset(ghost_down, 0, sizeof(double) * cols);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int step = 0; step < steps; step++) {
        MPI_Sendrecv(u, cols, MPI_DOUBLE, up, 1, ghost_down, cols, MPI_DOUBLE, down, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(last, cols, MPI_DOUBLE, down, 2, ghost_up, cols, MPI_DOUBLE, up, 2,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 1; i < rows - 1; i++)
            sweep_row(u + (long)(i - 1) * cols, u + (long)i * cols, u + (long)(i + 1) * cols,
                      next + (long)i * cols, cols);
        sweep_row(ghost_up, u, u + cols, next, cols);
        sweep_row(last - cols, last, ghost_down, next + (long)(rows - 1) * cols, cols);
        memcpy(u, next, sizeof(double) * rows * cols);
    }
    double elapsed = MPI_Wtime() - t0, slowest = 0.0;

    double local = 0.0, total = 0.0;
    for (long k = 0; k < (long)rows * cols; k++)
        local += u[k] * (1 + (rank * rows + k / cols) % 5);
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("halo1d cols %d rows_per_rank %d ranks %d steps %d\n", cols, rows, nprocs, steps);
        printf("checksum %.10e\n", total);
        fprintf(stderr, "time %.6f\n", slowest);
    }
    free(u);
    free(next);
    free(ghost_up);
    free(ghost_down);
    MPI_Finalize();
    return 0;
}
