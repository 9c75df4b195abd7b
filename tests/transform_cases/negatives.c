/* Cases where the wait must stay early or the call must stay blocking.
 *
 * Markers read by tests/python/test_transform_cases.py:
 *   CONFLICT        every wait of the collectives before it in the function comes at this line or earlier
 *   UNCHANGED       the collective on this line stays blocking
 *   NOT_PERSISTENT  in --mode persistent, the collective on this line is not made persistent
 * Rank 0 prints every result, so the original and transformed programs can be compared. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *g_escape;          /* a global pointer the receive buffer escapes to */
static double g_recv[4];          /* a global receive buffer */
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

static void fill(double *v, int n, double base)
{
    for (int i = 0; i < n; i++)
        v[i] = base + rank * 10 + i;
}

static void touch_global(void)
{
    g_escape[0] += 1.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void write_through_alias(void)
{
    double in[4], out[4];
    double *alias = in;
    fill(in, 4, 1);
    MPI_Allreduce(in, out, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    alias[0] = -1.0; /* CONFLICT */
    show("alias", out, 4);
    show("alias-in", in, 4);
}

static void pointer_arithmetic(void)
{
    double in[4], out[4], x;
    fill(in, 4, 2);
    double *p = out + 1;
    MPI_Allreduce(in, out, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    x = *(p + 1); /* CONFLICT */
    show("arith", &x, 1);
}

static void global_pointer_escapes(void)
{
    double in[4], out[4];
    fill(in, 4, 3);
    g_escape = out;
    MPI_Allreduce(in, out, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    touch_global(); /* CONFLICT */
    show("escape", out, 4);
}

static void unknown_function_gets_alias(void)
{
    double in[4], out[4];
    fill(in, 4, 4);
    in[1] = -in[1];
    double *alias = out;
    MPI_Allreduce(in, out, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    qsort(alias, 4, sizeof(double), cmp_double); /* CONFLICT */
    show("unknown", out, 4);
}

static void global_buffer_and_unknown_call(void)
{
    double in[4];
    fill(in, 4, 5);
    MPI_Allreduce(in, g_recv, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    char *s = getenv("MPIOPT_NO_SUCH_VARIABLE"); /* CONFLICT */
    show("global", g_recv, s ? 1 : 4);
}

static void read_of_receive_buffer(void)
{
    double a = rank + 1.0, b = 0, c, unrelated = 2.0 * rank;
    MPI_Allreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    unrelated = unrelated * 3.0 + a;
    c = b + 1; /* CONFLICT */
    show("read", &c, 1);
    (void)unrelated;
}

static int goto_path(int skip)
{
    double a = rank, b = 0;
    MPI_Allreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (skip) /* CONFLICT */
        goto done;
    b = b * 2;
done:
    show("goto", &b, 1);
    return (int)b;
}

static int return_path(int early)
{
    int v = rank == 0 ? 42 : 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (early) /* CONFLICT */
        return v;
    return v + 1;
}

static void buffer_freed(void)
{
    double *t = malloc(4 * sizeof(double)), out[4];
    fill(t, 4, 6);
    MPI_Allreduce(t, out, 4, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    free(t); /* CONFLICT */
    show("freed", out, 4);
}

static void buffer_out_of_scope(int flag)
{
    double result[2] = {0, 0};
    if (flag) {
        double tmp[2] = {rank, 2.0 * rank};
        MPI_Allreduce(tmp, result, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        flag = 3;
    } /* CONFLICT */
    show("scope", result, 2);
}

static void wtime_stops(void)
{
    int a = rank, b = 0;
    MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double t = MPI_Wtime(); /* CONFLICT */
    (void)t;
    double d = b;
    show("wtime", &d, 1);
}

static void in_place(void)
{
    double buf[3];
    fill(buf, 3, 7);
    MPI_Allreduce(MPI_IN_PLACE, buf, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    buf[2] = buf[2] + 0.5; /* CONFLICT */
    show("inplace", buf, 3);
}

static void function_pointer(void (*f)(double *, int, double))
{
    double in[2], out[2];
    fill(in, 2, 8);
    MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    f(out, 2, 0.0); /* CONFLICT */
    show("fnptr", out, 2);
}

static void swapped_pointers(void)
{
    double a[2] = {rank, rank + 1.0}, b[2] = {0, 0};
    double *cur = a, *next = b, *tmp;
    for (int it = 0; it < 3; it++) {
        MPI_Allreduce(cur, next, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* NOT_PERSISTENT */
        tmp = cur;
        cur = next;
        next = tmp;
    }
    show("swap", cur, 2);
}

static void loop_counter_argument(void)
{
    double in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
    for (int n = 1; n <= 4; n++) {
        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* NOT_PERSISTENT */
        in[0] += out[n - 1];
    }
    show("counter", out, 4);
}

static void break_in_loop(void)
{
    double in = rank, out = 0;
    for (int it = 0; it < 5; it++) {
        MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (it == 2) /* CONFLICT */
            break;
        in += 1;
    }
    show("break", &out, 1);
}

static void result_used(void)
{
    int a = 1, b = 0;
    int rc = MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* UNCHANGED */
    if (rank == 0)
        printf("used: %d %d\n", rc == MPI_SUCCESS, b);
    if (b > 0)
        MPI_Bcast(&a, 1, MPI_INT, 0, MPI_COMM_WORLD); /* UNCHANGED */
}

static void reduce_at_root(void)
{
    double in[2], out[2] = {0, 0}, work[2];
    fill(in, 2, 9);
    MPI_Reduce(in, out, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    work[0] = in[0] * 2;
    in[1] = 0; /* CONFLICT */
    work[1] = out[0];
    show("reduce", work, 2);
    show("reduce-out", out, 2);
}

static void memcpy_from_receive(void)
{
    double in[2], out[2], copy[2];
    fill(in, 2, 11);
    MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    memcpy(copy, out, sizeof(copy)); /* CONFLICT */
    show("memcpy", copy, 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    write_through_alias();
    pointer_arithmetic();
    global_pointer_escapes();
    unknown_function_gets_alias();
    global_buffer_and_unknown_call();
    read_of_receive_buffer();
    goto_path(rank == nprocs);
    int r = return_path(0) + return_path(1);
    buffer_freed();
    buffer_out_of_scope(1);
    wtime_stops();
    in_place();
    function_pointer(fill);
    swapped_pointers();
    loop_counter_argument();
    break_in_loop();
    result_used();
    reduce_at_root();
    memcpy_from_receive();
    if (rank == 0)
        printf("return %d\n", r);
    MPI_Finalize();
    return 0;
}
