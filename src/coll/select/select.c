/* Choosing the algorithm for a call.
 *
 * Order of authority: an explicit algorithm argument; MPIOPT_ALLREDUCE / MPIOPT_REDUCE; the
 * tuning table's rows for this communicator size's rank-count class (MPIOPT_TUNING_FILE, whose
 * rows each cover a range of sizes, or the compiled-in rows measured on the development machine,
 * each for exactly the size it was measured at); the cost model. A choice that cannot reduce a
 * non-commutative op in rank order is replaced by the cheapest one that can.
 *
 * The choice is a pure function of (p, bytes, commutativity) and the environment, so every rank
 * of a communicator picks the same algorithm without talking; the cache only saves time. Where
 * the built-in rows name shared_memory for an allreduce, measured.c may replace it by timing. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/select/select.h"
#include "coll/engine/report.h"
#include "coll/select/tuning_file.h"
#include "kernels/node.h"

#ifndef MPIOPT_FLAVOUR
#define MPIOPT_FLAVOUR "unknown"
#endif

#define TB 1099511627776.0

/* Measured on the development machine (2 cores, shared memory; medians of
 * `mpiopt bench allreduce`, see docs/collectives.md). A change of choice between two measured
 * sizes is put at their geometric mean, as `mpiopt tune` does.
 *
 * p = 2, both MPIs: `shared_memory` at every size, allreduce and reduce. Measured (issue 23) with
 * `mpiopt bench allreduce -np 2 --sizes 4:4M --algorithms vendor,auto,shared_memory,
 * recursive_doubling,rabenseifner` and against five vendors (Debian's Open MPI 4.1.4 and MPICH
 * 4.0.2, Open MPI 5.0.11, MPICH 5.0.2, Intel MPI 2021.15 from PyPI), OSU's figure: since its
 * allreduce reduce-scatters pieces of 4 KiB and up through its window (and, measured then,
 * read the other ranks' buffers directly from 64 KiB; its stages, staged.c, are faster
 * still), it is faster than recursive doubling and
 * Rabenseifner at every size (1.0-1.2x Rabenseifner at 64 KiB-4 MiB, 1.1-9x below; one run each
 * MPI, Open MPI 4.1.4 and MPICH 4.0.2, float); its reduce
 * lets the non-root ranks go once their input is in the window. Earlier, where every rank reduced
 * every piece, recursive doubling took 32 KiB and Rabenseifner the rest.
 *
 * Open MPI's reduce at p = 2, 16-256 KiB (issue 37): its root reads the other rank's send buffer
 * with one single-copy (CMA) read and reduces from its own cache. Until 2026-11-28 the vendor's
 * own call took these sizes: the window's stages measured 0.55-0.83 of it, binomial 0.85-0.99.
 * shared_memory's reduce now reads the same way at p = 2 (single_copy.c) and beat it in OSU's
 * own runs, the vendor alone against the drop-in alone (Open MPI 4.1.4, MPI_FLOAT, three
 * alternating runs, us: 16 KiB 1.40-1.42 against 1.93-3.27, 64 KiB 4.25-4.49 against 4.76-4.82,
 * 256 KiB 14.1-14.7 against 14.8-15.4; 512 KiB, through the stages, 34-36 against 41-47).
 *
 * p = 4 (two ranks a core, oversubscribed): shared memory to 8 KiB (above, every rank reducing
 * everything while another waits for its core loses 1.5-3x), recursive doubling in the middle,
 * Rabenseifner above (the ring's 6 rounds won some runs and lost others by up to 1.5x to the
 * scheduler). Open MPI's reduce, which returns on the other ranks as soon as they have sent,
 * stays ahead up to 128 B; MPICH's own collectives poll away whole scheduler time slices
 * (milliseconds a call), so there the rows only rank mpiopt's algorithms, which yield the core
 * while they wait (p2p.c). */
/* The rows of each operation end at the first empty one (ranks 0), so they count themselves. */
static const mpiopt_tuning_row default_rows_openmpi[2][8] = {
    {{2, TB, MPIOPT_ALG_SHARED_MEMORY},
     {4, 8192, MPIOPT_ALG_SHARED_MEMORY}, {4, 92681, MPIOPT_ALG_RECURSIVE_DOUBLING},
     {4, TB, MPIOPT_ALG_RABENSEIFNER}},
    {{2, TB, MPIOPT_ALG_SHARED_MEMORY},
     {4, 181, MPIOPT_ALG_VENDOR}, {4, 8192, MPIOPT_ALG_SHARED_MEMORY}, {4, TB, MPIOPT_ALG_VENDOR}},
};
static const mpiopt_tuning_row default_rows_mpich[2][8] = {
    {{2, TB, MPIOPT_ALG_SHARED_MEMORY},
     {4, 8192, MPIOPT_ALG_SHARED_MEMORY}, {4, 92681, MPIOPT_ALG_RECURSIVE_DOUBLING},
     {4, TB, MPIOPT_ALG_RABENSEIFNER}},
    {{2, TB, MPIOPT_ALG_SHARED_MEMORY},
     {4, 8192, MPIOPT_ALG_SHARED_MEMORY}, {4, TB, MPIOPT_ALG_VENDOR}},
};
/* Cost-model parameters for this machine's shared memory, from ping-pong and reduce_local. */
static const mpiopt_cost_params default_model = {.alpha = 1.0e-6, .beta = 2.5e-10,
                                                 .gamma = 1.0e-10};
