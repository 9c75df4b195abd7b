/* An unmodified MPI program (not linked with mpiopt) for the MPI_Reduce_local drop-in test: it
 * prints results where Open MPI 4.1.4 or MPICH 4.0.2 are wrong, so that the output shows whether
 * mpiopt was preloaded. */
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int8_t a8[64], b8[64];
    for (int i = 0; i < 64; i++) { a8[i] = 100; b8[i] = 100; }
    MPI_Reduce_local(a8, b8, 64, MPI_INT8_T, MPI_SUM);

    unsigned long ua[64], ub[64];
    for (int i = 0; i < 64; i++) { ua[i] = ULONG_MAX; ub[i] = 1; }
    MPI_Reduce_local(ua, ub, 64, MPI_UNSIGNED_LONG, MPI_MAX);

    unsigned ia[64], ib[64];
    for (int i = 0; i < 64; i++) { ia[i] = 3000000000u; ib[i] = 1; }
    MPI_Reduce_local(ia, ib, 64, MPI_UNSIGNED, MPI_MAX);

    double da[64], db[64];
    for (int i = 0; i < 64; i++) { da[i] = NAN; db[i] = 1.0; }
    MPI_Reduce_local(da, db, 64, MPI_DOUBLE, MPI_MAX);
    double ea[64], eb[64];
    for (int i = 0; i < 64; i++) { ea[i] = 1.0; eb[i] = NAN; }
    MPI_Reduce_local(ea, eb, 64, MPI_DOUBLE, MPI_MAX);

    printf("int8_sum %d\nulong_max %lu\nuint_max %u\nmax_nan_in %s\nmax_nan_inout %s\n", b8[63], ub[63], ib[63],
           isnan(db[63]) ? "nan" : "number", isnan(eb[63]) ? "nan" : "number");
    MPI_Finalize();
    return 0;
}
