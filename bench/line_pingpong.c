/* line_pingpong: the time one cache line takes to go from one core to another on this machine,
 * the L of bench/line_model.py's model. Two processes (fork) share one page; each waits for the
 * other's number on a line of its own and answers with the next one, as the shared-memory
 * paths' flags do (a store-release of a number, spinning loads-acquire on it). One round trip
 * is two handovers; the figure is the median over --rounds batches of a round trip / 2.
 * Plain C, no MPI (built as bin/mpiopt-line-pingpong with the other benchmarks).
 * usage: mpiopt-line-pingpong [ROUNDS (default 20)] [TRIPS a round (default 200000)] */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    _Alignas(64) uint64_t ping;     /* written by the parent only */
    _Alignas(64) uint64_t pong;     /* written by the child only */
} lines;

static void wait_for(const uint64_t *flag, uint64_t value)
{
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < value) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);     /* best effort: unpinned still measures */
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    long trips = argc > 2 ? atol(argv[2]) : 200000;
    if (rounds < 1 || rounds > 1000 || trips < 1) {
        fprintf(stderr, "usage: mpiopt-line-pingpong [ROUNDS 1-1000] [TRIPS >= 1]\n");
        return 2;
    }
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        fprintf(stderr, "mpiopt-line-pingpong: needs 2 cores\n");
        return 1;
    }
    lines *l = mmap(NULL, sizeof *l, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (l == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    uint64_t total = (uint64_t)rounds * (uint64_t)trips;
    pid_t child = fork();
    if (child == 0) {
        pin(1);
        for (uint64_t k = 1; k <= total; k++) {
            wait_for(&l->ping, k);
            __atomic_store_n(&l->pong, k, __ATOMIC_RELEASE);
        }
        _exit(0);
    }
    pin(0);
    double *half = malloc(sizeof(double) * (size_t)rounds);
    uint64_t k = 0;
    for (int r = 0; r < rounds; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (long t = 0; t < trips; t++) {
            k++;
            __atomic_store_n(&l->ping, k, __ATOMIC_RELEASE);
            wait_for(&l->pong, k);
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        half[r] = ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9)
                  / (double)trips / 2;
    }
    waitpid(child, NULL, 0);
    qsort(half, (size_t)rounds, sizeof *half, compare);
    printf("{\"handover_seconds\": %.6e, \"min_seconds\": %.6e, \"rounds\": %d, \"trips\": %ld}\n",
           half[rounds / 2], half[0], rounds, trips);
    free(half);
    return 0;
}
