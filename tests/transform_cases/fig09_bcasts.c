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
    /* every rank's copy, printed by rank 0 in rank order */
    double mine[3] = {mass, nrho, drho}, all[3 * 64];
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Gather(mine, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0; r < size && r < 64; r++)
            printf("%d: %g %d %g\n", r, all[3 * r], (int)all[3 * r + 1], all[3 * r + 2]);
    MPI_Finalize();
    return 0;
}
