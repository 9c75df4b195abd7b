// Waits that leave small helper functions in C++ (issue 65, item 3): an HPCG-style dot product
// (const Vector & inputs, the result and a time through double & parameters) and a global_sum
// wrapper returning the sum. Markers as in across.c: MOVED(name), STAYS(name), USE(name).
#include <mpi.h>
#include <cstdio>

struct Vector {
    int localLength;
    double *values;
};

static int rank_of_world;

double global_sum(double x)
{
    double s = 0.0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

int ComputeDotProduct_ref(const int n, const Vector &x, const Vector &y, double &result,
                          double &time_allreduce)
{
    double local_result = 0.0;
    double *xv = x.values;
    double *yv = y.values;
    if (yv == xv) {
        for (int i = 0; i < n; i++) local_result += xv[i] * xv[i];
    } else {
        for (int i = 0; i < n; i++) local_result += xv[i] * yv[i];
    }
    double global_result = 0.0;
    MPI_Allreduce(&local_result, &global_result, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    result = global_result;
    time_allreduce += 1.0;           // HPCG adds a timer's difference here (stays: unknown code)
    return 0;
}

// the send buffer is the caller's, bound to a reference
void sum_of(const double &in, double &out)
{
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

double checked_sum(double x)                 // may throw after its wait
{
    double s = 0.0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (s < 0.0)
        throw s;
    return s;
}

static void show(const char *what, double v)
{
    if (rank_of_world == 0)
        std::printf("%s %.10e\n", what, v);
}

int main(int argc, char **argv)
{
    const int n = 8;
    double xs[n], ys[n], zs[n];
    double normr = 0.0, rtz = 0.0, t4 = 0.0, w = 0.0, in = 0.0, out = 0.0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_of_world);
    for (int i = 0; i < n; i++) {
        xs[i] = rank_of_world + 0.25 * i;
        ys[i] = 1.0 - 0.125 * i;
        zs[i] = 0.0;
    }
    Vector x = {n, xs}, y = {n, ys}, z = {n, zs};

    double t = global_sum(rank_of_world + 1.0);                  // STAYS(initialiser)
    show("t", t);
    t = global_sum(rank_of_world + 2.0);                         // MOVED(sum)
    for (int i = 0; i < n; i++)
        zs[i] = xs[i] * 2.0;
    show("t", t);                                                // USE(sum)

    ComputeDotProduct_ref(n, x, y, rtz, t4);                     // MOVED(dot)
    for (int i = 0; i < n; i++)
        zs[i] += ys[i];
    show("z", zs[n - 1]);
    show("rtz", rtz);                                            // USE(dot)

    ComputeDotProduct_ref(n, x, x, normr, t4);                   // STAYS(at_once)
    w = normr;
    show("w", w);
    ComputeDotProduct_ref(n, z, y, normr, t4);                   // MOVED(time)
    w = zs[0];
    t4 += 0.5;                                                   // USE(time)
    show("normr", normr + w + t4);

    in = rank_of_world;
    sum_of(in, out);                                             // STAYS(send_buffer)
    in = 5.0;
    show("out", out + in);
    in = rank_of_world + 3.0;
    sum_of(in, out);                                             // MOVED(reference)
    w = zs[1];
    show("out", out + w);                                        // USE(reference)
    sum_of(rank_of_world + 1.0, out);                            // STAYS(temporary)
    w = zs[2];
    show("out", out + w);
    t = checked_sum(rank_of_world + 4.0);                        // STAYS(throws)
    w = zs[3];
    show("t", t + w);

    MPI_Finalize();
    return 0;
}
