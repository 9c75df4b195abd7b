/* Load imbalance for the profiler (docs/profiling.md), after the CM1 example of the case study:
 * a storm simulation where a small region of the domain (a few ranks) does much more
 * microphysics work per step than the rest, and every rank then waits in the step's collective
 * for the slowest.
 *
 * Every step each rank does `units` units of work in the region "physics" (MPI_Pcontrol), then
 * an MPI_Allreduce of one double (the step's global maximum). A unit is UNIT_MS milliseconds of
 * arithmetic (or of sleep with -s, which keeps oversubscribed test runs exact).
 *
 *   imbalance [-i STEPS] [-u UNIT_MS] [-s] [--ramp | --storm FIRST,LAST,FACTOR]
 *     --storm a,b,f   ranks a..b do f units a step, the others 1 (default: the middle eighth
 *                     of the ranks, f = 8)
 *     --ramp          rank r does r units a step (imbalance known by construction)
 *
 * Output (rank 0): imbalance ranks=P steps=N units=U max=M */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Arithmetic for ms milliseconds; returns a value the caller uses, so it is not optimised away. */
static double compute(double ms)
{
    double x = 1.0, end = now() + ms / 1000.0;
    while (now() < end)
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
    return x;
}

static void pause_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - 1000.0 * (time_t)(ms / 1000)) * 1e6)};
    nanosleep(&ts, NULL);
}

static void usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: imbalance [-i STEPS] [-u UNIT_MS] [-s] [--ramp | --storm FIRST,LAST,FACTOR]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = 10, ramp = 0, sleep_units = 0;
    double unit = 5.0;
    int first = size / 2 - size / 16, last = size / 2 + (size >= 16 ? size / 16 - 1 : 0), factor = 8;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-i") == 0 && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "-u") == 0 && i + 1 < argc)
            unit = atof(argv[++i]);
        else if (strcmp(argv[i], "-s") == 0)
            sleep_units = 1;
        else if (strcmp(argv[i], "--ramp") == 0)
            ramp = 1;
        else if (strcmp(argv[i], "--storm") == 0 && i + 1 < argc) {
            if (sscanf(argv[++i], "%d,%d,%d", &first, &last, &factor) != 3)
                usage(rank);
        } else
            usage(rank);
    }
    if (steps < 1 || unit < 0 || first < 0 || last < first || factor < 1)
        usage(rank);
    int units = ramp ? rank : (rank >= first && rank <= last ? factor : 1);
    double local = 0.0, global = 0.0;
    for (int s = 0; s < steps; s++) {
        MPI_Pcontrol(101, "physics");  /* MPIOPT_PCONTROL_BEGIN of mpiopt_profile.h */
        if (sleep_units)
            pause_ms(unit * units);
        else
            local += compute(unit * units) * 0.0 + units;
        MPI_Pcontrol(-101);   /* MPIOPT_PCONTROL_END */
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("imbalance ranks=%d steps=%d units=%d max=%g\n", size, steps, units, global);
    MPI_Finalize();
    return 0;
}
