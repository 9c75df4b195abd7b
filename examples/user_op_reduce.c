/* The KNL study's reduction benchmark in C (twin of user_op_reduce.f90): MPI_Reduce of --count
 * floats per rank (default 2^26; the study used 2^30) to rank 0 with
 *   mpi_sum     the predefined MPI_SUM
 *   serial      a user-defined sum compiled without vectorization
 *   vectorized  the same sum as an `omp simd` loop
 *   threaded    the vectorized sum as mpiopt_op_create_threaded (chunks as OpenMP tasks)
 * and prints, from rank 0, `VARIANT SECONDS` (the mean of --reps calls, after one warm-up) and
 * checks every variant's result (small integers: sums are exact in any order).
 * Build: mpicc -O3 -march=native -fopenmp -I include user_op_reduce.c -L LIB -lmpiopt
 * Run:   mpirun -n 2 ./user_op_reduce --count 67108864 [--reps 10] [--variants serial,threaded]
 *        ./user_op_reduce --local ...   the op alone: MPI_Reduce_local on each rank, no messages */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpiopt.h"

__attribute__((optimize("no-tree-vectorize")))
static void serial_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const float *a = in;
    float *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

static void vectorized_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const float *restrict a = in;
    float *restrict b = inout;
#pragma omp simd
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

static long parse_count(const char *s)
{
    if (strncmp(s, "2^", 2) == 0)
        return 1L << atoi(s + 2);
    return atol(s);
}

int main(int argc, char **argv)
{
    long count = 1L << 26;
    int reps = 10;
    const char *variants = "mpi_sum,serial,vectorized,threaded";
    int local = 0;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = parse_count(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--variants") && i + 1 < argc)
            variants = argv[++i];
        else if (!strcmp(argv[i], "--local"))
            local = 1;
        else {
            if (rank == 0)
                fprintf(stderr, "user_op_reduce: unknown argument %s (--count N|2^K, --reps R, "
                                "--variants a,b, --local)\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (count <= 0 || count > 2147483647L || reps <= 0) {
        if (rank == 0)
            fprintf(stderr, "user_op_reduce: --count must be 1..2^31-1 and --reps positive\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    float *send = malloc(count * sizeof *send), *recv = malloc(count * sizeof *recv);
    if (!send || !recv) {
        fprintf(stderr, "user_op_reduce: cannot allocate 2 x %ld floats\n", count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < count; i++)
        send[i] = (float)((i + rank) % 64);
    MPI_Op serial, vectorized, threaded;
    MPI_Op_create(serial_sum, 1, &serial);
    MPI_Op_create(vectorized_sum, 1, &vectorized);
    mpiopt_op_create_threaded(vectorized_sum, 1, &threaded);
    struct { const char *name; MPI_Op op; } all[] = {
        { "mpi_sum", MPI_SUM }, { "serial", serial }, { "vectorized", vectorized },
        { "threaded", threaded },
    };
    int bad = 0;
    for (size_t v = 0; v < sizeof all / sizeof all[0]; v++) {
        if (!strstr(variants, all[v].name))
            continue;
        double total = 0;
        for (int r = -1; r < reps; r++) {
            if (local)    /* recv = send + send, from a fresh copy each time (not timed) */
                memcpy(recv, send, count * sizeof *recv);
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime();
            if (local)
                MPI_Reduce_local(send, recv, (int)count, MPI_FLOAT, all[v].op);
            else
                MPI_Reduce(send, recv, (int)count, MPI_FLOAT, all[v].op, 0, MPI_COMM_WORLD);
            t = MPI_Wtime() - t;
            if (r >= 0)
                total += t;
        }
        if (rank == 0) {
            for (long i = 0; i < count; i++) {
                float want = 0;
                for (int p = 0; p < size; p++)
                    want += (float)((i + p) % 64);
                if (local)
                    want = 2 * (float)(i % 64);
                if (recv[i] != want) {
                    fprintf(stderr, "user_op_reduce: %s wrong at %ld\n", all[v].name, i);
                    bad = 1;
                    break;
                }
            }
            printf("%s %.6f\n", all[v].name, total / reps);
        }
    }
    MPI_Op_free(&serial);
    MPI_Op_free(&vectorized);
    MPI_Op_free(&threaded);
    free(send);
    free(recv);
    MPI_Finalize();
    return bad;
}
