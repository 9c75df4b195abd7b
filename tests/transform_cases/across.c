/* Waits that leave small helper functions (issue 65, item 3): a helper whose collective
 * completes before it returns is split into a start and a finish, and the finish goes where the
 * caller first needs what the helper leaves behind. Markers for test_transform_across.py:
 * MOVED(name) on a call whose wait leaves the helper, STAYS(name) on one left as it is, and
 * USE(name) on the statement the moved wait must come before. */
#include <mpi.h>
#include <stdio.h>

#define N 6

static int rank;
static double g_scale = 1.0;          /* read by a helper after its wait */
static double g_total;                /* written by a helper after its wait */

/* a global_sum-style wrapper: the sum is its value */
static double global_sum(double x)
{
    double s = 0.0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

/* ComputeDotProduct-style: a local sum, the result through a pointer */
static int dot(int n, const double *a, const double *b, double *result)
{
    double local = 0.0, global = 0.0;
    for (int i = 0; i < n; i++)
        local += a[i] * b[i];
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *result = global;
    return 0;
}

/* the collective's buffers are the caller's (pointer parameters) */
static void sum_into(const double *in, double *out, int n)
{
    MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

/* a receive: the value from the left neighbour */
static double from_left(int left)
{
    double v = 0.0;
    MPI_Recv(&v, 1, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return v;
}

/* after its wait it reads one global and writes another */
static void total_scaled(double x)
{
    double s = 0.0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    g_total = s * g_scale;
}

/* --- helpers that stay as they are --------------------------------------------------------- */
static double printing_sum(double x)          /* output after the wait */
{
    double s = 0.0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("printing_sum %.10e\n", s);
    return s;
}

static double early_sum(int skip, double x)    /* several return paths */
{
    double s = x;
    if (skip)
        return s;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

static double pointer_sum(double x)            /* the receive buffer is a local, through a pointer */
{
    double s = 0.0, *p = &s;
    MPI_Allreduce(&x, p, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return *p;
}

static double recursive_sum(int depth, double x)
{
    double s = 0.0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    s += depth > 0 ? recursive_sum(depth - 1, x) : 0.0;
    return s;
}

static double taken_sum(double x)             /* its address is taken below */
{
    double s = 0.0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

static double (*sum_function)(double) = taken_sum;

static double alias_sum(double x)             /* a pointer to the receive buffer, used after the wait */
{
    double s = 0.0, *q = &s;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *q += 1.0;
    return s;
}

static void count_ranks(int *n)
{
    MPI_Comm_size(MPI_COMM_WORLD, n);
}

static double mean(double x)                  /* calls MPI after its wait, through a function */
{
    double s = 0.0;
    int n;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    count_ranks(&n);
    return s / n;
}

static void show(const char *what, double v)
{
    if (rank == 0)
        printf("%s %.10e\n", what, v);
}

int main(int argc, char **argv)
{
    double a[N], b[N], c[N], r = 0.0, t, w = 0.0;
    int err;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < N; i++) {
        a[i] = rank + i;
        b[i] = 0.5 * i - rank;
    }

    t = global_sum(rank + 1.0);                          /* MOVED(sum) */
    for (int i = 0; i < N; i++)
        w += a[i] * a[i];
    show("w", w);
    show("global_sum", t);                               /* USE(sum) */

    err = dot(N, a, b, &r);                              /* MOVED(dot) */
    for (int i = 0; i < N; i++)
        c[i] = a[i] + b[i];
    show("r", r);                                        /* USE(dot) */
    show("err", err);
    show("c", c[N - 1]);

    dot(N, a, c, &r);                                    /* STAYS(at_once) */
    w = r * 2.0;
    show("w", w);

    sum_into(a, c, N);                                   /* STAYS(send_buffer) */
    a[0] = 100.0;
    show("c", c[0] + c[N - 1]);

    {
        int size;
        double mine = 10.0 * rank, got;
        MPI_Request sent;                                  /* one rank sends to itself: no blocking send */
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Isend(&mine, 1, MPI_DOUBLE, (rank + 1) % size, 7, MPI_COMM_WORLD, &sent);
        got = from_left((rank + size - 1) % size);         /* MOVED(receive) */
        w = a[4] * 0.5;
        show("got", got + w);                              /* USE(receive) */
        MPI_Wait(&sent, MPI_STATUS_IGNORE);
    }

    total_scaled(2.0 + rank);                            /* MOVED(global_read) */
    w = a[1] * 3.0;
    g_scale = 2.0;                                       /* USE(global_read) */
    show("total", g_total);

    total_scaled(1.0);                                   /* MOVED(global_written) */
    w += a[2];
    w += g_total;                                        /* USE(global_written) */
    show("w", w);

    t = printing_sum(rank);                              /* STAYS(output) */
    w = a[3] + 1.0;
    show("t", t + w);
    t = early_sum(argc > 99, rank);                      /* STAYS(returns) */
    w = a[3] + 2.0;
    show("t", t + w);
    t = pointer_sum(rank);                               /* STAYS(pointer) */
    w = a[3] + 3.0;
    show("t", t + w);
    t = recursive_sum(1, rank);                          /* STAYS(recursive) */
    w = a[3] + 4.0;
    show("t", t + w);
    t = taken_sum(rank);                                 /* STAYS(address) */
    w = a[3] + 5.0;
    show("t", t + sum_function(w));
    t = alias_sum(rank);                                 /* STAYS(alias) */
    w = a[3] + 6.0;
    show("t", t + w);
    t = mean(rank);                                      /* STAYS(calls_mpi) */
    w = a[3] + 7.0;
    show("t", t + w);

    MPI_Finalize();
    return 0;
}
