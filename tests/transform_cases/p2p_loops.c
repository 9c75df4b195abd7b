/* Point-to-point in loops and MPI_Sendrecv for `mpiopt transform`
 * (tests/python/test_transform_p2p_loops.py): halo exchanges in time-step loops become persistent
 * (MPI_Send_init / MPI_Recv_init before the loop, MPI_Start in it, MPI_Request_free after it) in
 * --mode persistent; MPI_Sendrecv becomes MPI_Irecv + MPI_Isend with a wait each.
 *
 * Markers, each about the nearest MPI call above it (for MPI_Sendrecv: both halves; calls on
 * consecutive lines: all of them):
 *   CONFLICT        its wait comes at this line or earlier (CONFLICT send / recv: the
 *                   sends' / receives' of the calls on the lines right above)
 *   OVERLAP         its wait comes after this line
 * and about the call on their own line:
 *   UNCHANGED       stays blocking
 *   PERSISTENT      becomes persistent in --mode persistent
 *   NOT_PERSISTENT  does not (each is a rule of persistence that the case breaks)
 * Every rank's results go into a sum that rank 0 prints, so the programs can be compared. */
#include <mpi.h>
#include <stdio.h>

#define N 16
#define STEPS 6

static int rank, nprocs, left, right;

static void show(const char *name, double value)
{
    double total = 0.0;
    MPI_Reduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %.10e\n", name, total);
}

/* One relaxation step of the inner points that need no halo (they overlap the messages). */
static void relax_inner(const double *u, double *next)
{
    for (int i = 2; i < N; i++)
        next[i] = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1]);
}

/* The two points next to the halo, then the copy back. */
static void relax_edges(double *u, double *next, double from_left, double from_right)
{
    u[0] = from_left;
    u[N + 1] = from_right;
    next[1] = 0.5 * u[1] + 0.25 * (u[0] + u[2]);
    next[N] = 0.5 * u[N] + 0.25 * (u[N - 1] + u[N + 1]);
    for (int i = 1; i <= N; i++)
        u[i] = next[i];
}

static double weighted(const double *u)
{
    double s = 0.0;
    for (int i = 1; i <= N; i++)
        s += u[i] * (i + rank);
    return s;
}

static void start(double *u)
{
    for (int i = 0; i < N + 2; i++)
        u[i] = rank * N + i * 0.5;
}

/* A ring shift with MPI_Sendrecv: the send half waits for the write of its buffer, the receive
 * half for the read of its buffer and status. */
static void sendrecv_exchange(void)
{
    double out[4], in[4] = {0, 0, 0, 0}, work[4];
    MPI_Status st;
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    for (int i = 0; i < 4; i++)
        out[i] = rank * 10.0 + i;
    MPI_Sendrecv(out, 4, MPI_DOUBLE, next, 11, in, 4, MPI_DOUBLE, prev, 11, MPI_COMM_WORLD, &st);
    for (int i = 0; i < 4; i++)
        work[i] = out[i] * 2.0; /* OVERLAP */
    work[0] += in[1] + st.MPI_SOURCE; /* CONFLICT recv */
    out[2] = -1.0; /* CONFLICT send */
    show("sendrecv_exchange", work[0] + work[1] + work[2] + work[3] + out[2]);
}

