/* Threaded user ops use their threads with the default chunking: a 64 MiB float sum through
 * mpiopt_op_create_threaded, called by MPI_Reduce_local with two threads, must run its user
 * function on both. The user function marks the OpenMP thread that ran each chunk. (With a task
 * a chunk, libgomp ran every task in the creating thread: one thread did all the work.) The
 * result is checked too. A thread slowed by the machine may miss one call, so up to 20 calls
 * are made, each of 64 MiB (milliseconds: time for a sleeping worker to wake on a busy machine);
 * the test fails only if no call ever ran on two threads. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include "mpiopt.h"

static unsigned threads_seen;    /* bit t: OpenMP thread t ran a chunk */

static void marking_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const float *a = in;
    float *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
    __atomic_fetch_or(&threads_seen, 1u << (omp_get_thread_num() & 31), __ATOMIC_RELAXED);
}

int main(int argc, char **argv)
{
    setenv("MPIOPT_THREADS", "2", 1);    /* chunk size and thread threshold stay the defaults */
    MPI_Init(&argc, &argv);
    const int n = 1 << 24;
    float *in = malloc(n * sizeof *in), *io = malloc(n * sizeof *io);
    MPI_Op op;
    if (!in || !io || mpiopt_op_create_threaded(marking_sum, 1, &op) != MPI_SUCCESS) {
        fprintf(stderr, "FAIL: setup\n");
        return 1;
    }
    int failures = 0, calls = 0, best = 0;
    for (; calls < 20 && best < 2; calls++) {
        for (int i = 0; i < n; i++) {
            in[i] = (float)(i % 61);
            io[i] = (float)(i % 7);
        }
        threads_seen = 0;
        MPI_Reduce_local(in, io, n, MPI_FLOAT, op);
        for (int i = 0; i < n; i++)
            if (io[i] != (float)(i % 61 + i % 7)) {
                fprintf(stderr, "FAIL: wrong sum at %d\n", i);
                failures++;
                break;
            }
        int ran = __builtin_popcount(threads_seen);
        if (ran > best)
            best = ran;
    }
    printf("%d calls, at most %d threads ran chunks of one call\n", calls, best);
    if (best < 2) {
        fprintf(stderr, "FAIL: only one thread ran the op's chunks\n");
        failures++;
    }
    MPI_Op_free(&op);
    free(in);
    free(io);
    MPI_Finalize();
    return failures != 0;
}
