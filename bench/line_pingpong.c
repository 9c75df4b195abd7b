/* line_pingpong: the time one cache line takes to go from one core to another on this machine,
 * the L of bench/line_model.py's model. Two processes (fork) share one page; each waits for the
 * other's number on a line of its own and answers with the next one, as the shared-memory
 * paths' flags do (a store-release of a number, spinning loads-acquire on it). One round trip
 * is two handovers; the figure is the median over --rounds batches of a round trip / 2.
 *
 * --bulk SIZES: the cross-core floor of a two-rank allreduce of each size (issue 68). Each rank
 * needs half the other's input and half the result it computes: n bytes that another core has
 * just written cross to this one, whatever the algorithm. Here both processes write n bytes of
 * their own (fresh, as an application writes its send buffer), meet, and then each copies the
 * other's n bytes into a buffer of its own at once; a call's time is the slower one's copy, the
 * figure the median over the iterations. No allreduce can move less between the two cores.
 * Beside it (staged_seconds, staged_turns_seconds) what an allreduce through shared memory pays
 * at least: the copy into shared memory and that read, both timed (staged_side).
 * Plain C, no MPI (built as bin/mpiopt-line-pingpong with the other benchmarks).
 * usage: mpiopt-line-pingpong [ROUNDS (default 20)] [TRIPS a round (default 200000)]
 *        mpiopt-line-pingpong --bulk SIZE[,SIZE...] [ITERATIONS (default 200)] */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* --bulk: the shared part (two flags a side, each on its own line; both sides' data), then the
 * child's times for the parent to combine */
typedef struct {
    _Alignas(64) uint64_t ready[2];     /* [side]: written by that side only */
    _Alignas(64) uint64_t done[2];
} bulk_flags;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One side's iterations at n bytes: write its own data, meet, copy the other's, meet again
 * (the other may then write its data anew). Its copy times go to times[]. */
static void bulk_side(int side, bulk_flags *f, char *const data[2], char *mine, size_t n,
                      int iterations, uint64_t *step, double *times)
{
    for (int it = 0; it < iterations; it++) {
        uint64_t k = ++*step;
        memset(data[side], (int)(k * 2 + (uint64_t)side) & 0xff, n);
        __atomic_store_n(&f->ready[side], k, __ATOMIC_RELEASE);
        wait_for(&f->ready[1 - side], k);
        double t0 = now();
        memcpy(mine, data[1 - side], n);
        times[it] = now() - t0;
        __asm__ volatile("" : : "r"(mine) : "memory");   /* the copy is kept */
        __atomic_store_n(&f->done[side], k, __ATOMIC_RELEASE);
        wait_for(&f->done[1 - side], k);
    }
}

/* --bulk's other two figures: what an allreduce through shared memory pays at least, the copy
 * of its input into shared memory being part of the call. Each side writes n bytes of its own
 * (fresh, untimed), meets the other, then (timed) copies them into a shared slot, posts, and
 * copies the other's slot into a buffer of its own. `turns` 0: each side writes its own slot
 * every time, lines the other core read the time before; 1: the sides take turns with the two
 * slots (each writes the slot it read the time before), as shared_memory's two-rank stages do. */
static void staged_side(int side, bulk_flags *f, char *const data[2], const char *src, char *mine,
                        size_t n, int iterations, int turns, uint64_t *step, double *times)
{
    for (int it = 0; it < iterations; it++) {
        int slot = turns ? side ^ (it & 1) : side;
        memset((char *)src, (int)(it * 2 + side) & 0xff, n);
        uint64_t k = ++*step;
        __atomic_store_n(&f->ready[side], k, __ATOMIC_RELEASE);
        wait_for(&f->ready[1 - side], k);
        double t0 = now();
        memcpy(data[slot], src, n);
        __atomic_store_n(&f->done[side], k, __ATOMIC_RELEASE);
        wait_for(&f->done[1 - side], k);
        memcpy(mine, data[1 - slot], n);
        times[it] = now() - t0;
        __asm__ volatile("" : : "r"(mine) : "memory");
        k = ++*step;    /* the other has read this side's slot: it may be written again */
        __atomic_store_n(&f->ready[side], k, __ATOMIC_RELEASE);
        wait_for(&f->ready[1 - side], k);
    }
}

/* One figure of --bulk for every size on both sides: `kind` 0 the read alone, 1 staged, 2 staged
 * with turns; a call takes the slower side's time, the figure the median over the iterations */
static void bulk_figure(int side, int kind, bulk_flags *f, char *const data[2], const char *src,
                        char *mine, size_t n, int iterations, uint64_t *step, double *times)
{
    if (kind == 0)
        bulk_side(side, f, data, mine, n, iterations, step, times);
    else
        staged_side(side, f, data, src, mine, n, iterations, kind == 2, step, times);
}

static int bulk(const char *list, int iterations)
{
    size_t sizes[64], nsizes = 0, max = 0;
    for (const char *p = list; *p && nsizes < 64;) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || v == 0 || v > (1ull << 30) || (*end && *end != ',')) {
            fprintf(stderr, "mpiopt-line-pingpong: bad --bulk size list '%s' (bytes, 1 B-1 GiB, "
                    "comma-separated)\n", list);
            return 2;
        }
        sizes[nsizes++] = (size_t)v;
        max = v > max ? (size_t)v : max;
        p = *end ? end + 1 : end;
    }
    size_t shared = sizeof(bulk_flags) + 2 * max + sizeof(double) * (size_t)iterations;
    char *base = mmap(NULL, shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    bulk_flags *f = (bulk_flags *)base;
    char *data[2] = {base + sizeof *f, base + sizeof *f + max};
    double *child_times = (double *)(base + sizeof *f + 2 * max);
    char *mine = malloc(max), *src = malloc(max);
    double *times = malloc(sizeof(double) * (size_t)iterations);
    if (!mine || !src || !times)
        return 1;
    memset(mine, 0, max);
    memset(src, 0, max);
    uint64_t step = 0;
    pid_t child = fork();
    if (child == 0) {
        pin(1);
        for (size_t s = 0; s < nsizes; s++)
            for (int kind = 0; kind < 3; kind++) {
                bulk_figure(1, kind, f, data, src, mine, sizes[s], iterations, &step, child_times);
                /* the times are the parent's to read once it has met this figure's last step */
                __atomic_store_n(&f->ready[1], ++step, __ATOMIC_RELEASE);
                wait_for(&f->ready[0], step);
            }
        _exit(0);
    }
    pin(0);
    printf("{\"bulk\": [");
    for (size_t s = 0; s < nsizes; s++) {
        double median_of[3], min_of[3];
        for (int kind = 0; kind < 3; kind++) {
            bulk_figure(0, kind, f, data, src, mine, sizes[s], iterations, &step, times);
            wait_for(&f->ready[1], ++step);
            for (int it = 0; it < iterations; it++)    /* a call takes the slower side's time */
                times[it] = child_times[it] > times[it] ? child_times[it] : times[it];
            __atomic_store_n(&f->ready[0], step, __ATOMIC_RELEASE);
            qsort(times, (size_t)iterations, sizeof *times, compare);
            median_of[kind] = times[iterations / 2];
            min_of[kind] = times[0];
        }
        printf("%s{\"bytes\": %zu, \"seconds\": %.6e, \"min_seconds\": %.6e, "
               "\"staged_seconds\": %.6e, \"staged_turns_seconds\": %.6e}", s ? ", " : "",
               sizes[s], median_of[0], min_of[0], median_of[1], median_of[2]);
    }
    printf("], \"iterations\": %d}\n", iterations);
    waitpid(child, NULL, 0);
    free(mine);
    free(src);
    free(times);
    return 0;
}

int main(int argc, char **argv)
{
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        fprintf(stderr, "mpiopt-line-pingpong: needs 2 cores\n");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--bulk") == 0) {
        int iterations = argc > 3 ? atoi(argv[3]) : 200;
        if (argc < 3 || iterations < 1 || iterations > 1000000) {
            fprintf(stderr, "usage: mpiopt-line-pingpong --bulk SIZE[,SIZE...] [ITERATIONS]\n");
            return 2;
        }
        return bulk(argv[2], iterations);
    }
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    long trips = argc > 2 ? atol(argv[2]) : 200000;
    if (rounds < 1 || rounds > 1000 || trips < 1) {
        fprintf(stderr, "usage: mpiopt-line-pingpong [ROUNDS 1-1000] [TRIPS >= 1]\n");
        return 2;
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
