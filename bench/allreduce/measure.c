/* mpiopt-allreduce: buffers, validation and the timed loop. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "allreduce_bench.h"
#include "../shuffle.h"
#include "../start_together.h"

/* ---- buffers and validation ---- */

void *alloc_buffer(size_t bytes, int validate)
{
#ifdef SMPI_SHARED_MALLOC
    /* Under SimGrid every simulated rank lives in one process: share the timing buffers so
     * 1000 ranks x 8 MiB need no real memory. Validation needs private contents. */
    if (!validate)
        return SMPI_SHARED_MALLOC(bytes);
#endif
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        fail(1, "out of memory for a %zu-byte buffer", bytes);
    return p;
}

void free_buffer(void *p, int validate)
{
#ifdef SMPI_SHARED_MALLOC
    if (!validate) {
        SMPI_SHARED_FREE(p);
        return;
    }
#endif
    free(p);
}

static void store(const type_info *t, void *buf, size_t i, long long value)
{
    char *p = (char *)buf + i * t->size;
    if (t->kind == KIND_FLOAT) {
        if (t->size == sizeof(float)) {
            float f = (float)value;
            memcpy(p, &f, sizeof f);
        } else {
            double d = (double)value;
            memcpy(p, &d, sizeof d);
        }
        return;
    }
    /* integers: the low t->size bytes (little- or big-endian alike via the fixed-width types) */
    switch (t->size) {
    case 1: { uint8_t v = (uint8_t)value; memcpy(p, &v, 1); break; }
    case 2: { uint16_t v = (uint16_t)value; memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)value; memcpy(p, &v, 4); break; }
    default: { uint64_t v = (uint64_t)value; memcpy(p, &v, 8); break; }
    }
}

/* The value rank r contributes at element i in iteration it: small integers, so floating-point
 * sums are exact in any order and results fit even 8-bit types up to 42 ranks (beyond, an 8-bit
 * sum wraps, and `store` wraps the expected value alike). */
static long long contribution(const op_info *op, long long i, int r, int it)
{
    if (op->op == MPI_PROD)
        return (i + it) % nranks == r ? 2 : 1;  /* one factor 2 per element: no overflow */
    if (op->op == MPI_SUM)
        return (i + r + it) % 4;
    return (i * 7 + r * 3 + it) % 11;            /* max, min */
}

static long long expected(const op_info *op, long long i, int it)
{
    long long acc = contribution(op, i, 0, it);
    for (int r = 1; r < nranks; r++) {
        long long v = contribution(op, i, r, it);
        if (op->op == MPI_SUM) acc += v;
        else if (op->op == MPI_PROD) acc *= v;
        else if (op->op == MPI_MAX) acc = v > acc ? v : acc;
        else acc = v < acc ? v : acc;
    }
    return acc;
}

static void fill_send(const options *o, void *sendbuf, int count, int it)
{
    for (int i = 0; i < count; i++)
        store(o->type, sendbuf, (size_t)i, contribution(o->op, i, rank, it));
}

/* Number of elements that differ bitwise from the exact result. */
static int count_errors(const options *o, const void *recvbuf, int count, int it)
{
    char want[16];
    int errors = 0;
    for (int i = 0; i < count; i++) {
        store(o->type, want, 0, expected(o->op, i, it));
        errors += memcmp(want, (const char *)recvbuf + (size_t)i * o->type->size, o->type->size) != 0;
    }
    return errors;
}

/* ---- measurement ---- */

static int call(const options *o, mpiopt_algorithm alg, const void *sendbuf, void *recvbuf, int count)
{
    MPI_Datatype t = o->type->datatype;
    if (alg == MEMCPY_COLUMN) {
        memcpy(recvbuf, sendbuf, (size_t)count * o->type->size);
        return MPI_SUCCESS;
    }
    MPI_Op op = o->op->op;
    int mpi = alg == MPIOPT_ALG_AUTO && o->mpi_symbol;  /* through whatever is preloaded in front */
    int vendor = alg == MPIOPT_ALG_VENDOR;
    switch (o->operation) {
    case BENCH_REDUCE:
        return mpi      ? MPI_Reduce(sendbuf, recvbuf, count, t, op, 0, o->comm)
               : vendor ? PMPI_Reduce(sendbuf, recvbuf, count, t, op, 0, o->comm)
                        : mpiopt_reduce(sendbuf, recvbuf, count, t, op, 0, o->comm, alg);
    case BENCH_SCAN:
        return mpi      ? MPI_Scan(sendbuf, recvbuf, count, t, op, o->comm)
               : vendor ? PMPI_Scan(sendbuf, recvbuf, count, t, op, o->comm)
                        : mpiopt_scan(sendbuf, recvbuf, count, t, op, o->comm, alg);
    case BENCH_EXSCAN:
        return mpi      ? MPI_Exscan(sendbuf, recvbuf, count, t, op, o->comm)
               : vendor ? PMPI_Exscan(sendbuf, recvbuf, count, t, op, o->comm)
                        : mpiopt_exscan(sendbuf, recvbuf, count, t, op, o->comm, alg);
    case BENCH_REDUCE_SCATTER_BLOCK:
        count /= nranks;
        return mpi      ? MPI_Reduce_scatter_block(sendbuf, recvbuf, count, t, op, o->comm)
               : vendor ? PMPI_Reduce_scatter_block(sendbuf, recvbuf, count, t, op, o->comm)
                        : mpiopt_reduce_scatter_block(sendbuf, recvbuf, count, t, op, o->comm,
                                                      alg);
    case BENCH_REDUCE_SCATTER: {
        /* OSU's split: count / p each, the remainder one more on the first ranks */
        static int *counts;
        if (!counts && !(counts = malloc(sizeof(int) * (size_t)nranks)))
            return MPI_ERR_NO_MEM;
        for (int r = 0; r < nranks; r++)
            counts[r] = count / nranks + (r < count % nranks);
        return mpi      ? MPI_Reduce_scatter(sendbuf, recvbuf, counts, t, op, o->comm)
               : vendor ? PMPI_Reduce_scatter(sendbuf, recvbuf, counts, t, op, o->comm)
                        : mpiopt_reduce_scatter(sendbuf, recvbuf, counts, t, op, o->comm, alg);
    }
    default:
        return mpi      ? MPI_Allreduce(sendbuf, recvbuf, count, t, op, o->comm)
               : vendor ? PMPI_Allreduce(sendbuf, recvbuf, count, t, op, o->comm)
                        : mpiopt_allreduce(sendbuf, recvbuf, count, t, op, o->comm, alg);
    }
}


