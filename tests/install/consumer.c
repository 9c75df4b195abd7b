/* A program outside mpiopt's tree that uses its C API, built against an installed mpiopt by
 * find_package(mpiopt) (CMakeLists.txt here) or by pkg-config (tests/python/test_install.py).
 * Every rank checks an mpiopt_allreduce sum and an mpiopt_reduce_local; rank 0 prints
 * "consumer: ok <ranks> <kernel ISA>". */
#include <stdio.h>
#include <mpiopt.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    enum { N = 1000 };
    static double in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = rank + i;
    int bad = mpiopt_allreduce(in, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                               MPIOPT_ALG_AUTO) != MPI_SUCCESS;
    for (int i = 0; i < N; i++)     /* sum over ranks of rank + i: exact in doubles */
        bad |= out[i] != (double)size * (size - 1) / 2 + (double)size * i;
    bad |= mpiopt_reduce_local(in, out, N, MPI_DOUBLE, MPI_MAX) != MPI_SUCCESS;

    int anybad = 1;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0)
        printf("consumer: %s %d %s\n", anybad ? "FAILED" : "ok", size, mpiopt_kernel_isa());
    MPI_Finalize();
    return anybad;
}
