/* Hazards for `mpiopt transform`: one small function per situation where a wait must stay
 * close to its collective, or a collective must not become persistent (the negative cases of
 * issue 5), plus the paper's figures 4 (mutually exclusive branches) and 7 (root-only buffer), and
 * the collectives the four main examples do not use. Every case computes an integer checksum
 * (exact comparison: a wait placed too late changes it); rank 0 prints the sums over the ranks.
 *
 * Usage: hazards [-i ITERS]   (ITERS: rounds of the loop cases; default 4)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 8

static long checksum(const long *a, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s = s * 31 + a[i];
    return s;
}

static long busy_work(long seed)
{
    long x = seed;
    for (int i = 0; i < 2000; i++)
        x = (x * 1103515245 + 12345) % 2147483648L;
    return x;
}

/* Figure 7: the send buffer of MPI_Scatter matters only at the root, which overwrites it next;
 * the other ranks may go on until they read the received part. */
static long scatter_root(int rank, int p)
{
    int len = 4, root = p - 1;
    int nums[4 * 4];
    if (rank == root)
        for (int i = 0; i < len * p; i++)
            nums[i] = 100 + i;
    int sub_nums[4];
    MPI_Scatter(nums, len, MPI_INT, sub_nums, len, MPI_INT, root, MPI_COMM_WORLD);
    for (int i = 0; i < len * p; i++)
        nums[i] = -i;
    long w = busy_work(rank);
    long s = w % 7;
    for (int i = 0; i < len; i++)
        s += sub_nums[i] * (i + 1) + nums[i];
    return s;
}

