/* Nonblocking and persistent allreduce / reduce in a plain MPI program (no mpiopt in its source),
 * for the LD_PRELOAD tests (tests/python/test_nonblocking.py): mpiopt's requests mixed with the
 * vendor's in every call of the MPI_Wait family, several collectives in flight on one
 * communicator and completed in another order than started, MPI_Request_free on an active
 * persistent request, MPI_Start/Startall, MPI_Request_get_status.
 *
 * Every rank contributes values that every rank can compute, so each checks its results against
 * a closed form. Prints "plain_nonblocking: N checks, F failures" on rank 0; exit 1 on failure.
 *
 *   test-plain_nonblocking [COUNT [free-active]]     (default 1000 doubles per collective)
 * free-active: also MPI_Request_free on an active persistent allreduce (Open MPI 4.1 rejects
 * that for its own persistent collectives, so only when mpiopt's algorithm runs them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

static int rank, size;
static long checks, failures;

static void check(int ok, const char *what)
{
    checks++;
    if (!ok) {
        failures++;
        fprintf(stderr, "rank %d: FAILED %s\n", rank, what);
    }
}

/* Rank r's element i in collective number k. Small integers: every order of summation is exact. */
static double value(int k, int r, int i)
{
    return (double)((k * 7 + r * 3 + i) % 1000);
}

static void fill(double *buf, int k, int n)
{
    for (int i = 0; i < n; i++)
        buf[i] = value(k, rank, i);
}

/* 1 if buf holds the sum over all ranks of collective k. */
static int is_sum(const double *buf, int k, int n)
{
    for (int i = 0; i < n; i++) {
        double want = 0;
        for (int r = 0; r < size; r++)
            want += value(k, r, i);
        if (buf[i] != want)
            return 0;
    }
    return 1;
}

