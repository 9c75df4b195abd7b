/* The KNL study's overlap sketch (its figure 2): MPI_Reduce with a user-defined sum runs as an
 * OpenMP task of priority 1 while a taskloop of priority 0 does independent work; `taskwait`
 * comes before the buffers are reused. Only one thread calls MPI at a time, but not necessarily
 * the main one (the task may run on any thread), so MPI_THREAD_SERIALIZED is required; the
 * program asks for MULTIPLE, prints what it got, and stops if it is below SERIALIZED.
 * Prints from rank 0: `reduce SECONDS`, `work SECONDS`, `sequential SECONDS` (reduce then work)
 * and `overlapped SECONDS` (the task beside the taskloop), each the mean of --reps rounds.
 * Build: mpicc -O3 -march=native -fopenmp user_op_overlap.c
 * Run:   OMP_NUM_THREADS=2 OMP_MAX_TASK_PRIORITY=1 mpirun -n 2 --bind-to none ./user_op_overlap */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const float *restrict a = in;
    float *restrict b = inout;
#pragma omp simd
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

/* Independent work: a compute-bound update of an array the reduction does not touch. */
static void work(double *x, long n, int sweeps)
{
#pragma omp taskloop priority(0) grainsize(4096)
    for (long i = 0; i < n; i++) {
        double v = x[i];
        for (int s = 0; s < sweeps; s++)
            v = sqrt(v * v + 1.0) * 0.5;
        x[i] = v;
    }
}

int main(int argc, char **argv)
{
    long count = 1L << 26, work_n = 1L << 21;
    int reps = 5, sweeps = 4, provided;   /* default work ~ the 2^26-float reduction here */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = strncmp(argv[i + 1], "2^", 2) ? atol(argv[i + 1]) : 1L << atoi(argv[i + 1] + 2), i++;
        else if (!strcmp(argv[i], "--work") && i + 1 < argc)
            work_n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--sweeps") && i + 1 < argc)
            sweeps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            if (rank == 0)
                fprintf(stderr, "user_op_overlap: unknown argument %s (--count N|2^K, --work N, "
                                "--sweeps S, --reps R)\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    const char *level = provided == MPI_THREAD_MULTIPLE ? "MULTIPLE"
                      : provided == MPI_THREAD_SERIALIZED ? "SERIALIZED"
                      : provided == MPI_THREAD_FUNNELED ? "FUNNELED" : "SINGLE";
    if (rank == 0)
        printf("thread level %s (SERIALIZED needed)\n", level);
    if (provided < MPI_THREAD_SERIALIZED) {
        if (rank == 0)
            fprintf(stderr, "user_op_overlap: the MPI provides only MPI_THREAD_%s\n", level);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (count <= 0 || count > 2147483647L || work_n <= 0 || reps <= 0 || sweeps < 0) {
        if (rank == 0)
            fprintf(stderr, "user_op_overlap: sizes and --reps must be positive\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    float *send = malloc(count * sizeof *send), *recv = malloc(count * sizeof *recv);
    double *x = malloc(work_n * sizeof *x);
    for (long i = 0; i < count; i++)
        send[i] = (float)(i % 7);
    MPI_Op op;
    MPI_Op_create(user_sum, 1, &op);
    double t_reduce = 0, t_work = 0, t_seq = 0, t_over = 0;
    for (int r = -1; r < reps; r++) {
        for (long i = 0; i < work_n; i++)
            x[i] = (double)i;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Reduce(send, recv, (int)count, MPI_FLOAT, op, 0, MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
#pragma omp parallel
#pragma omp single
        work(x, work_n, sweeps);
        double t2 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        double t3 = MPI_Wtime();
#pragma omp parallel
#pragma omp single
        {
#pragma omp task priority(1)
            MPI_Reduce(send, recv, (int)count, MPI_FLOAT, op, 0, MPI_COMM_WORLD);
            work(x, work_n, sweeps);
#pragma omp taskwait
        }
        double t4 = MPI_Wtime();
        if (r >= 0) {
            t_reduce += t1 - t0;
            t_work += t2 - t1;
            t_seq += t2 - t0;
            t_over += t4 - t3;
        }
    }
    if (rank == 0)
        printf("reduce %.6f\nwork %.6f\nsequential %.6f\noverlapped %.6f\ncheck %.1f %.6f\n",
               t_reduce / reps, t_work / reps, t_seq / reps, t_over / reps, recv[count - 1], x[work_n - 1]);
    MPI_Op_free(&op);
    free(send);
    free(recv);
    free(x);
    MPI_Finalize();
    return 0;
}
