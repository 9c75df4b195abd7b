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
 * Usage: halo2d X Y [STEPS=10] [HALO_BYTES=8192] [PERIODIC=0] [LOCAL_X=0 [LOCAL_Y=LOCAL_X]]
 *
 * LOCAL_X > 0 adds a compute phase, so that strong scaling has work to share out: after its
 * exchange, every step each rank makes one 5-point Jacobi sweep over its own LOCAL_X x LOCAL_Y
 * block of doubles (fixed boundary, independent of the halo messages, so the checksum does not
 * change). Under SimGrid SMPI the sweep is not run: the rank sleeps a modelled
 * SIMULATED_SECONDS_PER_POINT per point instead (deterministic, and a 1024-rank simulation does
 * not spend host time on it; a sleep, not smpi_execute_flops, because SMPI would share one
 * simulated CPU among all ranks of a node).
 *
 * Built with OpenMP (mpicc -fopenmp), the sweep's rows are shared by the rank's threads
 * (OMP_NUM_THREADS), MPI is called by the master thread only (MPI_THREAD_FUNNELED), and the
 * output line ends with threads=T: the hybrid layouts `mpiopt layout --run` measures.
 *
 * Output (rank 0): one line
 *     halo2d grid=XxY steps=N bytes=B periodic=P time_per_step=T checksum=C
 * where T is the slowest rank's wall time per step (simulated time under SMPI). With a compute
 * phase the line goes on with
 *     local=LXxLY compute_per_step=S
 * S being the slowest rank's time per step in the sweep (T includes it).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* SMPI's mpi.h defines SMPI_SAMPLE_FLOPS; a real MPI's does not */
#ifdef SMPI_SAMPLE_FLOPS
#define UNDER_SMPI 1
#else
#define UNDER_SMPI 0
#endif

/* The simulated cost of one point of a sweep, a round 1 ns: one core of the machine this was
 * written on took 1.2-1.3 ns a point for 256x256 and 512x512 blocks (halo2d 1 1 100 8 0 256). */
#define SIMULATED_SECONDS_PER_POINT 1e-9

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

/* One Jacobi sweep: next = average of the four neighbours of each inner point of an
 * (nx+2) x (ny+2) array whose outer ring is the fixed boundary. */
static void jacobi_sweep(const double *cur, double *next, long nx, long ny)
{
    long row = ny + 2;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (long i = 1; i <= nx; i++)
        for (long j = 1; j <= ny; j++)
            next[i * row + j] = 0.25 * (cur[(i - 1) * row + j] + cur[(i + 1) * row + j] +
                                        cur[i * row + j - 1] + cur[i * row + j + 1]);
}

/* Under SMPI: the sweep's modelled time passes on the simulated clock, on this rank alone. */
static void simulated_sweep(long nx, long ny)
{
#if UNDER_SMPI
    double seconds = (double)nx * (double)ny * SIMULATED_SECONDS_PER_POINT;
    struct timespec duration = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    smpi_nanosleep(&duration, NULL);
#else
    (void)nx, (void)ny;
#endif
}

int main(int argc, char **argv)
{
#ifdef _OPENMP
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    if (provided < MPI_THREAD_FUNNELED) {
        fprintf(stderr, "halo2d: the MPI library does not provide MPI_THREAD_FUNNELED\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
#else
    MPI_Init(&argc, &argv);
#endif
    int size, world_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (argc < 3) {
        if (world_rank == 0)
            fprintf(stderr, "usage: halo2d X Y [STEPS] [HALO_BYTES] [PERIODIC] [LOCAL_X [LOCAL_Y]]\n");
        MPI_Finalize();
        return 2;
    }
    int dims[2] = {(int)parse_positive(argv[1], "X"), (int)parse_positive(argv[2], "Y")};
    long steps = argc > 3 ? parse_positive(argv[3], "STEPS") : 10;
    long bytes = argc > 4 ? parse_positive(argv[4], "HALO_BYTES") : 8192;
    int periodic = argc > 5 ? (int)parse_positive(argv[5], "PERIODIC") != 0 : 0;
    long local_x = argc > 6 ? parse_positive(argv[6], "LOCAL_X") : 0;
    long local_y = argc > 7 ? parse_positive(argv[7], "LOCAL_Y") : local_x;
    int compute = local_x > 0 && local_y > 0;
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

    /* the compute phase's two arrays, boundary ring included; 1.0 everywhere keeps the sweep's
     * values normal numbers (denormals would make its time depend on the data) */
    double *grid = NULL, *next = NULL;
    if (compute && !UNDER_SMPI) {
        size_t points = (size_t)(local_x + 2) * (size_t)(local_y + 2);
        grid = malloc(points * sizeof(double));
        next = malloc(points * sizeof(double));
        if (!grid || !next) {
            fprintf(stderr, "halo2d: out of memory for a %ldx%ld block\n", local_x, local_y);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (size_t i = 0; i < points; i++)
            grid[i] = next[i] = 1.0;
    }
    double compute_seconds = 0.0;

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
        if (compute) {
            double c0 = MPI_Wtime();
            if (UNDER_SMPI) {
                simulated_sweep(local_x, local_y);
            } else {
                jacobi_sweep(grid, next, local_x, local_y);
                double *swap = grid;
                grid = next;
                next = swap;
            }
            compute_seconds += MPI_Wtime() - c0;
        }
    }
    double times[2] = {MPI_Wtime() - t0, compute_seconds}, slowest[2];
    MPI_Reduce(times, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, cart);
    if (grid) {
        /* read the result, so the compiler cannot drop the sweeps as dead stores */
        volatile double centre = grid[(local_x / 2 + 1) * (local_y + 2) + local_y / 2 + 1];
        (void)centre;
    }

    /* gather the values in rank order so the checksum is summed in one fixed order */
    double *all = rank == 0 ? malloc((size_t)size * sizeof(double)) : NULL;
    MPI_Gather(&v, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, cart);
    if (rank == 0) {
        double checksum = 0.0;
        for (int r = 0; r < size; r++)
            checksum += all[r];
        printf("halo2d grid=%dx%d steps=%ld bytes=%ld periodic=%d time_per_step=%.9e checksum=%.17g",
               dims[0], dims[1], steps, (long)(count * sizeof(double)), periodic,
               steps ? slowest[0] / (double)steps : 0.0, checksum);
        if (compute) /* only then: the line stays what it was for the old arguments */
            printf(" local=%ldx%ld compute_per_step=%.9e", local_x, local_y,
                   steps ? slowest[1] / (double)steps : 0.0);
#ifdef _OPENMP
        printf(" threads=%d", omp_get_max_threads());
#endif
        printf("\n");
        free(all);
    }
    free(sendbuf);
    free(recvbuf);
    if (grid) { /* SMPI's free() is its shared-malloc free, not documented to take NULL */
        free(grid);
        free(next);
    }
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
