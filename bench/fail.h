/* How a benchmark gives up, shared by mpiopt-allreduce, mpiopt-iallreduce and mpiopt-exchange:
 * only rank 0 talks, and every rank exits with the same status (2: usage, 1: a failed run).
 * BENCH_DEFINE_FAIL(linkage, "program") defines
 *     void fail(int status, const char *fmt, ...)
 * over the program's global `rank`. */
#ifndef MPIOPT_BENCH_FAIL_H
#define MPIOPT_BENCH_FAIL_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define BENCH_DEFINE_FAIL(LINKAGE, PROGRAM)                                                   \
    __attribute__((format(printf, 2, 3), noreturn)) LINKAGE void fail(int status,            \
                                                                      const char *fmt, ...) \
    {                                                                                         \
        if (rank == 0) {                                                                      \
            va_list ap;                                                                       \
            va_start(ap, fmt);                                                                \
            fputs(PROGRAM ": error: ", stderr);                                               \
            vfprintf(stderr, fmt, ap);                                                        \
            fputs("\n", stderr);                                                              \
            va_end(ap);                                                                       \
        }                                                                                     \
        MPI_Finalize();                                                                       \
        exit(status);                                                                         \
    }

#endif
