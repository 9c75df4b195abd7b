/* Point-to-point cases for `mpiopt transform` (tests/python/test_transform_p2p.py): blocking
 * sends and receives become MPI_Isend / MPI_Irecv with the wait before the first access the
 * data forbid; wildcard receives stay blocking.
 *
 * Markers, each about the nearest MPI call above it:
 *   CONFLICT   its wait comes at this line or earlier
 *   OVERLAP    its wait comes after this line
 *   UNCHANGED  the call on this line stays blocking
 * Rank 0 prints every result, so the original and transformed programs can be compared. */
#include <mpi.h>
#include <stdio.h>

static int rank, nprocs;

static void show(const char *name, const double *v, int n)
{
    if (rank == 0) {
        printf("%s:", name);
        for (int i = 0; i < n; i++)
            printf(" %.10e", v[i]);
        printf("\n");
    }
}

/* A ring exchange, even ranks sending first: the send overlaps work that only reads its buffer,
 * the receive overlaps work on other data. */
static void ring(void)
{
    double out[4], in[4] = {0, 0, 0, 0}, work[4], total[4];
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    for (int i = 0; i < 4; i++)
        out[i] = rank * 10.0 + i;
    if (rank % 2 == 0) {
        MPI_Send(out, 4, MPI_DOUBLE, next, 7, MPI_COMM_WORLD);
        for (int i = 0; i < 4; i++)
            work[i] = out[i] * 2.0; /* OVERLAP */
        out[0] = -1.0; /* CONFLICT */
        MPI_Recv(in, 4, MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        work[1] += 1.0; /* OVERLAP */
        work[2] = in[2]; /* CONFLICT */
    } else {
        MPI_Recv(in, 4, MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 4; i++)
            work[i] = out[i] * 2.0; /* OVERLAP */
        MPI_Send(out, 4, MPI_DOUBLE, next, 7, MPI_COMM_WORLD);
        out[0] = -1.0; /* CONFLICT */
    }
    for (int i = 0; i < 4; i++)
        work[i] += in[i] + out[i];
    MPI_Allreduce(work, total, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    show("ring", total, 4);
}

/* A receive's status is filled in at its wait: reading it is reading the receive. Two messages
 * from one source with one tag keep their order (posting order is unchanged). */
static void status_and_order(void)
{
    double a[2] = {0, 0}, b[2] = {0, 0}, got[4];
    MPI_Status st;
    if (rank == 1) {
        double m1[2] = {1.5, 2.5}, m2[2] = {3.5, 4.5};
        MPI_Send(m1, 2, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
        MPI_Send(m2, 2, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
        m2[0] = 0.0; /* CONFLICT */
    } else if (rank == 0 && nprocs > 1) {
        MPI_Recv(a, 2, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, &st);
        MPI_Recv(b, 2, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* OVERLAP */
        got[1] = b[0] - b[1]; /* CONFLICT */
        got[2] = st.MPI_TAG;
        got[0] = a[0] + a[1];
        got[3] = st.MPI_SOURCE;
        show("status_and_order", got, 4);
    }
}

/* A receive from any source stays blocking (and so the order of matching is the original's). */
static void any_source(void)
{
    double v = rank + 0.5, sum = 0.0, x = 0.0;
    if (rank == 0) {
        for (int i = 1; i < nprocs; i++) {
            MPI_Recv(&x, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* UNCHANGED */
            sum += x;
        }
        show("any_source", &sum, 1);
    } else {
        MPI_Send(&v, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD);
    }
}

/* Nonblocking calls already in the program are understood, not unknown MPI: a collective's wait
 * moves past a ring exchange on other buffers, and an MPI_Irecv into its send buffer stops it. */
static void existing_nonblocking(void)
{
    double mine[2] = {rank + 1.0, 2.0}, sums[4], left[2] = {0, 0}, right[2] = {rank * 1.0, 3.0};
    MPI_Request reqs[2];
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    MPI_Allreduce(mine, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Irecv(left, 2, MPI_DOUBLE, prev, 9, MPI_COMM_WORLD, &reqs[0]); /* OVERLAP */
    MPI_Isend(right, 2, MPI_DOUBLE, next, 9, MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    mine[0] = left[0] + left[1]; /* CONFLICT */
    MPI_Allreduce(mine, sums + 2, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Irecv(mine, 2, MPI_DOUBLE, prev, 10, MPI_COMM_WORLD, &reqs[0]); /* CONFLICT */
    MPI_Isend(right, 2, MPI_DOUBLE, next, 10, MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    show("existing_nonblocking", sums, 4);
    show("existing_nonblocking_mine", mine, 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    ring();
    status_and_order();
    any_source();
    existing_nonblocking();
    MPI_Finalize();
    return 0;
}
