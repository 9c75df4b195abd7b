/* Replay of a measured point-to-point communication matrix (an mpiopt profile's), used by
 * `mpiopt simulate matrix` to show what rank placement does to the time of a program's own
 * traffic under SimGrid SMPI. It needs nothing of libmpiopt.
 *
 * Usage: matrix_replay MATRIX_FILE [MAX_ROUNDS=8]
 *
 * MATRIX_FILE is text: a first line `ranks N`, then one line per nonzero entry,
 *     SOURCE DESTINATION BYTES MESSAGES
 * the whole run's totals of what SOURCE sent to DESTINATION (`#` lines are comments).
 *
 * From totals to messages. A profile counts a whole run: thousands of steps, millions of
 * messages. Simulating every message would cost hours of host time, so each pair sends
 *     c = min(MESSAGES, MAX_ROUNDS) messages of BYTES / c bytes (rounded up),
 * one in each of the rounds 0 .. c-1: every pair's whole byte count crosses the network (what
 * placement changes most: bytes on shared node links), with at most MAX_ROUNDS messages a pair
 * (which understates the latency paid by pairs that exchanged many small messages; placement
 * moves that cost between the loopback's and the network's latency only). A round is what an
 * iterative program's step does: every rank posts MPI_Irecv from each source active in the
 * round, MPI_Isend to each destination, then MPI_Waitall; rounds follow without a barrier.
 *
 * Very large totals are scaled down: if some rank would receive more than MAX_ROUND_BYTES in one
 * round, every message is scaled by one factor (bytes_scale < 1 in the output) so that none
 * does. Under SMPI big buffers are shared mallocs mapped in 1 MiB blocks, and a few GiB a rank
 * would exhaust the process's memory mappings; placements are still compared on equal terms.
 *
 * Output (rank 0): one line
 *     matrix_replay ranks=N pairs=P rounds=R max_rounds=M bytes_scale=S bytes_moved=B replay_seconds=T
 * where T is the slowest rank's time from a barrier to the end of its last round (simulated time
 * under SMPI) and B the bytes all ranks received (MPI_Get_count), for a check.
 *
 * No global mutable state: SMPI may run it without privatization (fast at thousands of ranks).
 * Under SMPI, malloc is a macro that turns large blocks into shared, garbage-filled memory: fine
 * for message buffers, wrong for this rank's own tables, which use `(malloc)`, the real one.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_ROUNDS 8
#define MAX_ROUND_BYTES (16.0 * 1024 * 1024)

/* One peer of this rank: a destination it sends to or a source it receives from. */
struct peer {
    int rank;
    int messages;      /* c: one message in each round below c */
    double bytes;      /* the whole run's total, as measured */
    long size;         /* bytes per message after scaling */
    long offset;       /* where its messages land in the receive buffer */
};

struct peers {
    struct peer *list;
    int count, capacity;
};

static void fail(const char *message, const char *detail)
{
    fprintf(stderr, "matrix_replay: %s%s\n", message, detail);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void add_peer(struct peers *p, int rank, double bytes, double messages, int max_rounds)
{
    if (p->count == p->capacity) {
        p->capacity = p->capacity ? 2 * p->capacity : 16;
        p->list = (realloc)(p->list, (size_t)p->capacity * sizeof *p->list);
        if (!p->list)
            fail("out of memory", "");
    }
    struct peer *q = &p->list[p->count++];
    q->rank = rank;
    q->bytes = bytes;
    /* bytes without a message count (never written by the profiler) still make one message */
    q->messages = messages < 1 ? 1 : messages > max_rounds ? max_rounds : (int)messages;
    q->size = 0;
    q->offset = 0;
}

/* This rank's sends and receives from the matrix file; returns the number of ranks it names. */
static int read_matrix(const char *path, int me, int max_rounds, struct peers *sends,
                       struct peers *recvs, long *pairs)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail("cannot open the matrix file ", path);
    char line[256];
    int ranks = -1;
    *pairs = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (ranks < 0) {
            if (sscanf(line, "ranks %d", &ranks) != 1 || ranks < 1)
                fail("the first line must be `ranks N`, got: ", line);
            continue;
        }
        int src, dst;
        double bytes, messages;
        if (sscanf(line, "%d %d %lf %lf", &src, &dst, &bytes, &messages) != 4 || src < 0 ||
            dst < 0 || src >= ranks || dst >= ranks || bytes < 0 || messages < 0)
            fail("not `SOURCE DESTINATION BYTES MESSAGES` with ranks in range: ", line);
        (*pairs)++;
        if (src == me)
            add_peer(sends, dst, bytes, messages, max_rounds);
        if (dst == me)
            add_peer(recvs, src, bytes, messages, max_rounds);
    }
    fclose(f);
    if (ranks < 0)
        fail("no `ranks N` line in ", path);
    return ranks;
}