/* Without a tuning file, sizes p without rows still leave messages below this to the vendor:
 * on a shared-memory node its collectives win the latency-bound sizes (they use shared buffers,
 * not point-to-point messages), and above it the cost model decides. */
#define DEFAULT_VENDOR_BELOW_BYTES 65536.0

static mpiopt_tuning tuning;
static double vendor_below;         /* bytes; 0 once a tuning file is loaded */
static int forced[2] = {-1, -1};    /* from MPIOPT_ALLREDUCE / MPIOPT_REDUCE */
static int tuning_from_file;        /* MPIOPT_TUNING_FILE was read */
static int measure = 1;             /* MPIOPT_MEASURE=0: auto never times its choice */
static int reproducible = 1;        /* MPIOPT_REPRODUCIBLE=0: the vendor may take any call */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_defaults(void)
{
    const mpiopt_tuning_row(*rows)[8] = NULL;
    tuning.model = default_model;
    vendor_below = 0;
    if (!strcmp(MPIOPT_FLAVOUR, "openmpi") || !strcmp(MPIOPT_FLAVOUR, "mpich"))
        vendor_below = DEFAULT_VENDOR_BELOW_BYTES;
    if (!strcmp(MPIOPT_FLAVOUR, "openmpi"))
        rows = default_rows_openmpi;
    else if (!strcmp(MPIOPT_FLAVOUR, "mpich"))
        rows = default_rows_mpich;
    for (int w = 0; w < 2; w++) {
        tuning.nrows[w] = 0;
        for (int i = 0; rows && i < 8 && rows[w][i].ranks > 0; i++) {
            /* each built-in row covers exactly the count it was measured at */
            mpiopt_tuning_row r = rows[w][i];
            r.min_ranks = r.max_ranks = r.ranks;
            tuning.rows[w][tuning.nrows[w]++] = r;
        }
    }
}

static void warn(const char *msg)
{
    int rank = 0, init = 0;
    PMPI_Initialized(&init);
    if (init)
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        fprintf(stderr, "mpiopt: warning: %s\n", msg);
}

/* The ranks a node for the two-level model when the tuning file does not say: the testing knob
 * MPIOPT_RANKS_PER_NODE, else the launcher's count of this node's ranks (node.h). A count for
 * MPI_COMM_WORLD: on another communicator `hierarchical` may be priced with the wrong layout,
 * which costs time, never correctness (it runs on the layout it finds). */
static void default_ranks_per_node(void)
{
    if (tuning.model.ranks_per_node > 0)
        return;
    const char *knob = getenv("MPIOPT_RANKS_PER_NODE");
    long k = knob && *knob ? strtol(knob, NULL, 10) : 0;
    if (k <= 0)
        k = mpiopt_node_ranks();
    tuning.model.ranks_per_node = k > 0 && k < (1 << 30) ? (int)k : 0;
}

static void load_settings(void)
{
    load_defaults();
    const char *m = getenv("MPIOPT_MEASURE");
    measure = !(m && !strcmp(m, "0"));
    const char *r = getenv("MPIOPT_REPRODUCIBLE");
    reproducible = !(r && !strcmp(r, "0"));
    const char *vars[2] = {"MPIOPT_ALLREDUCE", "MPIOPT_REDUCE"};
    for (int w = 0; w < 2; w++) {
        const char *name = getenv(vars[w]);
        if (!name || !*name)
            continue;
        forced[w] = mpiopt_algorithm_from_name(name);
        if (forced[w] < 0) {
            char names[256], msg[512];
            mpiopt_algorithm_names(names, sizeof names);
            snprintf(msg, sizeof msg, "%s=%.64s is not an algorithm (%s): using auto", vars[w],
                     name, names);
            warn(msg);
        }
        if (forced[w] == MPIOPT_ALG_AUTO)
            forced[w] = -1;
    }
    const char *path = getenv("MPIOPT_TUNING_FILE");
    if (path && *path) {
        char err[512], msg[600];
        if (mpiopt_tuning_read(path, &tuning, err, sizeof err) != 0) {
            snprintf(msg, sizeof msg, "MPIOPT_TUNING_FILE: %s; using the built-in defaults", err);
            warn(msg);
            load_defaults();
        } else {
            vendor_below = 0;
            tuning_from_file = 1;
        }
    }
    default_ranks_per_node();
}