/* A receive from any source stays blocking; so does MPI_Sendrecv_replace (one buffer). */
static void sendrecv_unchanged(void)
{
    double out = rank + 0.25, in = 0.0, both = rank * 2.0;
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    MPI_Sendrecv(&out, 1, MPI_DOUBLE, next, 12, &in, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* UNCHANGED */
    MPI_Sendrecv_replace(&both, 1, MPI_DOUBLE, next, 13, prev, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* UNCHANGED */
    show("sendrecv_unchanged", in + both);
}

/* A 1-D halo exchange with blocking calls in a time-step loop: a chain, each rank receiving from
 * its left neighbour before sending to its right one (then the other way), so the original never
 * needs buffering; the transformed one posts all four at once and relaxes the inner points
 * meanwhile. Every argument is loop-invariant: persistent. */
static void halo_send_recv(void)
{
    double u[N + 2], next[N + 2], ghost_left[1], ghost_right[1], edge_left[1], edge_right[1];
    start(u);
    for (int step = 0; step < STEPS; step++) {
        edge_left[0] = u[1];
        edge_right[0] = u[N];
        ghost_left[0] = ghost_right[0] = 0.0;
        MPI_Recv(ghost_left, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* PERSISTENT */
        MPI_Send(edge_right, 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD); /* PERSISTENT */
        MPI_Recv(ghost_right, 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* PERSISTENT */
        MPI_Send(edge_left, 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD); /* PERSISTENT */
        relax_inner(u, next); /* OVERLAP */
        relax_edges(u, next, left == MPI_PROC_NULL ? u[0] : ghost_left[0],
                    right == MPI_PROC_NULL ? u[N + 1] : ghost_right[0]); /* CONFLICT recv */
    }
    show("halo_send_recv", weighted(u));
}

/* The same halo with MPI_Irecv / MPI_Isend / MPI_Waitall in the loop (Petal's figure 16). */
static void halo_isend_irecv(void)
{
    double u[N + 2], next[N + 2], ghost[2], edge[2];
    MPI_Request reqs[4];
    start(u);
    for (int step = 0; step < STEPS; step++) {
        edge[0] = u[1];
        edge[1] = u[N];
        ghost[0] = u[0];
        ghost[1] = u[N + 1];
        MPI_Irecv(&ghost[0], 1, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &reqs[0]); /* PERSISTENT */
        MPI_Irecv(&ghost[1], 1, MPI_DOUBLE, right, 4, MPI_COMM_WORLD, reqs + 1); /* PERSISTENT */
        MPI_Isend(&edge[1], 1, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &reqs[2]); /* PERSISTENT */
        MPI_Isend(&edge[0], 1, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, &reqs[3]); /* PERSISTENT */
        relax_inner(u, next);
        MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
        relax_edges(u, next, ghost[0], ghost[1]);
    }
    show("halo_isend_irecv", weighted(u));
}

/* The tag changes every step: nonblocking, not persistent. */
static void changing_tag(void)
{
    double u[N + 2], next[N + 2], ghost[2] = {0, 0}, edge[2];
    start(u);
    for (int step = 0; step < STEPS; step++) {
        edge[0] = u[1];
        edge[1] = u[N];
        MPI_Recv(&ghost[0], 1, MPI_DOUBLE, left, 20 + step, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* NOT_PERSISTENT */
        MPI_Send(&edge[1], 1, MPI_DOUBLE, right, 20 + step, MPI_COMM_WORLD); /* NOT_PERSISTENT */
        relax_inner(u, next);
        relax_edges(u, next, left == MPI_PROC_NULL ? u[0] : ghost[0], u[N + 1]);
    }
    show("changing_tag", weighted(u));
}

/* The buffers are swapped every step (double buffering): their addresses are not invariant. */
static void swapped_buffers(void)
{
    double a[2] = {rank + 1.0, rank + 2.0}, b[2] = {0, 0}, acc = 0.0;
    double *cur = a, *fresh = b, *tmp;
    MPI_Request reqs[2];
    for (int step = 0; step < STEPS; step++) {
        MPI_Irecv(fresh, 2, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, &reqs[0]); /* NOT_PERSISTENT */
        MPI_Isend(cur, 2, MPI_DOUBLE, right, 5, MPI_COMM_WORLD, &reqs[1]); /* NOT_PERSISTENT */
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        if (left == MPI_PROC_NULL)
            fresh[0] = fresh[1] = step;
        acc += fresh[0] * (step + 1) + fresh[1];
        tmp = cur;
        cur = fresh;
        fresh = tmp;
    }
    show("swapped_buffers", acc);
}

/* The wait of a send comes at the start of the next iteration (and after the loop): at the next
 * MPI_Start the request would still be active. */
static void wait_in_next_iteration(void)
{
    double out = 0.0, in = 0.0, acc = 0.0;
    MPI_Request send = MPI_REQUEST_NULL, recv;
    for (int step = 0; step < STEPS; step++) {
        MPI_Wait(&send, MPI_STATUS_IGNORE);
        out = rank * 100.0 + step;
        MPI_Isend(&out, 1, MPI_DOUBLE, right, 6, MPI_COMM_WORLD, &send); /* NOT_PERSISTENT */
        MPI_Irecv(&in, 1, MPI_DOUBLE, left, 6, MPI_COMM_WORLD, &recv); /* PERSISTENT */
        MPI_Wait(&recv, MPI_STATUS_IGNORE);
        acc += in;
    }
    MPI_Wait(&send, MPI_STATUS_IGNORE);
    show("wait_in_next_iteration", acc);
}

/* The program tells a completed request from MPI_REQUEST_NULL (a persistent one would stay). */
static void request_compared(void)
{
    double out = rank + 0.5, in = 0.0, acc = 0.0;
    MPI_Request reqs[2];
    for (int step = 0; step < STEPS; step++) {
        MPI_Irecv(&in, 1, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &reqs[0]); /* NOT_PERSISTENT */
        MPI_Isend(&out, 1, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &reqs[1]); /* NOT_PERSISTENT */
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        acc += in + (reqs[0] == MPI_REQUEST_NULL);
    }
    show("request_compared", acc);
}

/* A `continue` skips the wait of the last receive, which is waited for after the loop: a
 * persistent request would be freed while still active, and that wait would not wait. */
static void skipped_wait(void)
{
    double out = rank + 0.75, in = 0.0, acc = 0.0;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int step = 0; step < STEPS; step++) {
        MPI_Irecv(&in, 1, MPI_DOUBLE, left, 8, MPI_COMM_WORLD, &req); /* NOT_PERSISTENT */
        MPI_Send(&out, 1, MPI_DOUBLE, right, 8, MPI_COMM_WORLD); /* PERSISTENT */
        if (step == STEPS - 1)
            continue;
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        acc += in * step;
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    acc += in;
    show("skipped_wait", acc);
}

/* Two receives into one request handle: as persistent requests, the second init would take the
 * handle of the first. */
static void one_request_two_posts(void)
{
    double a = 0.0, b = 0.0, out[2] = {rank + 0.5, rank + 1.5}, acc = 0.0;
    MPI_Request req, sends[2];
    for (int step = 0; step < STEPS; step++) {
        MPI_Isend(&out[0], 1, MPI_DOUBLE, right, 9, MPI_COMM_WORLD, &sends[0]); /* PERSISTENT */
        MPI_Isend(&out[1], 1, MPI_DOUBLE, right, 10, MPI_COMM_WORLD, &sends[1]); /* PERSISTENT */
        MPI_Irecv(&a, 1, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, &req); /* NOT_PERSISTENT */
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Irecv(&b, 1, MPI_DOUBLE, left, 10, MPI_COMM_WORLD, &req); /* NOT_PERSISTENT */
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Waitall(2, sends, MPI_STATUSES_IGNORE);
        acc += a * step + b;
    }
    show("one_request_two_posts", acc);
}

/* MPI_Sendrecv in a loop: both halves persistent, each with its own wait. */
static void sendrecv_loop(void)
{
    double out[2], in[2] = {0, 0}, acc = 0.0;
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    for (int step = 0; step < STEPS; step++) {
        out[0] = rank + step;
        out[1] = rank * step;
        MPI_Sendrecv(out, 2, MPI_DOUBLE, next, 14, in, 2, MPI_DOUBLE, prev, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* PERSISTENT */
        acc += step * 0.5; /* OVERLAP */
        acc += in[0] * in[1] + step; /* CONFLICT recv */
    }
    show("sendrecv_loop", acc);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    right = rank < nprocs - 1 ? rank + 1 : MPI_PROC_NULL;
    sendrecv_exchange();
    sendrecv_unchanged();
    halo_send_recv();
    halo_isend_irecv();
    changing_tag();
    swapped_buffers();
    wait_in_next_iteration();
    request_compared();
    skipped_wait();
    one_request_two_posts();
    sendrecv_loop();
    MPI_Finalize();
    return 0;
}
