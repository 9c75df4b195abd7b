/* The order of a benchmark's columns in iteration `it`, shared by mpiopt-allreduce and
 * mpiopt-iallreduce: a fresh permutation each time, the same on every rank (a fixed-seed
 * generator). A rotation would not do: it keeps the cyclic order, so one column would nearly
 * always run right after another, and inherit its aftermath (skew between ranks, a vendor call
 * that polled away its ranks' time slices). */
#ifndef MPIOPT_BENCH_SHUFFLE_H
#define MPIOPT_BENCH_SHUFFLE_H

#include <stdint.h>

static inline void shuffle_columns(int *order, int n, unsigned it)
{
    uint64_t x = 0x9E3779B97F4A7C15ull * (it + 1);
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        x ^= x >> 33;
        x *= 0xFF51AFD7ED558CCDull;
        x ^= x >> 29;
        int j = (int)(x % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

#endif
