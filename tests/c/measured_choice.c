/* auto's measured choice (src/coll/select/measured.c) never changes a result: on MPI_COMM_WORLD and on
 * a communicator of half its ranks, 30 allreduces of each of four sizes (4.7 KiB to 1 MiB of
 * random doubles, so that the bracketing shows in the bits) go through auto, whose first 48 (up
 * to 8 KiB) or 12 calls of a size class are its trials of four algorithms (the vendor's at p = 2);
 * each result must equal, byte for byte,
 * shared_memory's result for the same input. Every third call is in place, and every call has
 * a nonblocking allreduce of its own pending on the same communicator around it, so the
 * agreement on the choice (a collective on the private communicator) meets a pending schedule.
 *
 * usage: measured_choice      prints "measured_choice: N checks, M differ, K wrong" on rank 0
 * (wrong: the nonblocking call's result differs from the blocking shared_memory one) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpiopt.h"

#define CALLS 50

static void run(MPI_Comm comm, int *checks, int *differ, int *wrong)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    const int counts[] = {600, 5000, 30001, 131073};
    for (int ci = 0; ci < 4; ci++) {
        int n = counts[ci];
        double *in = malloc(sizeof(double) * n), *ra = malloc(sizeof(double) * n),
               *rb = malloc(sizeof(double) * n), *nin = malloc(sizeof(double) * n),
               *nout = malloc(sizeof(double) * n);
        for (int call = 0; call < CALLS; call++) {
            for (int i = 0; i < n; i++) {
                in[i] = 0.5 + (double)rand() / RAND_MAX;
                nin[i] = (double)rand() / RAND_MAX;
            }
            MPI_Request pending;
            mpiopt_iallreduce(nin, nout, n, MPI_DOUBLE, MPI_SUM, comm, MPIOPT_ALG_AUTO,
                              &pending);
            if (call % 3 == 2) {
                memcpy(ra, in, sizeof(double) * n);
                mpiopt_allreduce(MPI_IN_PLACE, ra, n, MPI_DOUBLE, MPI_SUM, comm, MPIOPT_ALG_AUTO);
            } else {
                mpiopt_allreduce(in, ra, n, MPI_DOUBLE, MPI_SUM, comm, MPIOPT_ALG_AUTO);
            }
            mpiopt_request_wait(&pending, MPI_STATUS_IGNORE);
            mpiopt_allreduce(in, rb, n, MPI_DOUBLE, MPI_SUM, comm, MPIOPT_ALG_SHARED_MEMORY);
            int mine = memcmp(ra, rb, sizeof(double) * n) != 0, any;
            MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, comm);
            *differ += any;
            mpiopt_allreduce(nin, rb, n, MPI_DOUBLE, MPI_SUM, comm, MPIOPT_ALG_SHARED_MEMORY);
            mine = memcmp(nout, rb, sizeof(double) * n) != 0;
            MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, comm);
            *wrong += any;
            ++*checks;
        }
        free(in), free(ra), free(rb), free(nin), free(nout);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p, checks = 0, differ = 0, wrong = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    srand(2024u + 7919u * (unsigned)rank);
    run(MPI_COMM_WORLD, &checks, &differ, &wrong);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank < (p + 1) / 2, rank, &half);
    int part[3] = {0, 0, 0}, sum[3];
    run(half, &part[0], &part[1], &part[2]);
    /* the halves' counts, as seen by each half's first rank */
    int half_rank;
    MPI_Comm_rank(half, &half_rank);
    if (half_rank != 0)
        part[0] = part[1] = part[2] = 0;
    MPI_Allreduce(part, sum, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_free(&half);
    if (rank == 0)
        printf("measured_choice: %d checks, %d differ, %d wrong\n", checks + sum[0],
               differ + sum[1], wrong + sum[2]);
    MPI_Finalize();
    return 0;
}
