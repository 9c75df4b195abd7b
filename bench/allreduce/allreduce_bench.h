/* mpiopt-allreduce: an osu_allreduce-compatible latency benchmark for mpiopt's allreduce and
 * reduce algorithms and the vendor's.
 *
 * Options and output follow OSU's osu_allreduce (-m [min:]max, -i, -x, -f, -T, -c; a
 * "# Size  Avg Latency(us)" table), so scripts written for OSU read it. Additions:
 *   -m A,B,C               a list of sizes instead of a doubling range (one run for sizes far
 *                          apart: a simulated 1023-rank job takes minutes just to start)
 *   --algorithms LIST|all  one column per algorithm; all of them are measured in the same run,
 *                          interleaved call by call, so machine noise hits every column alike;
 *                          "memcpy": the floor (every rank copies input to output at once)
 *   --json                 one JSON document instead of the table
 *   --op NAME, --reduce    another reduction op; MPI_Reduce (root 0) instead of MPI_Allreduce
 *   --overhead             ns per call the interposed MPI_Allreduce / MPI_Reduce adds to the
 *                          vendor's when it hands the call over (overhead.c)
 *   bandwidth              bytes / average time (MB/s, 1 MB = 1e6 B), as in Rabenseifner's charts
 *
 * The "vendor" column calls PMPI_Allreduce / PMPI_Reduce directly, so it measures the MPI
 * library's own collective even when libmpiopt is LD_PRELOADed and interposes MPI_Allreduce.
 * Timing is OSU's: MPI_Wtime around each call, a barrier after it; the reported average is the
 * mean over ranks of each rank's average, min/max (-f) the extremes of those per-rank averages.
 * The barrier is mpiopt_barrier: the vendor's, except with more ranks than cores, where a
 * barrier that polls keeps the next call of every column from starting together.
 *
 * Plain MPI C: it also builds with SimGrid's smpicc (see the SMPI block in alloc_buffer).
 *
 * Sources: options.c (command line, types, ops, the algorithm list), measure.c (buffers,
 * validation, the timed loop), output.c (the OSU table and JSON), main.c. */
#ifndef MPIOPT_ALLREDUCE_BENCH_H
#define MPIOPT_ALLREDUCE_BENCH_H

#include <stddef.h>
#include <stdio.h>
#include <mpi.h>
#include "mpiopt.h"

/* OSU's defaults and its switch to fewer iterations above 8 KiB */
#define DEFAULT_MIN_SIZE 1
#define DEFAULT_MAX_SIZE (1 << 20)
#define DEFAULT_ITERATIONS 1000
#define DEFAULT_ITERATIONS_LARGE 100
#define DEFAULT_WARMUP 200
#define DEFAULT_WARMUP_LARGE 10
#define LARGE_MESSAGE_SIZE 8192
#define FIELD_WIDTH 18
#define FLOAT_PRECISION 2
#define MIN_TIMED 3  /* --time-limit never cuts a size to fewer timed iterations */

/* The algorithm column "vendor" is PMPI_*; the others go through mpiopt_allreduce/_reduce, but
 * for "memcpy": every rank copies its input to its output, all at once, as an allreduce must at
 * least read every input and write every output: the machine's floor for the call (memory
 * traffic that cannot be avoided), to see how far from it the algorithms are. */
#define MEMCPY_COLUMN ((mpiopt_algorithm)MPIOPT_ALG_COUNT)
enum { MAX_COLUMNS = MPIOPT_ALG_COUNT + 1 };

static inline const char *column_name(mpiopt_algorithm a)
{
    return a == MEMCPY_COLUMN ? "memcpy" : mpiopt_algorithm_name(a);
}

typedef enum { KIND_SIGNED, KIND_UNSIGNED, KIND_FLOAT } value_kind;

typedef struct {
    const char *name;      /* as given to -T, without the optional "mpi_" prefix */
    MPI_Datatype datatype;
    const char *mpi_name;  /* printed in "# Datatype: ..." (OSU prints MPI_Type_get_name) */
    value_kind kind;
    size_t size;
} type_info;

typedef struct {
    const char *name;
    MPI_Op op;
    const char *mpi_name;
} op_info;

#define MAX_LISTED_SIZES 64

/* The collective measured: --reduce (to root 0), --scan, --exscan, else MPI_Allreduce. */
/* BENCH_SCAN and later: checked by the test programs, not --validation. A reduce-scatter's size
 * is its whole send buffer, OSU's figure (osu_reduce_scatter): each rank receives a p-th. */
typedef enum {
    BENCH_ALLREDUCE,
    BENCH_REDUCE,
    BENCH_SCAN,
    BENCH_EXSCAN,
    BENCH_REDUCE_SCATTER_BLOCK,
    BENCH_REDUCE_SCATTER
} bench_operation;

typedef struct {
    long long min_size, max_size;
    int nlisted;                            /* -m A,B,C: these sizes instead of doubling */
    long long listed[MAX_LISTED_SIZES];
    int iterations, iterations_large, warmup, warmup_large;
    int full, validate, json;
    int fresh;          /* --fresh: the send buffer written before every call, as applications
                         * do (untimed); else left unchanged between calls, as OSU does */
    bench_operation operation;
    int mpi_symbol;     /* --mpi-symbol: the auto column calls MPI_Allreduce / MPI_Reduce */
    int overhead;       /* --overhead: the hand-off cost of the entry points (overhead.c) */
    double time_limit;  /* seconds per message size, 0 = none */
    int live_comms;     /* --live-comms N: N other communicators alive, each used, first */
    MPI_Comm comm;      /* the calls' communicator: MPI_COMM_WORLD, or a duplicate made after
                         * the live ones */
    const type_info *type;
    const op_info *op;
    int ncolumns;
    mpiopt_algorithm columns[MAX_COLUMNS];
} options;

typedef struct {
    double avg_us, min_us, max_us;  /* over ranks, of each rank's average (OSU's statistics) */
    double median_us;               /* median over iterations of the slowest rank's time */
    int errors;                     /* wrong elements summed over ranks and iterations */
} column_result;

extern int rank, nranks;

/* Only rank 0 talks; the others exit quietly with the same status. */
void fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* options.c */
void parse_options(int argc, char **argv, options *o);

/* measure.c */
void *alloc_buffer(size_t bytes, int validate);
void free_buffer(void *p, int validate);
/* Measures every column at one size; returns the number of timed iterations done (fewer than
 * asked when --time-limit stops it). `times` and `slowest` have room for MAX_COLUMNS x the larger
 * iteration count. */
int measure_size(const options *o, long long size, void *sendbuf, void *recvbuf, double *times,
                 double *slowest, column_result *res);

/* overhead.c: --overhead, printed by rank 0 */
void run_overhead(const options *o);

/* output.c */
void print_table_header(const options *o);
void print_table_row(const options *o, long long size, int iterations, const column_result *res);
void print_json_header(const options *o);
void print_json_rows(const options *o, long long size, int iterations, const column_result *res,
                     int *first);

#endif
