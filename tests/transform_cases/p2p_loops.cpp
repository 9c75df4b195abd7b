// Point-to-point in loops and MPI_Sendrecv in C++ for `mpiopt transform`
// (tests/python/test_transform_p2p_loops.py): the same rules as p2p_loops.c, in a namespace, a
// class's methods, with references and std::swap.
//
// Markers, each about the nearest MPI call above it (for MPI_Sendrecv: both halves; calls on
// consecutive lines: all of them):
//   CONFLICT        its wait comes at this line or earlier (CONFLICT send / recv: the
//                   sends' / receives' of the calls on the lines right above)
//   OVERLAP         its wait comes after this line
// and about the call on their own line:
//   UNCHANGED       stays blocking
//   PERSISTENT      becomes persistent in --mode persistent
//   NOT_PERSISTENT  does not (each is a rule of persistence that the case breaks)
// Every rank's results go into a sum that rank 0 prints, so the programs can be compared.
#include <mpi.h>
#include <cstdio>
#include <utility>

namespace {

const int N = 16;
const int STEPS = 6;
int rank_ = 0, nprocs_ = 1;

void show(const char *name, double value) noexcept
{
    double total = 0.0;
    MPI_Reduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank_ == 0)
        std::printf("%s: %.10e\n", name, total);
}

} // namespace

namespace halo {

// A 1-D chain of ranks and its relaxation; the exchanges are methods.
class Chain {
public:
    Chain(int rank, int nprocs)
        : left_(rank > 0 ? rank - 1 : MPI_PROC_NULL), right_(rank < nprocs - 1 ? rank + 1 : MPI_PROC_NULL)
    {
        for (int i = 0; i < N + 2; i++)
            u_[i] = rank * N + i * 0.5;
    }

    double weighted() const noexcept
    {
        double s = 0.0;
        for (int i = 1; i <= N; i++)
            s += u_[i] * (i + rank_);
        return s;
    }

