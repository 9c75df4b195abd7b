/* mpiopt-allreduce --overhead: what the interposed MPI_Allreduce / MPI_Reduce costs on top of the
 * vendor's own call when mpiopt hands the call over (auto picks the vendor at 8 bytes on a
 * shared-memory node): nanoseconds per call.
 *
 * Blocks of calls alternate between PMPI_* (the vendor) and MPI_* (mpiopt's entry point, the
 * symbol this program links from libmpiopt, as a preloaded program would); each block's time per
 * call is one sample, and the figure is the difference of the medians, so machine noise hits both
 * sides alike. Both sides run the same loop, which calls through a function pointer: two loops of
 * their own would differ in code layout (one more taken jump, another alignment), and that
 * difference, a few nanoseconds on this machine, is not the hand-off's. On MPI_COMM_SELF the vendor's call is a copy of 8 bytes, which leaves the
 * hand-off's own cost in plain view; on MPI_COMM_WORLD it is the real small allreduce. */
#include <stdio.h>
#include <stdlib.h>
#include "allreduce_bench.h"

#define BLOCK 1000
#define BLOCKS 300

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef int (*allreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
typedef int (*reduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);

/* n calls of fn; the same code for both sides */
static __attribute__((noinline)) void allreduce_loop(allreduce_fn fn, int n, const double *in,
                                                     double *out, MPI_Comm comm)
{
    for (int i = 0; i < n; i++)
        fn(in, out, 1, MPI_DOUBLE, MPI_SUM, comm);
}

static __attribute__((noinline)) void reduce_loop(reduce_fn fn, int n, const double *in,
                                                  double *out, MPI_Comm comm)
{
    for (int i = 0; i < n; i++)
        fn(in, out, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
}

static void calls(int reduce, int interposed, int n, const double *in, double *out, MPI_Comm comm)
{
    if (reduce)
        reduce_loop(interposed ? MPI_Reduce : PMPI_Reduce, n, in, out, comm);
    else
        allreduce_loop(interposed ? MPI_Allreduce : PMPI_Allreduce, n, in, out, comm);
}

/* Median ns per call of the vendor's and of the interposed call on comm: out[0], out[1]. */
static void measure(int reduce, MPI_Comm comm, double out[2])
{
    static double samples[2][BLOCKS];
    double in = 1.0, result = 0;
    for (int side = 0; side < 2; side++)    /* warm up both paths (plans, first messages) */
        calls(reduce, side, BLOCK, &in, &result, comm);
    for (int b = 0; b < BLOCKS; b++) {
        for (int k = 0; k < 2; k++) {
            int side = (b + k) % 2;    /* alternate which side goes first */
            PMPI_Barrier(comm);
            double t0 = MPI_Wtime();
            calls(reduce, side, BLOCK, &in, &result, comm);
            samples[side][b] = (MPI_Wtime() - t0) * 1e9 / BLOCK;
        }
    }
    for (int side = 0; side < 2; side++)
        out[side] = median(samples[side], BLOCKS);
    /* the slowest rank's view: every rank takes part in each call */
    PMPI_Allreduce(MPI_IN_PLACE, out, 2, MPI_DOUBLE, MPI_MAX, comm);
}

void run_overhead(const options *o)
{
    const char *names[2] = {"self", "world"};
    MPI_Comm comms[2] = {MPI_COMM_SELF, MPI_COMM_WORLD};
    double ns[2][2][2];    /* [operation][communicator][vendor, interposed] */
    for (int op = 0; op < 2; op++)
        for (int c = 0; c < 2; c++)
            measure(op, comms[c], ns[op][c]);
    /* rank 0's own self figures stand for all: every rank measured the same path alone */
    if (rank != 0)
        return;
    if (o->json)
        printf("{\"overhead\": [\n");
    else
        printf("# mpiopt-allreduce --overhead: 8 bytes (1 double, MPI_SUM), median of %d blocks "
               "of %d calls\n# %-9s %-6s %5s %12s %14s %12s\n", BLOCKS, BLOCK, "operation",
               "comm", "ranks", "vendor(ns)", "interposed(ns)", "added(ns)");
    for (int op = 0; op < 2; op++)
        for (int c = 0; c < 2; c++) {
            const char *opname = op ? "reduce" : "allreduce";
            int p = c ? nranks : 1;
            double added = ns[op][c][1] - ns[op][c][0];
            if (o->json)
                printf("%s  {\"operation\": \"%s\", \"comm\": \"%s\", \"ranks\": %d, "
                       "\"vendor_ns\": %.2f, \"interposed_ns\": %.2f, \"added_ns\": %.2f}",
                       op || c ? ",\n" : "", opname, names[c], p, ns[op][c][0], ns[op][c][1],
                       added);
            else
                printf("  %-9s %-6s %5d %12.2f %14.2f %12.2f\n", opname, names[c], p,
                       ns[op][c][0], ns[op][c][1], added);
        }
    if (o->json)
        printf("\n]}\n");
}
