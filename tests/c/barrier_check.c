/* mpiopt_barrier really holds every rank until all have arrived: before the barrier one rank
 * sleeps 300 ms (far longer than any skew the start leaves), then every rank creates the file
 * <dir>/arrived.<round>.<rank>; after it, every rank checks that the files of all members exist.
 * Rounds: MPI_COMM_WORLD with rank 0 late, then with the last rank late, a split communicator
 * (odd and even ranks), MPI_COMM_SELF. tests/python/test_coll.py runs it with
 * the yielding barrier forced on and off. Prints "barrier_check: N checks, F failures". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "mpiopt.h"

static int round_on(MPI_Comm comm, int late, const char *dir, int round, int world_rank)
{
    int rank, p, missing = 0;
    char path[4096];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    if (rank == (late + p) % p) {
        struct timespec nap = { 0, 300000000L };
        nanosleep(&nap, NULL);
    }
    snprintf(path, sizeof path, "%s/arrived.%d.%d", dir, round, world_rank);
    FILE *f = fopen(path, "w");
    if (!f || fclose(f) != 0) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (mpiopt_barrier(comm) != MPI_SUCCESS)
        return 1;
    /* the members of comm, by world rank */
    MPI_Group world_group, group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_group(comm, &group);
    for (int r = 0; r < p; r++) {
        int w;
        MPI_Group_translate_ranks(group, 1, &r, world_group, &w);
        snprintf(path, sizeof path, "%s/arrived.%d.%d", dir, round, w);
        if (access(path, F_OK) != 0) {
            printf("barrier_check: round %d: rank %d left the barrier before rank %d arrived\n",
                   round, world_rank, w);
            missing = 1;
        }
    }
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    return missing;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int world_rank, failures = 0, checks = 0, total = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (argc != 2) {
        if (world_rank == 0)
            fprintf(stderr, "usage: barrier_check DIR (an empty directory all ranks can write)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &split);
    MPI_Comm comms[4] = { MPI_COMM_WORLD, MPI_COMM_WORLD, split, MPI_COMM_SELF };
    int late[4] = { 0, -1, 0, 0 };  /* -1: the last rank */
    /* the first call on a communicator duplicates it (a collective that synchronises by itself) */
    for (int i = 0; i < 4; i++)
        mpiopt_barrier(comms[i]);
    for (int round = 0; round < 4; round++, checks++)
        failures += round_on(comms[round], late[round], argv[1], round, world_rank);
    MPI_Comm_free(&split);
    MPI_Reduce(&failures, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("barrier_check: %d checks, %d failures\n", checks, total);
    MPI_Finalize();
    return total != 0;
}
