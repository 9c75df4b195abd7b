// A C++ heat-equation solver: the C++ example of `mpiopt bench transform`. A class owns the
// rank's block of ROWS rows of a COLS-wide grid; every step it exchanges its edge rows with the
// neighbour ranks (MPI_Irecv / MPI_Isend / MPI_Waitall), updates the inner rows while the
// messages fly, then the edge rows, and sums the squared change over all ranks with
// MPI_Allreduce (the residual), which it only reads when deciding whether to stop.
//
// `mpiopt transform` makes the MPI_Allreduce nonblocking with its wait before the residual is
// read (the copy back of the new values overlaps it), or persistent; in --mode persistent the
// halo exchange's MPI_Irecv / MPI_Isend become MPI_Recv_init / MPI_Send_init before the loop and
// MPI_Start in it (Petal's figure 16).
//
// Usage: heat_cpp [-n COLS] [-m ROWS_PER_RANK] [-i STEPS]
//
// Output (rank 0): the size, the last residual and a checksum (%.10e); on stderr `time SECONDS`,
// the slowest rank's time in the step loop.
#include <mpi.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace heat {

class Block {
public:
    Block(int rank, int nprocs, int cols, int rows)
        : cols_(cols), rows_(rows), up_(rank > 0 ? rank - 1 : MPI_PROC_NULL),
          down_(rank < nprocs - 1 ? rank + 1 : MPI_PROC_NULL),
          u_(new double[(long)rows * cols]), next_(new double[(long)rows * cols]),
          ghost_up_(new double[cols]()), ghost_down_(new double[cols]())
    {
        for (long k = 0; k < (long)rows * cols; k++)
            u_[k] = (double)((rank * rows + k / cols) % 7) + 0.001 * (k % cols);
    }
    ~Block()
    {
        delete[] u_;
        delete[] next_;
        delete[] ghost_up_;
        delete[] ghost_down_;
    }
    Block(const Block &) = delete;
    Block &operator=(const Block &) = delete;

    // `steps` steps; returns the last residual.
    double run(int steps) noexcept
    {
        const int cols = cols_, rows = rows_, up = up_, down = down_;
        double *const u = u_, *const next = next_, *const ghost_up = ghost_up_;
        double *const ghost_down = ghost_down_, *const last = u_ + (long)(rows - 1) * cols;
        MPI_Request reqs[4];
        double change = 0.0, residual = 0.0;
        for (int step = 0; step < steps; step++) {
            MPI_Irecv(ghost_up, cols, MPI_DOUBLE, up, 2, MPI_COMM_WORLD, &reqs[0]);
            MPI_Irecv(ghost_down, cols, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &reqs[1]);
            MPI_Isend(u, cols, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &reqs[2]);
            MPI_Isend(last, cols, MPI_DOUBLE, down, 2, MPI_COMM_WORLD, &reqs[3]);
            for (int i = 1; i < rows - 1; i++)
                sweep_row(u + (long)(i - 1) * cols, u + (long)i * cols, u + (long)(i + 1) * cols,
                          next + (long)i * cols);
            MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
            sweep_row(ghost_up, u, u + cols, next);
            sweep_row(last - cols, last, ghost_down, next + (long)(rows - 1) * cols);
            change = squared_change();
            MPI_Allreduce(&change, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            std::memcpy(u, next, sizeof(double) * rows * cols);
            if (residual < 1e-30)
                break;
        }
        return residual;
    }

    double checksum(int rank) const noexcept
    {
        double s = 0.0;
        for (long k = 0; k < (long)rows_ * cols_; k++)
            s += u_[k] * (1 + (rank * rows_ + k / cols_) % 5);
        return s;
    }

private:
    void sweep_row(const double *above, const double *row, const double *below, double *out) const noexcept
    {
        out[0] = row[0];
        out[cols_ - 1] = row[cols_ - 1];
        for (int j = 1; j < cols_ - 1; j++)
            out[j] = 0.25 * (above[j] + below[j] + row[j - 1] + row[j + 1]);
    }

    double squared_change() const noexcept
    {
        double s = 0.0;
        for (long k = 0; k < (long)rows_ * cols_; k++)
            s += (next_[k] - u_[k]) * (next_[k] - u_[k]);
        return s;
    }

    int cols_, rows_, up_, down_;
    double *u_, *next_, *ghost_up_, *ghost_down_;
};

} // namespace heat

static int parse_args(int argc, char **argv, int *cols, int *rows, int *steps)
{
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && std::strcmp(argv[i], "-n") == 0)
            *cols = std::atoi(argv[++i]);
        else if (i + 1 < argc && std::strcmp(argv[i], "-m") == 0)
            *rows = std::atoi(argv[++i]);
        else if (i + 1 < argc && std::strcmp(argv[i], "-i") == 0)
            *steps = std::atoi(argv[++i]);
        else
            return -1;
    }
    return (*cols > 2 && *rows > 2 && *steps > 0) ? 0 : -1;
}

int main(int argc, char **argv)
{
    int rank, nprocs, cols = 512, rows = 8, steps = 10;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (parse_args(argc, argv, &cols, &rows, &steps) != 0) {
        if (rank == 0)
            std::fprintf(stderr, "usage: heat_cpp [-n COLS > 2] [-m ROWS_PER_RANK > 2] [-i STEPS]\n");
        MPI_Finalize();
        return 2;
    }
    double residual, elapsed, local, total = 0.0, slowest = 0.0;
    {
        heat::Block block(rank, nprocs, cols, rows);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        residual = block.run(steps);
        elapsed = MPI_Wtime() - t0;
        local = block.checksum(rank);
    }
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        std::printf("heat_cpp cols %d rows_per_rank %d ranks %d steps %d\n", cols, rows, nprocs, steps);
        std::printf("residual %.10e\n", residual);
        std::printf("checksum %.10e\n", total);
        std::fprintf(stderr, "time %.6f\n", slowest);
    }
    MPI_Finalize();
    return 0;
}