static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int measure_size(const options *o, long long size, void *sendbuf, void *recvbuf,
                        double *times, double *slowest, column_result *res)
{
    int count = (int)(size / (long long)o->type->size);
    int large = size > LARGE_MESSAGE_SIZE;
    int planned = large ? o->iterations_large : o->iterations;
    int warmup = large ? o->warmup_large : o->warmup;
    int done = 0;
    double total[MAX_COLUMNS] = { 0 };
    int errors[MAX_COLUMNS] = { 0 };
    int checks_here = o->validate && (o->operation == BENCH_ALLREDUCE || rank == 0);

    if (!o->validate && !o->fresh)
        fill_send(o, sendbuf, count, 0);
    mpiopt_barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int it = 0; it < warmup + planned; it++) {
        int order[MAX_COLUMNS];
        shuffle_columns(order, o->ncolumns, (unsigned)it);
        for (int k = 0; k < o->ncolumns; k++) {
            int c = order[k];
            /* --fresh (and --validation): new inputs every call, written before the barrier, as
             * an application computes them before it reduces: the other ranks find none of
             * them in their caches */
            if (o->validate || o->fresh) {
                fill_send(o, sendbuf, count, it);
                if (o->validate)
                    memset(recvbuf, 0xff, (size_t)size);
                mpiopt_barrier(MPI_COMM_WORLD);
            }
            start_together(MPI_COMM_WORLD);   /* SimGrid: one instant for all (the header says why) */
            double t0 = MPI_Wtime();
            int rc = call(o, o->columns[c], sendbuf, recvbuf, count);
            double t1 = MPI_Wtime();
            mpiopt_barrier(MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS)
                fail(1, "%s returned MPI error %d", column_name(o->columns[c]), rc);
            if (checks_here && o->columns[c] != MEMCPY_COLUMN)
                errors[c] += count_errors(o, recvbuf, count, it);
            if (it >= warmup) {
                total[c] += t1 - t0;
                times[c * planned + (it - warmup)] = t1 - t0;
            }
        }
        done = it >= warmup ? it - warmup + 1 : 0;
        /* --time-limit: rank 0's clock decides for everyone. Over the limit, the warm-up ends
         * (after one round) and the timing stops after MIN_TIMED rounds. */
        if (o->time_limit > 0 && done < planned && (done >= MIN_TIMED || it < warmup - 1)) {
            int over = rank == 0 && MPI_Wtime() - start > o->time_limit;
            PMPI_Bcast(&over, 1, MPI_INT, 0, MPI_COMM_WORLD);
            mpiopt_barrier(MPI_COMM_WORLD);  /* the next call starts together, as after a call */
            if (over && done >= MIN_TIMED)
                break;
            if (over)
                warmup = it + 1;  /* the next round is the first timed one */
        }
    }
    /* On a shared machine one descheduled rank can stretch a single call by milliseconds and
     * dominate an average: the median over iterations of the slowest rank's time is the robust
     * figure that comparisons between columns (mpiopt bench, mpiopt tune) use. */
    PMPI_Reduce(times, slowest, o->ncolumns * planned, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    for (int c = 0; c < o->ncolumns; c++) {
        double *col = slowest + c * planned;
        qsort(col, (size_t)done, sizeof *col, compare_doubles);
        res[c].median_us = 1e6 * (done % 2 ? col[done / 2] : 0.5 * (col[done / 2 - 1] + col[done / 2]));
    }
    for (int c = 0; c < o->ncolumns; c++) {
        double mine = total[c] * 1e6 / done, sum = 0;
        PMPI_Reduce(&mine, &res[c].min_us, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        PMPI_Reduce(&mine, &res[c].max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        PMPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        PMPI_Allreduce(&errors[c], &res[c].errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        res[c].avg_us = sum / nranks;
    }
    return done;
}
