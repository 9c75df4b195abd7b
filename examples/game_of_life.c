/* Conway's game of life on an N x N grid with dead cells outside it, written after figure 16 of
 * the Petal paper: the rows are split over the ranks of a 1-D Cartesian communicator; each
 * generation exchanges the boundary rows with MPI_Neighbor_alltoallw and sums the number of
 * changed cells with MPI_Allreduce, stopping early when nothing changed.
 *
 * Unlike the paper's figure (which sends from and receives into the same array), the received
 * halo rows go to their own array: the interior cells can then be computed without touching the
 * receive buffer, so a nonblocking exchange overlaps with them, and only the boundary rows wait.
 * The grid is copied back (not pointer-swapped) after each generation so the buffers keep fixed
 * addresses, which persistent collectives need.
 *
 * Usage: game_of_life [-n N] [-i MAX_GENERATIONS]
 *
 * Output: integers only (generations run, live cells, a position checksum), so original and
 * transformed versions must agree exactly, and with any number of ranks.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The initial pattern: about 30 % live cells, the same whatever the number of ranks. */
static int initially_alive(long row, long col)
{
    unsigned long h = (unsigned long)row * 73856093UL ^ (unsigned long)col * 19349663UL;
    h ^= h >> 13;
    h *= 0x5bd1e995UL;
    h ^= h >> 15;
    return (h % 10) < 3;
}

static int next_state(int alive, int neighbours)
{
    return neighbours == 3 || (alive && neighbours == 2);
}

/* Cell (i, j) of the local grid; rows 1..myM and columns 1..myN are real, column 0 and myN+1
 * are always dead. */
#define CELL(grid, i, j) ((grid)[(size_t)(i) * (myN + 2) + (j)])

/* Rows 2..myM-1 need no halo. Returns how many cells change. */
static int compute_inner(const int *life, int *temp, int myM, int myN)
{
    int changed = 0;
    for (int i = 2; i < myM; i++)
        for (int j = 1; j <= myN; j++) {
            int n = CELL(life, i - 1, j - 1) + CELL(life, i - 1, j) + CELL(life, i - 1, j + 1)
                    + CELL(life, i, j - 1) + CELL(life, i, j + 1)
                    + CELL(life, i + 1, j - 1) + CELL(life, i + 1, j) + CELL(life, i + 1, j + 1);
            CELL(temp, i, j) = next_state(CELL(life, i, j), n);
            changed += CELL(temp, i, j) != CELL(life, i, j);
        }
    return changed;
}

/* Row i (1 or myM) next to the halo: the row above comes from `above`, the one below from
 * `below` (a halo row or a row of life). */
static int compute_row(const int *life, int *temp, int i, const int *above, const int *below, int myN)
{
    int changed = 0;
    for (int j = 1; j <= myN; j++) {
        int n = above[j - 1] + above[j] + above[j + 1] + CELL(life, i, j - 1) + CELL(life, i, j + 1)
                + below[j - 1] + below[j] + below[j + 1];
        CELL(temp, i, j) = next_state(CELL(life, i, j), n);
        changed += CELL(temp, i, j) != CELL(life, i, j);
    }
    return changed;
}

/* halo holds the row received from the rank above, then the one from the rank below. */
static int compute_boundary(const int *life, int *temp, const int *halo, int myM, int myN)
{
    const int *halo_above = halo, *halo_below = halo + (myN + 2);
    if (myM == 1)
        return compute_row(life, temp, 1, halo_above, halo_below, myN);
    int changed = compute_row(life, temp, 1, halo_above, &CELL(life, 2, 0), myN);
    changed += compute_row(life, temp, myM, &CELL(life, myM - 1, 0), halo_below, myN);
    return changed;
}

static int parse_args(int argc, char **argv, int *size, int *iters)
{
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "-n") == 0)
            *size = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-i") == 0)
            *iters = atoi(argv[++i]);
        else
            return -1;
    }
    return (*size > 0 && *iters > 0) ? 0 : -1;
}

int main(int argc, char **argv)
{
    int rank, p, N = 48, NTIMES = 20;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (parse_args(argc, argv, &N, &NTIMES) != 0 || N < p) {
        if (rank == 0)
            fprintf(stderr, "usage: game_of_life [-n N] [-i MAX_GENERATIONS]  (N >= number of ranks)\n");
        MPI_Finalize();
        return 2;
    }

    /* Rows split as evenly as possible; non-periodic, so the outer ranks' missing neighbour is
     * MPI_PROC_NULL and their halo row stays dead. */
    int dims[1] = {p}, periods[1] = {0};
    MPI_Comm commgraph;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &commgraph);
    int myM = N / p + (rank < N % p ? 1 : 0);
    int first_row = rank * (N / p) + (rank < N % p ? rank : N % p);
    int myN = N;

    int *life = calloc((size_t)(myM + 2) * (myN + 2), sizeof(int));
    int *temp = calloc((size_t)(myM + 2) * (myN + 2), sizeof(int));
    int *halo = calloc((size_t)2 * (myN + 2), sizeof(int));
    for (int i = 1; i <= myM; i++)
        for (int j = 1; j <= myN; j++)
            CELL(life, i, j) = initially_alive(first_row + i - 1, j - 1);

    /* Neighbour order of a 1-D Cartesian communicator: the rank above, then the one below. We
     * send our first real row up and our last one down; the rows arrive in halo[0] and halo[1]. */
    MPI_Datatype row_type;
    MPI_Type_contiguous(myN + 2, MPI_INT, &row_type);
    MPI_Type_commit(&row_type);
    int sendcounts[2] = {1, 1}, recvcounts[2] = {1, 1};
    MPI_Aint sdispls[2] = {(MPI_Aint)sizeof(int) * (myN + 2), (MPI_Aint)sizeof(int) * (myN + 2) * myM};
    MPI_Aint rdispls[2] = {0, (MPI_Aint)sizeof(int) * (myN + 2)};
    MPI_Datatype sendtypes[2] = {row_type, row_type}, recvtypes[2] = {row_type, row_type};

    int flag, gflag = 1, k;
    double t0 = MPI_Wtime();
    for (k = 0; k < NTIMES && gflag != 0; k++) {
        gflag = 0;
        MPI_Neighbor_alltoallw(life, sendcounts, sdispls, sendtypes, halo, recvcounts, rdispls,
                               recvtypes, commgraph);
        flag = compute_inner(life, temp, myM, myN);
        flag += compute_boundary(life, temp, halo, myM, myN);
        MPI_Allreduce(&flag, &gflag, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 1; i <= myM; i++)
            memcpy(&CELL(life, i, 1), &CELL(temp, i, 1), sizeof(int) * myN);
    }
    double elapsed = MPI_Wtime() - t0;

    long counts[2] = {0, 0}, global_counts[2];
    for (int i = 1; i <= myM; i++)
        for (int j = 1; j <= myN; j++)
            if (CELL(life, i, j)) {
                counts[0] += 1;
                counts[1] += ((long)(first_row + i - 1) * N + (j - 1)) % 1000003;
            }
    MPI_Reduce(counts, global_counts, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("game_of_life N %d max_generations %d\n", N, NTIMES);
        printf("generations %d\n", k);
        printf("live_cells %ld\n", global_counts[0]);
        printf("checksum %ld\n", global_counts[1]);
        fprintf(stderr, "time %.6f\n", elapsed);
    }

    MPI_Type_free(&row_type);
    MPI_Comm_free(&commgraph);
    free(life);
    free(temp);
    free(halo);
    MPI_Finalize();
    return 0;
}
