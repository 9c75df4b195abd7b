/* An unmodified MPI program with user-defined ops, for the MPIOPT_USER_OP_THREADS drop-in:
 * a commutative wrapping int sum and an exact double sum (results independent of combination
 * order, so every algorithm must match the reference bit for bit) and a non-commutative 2x2
 * unsigned matrix product (rank order must be kept). Through MPI_Allreduce, MPI_Reduce and
 * MPI_Reduce_local, at small, odd and large counts. Prints "user_op: ok" and how many calls of
 * each user function ran on a thread other than the main one (threading happened or not). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

static pthread_t main_thread;
static long other_commutative, other_ordered;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_thread(long *counter)
{
    if (!pthread_equal(pthread_self(), main_thread)) {
        pthread_mutex_lock(&count_lock);
        (*counter)++;
        pthread_mutex_unlock(&count_lock);
    }
}

static void int_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    note_thread(&other_commutative);
    unsigned *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

static void double_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    note_thread(&other_commutative);
    double *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

/* inout = in x inout for 2x2 matrices stored as 4 unsigned: MPI's order (in is the lower rank). */
static void mat_mul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    note_thread(&other_ordered);
    unsigned *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        unsigned r[4] = { a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                          a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3] };
        memcpy(b, r, sizeof r);
    }
}

static unsigned value(int rank, size_t i) { return (unsigned)(rank * 2654435761u + i * 40503u); }

static int failures;
#define CHECK(cond, ...) do { if (!(cond) && failures++ < 10) { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

int main(int argc, char **argv)
{
    main_thread = pthread_self();
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op op_int, op_double, op_mat;
    MPI_Op_create(int_sum, 1, &op_int);
    MPI_Op_create(double_sum, 1, &op_double);
    MPI_Op_create(mat_mul, 0, &op_mat);
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_UNSIGNED, &mat);
    MPI_Type_commit(&mat);

    size_t counts[] = { 1, 3, 1001, 300007 };
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        size_t n = counts[k];
        unsigned *ui = malloc(n * sizeof *ui), *uo = malloc(n * sizeof *uo);
        double *di = malloc(n * sizeof *di), *dout = malloc(n * sizeof *dout);
        for (size_t i = 0; i < n; i++) {
            ui[i] = value(rank, i);
            di[i] = (double)(value(rank, i) % 100000) - 50000.0;
        }
        MPI_Allreduce(ui, uo, (int)n, MPI_UNSIGNED, op_int, MPI_COMM_WORLD);
        MPI_Allreduce(di, dout, (int)n, MPI_DOUBLE, op_double, MPI_COMM_WORLD);
        for (size_t i = 0; i < n; i++) {
            unsigned us = 0;
            double ds = 0;
            for (int r = 0; r < size; r++) {
                us += value(r, i);
                ds += (double)(value(r, i) % 100000) - 50000.0;
            }
            CHECK(uo[i] == us && dout[i] == ds, "allreduce n=%zu i=%zu", n, i);
            if (uo[i] != us || dout[i] != ds)
                break;
        }
        memset(uo, 0, n * sizeof *uo);
        MPI_Reduce(ui, uo, (int)n, MPI_UNSIGNED, op_int, size - 1, MPI_COMM_WORLD);
        if (rank == size - 1)
            for (size_t i = 0; i < n; i++) {
                unsigned us = 0;
                for (int r = 0; r < size; r++)
                    us += value(r, i);
                CHECK(uo[i] == us, "reduce n=%zu i=%zu", n, i);
                if (uo[i] != us)
                    break;
            }
        for (size_t i = 0; i < n; i++)
            uo[i] = 7;
        MPI_Reduce_local(ui, uo, (int)n, MPI_UNSIGNED, op_int);
        for (size_t i = 0; i < n; i++)
            if (uo[i] != ui[i] + 7) {
                CHECK(0, "reduce_local n=%zu i=%zu", n, i);
                break;
            }
        /* non-commutative: rank order */
        size_t m = n < 4096 ? n : 4096;
        unsigned *mi = malloc(m * 16), *mo = malloc(m * 16), ref[4];
        for (size_t i = 0; i < m * 4; i++)
            mi[i] = value(rank, i) | 1;
        MPI_Allreduce(mi, mo, (int)m, mat, op_mat, MPI_COMM_WORLD);
        for (size_t i = 0; i < m; i++) {
            for (int j = 0; j < 4; j++)
                ref[j] = value(size - 1, 4 * i + j) | 1;
            for (int r = size - 2; r >= 0; r--) {
                unsigned a[4];
                for (int j = 0; j < 4; j++)
                    a[j] = value(r, 4 * i + j) | 1;
                int one = 1;
                MPI_Datatype t = mat;
                mat_mul(a, ref, &one, &t);
            }
            if (memcmp(ref, mo + 4 * i, sizeof ref) != 0) {
                CHECK(0, "non-commutative allreduce n=%zu i=%zu", m, i);
                break;
            }
        }
        free(ui); free(uo); free(di); free(dout); free(mi); free(mo);
    }
    MPI_Op_free(&op_int);
    MPI_Op_free(&op_double);
    MPI_Op_free(&op_mat);
    MPI_Type_free(&mat);
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("user_op: ok\n");
    long mine[2] = { other_commutative, other_ordered }, sums[2];
    MPI_Reduce(mine, sums, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("other-thread calls: commutative %ld, non-commutative %ld\n", sums[0], sums[1]);
    MPI_Finalize();
    return all != 0;
}