const mpiopt_cost_params *mpiopt_selection_model(void)
{
    pthread_once(&once, load_settings);
    return &tuning.model;
}

/* The algorithms that choose inner ones price them with this model too (cost_model.h). */
__attribute__((constructor)) static void register_model(void)
{
    mpiopt_cost_model_source(mpiopt_selection_model);
}

static mpiopt_algorithm cheapest_but(int is_reduce, int p, size_t bytes, int commutative,
                                     int excluded)
{
    /* the vendor when nothing of mpiopt's fits (cannot happen while binomial keeps order) */
    mpiopt_algorithm best = MPIOPT_ALG_VENDOR;
    double best_t = -1;
    for (int a = 0; a < MPIOPT_ALG_COUNT; a++) {
        if (a == excluded || !mpiopt_algorithms[a].cost ||
            !mpiopt_algorithm_fits((mpiopt_algorithm)a, p, commutative))
            continue;
        double t = mpiopt_cost_seconds((mpiopt_algorithm)a, is_reduce, p, (double)bytes,
                                       &tuning.model);
        if (t >= 0 && (best_t < 0 || t < best_t)) {
            best_t = t;
            best = (mpiopt_algorithm)a;
        }
    }
    return best;
}

static mpiopt_algorithm cheapest(int is_reduce, int p, size_t bytes, int commutative)
{
    return cheapest_but(is_reduce, p, bytes, commutative, -1);
}

static mpiopt_algorithm from_table(int is_reduce, int p, size_t bytes, int commutative,
                                   int vendor_ok)
{
    const mpiopt_tuning_row *rows = tuning.rows[is_reduce];
    /* the rows of p's rank-count class: those measured at `ranks` whose class holds p */
    int ranks = mpiopt_tuning_class(rows, tuning.nrows[is_reduce], p, NULL, NULL);
    int matched = 0;
    for (int i = 0; ranks && i < tuning.nrows[is_reduce]; i++) {
        if (rows[i].ranks != ranks || p < rows[i].min_ranks || p > rows[i].max_ranks ||
            (!matched && (double)bytes > rows[i].max_bytes))
            continue;
        /* the row for this size; if its choice cannot take the call (the vendor where it is
         * wrong, an order-breaking algorithm for a non-commutative op), the next row's, measured
         * at the sizes just above (Open MPI's reduce of MPI_CHAR at p = 4: the vendor's row up
         * to 181 B, then shared memory) */
        matched = 1;
        mpiopt_algorithm a = rows[i].algorithm;
        if (mpiopt_algorithm_fits(a, p, commutative) && a != MPIOPT_ALG_VENDOR)
            return a;
        if (a == MPIOPT_ALG_VENDOR && vendor_ok)
            return a;
    }
    if (matched)
        return cheapest(is_reduce, p, bytes, commutative);
    if (vendor_ok && (double)bytes < vendor_below)
        return MPIOPT_ALG_VENDOR;
    return cheapest(is_reduce, p, bytes, commutative);
}

/* Decisions cached in one 64-bit word each: bytes (35 bits), vendor_ok, p (22), commutative,
 * is_reduce, algorithm + 1 (ALG_BITS) so that 0 means empty. Racing threads at worst recompute. */
#define ALG_BITS 4
#define ALG_MASK ((uint64_t)(1u << ALG_BITS) - 1)
_Static_assert(MPIOPT_ALG_COUNT < (1 << ALG_BITS), "the decision cache's algorithm field is full");
#define CACHE_SIZE 1024
static uint64_t cache[CACHE_SIZE];

static uint64_t cache_key(int is_reduce, int p, size_t bytes, int commutative, int vendor_ok)
{
    return ((uint64_t)bytes << (ALG_BITS + 25)) | ((uint64_t)(vendor_ok != 0) << (ALG_BITS + 24)) |
           ((uint64_t)p << (ALG_BITS + 2)) | ((uint64_t)commutative << (ALG_BITS + 1)) |
           ((uint64_t)is_reduce << ALG_BITS);
}

/* Whether `key` was asked before, of a set of at most `cap` keys (the verbose lines below print
 * once per key; past `cap` keys a line may repeat, nothing is lost). */
static int seen_before(uint64_t *keys, int *n, int cap, uint64_t key)
{
    for (int i = 0; i < *n; i++)
        if (keys[i] == key)
            return 1;
    if (*n < cap)
        keys[(*n)++] = key;
    return 0;
}

