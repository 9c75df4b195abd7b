/* Where a timed call starts, shared by mpiopt-allreduce and mpiopt-exchange.
 *
 * A barrier lets processes go at different times, and the process that leaves first waits in
 * the timed call for the last: the slowest process's time then counts the barrier's skew as
 * well as the call. On a real machine there is no common clock to do better (OSU's method, a
 * barrier before each call, is what these benchmarks use there). Under SimGrid SMPI every rank
 * reads one simulated clock, so every rank can start the call at the same instant, as after a
 * perfect barrier; without it SMPI's barrier (its mpich selection) let the ranks go 17 µs apart
 * at 64 ranks, 16 a node on the fat-tree, and every column of a simulated table was that much
 * slower than its messages. The time spent getting there is simulated time, not the host's. */
#ifndef MPIOPT_BENCH_START_TOGETHER_H
#define MPIOPT_BENCH_START_TOGETHER_H

#include <mpi.h>

#ifdef SMPI_SAMPLE_FLOPS   /* SimGrid's mpi.h */
#include <time.h>

/* Returns when every rank of comm has reached this call, at the same simulated instant. Two
 * reductions: the first times one (d), the second names the latest arrival after it (a) and the
 * longest d; by a + 2 d every rank has the second's result, so each sleeps until then. */
static inline void start_together(MPI_Comm comm)
{
    double before = MPI_Wtime(), latest, mine[2], all[2];
    PMPI_Allreduce(&before, &latest, 1, MPI_DOUBLE, MPI_MAX, comm);
    mine[0] = MPI_Wtime();
    mine[1] = mine[0] - before;
    PMPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, comm);
    double wait = all[0] + 2 * all[1] + 1e-6 - MPI_Wtime();
    if (wait > 0) {
        struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
        nanosleep(&ts, NULL);   /* SMPI's: simulated time */
    }
}
#define MPIOPT_START_TOGETHER 1
#else
#define MPIOPT_START_TOGETHER 0
static inline void start_together(MPI_Comm comm) { (void)comm; }
#endif

#endif