/* A vendor point-to-point pair in a ring, to mix with the collectives: returns the two requests. */
static void ring_exchange(int *sendval, int *recvval, MPI_Request reqs[2])
{
    *sendval = 1000 + rank;
    MPI_Irecv(recvval, 1, MPI_INT, (rank + size - 1) % size, 5, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(sendval, 1, MPI_INT, (rank + 1) % size, 5, MPI_COMM_WORLD, &reqs[1]);
}

static int ring_ok(int recvval)
{
    return recvval == 1000 + (rank + size - 1) % size;
}

enum { INFLIGHT = 4 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    int free_active = argc > 2 && !strcmp(argv[2], "free-active");
    double *in[INFLIGHT], *out[INFLIGHT];
    for (int k = 0; k < INFLIGHT; k++) {
        in[k] = malloc(sizeof(double) * (size_t)(n ? n : 1));
        out[k] = malloc(sizeof(double) * (size_t)(n ? n : 1));
    }
    int sendval, recvval;
    MPI_Request reqs[INFLIGHT + 2];
    MPI_Status statuses[INFLIGHT + 2];

    /* 1. several allreduces in flight on one communicator, waited for last to first */
    for (int k = 0; k < INFLIGHT; k++) {
        fill(in[k], k, n);
        MPI_Iallreduce(in[k], out[k], n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[k]);
    }
    for (int k = INFLIGHT - 1; k >= 0; k--) {
        MPI_Wait(&reqs[k], MPI_STATUS_IGNORE);
        check(reqs[k] == MPI_REQUEST_NULL, "MPI_Wait sets the request to MPI_REQUEST_NULL");
        check(is_sum(out[k], k, n), "in-flight allreduces waited in reverse");
    }

    /* 2. MPI_Waitall over collectives and vendor point-to-point, with statuses */
    for (int k = 0; k < 2; k++) {
        fill(in[k], k + 10, n);
        MPI_Iallreduce(in[k], out[k], n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[k]);
    }
    ring_exchange(&sendval, &recvval, &reqs[2]);
    MPI_Waitall(4, reqs, statuses);
    check(is_sum(out[0], 10, n) && is_sum(out[1], 11, n), "MPI_Waitall: collectives");
    check(ring_ok(recvval), "MPI_Waitall: point-to-point");
    check(statuses[2].MPI_SOURCE == (rank + size - 1) % size && statuses[2].MPI_TAG == 5,
          "MPI_Waitall: the receive's status");
    int all_null = 1;
    for (int k = 0; k < 4; k++)
        all_null &= reqs[k] == MPI_REQUEST_NULL;
    check(all_null, "MPI_Waitall: every request MPI_REQUEST_NULL");

    /* 3. MPI_Testall in a loop, statuses ignored */
    fill(in[0], 20, n);
    MPI_Iallreduce(MPI_IN_PLACE, (memcpy(out[0], in[0], sizeof(double) * (size_t)n), out[0]), n,
                   MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
    ring_exchange(&sendval, &recvval, &reqs[1]);
    int flag = 0;
    while (!flag)
        MPI_Testall(3, reqs, &flag, MPI_STATUSES_IGNORE);
    check(is_sum(out[0], 20, n) && ring_ok(recvval), "MPI_Testall, in place");

    /* 4. MPI_Waitany until every request is done: each index exactly once */
    for (int k = 0; k < 2; k++) {
        fill(in[k], k + 30, n);
        MPI_Iallreduce(in[k], out[k], n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[k]);
    }
    ring_exchange(&sendval, &recvval, &reqs[2]);
    int seen[4] = {0}, index;
    for (int done = 0; done < 4; done++) {
        MPI_Waitany(4, reqs, &index, MPI_STATUS_IGNORE);
        if (index >= 0 && index < 4)
            seen[index]++;
    }
    MPI_Waitany(4, reqs, &index, MPI_STATUS_IGNORE);
    check(seen[0] == 1 && seen[1] == 1 && seen[2] == 1 && seen[3] == 1, "MPI_Waitany: each once");
    check(index == MPI_UNDEFINED, "MPI_Waitany: MPI_UNDEFINED when none is active");
    check(is_sum(out[0], 30, n) && is_sum(out[1], 31, n) && ring_ok(recvval), "MPI_Waitany");

    /* 5. MPI_Testsome / MPI_Waitsome */
    for (int k = 0; k < 2; k++) {
        fill(in[k], k + 40, n);
        MPI_Iallreduce(in[k], out[k], n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[k]);
    }
    ring_exchange(&sendval, &recvval, &reqs[2]);
    int got = 0, outcount, indices[4], count_of[4] = {0};
    while (got < 4) {
        MPI_Testsome(4, reqs, &outcount, indices, statuses);
        for (int j = 0; j < outcount; j++)
            count_of[indices[j]]++;
        got += outcount > 0 ? outcount : 0;
    }
    MPI_Waitsome(4, reqs, &outcount, indices, statuses);
    check(count_of[0] == 1 && count_of[1] == 1 && count_of[2] == 1 && count_of[3] == 1,
          "MPI_Testsome: each once");
    check(outcount == MPI_UNDEFINED, "MPI_Waitsome: MPI_UNDEFINED when none is active");
    check(is_sum(out[0], 40, n) && is_sum(out[1], 41, n) && ring_ok(recvval), "MPI_Testsome");

    /* 6. MPI_Ireduce to the last rank beside an allreduce, completed by MPI_Test loops */
    fill(in[0], 50, n);
    fill(in[1], 51, n);
    MPI_Ireduce(in[0], out[0], n, MPI_DOUBLE, MPI_SUM, size - 1, MPI_COMM_WORLD, &reqs[0]);
    MPI_Iallreduce(in[1], out[1], n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[1]);
    for (int k = 1; k >= 0; k--) {
        flag = 0;
        while (!flag)
            MPI_Test(&reqs[k], &flag, MPI_STATUS_IGNORE);
    }
    check(rank != size - 1 || is_sum(out[0], 50, n), "MPI_Ireduce to the last rank");
    check(is_sum(out[1], 51, n), "MPI_Test loop");

#if MPI_VERSION >= 4 || defined(MPIOPT_HAVE_PERSISTENT_COLL)
#define ALLREDUCE_INIT MPI_Allreduce_init
#elif defined(OMPI_MAJOR_VERSION)
#include <mpi-ext.h>
#define ALLREDUCE_INIT MPIX_Allreduce_init
#endif
#ifdef ALLREDUCE_INIT
    /* 7. persistent: started five times (MPI_Start, then MPI_Startall beside a vendor request),
     * MPI_Request_get_status, and freed while active */
    MPI_Request persistent, pair[2];
    ALLREDUCE_INIT(in[2], out[2], n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                   &persistent);
    for (int it = 0; it < 5; it++) {
        fill(in[2], 60 + it, n);
        if (it % 2 == 0) {
            MPI_Start(&persistent);
            flag = 0;
            while (!flag)
                MPI_Request_get_status(persistent, &flag, MPI_STATUS_IGNORE);
            MPI_Wait(&persistent, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv_init(&recvval, 1, MPI_INT, (rank + size - 1) % size, 6, MPI_COMM_WORLD,
                          &pair[0]);
            pair[1] = persistent;
            MPI_Startall(2, pair);
            sendval = 1000 + rank;
            MPI_Send(&sendval, 1, MPI_INT, (rank + 1) % size, 6, MPI_COMM_WORLD);
            MPI_Waitall(2, pair, MPI_STATUSES_IGNORE);
            check(ring_ok(recvval), "MPI_Startall: the persistent receive");
            MPI_Request_free(&pair[0]);
        }
        check(persistent != MPI_REQUEST_NULL, "a persistent request stays after its wait");
        check(is_sum(out[2], 60 + it, n), "persistent allreduce started again");
    }
    flag = 0;
    MPI_Test(&persistent, &flag, MPI_STATUS_IGNORE);
    check(flag, "MPI_Test on an inactive persistent request: flag true");
    if (free_active) {
        fill(in[2], 70, n);
        MPI_Start(&persistent);
        MPI_Request_free(&persistent);     /* active: completes on its own */
        check(persistent == MPI_REQUEST_NULL, "MPI_Request_free sets MPI_REQUEST_NULL");
        /* later calls (at the latest MPI_Finalize) finish it; its buffers stay until then */
        fill(in[3], 71, n);
        MPI_Iallreduce(in[3], out[3], n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
        MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
        check(is_sum(out[3], 71, n), "an allreduce after a freed active persistent one");
    } else {
        MPI_Request_free(&persistent);
    }
#endif

    long totals[2] = {checks, failures}, sums[2];
    MPI_Reduce(totals, sums, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("plain_nonblocking: %ld checks, %ld failures\n", sums[0], sums[1]);
    MPI_Finalize();
    /* after MPI_Finalize: the freed persistent request may run until then */
    for (int k = 0; k < INFLIGHT; k++) {
        free(in[k]);
        free(out[k]);
    }
    return rank == 0 && sums[1] ? 1 : 0;
}
