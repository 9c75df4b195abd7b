// C++ cases for `mpiopt transform` (tests/python/test_transform_cpp.py): collectives in methods,
// a constructor, a namespace, a template and a lambda; references; overloads; exceptions.
//
// Markers, each about the nearest collective above it:
//   CONFLICT  its wait comes at this line or earlier
//   OVERLAP   its wait comes after this line (the statement runs while the collective is pending)
// Rank 0 prints every result, so the original and transformed programs can be compared.
#include <mpi.h>
#include <cstdio>
#include <stdexcept>
#include <vector>

static int rank_ = 0;

static void show(const char *name, const double *v, int n)
{
    if (rank_ == 0) {
        std::printf("%s:", name);
        for (int i = 0; i < n; i++)
            std::printf(" %.10e", v[i]);
        std::printf("\n");
    }
}

// A reference bound to the receive buffer: writing the reference writes the buffer.
static void reference_alias()
{
    double local = rank_ + 1.0, recv = 0.0, other = 0.0;
    double &r = recv;
    MPI_Allreduce(&local, &recv, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    other = local * 3; /* OVERLAP */
    r = r * 2; /* CONFLICT */
    show("reference_alias", &recv, 1);
    show("reference_alias_other", &other, 1);
}

static void bump(double &v) { v += 1.0; }

// A reference parameter is pointer-like: the call writes the receive buffer.
static void reference_parameter()
{
    double local = rank_ + 2.0, recv = 0.0;
    MPI_Allreduce(&local, &recv, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    bump(recv); /* CONFLICT */
    show("reference_parameter", &recv, 1);
}

// A reference member bound (in a constructor) to the receive buffer: writing it writes the buffer.
struct Target {
    double &value;
    explicit Target(double &v) : value(v) {}
};

static void reference_member()
{
    double local = rank_ + 4.0, recv = 0.0;
    Target t(recv);
    MPI_Allreduce(&local, &recv, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    t.value += 0.5; /* CONFLICT */
    show("reference_member", &recv, 1);
}

// Overloads have separate summaries: touch(double *) writes through its argument, touch(int)
// touches nothing (and is defined last: one summary by name would be its).
static void touch(double *p) { p[0] = -1.0; }
static void touch(int n) { (void)n; }

static void overloads()
{
    double local[2] = {rank_ + 1.0, 2.0}, recv[2] = {0.0, 0.0};
    MPI_Allreduce(local, recv, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    touch(3); /* OVERLAP */
    touch(recv); /* CONFLICT */
    show("overloads", recv, 2);
}

namespace grid {
// A collective in a namespace, reading a vector through a const reference and a range-for.
double total(const std::vector<double> &values)
{
    double local = 0.0, sum = 0.0;
    for (double x : values)
        local += x;
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const double count = static_cast<double>(values.size()); /* OVERLAP */
    return sum + 0.0 * count;
}
}  // namespace grid

// Collectives in a constructor, a method defined in the class and one defined outside it.
class Stats {
public:
    explicit Stats(double seed)
    {
        double mine = seed + rank_;
        MPI_Allreduce(&mine, &max_, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        calls_ = 1; /* CONFLICT */
    }
    double mean(double x)
    {
        double in[2] = {x, 1.0}, out[2] = {0.0, 0.0};
        MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        calls_ += 1; /* OVERLAP */
        return out[0] / out[1];
    }
    double spread(double x);
    double max() const { return max_; }
    int calls() const { return calls_; }

private:
    double max_ = 0.0;
    int calls_ = 0;
};

double Stats::spread(double x)
{
    double lo = 0.0, hi = 0.0;
    MPI_Allreduce(&x, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&x, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); /* OVERLAP */
    calls_ += 1; /* OVERLAP */
    return hi - lo;
}

// A template: its pattern is what is rewritten (right for every instantiation).
template <typename T>
T global_sum(T value, MPI_Datatype type)
{
    T sum = T();
    MPI_Allreduce(&value, &sum, 1, type, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}

// `throw` stops a wait: the request must not be pending while the stack unwinds.
static double checked(double x)
{
    double sum = 0.0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (x < -1e300) /* CONFLICT */
        throw std::runtime_error("impossible value");
    double twice = 2.0 * x;
    return sum + twice;
}

// A call that may throw (std::vector's constructor allocates) stops the wait, unless the
// function is noexcept (an exception would end the program in std::terminate).
static double may_throw(double x)
{
    double sum = 0.0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    std::vector<double> scratch(4, x); /* CONFLICT */
    return sum + scratch[3];
}

static double cannot_throw(double x) noexcept
{
    double sum = 0.0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    std::vector<double> scratch(4, x); /* OVERLAP */
    return sum + scratch[3];
}

// A collective in a lambda (captures escape: `acc` is written by the closure only).
static void lambda_case()
{
    double acc = 0.0;
    auto reduce = [&](double v) {
        double out = 0.0;
        MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        acc += 1.0; /* OVERLAP */
        return out;
    };
    double got[3] = {reduce(rank_ + 1.0), reduce(2.0 * rank_), 0.0};
    got[2] = acc;
    show("lambda", got, 3);
}

// A lambda at file scope and a method of a class declared in a function: functions of their own.
static auto scaled_max = [](double v) {
    double out = 0.0;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return 3.0 * out;
};

static double local_class(double v)
{
    struct Local {
        double twice_sum(double x)
        {
            double y = 0.0;
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            return 2.0 * y;
        }
    };
    Local l;
    return l.twice_sum(v) + scaled_max(v);
}

// Point-to-point in a method: ranks 2k and 2k+1 swap values (the even one sends first). The
// receives overlap the scaling; a receive with MPI_ANY_TAG stays blocking.
class Pair {
public:
    explicit Pair(int size) : size_(size) {}
    double swap_and_scale(double mine)
    {
        double theirs = 0.0, scaled = 0.0, tagged = 0.0;
        const int peer = rank_ ^ 1;
        if (peer >= size_)
            return mine;
        if (rank_ % 2 == 0) {
            MPI_Send(&mine, 1, MPI_DOUBLE, peer, 11, MPI_COMM_WORLD);
            MPI_Recv(&theirs, 1, MPI_DOUBLE, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(&tagged, 1, MPI_DOUBLE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&theirs, 1, MPI_DOUBLE, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&mine, 1, MPI_DOUBLE, peer, 11, MPI_COMM_WORLD);
            MPI_Send(&mine, 1, MPI_DOUBLE, peer, 12, MPI_COMM_WORLD);
        }
        scaled = mine * 2.0;
        return theirs + scaled + tagged;
    }

private:
    int size_;
};

// A collective in a range-for loop, with loop-invariant arguments (persistent in that mode).
static void range_loop()
{
    const std::vector<double> steps = {1.0, 2.0, 3.0};
    double in = rank_, out = 0.0, acc[3] = {0.0, 0.0, 0.0};
    int i = 0;
    for (double s : steps) {
        in = in + s;
        MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        acc[i++] = out;
    }
    show("range_loop", acc, 3);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    reference_alias();
    reference_parameter();
    reference_member();
    overloads();
    const std::vector<double> values = {1.0 + rank_, 2.0, 3.5};
    Stats stats(10.0);
    double r[9];
    r[0] = grid::total(values);
    r[1] = stats.mean(rank_ + 0.5);
    r[2] = stats.spread(rank_ * 1.5);
    r[3] = stats.max() + stats.calls();
    r[4] = global_sum<double>(rank_ + 0.25, MPI_DOUBLE);
    r[5] = global_sum<int>(rank_ + 3, MPI_INT);
    r[6] = checked(rank_ + 1.0);
    r[7] = may_throw(rank_ + 2.0);
    r[8] = cannot_throw(rank_ + 3.0);
    show("results", r, 9);
    lambda_case();
    const double lc = local_class(rank_ + 0.5);
    show("local_class", &lc, 1);
    range_loop();
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Pair pair(size);
    const double swapped = pair.swap_and_scale(rank_ + 0.75);
    show("pair", &swapped, 1);
    MPI_Finalize();
    return 0;
}
