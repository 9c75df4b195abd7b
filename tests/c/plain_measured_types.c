/* auto's measured choice keeps the vendor only for the calls whose results it gets right: a plain
 * MPI program (the drop-in takes its calls) whose first 60 allreduces of 4 KiB of doubles run
 * auto's trials of a size class, where the vendor may win (tests/python/test_coll.py makes it
 * win with MPIOPT_TEST_SLOW_CANDIDATES); then allreduces of the same size class of 8-bit types
 * whose sums wrap and whose unsigned maxima differ from the signed ones: Open MPI 4.1's own
 * kernels saturate those sums, MPICH 4.0's compare those unsigned maxima as signed. Each must
 * come out as the C types' arithmetic says, whichever algorithm the class chose.
 *
 * usage: plain_measured_types     prints "plain_measured_types: N checks, F failures" on rank 0 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#define COUNT 4096      /* 4 KiB of 8-bit elements: the size class of 512 doubles */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p, checks = 0, failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);

    static double din[COUNT / 8], dout[COUNT / 8];
    for (int call = 0; call < 60; call++) {
        for (int i = 0; i < COUNT / 8; i++)
            din[i] = rank + i + call;
        MPI_Allreduce(din, dout, COUNT / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < COUNT / 8; i++, checks++)
            failures += dout[i] != (double)p * (i + call) + p * (p - 1) / 2.0;
    }

    static int8_t sin8[COUNT], sout8[COUNT];
    static uint8_t uin8[COUNT], uout8[COUNT];
    for (int call = 0; call < 3; call++) {
        /* sums: 100 a rank wraps past 127 from two ranks on */
        for (int i = 0; i < COUNT; i++)
            sin8[i] = 100, uin8[i] = 200;
        MPI_Allreduce(sin8, sout8, COUNT, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(uin8, uout8, COUNT, MPI_UINT8_T, MPI_SUM, MPI_COMM_WORLD);
        int8_t ssum = 0;
        uint8_t usum = 0;
        for (int r = 0; r < p; r++)
            ssum = (int8_t)(ssum + 100), usum = (uint8_t)(usum + 200);
        for (int i = 0; i < COUNT; i++, checks += 2) {
            failures += sout8[i] != ssum;
            failures += uout8[i] != usum;
        }
        /* unsigned maximum: 200 on rank 0, 100 elsewhere (as signed bytes 200 is -56) */
        for (int i = 0; i < COUNT; i++)
            uin8[i] = rank == 0 ? 200 : 100;
        MPI_Allreduce(uin8, uout8, COUNT, MPI_UINT8_T, MPI_MAX, MPI_COMM_WORLD);
        for (int i = 0; i < COUNT; i++, checks++)
            failures += uout8[i] != 200;
    }
    if (failures)
        fprintf(stderr, "FAIL rank %d: %d wrong elements\n", rank, failures);
    int totals[2] = {checks, failures}, sums[2];
    MPI_Reduce(totals, sums, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("plain_measured_types: %d checks, %d failures\n", sums[0], sums[1]);
    MPI_Finalize();
    return 0;
}
