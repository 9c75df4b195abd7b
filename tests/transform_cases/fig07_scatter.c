#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static float do_computation(float *v, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++) {
        v[i] = v[i] * 2.0f + 1.0f;
        s += v[i];
    }
    return s;
}

int main(int argc, char **argv)
{
    int rank, size, root = 0, len = 4;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    float *nums = malloc(sizeof(float) * len * size);
    if (rank == root) {
        for (int i = 0; i < len * size; i++)
            nums[i] = (float)i;
    }
    float sub_nums[4];
    MPI_Scatter(nums, len, MPI_FLOAT, sub_nums, len, MPI_FLOAT, root, MPI_COMM_WORLD);
    float t = do_computation(nums, len * size);
    float mine[5] = {sub_nums[0], sub_nums[1], sub_nums[2], sub_nums[3], rank == root ? t : 0.0f};
    float *all = malloc(sizeof(float) * 5 * size);
    MPI_Gather(mine, 5, MPI_FLOAT, all, 5, MPI_FLOAT, root, MPI_COMM_WORLD);
    if (rank == root)
        for (int r = 0; r < size; r++)
            printf("rank %d: %g %g %g %g (t=%g)\n", r, all[5 * r], all[5 * r + 1], all[5 * r + 2],
                   all[5 * r + 3], all[5 * r + 4]);
    free(all);
    free(nums);
    MPI_Finalize();
    return 0;
}
