/* Preconditioned conjugate gradient, row-distributed, written after figure 5 of the Petal paper
 * (Ahmed et al., EuroMPI/USA '17): every iteration gathers the search direction and the new
 * iterate with MPI_Allgather and reduces two dot products with MPI_Allreduce.
 *
 * The matrix A[i][j] = exp(-|i-j|/16) + 0.05 (i == j) is symmetric positive definite (the
 * exponential kernel is positive definite), conditioned so that CG needs tens of iterations; b[i] = 1 + i % 7. The preconditioner is
 * block Jacobi with dense 16x16 diagonal blocks, inverted once before the loop, so applying it is
 * real work that does not touch the gathered iterate: that is what lets a nonblocking
 * MPI_Iallgather of Vector_X overlap with it.
 *
 * Usage: cg [-n SIZE] [-i MAX_ITERS]   (SIZE rows in total, spread over the ranks)
 *
 * Output: the iteration count (integer) and floating results printed with %.10e. Floating results
 * of a nonblocking or persistent version may differ from the blocking one in the last bits,
 * because MPI may sum the ranks' partial dot products in another order; compare them with a
 * relative tolerance (1e-8 in tests/python/difftest.py), not bitwise.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRECOND_BLOCK 16
#define EPSILON 1.0e-20 /* relative to the first delta */

static double matrix_entry(int i, int j)
{
    return exp(-fabs((double)(i - j)) / 16.0) + (i == j ? 0.05 : 0.0);
}

/* Inverts the n x n matrix a (row-major) into inv by Gauss-Jordan elimination; a is destroyed.
 * The blocks are SPD, so no pivoting is needed. */
static void invert_block(double *a, double *inv, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            inv[i * n + j] = (i == j) ? 1.0 : 0.0;
    for (int k = 0; k < n; k++) {
        double pivot = a[k * n + k];
        for (int j = 0; j < n; j++) {
            a[k * n + j] /= pivot;
            inv[k * n + j] /= pivot;
        }
        for (int i = 0; i < n; i++) {
            if (i == k)
                continue;
            double f = a[i * n + k];
            for (int j = 0; j < n; j++) {
                a[i * n + j] -= f * a[k * n + j];
                inv[i * n + j] -= f * inv[k * n + j];
            }
        }
    }
}

/* H = M^-1 r with M the block-diagonal part of the local rows (blocks of PRECOND_BLOCK). */
static void SolvePrecondMatrix(const double *precond, double *h, const double *r, int n)
{
    for (int start = 0; start < n; start += PRECOND_BLOCK) {
        int bs = (n - start < PRECOND_BLOCK) ? n - start : PRECOND_BLOCK;
        const double *inv = precond + (size_t)start * PRECOND_BLOCK;
        for (int i = 0; i < bs; i++) {
            double s = 0.0;
            for (int j = 0; j < bs; j++)
                s += inv[i * bs + j] * r[start + j];
            h[start + i] = s;
        }
    }
}

static double ComputeVectorDotProduct(const double *a, const double *b, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* out = A_local * v, A_local being the n_local x n_global rows this rank owns. */
static void MatrixVectorProduct(const double *a, const double *v, double *out, int n_local, int n_global)
{
    for (int i = 0; i < n_local; i++) {
        double s = 0.0;
        const double *row = a + (size_t)i * n_global;
        for (int j = 0; j < n_global; j++)
            s += row[j] * v[j];
        out[i] = s;
    }
}

static int parse_args(int argc, char **argv, int *size, int *iters)
{
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "-n") == 0)
            *size = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-i") == 0)
            *iters = atoi(argv[++i]);
        else
            return -1;
    }
    return (*size > 0 && *iters > 0) ? 0 : -1;
}