/* A write through another name for the receive buffer. */
static long alias_write(int rank)
{
    long send[N], recv[N], other[N];
    long *alias = recv;
    for (int i = 0; i < N; i++)
        send[i] = rank * 10 + i;
    MPI_Allreduce(send, recv, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        other[i] = busy_work(i) % 100;
    alias[3] = 7;
    return checksum(recv, N) + checksum(other, N);
}

/* Pointer arithmetic into a broadcast buffer, and into an allreduce's send buffer. */
static long pointer_arithmetic(int rank)
{
    long buf[N], in[N], out[N];
    long *q = buf + 5;
    for (int i = 0; i < N; i++) {
        buf[i] = rank == 0 ? i * 3 : -1;
        in[i] = rank + i;
    }
    MPI_Bcast(buf, N, MPI_LONG, 0, MPI_COMM_WORLD);
    long w = busy_work(rank) % 11;
    *q += w;
    MPI_Allreduce(in, out, N, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    long *r = in + 2;
    r[0] = 99; /* modifies the send buffer: the reduction must be complete */
    return checksum(buf, N) + checksum(out, N) + checksum(in, N);
}

/* A global pointer to the receive buffer, used by a function. */
static long *escaped;

static void bump_escaped(void)
{
    escaped[0] += 1000;
}

static long global_escape(int rank)
{
    long in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = rank * i;
    escaped = out;
    MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    bump_escaped();
    return checksum(out, N);
}

/* A function without a body here (qsort, from libc) given the receive buffer. */
static int compare_longs(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static long unknown_function(int rank)
{
    long in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (rank * 7 + i * 13) % 17;
    MPI_Allreduce(in, out, N, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    qsort(out, N, sizeof(long), compare_longs);
    return checksum(out, N);
}

/* A return on one path, the use on another. */
static long early_return(int rank, int round)
{
    long local = rank + round, global = 0;
    MPI_Allreduce(&local, &global, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (round % 2 == 0)
        return busy_work(round) % 5;
    return global * 3;
}

/* break and continue inside a loop, and a goto over the use. */
static long loop_exits(int rank, int iters)
{
    long total = 0;
    for (int k = 0; k < iters + 3; k++) {
        long local = rank * k + 1, global = 0;
        MPI_Allreduce(&local, &global, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (k == iters)
            break;
        if (k % 3 == 1)
            continue;
        total += global;
    }
    long v = rank == 0 ? 42 : 0;
    MPI_Bcast(&v, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (iters % 2 == 1)
        goto skip;
    total += busy_work(v) % 13;
skip:
    total += v;
    return total;
}

/* A receive buffer that is freed, and one that goes out of scope. */
static long buffer_lifetime(int rank)
{
    long *in = malloc(sizeof(long) * N), *out = malloc(sizeof(long) * N);
    for (int i = 0; i < N; i++)
        in[i] = rank + 2 * i;
    MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    long s = checksum(in, N);
    free(out);
    free(in);
    {
        long inner[N];
        for (int i = 0; i < N; i++)
            inner[i] = rank == 0 ? i : 0;
        MPI_Bcast(inner, N, MPI_LONG, 0, MPI_COMM_WORLD);
        s += checksum(inner, N);
    }
    return s;
}

/* Swapped buffers: not loop-invariant, so not persistent; the data must still be right. */
static long swapped_buffers(int rank, int iters)
{
    long a[N], b[N];
    long *cur = a, *next = b;
    for (int i = 0; i < N; i++)
        a[i] = rank + i;
    for (int k = 0; k < iters; k++) {
        MPI_Allreduce(cur, next, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++)
            next[i] %= 1000003;
        long *t = cur;
        cur = next;
        next = t;
    }
    return checksum(cur, N);
}

/* Figure 4: mutually exclusive branches (the condition is the same on every rank); MPI_IN_PLACE;
 * a buffer that is a struct member. */
struct particles {
    long count[N];
    long other;
};

static long branches_in_place_struct(int rank, int iters)
{
    long total = 0;
    struct particles s;
    for (int k = 0; k < iters; k++) {
        long a = rank == 0 ? k : -1, b = rank == 0 ? 10 * k : -1;
        if (k % 2 == 0)
            MPI_Bcast(&a, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        else
            MPI_Bcast(&b, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        total += (k % 2 == 0) ? a : b;

        for (int i = 0; i < N; i++)
            s.count[i] = rank + i + k;
        MPI_Allreduce(MPI_IN_PLACE, s.count, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        s.other = busy_work(k) % 3;
        total += checksum(s.count, N) + s.other;
    }
    return total;
}

/* The collectives the main examples do not use, each with unrelated work before its result is read. */
static long more_collectives(int rank, int p)
{
    long total = 0, work[N];
    int counts[4], displs[4];
    for (int r = 0; r < p; r++) {
        counts[r] = r + 1;
        displs[r] = r * (r + 1) / 2;
    }
    int mine[4] = {rank, rank + 1, rank + 2, rank + 3}, all[16], scattered[4];

    MPI_Allgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        work[i] = busy_work(i + rank) % 97;
    for (int i = 0; i < p * (p + 1) / 2; i++)
        total += all[i] * (i + 1);

    int to_all[4], from_all[4];
    for (int r = 0; r < p; r++)
        to_all[r] = rank * 100 + r;
    MPI_Alltoall(to_all, 1, MPI_INT, from_all, 1, MPI_INT, MPI_COMM_WORLD);
    total += checksum(work, N) % 1000;
    for (int r = 0; r < p; r++)
        total += from_all[r] * (r + 3);

    int gathered[16];
    MPI_Gatherv(mine, rank + 1, MPI_INT, gathered, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < p * (p + 1) / 2; i++)
            total += gathered[i] * (i + 5);

    MPI_Scatterv(all, counts, displs, MPI_INT, scattered, rank + 1, MPI_INT, p - 1, MPI_COMM_WORLD);
    for (int i = 0; i <= rank; i++)
        total += scattered[i] * 7;

    long block[4], reduced = 0, prefix = 0, exclusive = 0, mine_long = rank + 1;
    for (int r = 0; r < p; r++)
        block[r] = rank + r;
    MPI_Reduce_scatter_block(block, &reduced, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(&mine_long, &prefix, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(&mine_long, &exclusive, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    total += busy_work(rank) % 5;
    total += reduced * 11 + prefix * 13 + (rank > 0 ? exclusive * 17 : 0);

    MPI_Barrier(MPI_COMM_WORLD);
    return total;
}

int main(int argc, char **argv)
{
    int rank, p, iters = 4;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc == 3 && strcmp(argv[1], "-i") == 0)
        iters = atoi(argv[2]);
    if ((argc != 1 && argc != 3) || iters < 1 || p > 4) {
        if (rank == 0)
            fprintf(stderr, "usage: hazards [-i ITERS]  (ITERS > 0, at most 4 ranks)\n");
        MPI_Finalize();
        return 2;
    }

    enum { NCASES = 11 };
    const char *names[NCASES] = {"scatter_root", "alias_write", "pointer_arithmetic", "global_escape",
                                 "unknown_function", "early_return", "loop_exits", "buffer_lifetime",
                                 "swapped_buffers", "branches_in_place_struct", "more_collectives"};
    long results[NCASES], totals[NCASES];
    results[0] = scatter_root(rank, p);
    results[1] = alias_write(rank);
    results[2] = pointer_arithmetic(rank);
    results[3] = global_escape(rank);
    results[4] = unknown_function(rank);
    results[5] = early_return(rank, 1) + early_return(rank, 2);
    results[6] = loop_exits(rank, iters);
    results[7] = buffer_lifetime(rank);
    results[8] = swapped_buffers(rank, iters);
    results[9] = branches_in_place_struct(rank, iters);
    results[10] = more_collectives(rank, p);
    double t = MPI_Wtime();
    (void)t;

    MPI_Reduce(results, totals, NCASES, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < NCASES; i++)
            printf("%s %ld\n", names[i], totals[i]);
    MPI_Finalize();
    return 0;
}
