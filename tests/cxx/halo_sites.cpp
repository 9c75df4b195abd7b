// A small C++ MPI program for the profiler's call sites (tests/python/test_demangle.py): its MPI
// calls are made from functions whose symbols are C++-mangled (references, a namespace, a
// template), as in HPCG, so that a site shows whether the name was demangled. The lines of the
// calls carry markers (site:X) the test finds them by.
#include <mpi.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

struct SparseMatrix_STRUCT {
    int rows;
};
typedef SparseMatrix_STRUCT SparseMatrix;

struct Vector_STRUCT {
    std::vector<double> values;
};
typedef Vector_STRUCT Vector;

// noinline: each function keeps its own symbol at -O2, the name the site is reported under
__attribute__((noinline)) void ExchangeHalo(const SparseMatrix &A, Vector &x)
{
    double local = A.rows * x.values[0], sum = 0;
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);  // site:H
    x.values[0] = sum;
}

namespace cg {
template <typename T>
__attribute__((noinline)) T Dot(const std::vector<T> &a, const std::vector<T> &b)
{
    T local = 0, sum = 0;
    for (size_t i = 0; i < a.size(); i++)
        local += a[i] * b[i];
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);  // site:D
    return sum;
}
}  // namespace cg

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    SparseMatrix A = {2};
    Vector x = {std::vector<double>(4, 1.0)};
    // counts from the command line (default 3 and 2), not constants: a loop of a known count
    // is unrolled at -O2 into several calls, each a site of its own in main (with --stack)
    int halos = argc > 1 ? std::atoi(argv[1]) : 3, dots = argc > 2 ? std::atoi(argv[2]) : 2;
    for (int i = 0; i < halos; i++)     // calls a rank at site H
        ExchangeHalo(A, x);
    double d = 0;
    for (int i = 0; i < dots; i++)      // calls a rank at site D
        d += cg::Dot(x.values, x.values);
    if (rank == 0)
        std::printf("halo %g dot %g ranks %d\n", x.values[0], d, size);
    MPI_Finalize();
    return 0;
}