int main(int argc, char **argv)
{
    int MyRank, Numprocs;
    int VectorSize = 64, MaxIterations = 50;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &MyRank);
    MPI_Comm_size(MPI_COMM_WORLD, &Numprocs);
    if (parse_args(argc, argv, &VectorSize, &MaxIterations) != 0) {
        if (MyRank == 0)
            fprintf(stderr, "usage: cg [-n SIZE] [-i MAX_ITERS]  (SIZE, MAX_ITERS > 0)\n");
        MPI_Finalize();
        return 2;
    }
    /* MPI_Allgather needs equal pieces: round the size up to a multiple of the rank count. */
    int Bloc_VectorSize = (VectorSize + Numprocs - 1) / Numprocs;
    VectorSize = Bloc_VectorSize * Numprocs;
    int first_row = MyRank * Bloc_VectorSize;

    double *Bloc_Matrix_A = malloc(sizeof(double) * (size_t)Bloc_VectorSize * VectorSize);
    double *Bloc_Precond_Matrix = calloc((size_t)Bloc_VectorSize * PRECOND_BLOCK, sizeof(double));
    double *block = malloc(sizeof(double) * PRECOND_BLOCK * PRECOND_BLOCK);
    double *Vector_X = calloc((size_t)VectorSize, sizeof(double));
    double *Direction_Vector = malloc(sizeof(double) * VectorSize);
    double *Bloc_Vector_X = malloc(sizeof(double) * Bloc_VectorSize);
    double *Bloc_Residue_Vector = calloc((size_t)Bloc_VectorSize, sizeof(double));
    double *Bloc_HVector = malloc(sizeof(double) * Bloc_VectorSize);
    double *Bloc_Direction_Vector = malloc(sizeof(double) * Bloc_VectorSize);
    double *Buffer = malloc(sizeof(double) * Bloc_VectorSize);

    for (int i = 0; i < Bloc_VectorSize; i++)
        for (int j = 0; j < VectorSize; j++)
            Bloc_Matrix_A[(size_t)i * VectorSize + j] = matrix_entry(first_row + i, j);
    for (int start = 0; start < Bloc_VectorSize; start += PRECOND_BLOCK) {
        int bs = (Bloc_VectorSize - start < PRECOND_BLOCK) ? Bloc_VectorSize - start : PRECOND_BLOCK;
        for (int i = 0; i < bs; i++)
            for (int j = 0; j < bs; j++)
                block[i * bs + j] = matrix_entry(first_row + start + i, first_row + start + j);
        invert_block(block, Bloc_Precond_Matrix + (size_t)start * PRECOND_BLOCK, bs);
    }

    /* x = 0, so the residue A x - b is -b; first direction -H. */
    for (int i = 0; i < Bloc_VectorSize; i++)
        Bloc_Residue_Vector[i] = -(1.0 + (first_row + i) % 7);
    SolvePrecondMatrix(Bloc_Precond_Matrix, Bloc_HVector, Bloc_Residue_Vector, Bloc_VectorSize);
    for (int i = 0; i < Bloc_VectorSize; i++)
        Bloc_Direction_Vector[i] = -Bloc_HVector[i];
    double Bloc_Delta0 = ComputeVectorDotProduct(Bloc_Residue_Vector, Bloc_HVector, Bloc_VectorSize);
    double Delta0, Delta1, Bloc_Delta1, Bloc_DirAdir, DirAdir, Tau, Beta;
    MPI_Allreduce(&Bloc_Delta0, &Delta0, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double FirstDelta = Delta0;

    double t0 = MPI_Wtime();
    int iter = 0;
    do {
        MPI_Allgather(Bloc_Direction_Vector, Bloc_VectorSize, MPI_DOUBLE, Direction_Vector,
                      Bloc_VectorSize, MPI_DOUBLE, MPI_COMM_WORLD);
        MatrixVectorProduct(Bloc_Matrix_A, Direction_Vector, Buffer, Bloc_VectorSize, VectorSize);
        Bloc_DirAdir = ComputeVectorDotProduct(Bloc_Direction_Vector, Buffer, Bloc_VectorSize);
        MPI_Allreduce(&Bloc_DirAdir, &DirAdir, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        Tau = Delta0 / DirAdir;

        iter++;
        for (int index = 0; index < Bloc_VectorSize; index++) {
            Bloc_Vector_X[index] = Vector_X[MyRank * Bloc_VectorSize + index] + Tau * Bloc_Direction_Vector[index];
            Bloc_Residue_Vector[index] = Bloc_Residue_Vector[index] + Tau * Buffer[index];
        }
        MPI_Allgather(Bloc_Vector_X, Bloc_VectorSize, MPI_DOUBLE, Vector_X, Bloc_VectorSize,
                      MPI_DOUBLE, MPI_COMM_WORLD);
        SolvePrecondMatrix(Bloc_Precond_Matrix, Bloc_HVector, Bloc_Residue_Vector, Bloc_VectorSize);
        Bloc_Delta1 = ComputeVectorDotProduct(Bloc_Residue_Vector, Bloc_HVector, Bloc_VectorSize);
        MPI_Allreduce(&Bloc_Delta1, &Delta1, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        Beta = Delta1 / Delta0;
        Delta0 = Delta1;
        for (int i = 0; i < Bloc_VectorSize; i++)
            Bloc_Direction_Vector[i] = -Bloc_HVector[i] + Beta * Bloc_Direction_Vector[i];
    } while (Delta0 > EPSILON * FirstDelta && iter < MaxIterations);
    double elapsed = MPI_Wtime() - t0;

    /* Vector_X holds the whole solution on every rank. */
    double sum_x = 0.0, weighted_x = 0.0;
    for (int i = 0; i < VectorSize; i++) {
        sum_x += Vector_X[i];
        weighted_x += Vector_X[i] * (double)(i % 13);
    }
    if (MyRank == 0) {
        printf("cg size %d ranks %d\n", VectorSize, Numprocs);
        printf("iterations %d\n", iter);
        printf("sum_x %.10e\n", sum_x);
        printf("weighted_x %.10e\n", weighted_x);
        printf("x_first %.10e\n", Vector_X[0]);
        printf("x_last %.10e\n", Vector_X[VectorSize - 1]);
        fprintf(stderr, "time %.6f\n", elapsed);
    }

    free(Bloc_Matrix_A);
    free(Bloc_Precond_Matrix);
    free(block);
    free(Vector_X);
    free(Direction_Vector);
    free(Bloc_Vector_X);
    free(Bloc_Residue_Vector);
    free(Bloc_HVector);
    free(Bloc_Direction_Vector);
    free(Buffer);
    MPI_Finalize();
    return 0;
}
