/* Six consecutive broadcasts of independent scalars, in the style of miniMD's EAM set-up (figures
 * 9-10 of the Petal paper): rank 0 "reads" the potential's parameters (mass, nrho, drho, nr, dr,
 * cutoff) and broadcasts them one MPI_Bcast each. Their buffers are distinct, so nonblocking
 * broadcasts can all be in flight at once and complete with one MPI_Waitall.
 *
 * Each rank then places its atoms on a jittered line (work that needs none of the parameters,
 * which a nonblocking version overlaps with the broadcasts), tabulates a pair potential from
 * the parameters, sums the energy of its atom pairs within the cutoff, and MPI_Allreduce sums
 * energies and pair counts. This repeats ITERS times with parameters that change per iteration.
 *
 * Usage: six_bcasts [-n ATOMS_PER_RANK] [-i ITERS]
 *
 * Output: the pair count (integer, exact) and the energy printed with %.10e; a transformed
 * version may reduce the ranks' energies in another order, so compare the energy with a
 * relative tolerance (1e-8 in tests/python/difftest.py).
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TABLE 4096

/* A deterministic value in [0, 1) from two integers. */
static double pseudo_random(long a, long b)
{
    unsigned long h = (unsigned long)a * 2654435761UL ^ (unsigned long)b * 40503UL;
    h ^= h >> 13;
    h *= 0x5bd1e995UL;
    h ^= h >> 15;
    return (double)(h % 1000003UL) / 1000003.0;
}

/* Rank 0's stand-in for reading a potential file: parameters that vary with the iteration. */
static void read_potential(int iter, double *mass, int *nrho, double *drho, int *nr, double *dr,
                           double *cut)
{
    *mass = 1.0 + 0.25 * (iter % 4);
    *nrho = 500 + 10 * (iter % 7);
    *drho = 0.002 * (1 + iter % 3);
    *nr = 1000 + 100 * (iter % 5);
    *dr = 2.5 / (1000 + 100 * (iter % 5));
    *cut = 2.0 + 0.1 * (iter % 3);
}

static void place_atoms(double *x, int n, int rank, int iter)
{
    for (int k = 0; k < n; k++)
        x[k] = ((double)rank * n + k) * 0.4 + 0.3 * pseudo_random((long)rank * n + k, iter);
}

/* A Morse-like pair potential tabulated on nr points of spacing dr, scaled by the mass. */
static void tabulate(double *table, int nr, double dr, double mass)
{
    for (int i = 0; i < nr; i++) {
        double r = (i + 1) * dr;
        double e = exp(-2.0 * (r - 1.0));
        table[i] = mass * (e * e - 2.0 * e);
    }
}

static double pair_energy(const double *x, int n, const double *table, int nr, double dr,
                          double cut, long *pairs)
{
    double energy = 0.0;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n && x[b] - x[a] < cut; b++) {
            int i = (int)((x[b] - x[a]) / dr);
            if (i >= nr)
                i = nr - 1;
            energy += table[i];
            *pairs += 1;
        }
    return energy;
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
    int me, nprocs, natoms = 200, iters = 4;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (parse_args(argc, argv, &natoms, &iters) != 0) {
        if (me == 0)
            fprintf(stderr, "usage: six_bcasts [-n ATOMS_PER_RANK] [-i ITERS]  (both > 0)\n");
        MPI_Finalize();
        return 2;
    }

    double *x = malloc(sizeof(double) * natoms);
    double *table = malloc(sizeof(double) * MAX_TABLE);
    double mass = 0.0, drho = 0.0, dr = 0.0, cut = 0.0;
    int nrho = 0, nr = 0;
    double rho_range = 0.0, energy_sum = 0.0;
    long pair_sum = 0;

    double t0 = MPI_Wtime();
    for (int iter = 0; iter < iters; iter++) {
        if (me == 0)
            read_potential(iter, &mass, &nrho, &drho, &nr, &dr, &cut);
        MPI_Bcast(&mass, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Bcast(&nrho, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Bcast(&drho, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Bcast(&nr, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Bcast(&dr, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Bcast(&cut, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

        place_atoms(x, natoms, me, iter);
        tabulate(table, nr, dr, mass);
        rho_range += nrho * drho;

        long pairs = 0, all_pairs = 0;
        double energy = pair_energy(x, natoms, table, nr, dr, cut, &pairs), all_energy = 0.0;
        MPI_Allreduce(&energy, &all_energy, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&pairs, &all_pairs, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        energy_sum += all_energy;
        pair_sum += all_pairs;
    }
    double elapsed = MPI_Wtime() - t0;

    if (me == 0) {
        printf("six_bcasts atoms_per_rank %d ranks %d iterations %d\n", natoms, nprocs, iters);
        printf("pairs %ld\n", pair_sum);
        printf("energy %.10e\n", energy_sum);
        printf("rho_range %.10e\n", rho_range);
        fprintf(stderr, "time %.6f\n", elapsed);
    }

    free(x);
    free(table);
    MPI_Finalize();
    return 0;
}