/* Under MPIOPT_VERBOSE with a tuning file, once per (operation, p) before its first decision:
 * whose rows `auto` takes for p, or that no row's class holds p. */
static void report_class(int is_reduce, int p, int rank)
{
    static uint64_t printed[1024];
    static int nprinted;
    if (seen_before(printed, &nprinted, 1024, ((uint64_t)p << 1) | (uint64_t)is_reduce) ||
        rank != 0)
        return;
    int lo = 0, hi = 0;
    int ranks = mpiopt_tuning_class(tuning.rows[is_reduce], tuning.nrows[is_reduce], p, &lo, &hi);
    const char *op = is_reduce ? "reduce" : "allreduce";
    if (ranks)
        fprintf(stderr, "mpiopt: tuning file: %s p=%d: the rows of class %d-%d ranks, measured at "
                "%d\n", op, p, lo, hi, ranks);
    else
        fprintf(stderr, "mpiopt: tuning file: %s p=%d: no row's class holds %d ranks, the cost "
                "model decides\n", op, p, p);
}

static void report(int is_reduce, int p, size_t bytes, mpiopt_algorithm a, int rank)
{
    /* one line per (operation, p, size class, algorithm): size classes are powers of two */
    static uint64_t printed[4096];
    static int nprinted;
    int size_class = mpiopt_size_class(bytes);
    uint64_t key = ((uint64_t)p << 16) | ((uint64_t)size_class << 8) | ((uint64_t)a << 1) |
                   (uint64_t)is_reduce;
    if (!seen_before(printed, &nprinted, 4096, key) && rank == 0)
        fprintf(stderr, "mpiopt: %s p=%d bytes<=%zu: %s\n", is_reduce ? "reduce" : "allreduce", p,
                (size_t)1 << size_class, mpiopt_algorithm_name(a));
}

int mpiopt_env_asks_vendor(int is_reduce)
{
    pthread_once(&once, load_settings);
    return forced[is_reduce != 0] == MPIOPT_ALG_VENDOR;
}

int mpiopt_selection_reproducible(void)
{
    pthread_once(&once, load_settings);
    return reproducible;
}

int mpiopt_selection_forced(int is_reduce)
{
    pthread_once(&once, load_settings);
    return forced[is_reduce != 0] >= 0;
}

int mpiopt_selection_measures(int is_reduce)
{
    pthread_once(&once, load_settings);
    return measure && !tuning_from_file && forced[is_reduce != 0] < 0;
}

mpiopt_algorithm mpiopt_select(int is_reduce, mpiopt_algorithm requested, int p, size_t bytes,
                               int commutative, int vendor_ok, int rank)
{
    pthread_once(&once, load_settings);
    mpiopt_algorithm a = requested;
    if (a == MPIOPT_ALG_AUTO && forced[is_reduce] >= 0)
        a = (mpiopt_algorithm)forced[is_reduce];
    if (a == MPIOPT_ALG_AUTO && tuning_from_file && mpiopt_verbose())
        report_class(is_reduce, p, rank);
    if (a != MPIOPT_ALG_AUTO) {
        if (!mpiopt_algorithm_fits(a, p, commutative))
            a = cheapest(is_reduce, p, bytes, commutative);
    } else if (bytes < ((uint64_t)1 << (39 - ALG_BITS)) && p < (1 << 22)) {
        uint64_t key = cache_key(is_reduce, p, bytes, commutative, vendor_ok);
        uint64_t *slot = &cache[(key ^ (key >> 28) ^ (key >> 11)) % CACHE_SIZE];
        uint64_t hit = __atomic_load_n(slot, __ATOMIC_RELAXED);
        if (hit && (hit & ~ALG_MASK) == key) {
            a = (mpiopt_algorithm)((hit & ALG_MASK) - 1);
        } else {
            a = from_table(is_reduce, p, bytes, commutative, vendor_ok);
            __atomic_store_n(slot, key | (uint64_t)(a + 1), __ATOMIC_RELAXED);
        }
    } else {
        a = from_table(is_reduce, p, bytes, commutative, vendor_ok);
    }
    if (mpiopt_verbose())
        report(is_reduce, p, bytes, a, rank);
    return a;
}

mpiopt_algorithm mpiopt_select_across_nodes(int is_reduce, int p, size_t bytes, int commutative,
                                            int rank)
{
    pthread_once(&once, load_settings);
    mpiopt_algorithm a = cheapest_but(is_reduce, p, bytes, commutative, MPIOPT_ALG_SHARED_MEMORY);
    if (mpiopt_verbose())
        report(is_reduce, p, bytes, a, rank);
    return a;
}
