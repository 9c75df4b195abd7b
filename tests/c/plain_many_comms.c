/* What the drop-in holds while a program keeps many communicators (issue 37): a plain MPI program
 * (not linked with mpiopt), run with and without LD_PRELOAD by tests/python/test_resources.py.
 *
 *   plain_many_comms live N [LARGE_BYTES]   N duplicates of MPI_COMM_WORLD kept alive, an 8-byte
 *                                           and a LARGE_BYTES (default 64 KiB) MPI_Allreduce and
 *                                           MPI_Reduce on each, checked
 *   plain_many_comms churn N                N rounds of dup / the same calls / free
 *
 * Rank 0 prints one line a run:
 *   many_comms MODE: N comms, shm_used_bytes B, peak_rss_kib K, C checks, F failures
 * shm_used_bytes is what /dev/shm holds (its size less its free space) while the communicators
 * are alive (live) or after the last free (churn), less what it held before MPI_Init; the peak
 * RSS is rank 0's (VmHWM). Exits 1 on any failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

static int rank, size, checks, failures;

static long long shm_used(void)
{
    struct statvfs v;
    if (statvfs("/dev/shm", &v) != 0)
        return -1;
    return (long long)(v.f_blocks - v.f_bfree) * (long long)v.f_frsize;
}

static long peak_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

static void check(int ok, const char *what, int comm_index)
{
    checks++;
    if (!ok) {
        failures++;
        if (failures <= 5)
            fprintf(stderr, "rank %d: %s wrong on communicator %d\n", rank, what, comm_index);
    }
}

/* An 8-byte and a `large`-byte allreduce and reduce on comm, every element checked: rank r
 * gives r + 1 + i (small integers: every sum exact in a double). */
static void calls(MPI_Comm comm, size_t large, double *in, double *out, int index)
{
    long long small_in = rank + 1, small_out = 0;
    MPI_Allreduce(&small_in, &small_out, 1, MPI_LONG_LONG, MPI_SUM, comm);
    check(small_out == (long long)size * (size + 1) / 2, "8-byte allreduce", index);
    size_t n = large / sizeof(double);
    for (size_t i = 0; i < n; i++)
        in[i] = rank + 1 + (double)(i % 1000);
    MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, comm);
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= out[i] == size * (size + 1) / 2.0 + size * (double)(i % 1000);
    check(ok, "large allreduce", index);
    memset(out, 0, n * sizeof(double));
    MPI_Reduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, 0, comm);
    if (rank == 0) {
        ok = 1;
        for (size_t i = 0; i < n; i++)
            ok &= out[i] == size * (size + 1) / 2.0 + size * (double)(i % 1000);
        check(ok, "large reduce", index);
    }
}

int main(int argc, char **argv)
{
    long long before = shm_used();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || (strcmp(argv[1], "live") && strcmp(argv[1], "churn"))) {
        if (rank == 0)
            fprintf(stderr, "usage: plain_many_comms live|churn N [LARGE_BYTES]\n");
        MPI_Finalize();
        return 2;
    }
    int live = !strcmp(argv[1], "live"), n = atoi(argv[2]);
    size_t large = argc > 3 ? (size_t)atol(argv[3]) : 65536;
    double *in = malloc(large), *out = malloc(large);
    MPI_Comm *comms = malloc(sizeof *comms * (size_t)(n > 0 ? n : 1));
    long long used = 0;
    for (int i = 0; i < n; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        calls(comms[i], large, in, out, i);
        if (!live)
            MPI_Comm_free(&comms[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    used = shm_used() - before;     /* live: all alive; churn: all freed */
    if (live)
        for (int i = 0; i < n; i++)
            MPI_Comm_free(&comms[i]);
    int all_failures = 0;
    MPI_Reduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    int all_checks = 0;
    MPI_Reduce(&checks, &all_checks, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("many_comms %s: %d comms, shm_used_bytes %lld, peak_rss_kib %ld, %d checks, "
               "%d failures\n", argv[1], n, used, peak_rss_kib(), all_checks, all_failures);
    free(in);
    free(out);
    free(comms);
    MPI_Finalize();
    return all_failures ? 1 : 0;
}