static long message_size(const struct peer *q, double scale)
{
    return (long)ceil(q->bytes * scale / q->messages);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, me;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (argc < 2) {
        if (me == 0)
            fprintf(stderr, "usage: matrix_replay MATRIX_FILE [MAX_ROUNDS]\n");
        MPI_Finalize();
        return 2;
    }
    int max_rounds = argc > 2 ? atoi(argv[2]) : DEFAULT_MAX_ROUNDS;
    if (max_rounds < 1)
        fail("MAX_ROUNDS must be at least 1, got ", argv[2]);

    struct peers sends = {0}, recvs = {0};
    long pairs;
    int ranks = read_matrix(argv[1], me, max_rounds, &sends, &recvs, &pairs);
    if (ranks != size) {
        char detail[64];
        snprintf(detail, sizeof detail, "%d, running on %d", ranks, size);
        fail("the matrix's rank count is ", detail);
    }

    /* one scale for all: the most any rank receives in a round (round 0: every peer is active) */
    double round_bytes = 0, most_round_bytes;
    int rounds = 0, most_rounds;
    for (int i = 0; i < recvs.count; i++)
        round_bytes += message_size(&recvs.list[i], 1.0);
    for (int i = 0; i < sends.count; i++)
        rounds = sends.list[i].messages > rounds ? sends.list[i].messages : rounds;
    MPI_Allreduce(&round_bytes, &most_round_bytes, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&rounds, &most_rounds, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    double scale = most_round_bytes > MAX_ROUND_BYTES ? MAX_ROUND_BYTES / most_round_bytes : 1.0;

    /* a receive buffer with a slot for every source (receives must not overlap); the sends of a
     * round share one buffer (concurrent sends may read the same memory) */
    long recv_total = 0, send_most = 0;
    for (int i = 0; i < recvs.count; i++) {
        recvs.list[i].size = message_size(&recvs.list[i], scale);
        recvs.list[i].offset = recv_total;
        recv_total += recvs.list[i].size;
    }
    for (int i = 0; i < sends.count; i++) {
        sends.list[i].size = message_size(&sends.list[i], scale);
        send_most = sends.list[i].size > send_most ? sends.list[i].size : send_most;
    }
    char *recv_buf = malloc(recv_total > 0 ? recv_total : 1);
    char *send_buf = malloc(send_most > 0 ? send_most : 1);
    if (!recv_buf || !send_buf)
        fail("out of memory for the message buffers", "");
    memset(send_buf, 1, send_most);
    int most_requests = sends.count + recvs.count;
    MPI_Request *requests = (malloc)((size_t)(most_requests + 1) * sizeof *requests);
    MPI_Status *statuses = (malloc)((size_t)(most_requests + 1) * sizeof *statuses);
    if (!requests || !statuses)
        fail("out of memory for the requests", "");

    long long received = 0, received_all = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int round = 0; round < most_rounds; round++) {
        int n = 0, nrecv;
        for (int i = 0; i < recvs.count; i++)
            if (round < recvs.list[i].messages)
                MPI_Irecv(recv_buf + recvs.list[i].offset, (int)recvs.list[i].size, MPI_BYTE,
                          recvs.list[i].rank, round, MPI_COMM_WORLD, &requests[n++]);
        nrecv = n;
        for (int i = 0; i < sends.count; i++)
            if (round < sends.list[i].messages)
                MPI_Isend(send_buf, (int)sends.list[i].size, MPI_BYTE, sends.list[i].rank, round,
                          MPI_COMM_WORLD, &requests[n++]);
        MPI_Waitall(n, requests, statuses);
        for (int i = 0; i < nrecv; i++) {
            int count;
            MPI_Get_count(&statuses[i], MPI_BYTE, &count);
            received += count;
        }
    }
    double elapsed = MPI_Wtime() - start, slowest;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&received, &received_all, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("matrix_replay ranks=%d pairs=%ld rounds=%d max_rounds=%d bytes_scale=%.9g "
               "bytes_moved=%lld replay_seconds=%.9g\n", size, pairs, most_rounds, max_rounds,
               scale, received_all, slowest);

    free(recv_buf);
    free(send_buf);
    (free)(requests);
    (free)(statuses);
    (free)(sends.list);
    (free)(recvs.list);
    MPI_Finalize();
    return 0;
}