    // Blocking calls in the time-step loop, receive from the left before sending to the right
    // (then the other way): persistent; the inner relaxation overlaps the messages.
    void send_recv() noexcept
    {
        double ghost_left[1], ghost_right[1], edge_left[1], edge_right[1];
        const int left = left_, right = right_;
        for (int step = 0; step < STEPS; step++) {
            edge_left[0] = u_[1];
            edge_right[0] = u_[N];
            ghost_left[0] = ghost_right[0] = 0.0;
            MPI_Recv(ghost_left, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* PERSISTENT */
            MPI_Send(edge_right, 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD); /* PERSISTENT */
            MPI_Recv(ghost_right, 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* PERSISTENT */
            MPI_Send(edge_left, 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD); /* PERSISTENT */
            relax_inner(); /* OVERLAP */
            relax_edges(left == MPI_PROC_NULL ? u_[0] : ghost_left[0],
                        right == MPI_PROC_NULL ? u_[N + 1] : ghost_right[0]); /* CONFLICT recv */
        }
    }

    // The same with MPI_Irecv / MPI_Isend / MPI_Waitall (Petal's figure 16).
    void isend_irecv() noexcept
    {
        double ghost[2], edge[2];
        MPI_Request reqs[4];
        const int left = left_, right = right_;
        for (int step = 0; step < STEPS; step++) {
            edge[0] = u_[1];
            edge[1] = u_[N];
            ghost[0] = u_[0];
            ghost[1] = u_[N + 1];
            MPI_Irecv(&ghost[0], 1, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &reqs[0]); /* PERSISTENT */
            MPI_Irecv(&ghost[1], 1, MPI_DOUBLE, right, 4, MPI_COMM_WORLD, reqs + 1); /* PERSISTENT */
            MPI_Isend(&edge[1], 1, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &reqs[2]); /* PERSISTENT */
            MPI_Isend(&edge[0], 1, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, &reqs[3]); /* PERSISTENT */
            relax_inner();
            MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
            relax_edges(ghost[0], ghost[1]);
        }
    }

private:
    void relax_inner() noexcept
    {
        for (int i = 2; i < N; i++)
            next_[i] = 0.5 * u_[i] + 0.25 * (u_[i - 1] + u_[i + 1]);
    }

    void relax_edges(double from_left, double from_right) noexcept
    {
        u_[0] = from_left;
        u_[N + 1] = from_right;
        next_[1] = 0.5 * u_[1] + 0.25 * (u_[0] + u_[2]);
        next_[N] = 0.5 * u_[N] + 0.25 * (u_[N - 1] + u_[N + 1]);
        for (int i = 1; i <= N; i++)
            u_[i] = next_[i];
    }

    int left_, right_;
    double u_[N + 2], next_[N + 2] = {};
};

// MPI_Sendrecv through references: the send half waits for the write through `o`, the receive
// half for the read of its buffer.
void sendrecv_exchange() noexcept
{
    double out[4], in[4] = {0, 0, 0, 0}, work[4];
    double &o = out[2];
    const int next = (rank_ + 1) % nprocs_, prev = (rank_ + nprocs_ - 1) % nprocs_;
    for (int i = 0; i < 4; i++)
        out[i] = rank_ * 10.0 + i;
    MPI_Sendrecv(out, 4, MPI_DOUBLE, next, 11, in, 4, MPI_DOUBLE, prev, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; i++)
        work[i] = out[i] * 2.0; /* OVERLAP */
    work[0] += in[1]; /* CONFLICT recv */
    o = -1.0; /* CONFLICT send */
    show("sendrecv_exchange", work[0] + work[1] + work[2] + work[3] + out[2]);
}

// Double buffering with std::swap: the buffers' addresses change, nothing becomes persistent.
void swapped_buffers(int left, int right) noexcept
{
    double a[2] = {rank_ + 1.0, rank_ + 2.0}, b[2] = {0, 0}, acc = 0.0;
    double *cur = a, *fresh = b;
    MPI_Request reqs[2];
    for (int step = 0; step < STEPS; step++) {
        MPI_Irecv(fresh, 2, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, &reqs[0]); /* NOT_PERSISTENT */
        MPI_Isend(cur, 2, MPI_DOUBLE, right, 5, MPI_COMM_WORLD, &reqs[1]); /* NOT_PERSISTENT */
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        if (left == MPI_PROC_NULL)
            fresh[0] = fresh[1] = step;
        acc += fresh[0] * (step + 1) + fresh[1];
        std::swap(cur, fresh);
    }
    show("swapped_buffers", acc);
}

// The tag changes every step: nonblocking, not persistent.
void changing_tag(int left, int right) noexcept
{
    double in = 0.0, out = rank_ + 0.5, acc = 0.0;
    for (int step = 0; step < STEPS; step++) {
        MPI_Recv(&in, 1, MPI_DOUBLE, left, 20 + step, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* NOT_PERSISTENT */
        MPI_Send(&out, 1, MPI_DOUBLE, right, 20 + step, MPI_COMM_WORLD); /* NOT_PERSISTENT */
        acc += in * step;
    }
    show("changing_tag", acc);
}

} // namespace halo

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs_);
    const int left = rank_ > 0 ? rank_ - 1 : MPI_PROC_NULL;
    const int right = rank_ < nprocs_ - 1 ? rank_ + 1 : MPI_PROC_NULL;
    halo::sendrecv_exchange();
    {
        halo::Chain chain(rank_, nprocs_);
        chain.send_recv();
        show("chain_send_recv", chain.weighted());
    }
    {
        halo::Chain chain(rank_, nprocs_);
        chain.isend_irecv();
        show("chain_isend_irecv", chain.weighted());
    }
    halo::swapped_buffers(left, right);
    halo::changing_tag(left, right);
    MPI_Finalize();
    return 0;
}
