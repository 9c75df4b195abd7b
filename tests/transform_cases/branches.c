/* Waits that leave if branches (flags), requests shared by exclusive branches, else-if chains,
 * switch, rank-guarded waits in a loop, and more collectives (neighbourhood, v-variants, scans,
 * barrier) in loops that can become persistent. Rank 0 prints everything in rank order. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, nprocs;

static void show(const char *name, const double *v, int n)
{
    double *all = malloc(sizeof(double) * n * nprocs);
    MPI_Gather(v, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < nprocs; r++) {
            printf("%s[%d]:", name, r);
            for (int i = 0; i < n; i++)
                printf(" %.10e", all[r * n + i]);
            printf("\n");
        }
    }
    free(all);
}

static void branches(int mode)
{
    double a[3] = {rank, rank + 1.0, rank + 2.0}, b[3] = {0, 0, 0}, c[3] = {0, 0, 0}, work = 0;
    if (mode == 0) {
        MPI_Allreduce(a, b, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else if (mode == 1) {
        MPI_Allreduce(a, c, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        work += 1;
    } else {
        MPI_Bcast(a, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
    for (int i = 0; i < 1000; i++)          /* independent work the waits can move past */
        work += i * 0.5;
    b[0] += c[0] + work;
    show("branches", b, 3);
    show("branches-c", c, 3);
    show("branches-a", a, 3);
}

static void switched(int which)
{
    int v = rank * 3, out = 0;
    double d;
    switch (which) {
    case 0:
        MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        v = 7;
        break;
    case 1:
        MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        /* falls through */
    default:
        out += 100;
        break;
    }
    d = out + v;
    show("switch", &d, 1);
}

static void rooted_in_loop(void)
{
    double in[2], out[2] = {0, 0}, acc = 0;
    for (int it = 0; it < 4; it++) {
        in[0] = rank + it;
        in[1] = rank * it;
        MPI_Reduce(in, out, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        acc += out[0] * 0.5;
        in[0] = -1;
    }
    double r[2] = {acc, out[1]};
    show("rooted", r, 2);
}

static void neighbours(void)
{
    int dims[1] = {nprocs}, periods[1] = {1};
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    double send[2], recv[2] = {0, 0}, total = 0;
    for (int it = 0; it < 3; it++) {
        send[0] = rank + 10 * it;
        send[1] = -rank - 10 * it;
        MPI_Neighbor_allgather(send, 1, MPI_DOUBLE, recv, 1, MPI_DOUBLE, ring);
        total += it;
        total += recv[0] - recv[1];
    }
    show("neighbours", &total, 1);
    MPI_Comm_free(&ring);
}

static void vectors_and_scans(void)
{
    int *counts = malloc(sizeof(int) * nprocs), *displs = malloc(sizeof(int) * nprocs);
    double *all = malloc(sizeof(double) * 2 * nprocs), *to = malloc(sizeof(double) * 2 * nprocs);
    double *from = malloc(sizeof(double) * 2 * nprocs);
    double mine[2], prefix = 0, excl = 0, sum = 0;
    for (int r = 0; r < nprocs; r++) {
        counts[r] = 2;
        displs[r] = 2 * r;
    }
    for (int it = 0; it < 3; it++) {
        mine[0] = rank + it;
        mine[1] = rank * it;
        for (int i = 0; i < 2 * nprocs; i++)
            to[i] = rank * 100 + i + it;
        MPI_Allgatherv(mine, 2, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Alltoallv(to, counts, displs, MPI_DOUBLE, from, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Scan(&mine[0], &prefix, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Exscan(&mine[1], &excl, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < 2 * nprocs; i++)
            sum += all[i] + from[i] * 0.25;
        sum += prefix + (rank > 0 ? excl : 0);
    }
    show("vectors", &sum, 1);
    free(counts); free(displs); free(all); free(to); free(from);
}

static void gather_scatter_v(void)
{
    int *counts = malloc(sizeof(int) * nprocs), *displs = malloc(sizeof(int) * nprocs);
    double *root_buf = malloc(sizeof(double) * nprocs), part = rank * 1.5, got = 0;
    for (int r = 0; r < nprocs; r++) {
        counts[r] = 1;
        displs[r] = r;
        root_buf[r] = 0;
    }
    MPI_Gatherv(&part, 1, MPI_DOUBLE, root_buf, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    part = -1;
    if (rank == 0)
        for (int r = 0; r < nprocs; r++)
            root_buf[r] = root_buf[r] * 2 + 1;
    MPI_Scatterv(root_buf, counts, displs, MPI_DOUBLE, &got, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    got += part;
    show("gsv", &got, 1);
    free(counts); free(displs); free(root_buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int mode = 0; mode < 3; mode++)
        branches(mode);
    for (int which = 0; which < 3; which++)
        switched(which);
    rooted_in_loop();
    neighbours();
    vectors_and_scans();
    gather_scatter_v();
    MPI_Finalize();
    return 0;
}
