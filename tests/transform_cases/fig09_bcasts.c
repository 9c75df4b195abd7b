#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    double mass = 0, drho = 0;
    int nrho = 0, rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) { mass = 1.5; nrho = 7; drho = 0.25; }
    /* three independent broadcasts (miniMD) */
    MPI_Bcast(&mass, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Bcast(&nrho, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&drho, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    printf("%d: %g %d %g\n", rank, mass, nrho, drho);
    MPI_Finalize();
    return 0;
}
