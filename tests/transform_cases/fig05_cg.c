/* The conjugate gradient loop of the paper's figure 5 (Jacobi-preconditioned CG on a
 * diagonally dominant tridiagonal system), blocking version. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define EPSILON 1.0e-20
#define MAX_ITERATIONS 50

static void SolvePrecondMatrix(const double *precond, double *h, const double *residue, int n)
{
    for (int i = 0; i < n; i++)
        h[i] = precond[i] * residue[i];
}

static double ComputeVectorDotProduct(const double *a, const double *b, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

int main(int argc, char **argv)
{
    int MyRank, NumProcs, Bloc_VectorSize = 6, iter = 0, index, i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &MyRank);
    MPI_Comm_size(MPI_COMM_WORLD, &NumProcs);
    int VectorSize = Bloc_VectorSize * NumProcs;
    double *Vector_X = calloc(VectorSize, sizeof(double));
    double *Bloc_Vector_X = calloc(Bloc_VectorSize, sizeof(double));
    double *Bloc_Direction_Vector = malloc(Bloc_VectorSize * sizeof(double));
    double *Bloc_Residue_Vector = malloc(Bloc_VectorSize * sizeof(double));
    double *Bloc_HVector = malloc(Bloc_VectorSize * sizeof(double));
    double *Bloc_Precond_Matrix = malloc(Bloc_VectorSize * sizeof(double));
    double *Buffer = malloc(Bloc_VectorSize * sizeof(double));
    double Tau = 0.05, Beta, Delta0 = 1.0, Delta1, Bloc_Delta1;
    for (index = 0; index < Bloc_VectorSize; index++) {
        int g = MyRank * Bloc_VectorSize + index;
        Bloc_Residue_Vector[index] = 1.0 + (g % 7);
        Bloc_Direction_Vector[index] = Bloc_Residue_Vector[index] / 4.0;
        Bloc_Precond_Matrix[index] = 1.0 / (4.0 + (g % 3));
        Buffer[index] = -0.5 * (g % 5);
    }
    do {
        /* one iteration: update x and r, then the new direction */
        iter++;
        for (index = 0; index < Bloc_VectorSize; index++) {
            Bloc_Vector_X[index] = Vector_X[MyRank * Bloc_VectorSize + index] + Tau *
                Bloc_Direction_Vector[index];
            Bloc_Residue_Vector[index] = Bloc_Residue_Vector[index] + Tau * Buffer[index];
        }
        MPI_Allgather(Bloc_Vector_X, Bloc_VectorSize, MPI_DOUBLE, Vector_X, Bloc_VectorSize,
                      MPI_DOUBLE, MPI_COMM_WORLD);
        SolvePrecondMatrix(Bloc_Precond_Matrix, Bloc_HVector, Bloc_Residue_Vector,
                           Bloc_VectorSize);
        Bloc_Delta1 = ComputeVectorDotProduct(Bloc_Residue_Vector, Bloc_HVector, Bloc_VectorSize);
        MPI_Allreduce(&Bloc_Delta1, &Delta1, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        Beta = Delta1 / Delta0;
        Delta0 = Delta1;
        for (i = 0; i < Bloc_VectorSize; i++) {
            Bloc_Direction_Vector[i] = -Bloc_HVector[i] + Beta * Bloc_Direction_Vector[i];
        }
    } while (Delta0 > EPSILON && iter < MAX_ITERATIONS);
    if (MyRank == 0) {
        for (i = 0; i < VectorSize; i++)
            printf("x[%d] = %.6e\n", i, Vector_X[i]);
        printf("iterations %d delta %.6e\n", iter, Delta0);
    }
    free(Vector_X); free(Bloc_Vector_X); free(Bloc_Direction_Vector); free(Bloc_Residue_Vector);
    free(Bloc_HVector); free(Bloc_Precond_Matrix); free(Buffer);
    MPI_Finalize();
    return 0;
}
