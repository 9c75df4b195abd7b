/* mpiopt-allreduce: see allreduce_bench.h. */
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

/* --live-comms N: N duplicates of MPI_COMM_WORLD, each used as a program would (an 8-byte and a
 * 64 KiB allreduce, mpiopt's choice), kept alive until the end. */
static MPI_Comm *make_live_comms(int n)
{
    MPI_Comm *comms = calloc((size_t)(n > 0 ? n : 1), sizeof *comms);
    double *in = calloc(8192, sizeof(double)), *out = calloc(8192, sizeof(double));
    if (!comms || !in || !out)
        fail(1, "out of memory for %d communicators", n);
    for (int i = 0; i < n; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        mpiopt_allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, comms[i], MPIOPT_ALG_AUTO);
        mpiopt_allreduce(in, out, 8192, MPI_DOUBLE, MPI_SUM, comms[i], MPIOPT_ALG_AUTO);
    }
    free(in);
    free(out);
    return comms;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    options o;
    parse_options(argc, argv, &o);
    MPI_Comm *live = make_live_comms(o.live_comms);
    if (o.live_comms > 0)
        MPI_Comm_dup(MPI_COMM_WORLD, &o.comm);
    if (o.overhead) {
        run_overhead(&o);
        MPI_Finalize();
        return 0;
    }

    void *sendbuf = alloc_buffer((size_t)o.max_size, o.validate);
    void *recvbuf = alloc_buffer((size_t)o.max_size, o.validate);
    memset(recvbuf, 0, (size_t)o.max_size);

    if (rank == 0) {
        if (o.json)
            print_json_header(&o);
        else
            print_table_header(&o);
        fflush(stdout);
    }

    int most_iterations = o.iterations > o.iterations_large ? o.iterations : o.iterations_large;
    double *times = calloc((size_t)MAX_COLUMNS * (size_t)most_iterations, sizeof(double));
    double *slowest = calloc((size_t)MAX_COLUMNS * (size_t)most_iterations, sizeof(double));
    if (!times || !slowest)
        fail(1, "out of memory for %d iterations", most_iterations);
    column_result res[MAX_COLUMNS];
    int first = 1, failed_size = -1;
    char failed_algorithms[256] = "";
    for (int i = 0;; i++) {
        long long size = o.nlisted ? (i < o.nlisted ? o.listed[i] : LLONG_MAX)
                                   : (i < 62 ? o.min_size << i : LLONG_MAX);
        if (size > o.max_size)
            break;
        if (size / (long long)o.type->size == 0)
            continue;  /* as OSU: sizes below one element are skipped */
        int iterations = measure_size(&o, size, sendbuf, recvbuf, times, slowest, res);
        if (rank == 0) {
            if (o.json)
                print_json_rows(&o, size, iterations, res, &first);
            else
                print_table_row(&o, size, iterations, res);
        }
        for (int c = 0; c < o.ncolumns; c++)
            if (res[c].errors) {
                size_t used = strlen(failed_algorithms);
                snprintf(failed_algorithms + used, sizeof failed_algorithms - used, "%s%s",
                         used ? ", " : "", column_name(o.columns[c]));
            }
        if (failed_algorithms[0]) {
            failed_size = (int)size;
            break;  /* as OSU: stop at the first size with wrong results */
        }
    }
    if (rank == 0 && o.json)
        printf("\n ]}\n");
    fflush(stdout);

    free(times);
    free(slowest);
    free_buffer(sendbuf, o.validate);
    free_buffer(recvbuf, o.validate);
    if (failed_size >= 0)
        fail(1, "DATA VALIDATION ERROR: wrong results at message size %d from: %s", failed_size,
             failed_algorithms);
    if (o.comm != MPI_COMM_WORLD)
        MPI_Comm_free(&o.comm);
    for (int i = 0; i < o.live_comms; i++)
        MPI_Comm_free(&live[i]);
    free(live);
    MPI_Finalize();
    return 0;
}
