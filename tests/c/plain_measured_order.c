/* auto keeps the vendor by measurement above two ranks only where the order of the reduction
 * cannot change the result: a plain MPI program (the drop-in takes its calls) whose first 60
 * allreduces are integer sums of 4 KiB (one size class: auto's trials, where
 * MPIOPT_TEST_SLOW_CANDIDATES makes the vendor win; tests/python/test_coll.py), then 60
 * allreduces of doubles of 8 KiB (the next class: the vendor is no candidate there at p > 2
 * unless MPIOPT_REPRODUCIBLE=0), then 10 reduces of one double (Open MPI's built-in rows leave
 * such small calls to the vendor at p = 4 only under MPIOPT_REPRODUCIBLE=0). At p = 4 the rows
 * name shared_memory for both allreduce classes, so auto measures them. Every result is checked
 * exactly (the doubles hold integers).
 *
 * usage: plain_measured_order     prints "plain_measured_order: N checks, F failures" on rank 0 */
#include <mpi.h>
#include <stdio.h>

#define INTS 1024       /* 4 KiB */
#define DOUBLES 1024    /* 8 KiB: the next size class */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    long checks = 0, failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);

    static int iin[INTS], iout[INTS];
    for (int call = 0; call < 60; call++) {
        for (int i = 0; i < INTS; i++)
            iin[i] = rank * 1000 + i - call;
        MPI_Allreduce(iin, iout, INTS, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < INTS; i++, checks++)
            failures += iout[i] != 1000 * (p * (p - 1) / 2) + p * (i - call);
    }

    static double din[DOUBLES], dout[DOUBLES];
    for (int call = 0; call < 60; call++) {
        for (int i = 0; i < DOUBLES; i++)
            din[i] = rank + i + call;
        MPI_Allreduce(din, dout, DOUBLES, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < DOUBLES; i++, checks++)
            failures += dout[i] != (double)p * (i + call) + p * (p - 1) / 2.0;
    }

    for (int call = 0; call < 10; call++) {
        double mine = rank + call, sum = -1;
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0 && checks++ >= 0)
            failures += sum != (double)p * call + p * (p - 1) / 2.0;
    }

    /* the tally by a gather: no reduction of its own in the report */
    long mine[2] = {checks, failures}, all[2 * 64] = {0}, total[2] = {0, 0};
    if (p <= 64)
        MPI_Gather(mine, 2, MPI_LONG, all, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    for (int r = 0; r < p && r < 64; r++)
        total[0] += all[2 * r], total[1] += all[2 * r + 1];
    if (rank == 0)
        printf("plain_measured_order: %ld checks, %ld failures\n", total[0], total[1]);
    MPI_Finalize();
    return 0;
}
