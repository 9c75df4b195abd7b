/* `auto` settles what the built-in rows cannot know by timing it: on the communicator's first
 * blocking allreduces of each size class from 4 KiB to 8 MiB where the rows name
 * shared_memory, the ranks take turns at shared_memory, recursive doubling and Rabenseifner, then
 * agree on the fastest by one collective call and keep it for that class.
 *
 * Why: the rows were measured on the development machines, and the best of the three moves with
 * the machine and the vendor under them. On an AMD EPYC, Intel MPI's point-to-point made
 * Rabenseifner as fast as Intel's own allreduce at 64-128 KiB, twice as fast as the shared-memory
 * stages; on an Intel Xeon the stages win there and Rabenseifner wins at 128 KiB-1 MiB by
 * 5-15 % (docs/collectives.md, "Measured choice").
 *
 * Why it is safe: the three give the same bits (tests/c/same_bits.c), so which one runs never
 * changes a result. Every rank makes the same calls on a communicator in the same order with the
 * same byte count (MPI's rule for collectives), so every rank counts the same trials of a class
 * and meets the agreement at the same call. Nonblocking and persistent calls never measure: they
 * keep the rows' choice (their schedules are made of messages anyway).
 *
 * What it costs: BLOCK calls per candidate and class, one after another. OSU warms up with 10
 * calls above 8 KiB; the decision comes on the 12th, so at most two of its timed calls are trials
 * (Rabenseifner's, which is never the slowest there). After that a call
 * costs nothing more: the plan cache (plan_cache.c) remembers the decided algorithm. A tuning
 * file, MPIOPT_ALLREDUCE or MPIOPT_MEASURE=0 turns it off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll.h"

#define FIRST_CLASS 12      /* (2 KiB, 4 KiB]: below, shared_memory wins by 1.5-9x everywhere */
#define LAST_CLASS 23       /* (4 MiB, 8 MiB]: above, a trial call costs milliseconds */
#define CLASSES (LAST_CLASS - FIRST_CLASS + 1)
#define CANDIDATES 3
/* each candidate runs this many calls in a row, the first not counted (its buffers are cold
 * after another candidate's calls); its time is the median of the others, which one call slowed
 * by the system does not move */
#define BLOCK 4
#define TIMED (BLOCK - 1)
/* an alternative replaces the rows' choice only if it is this much faster: three timed calls of
 * each are few, and the rows' choice was measured at length */
#define MARGIN 0.97

static const mpiopt_algorithm candidates[CANDIDATES] = {
    MPIOPT_ALG_SHARED_MEMORY, MPIOPT_ALG_RECURSIVE_DOUBLING, MPIOPT_ALG_RABENSEIFNER};

typedef struct {
    unsigned calls;                     /* trial calls made so far */
    double seconds[CANDIDATES][TIMED];  /* this rank's timed calls of each */
    int chosen;                         /* the agreed algorithm + 1; 0 while trials go on */
} size_class;

struct mpiopt_measured {
    size_class classes[CLASSES];
};

mpiopt_measured *mpiopt_measured_new(void)
{
    return calloc(1, sizeof(mpiopt_measured));
}

void mpiopt_measured_free(mpiopt_measured *m)
{
    free(m);
}

static int measuring_off(void)
{
    static int off = -1;
    if (off < 0) {
        const char *v = getenv("MPIOPT_MEASURE");
        off = v && !strcmp(v, "0");
    }
    return off;
}

static size_class *class_of(const mpiopt_coll *c, size_t bytes)
{
    int k = 0;
    while (k < 63 && ((size_t)1 << k) < bytes)
        k++;
    if (!c->measured || k < FIRST_CLASS || k > LAST_CLASS)
        return NULL;
    return &c->measured->classes[k - FIRST_CLASS];
}

/* 1 if candidate i can take this call (the same answer on every rank: p, count, the op). */
static int candidate_fits(int i, const mpiopt_coll *c, size_t count, int predefined_op)
{
    return mpiopt_algorithm_fits(candidates[i], c->size, c->commutative) &&
           count <= (size_t)__INT_MAX__ &&
           mpiopt_algorithm_takes(candidates[i], (int)count, predefined_op);
}

mpiopt_algorithm mpiopt_measured_pick(const mpiopt_coll *c, mpiopt_algorithm rows_choice,
                                      size_t count, int predefined_op, int *measuring)
{
    *measuring = 0;
    size_class *k = NULL;
    if (rows_choice == MPIOPT_ALG_SHARED_MEMORY && c->size > 1 && !c->comm_pending &&
        !c->record && !c->peers && !measuring_off())
        k = class_of(c, count * c->extent);
    if (!k)
        return rows_choice;
    if (k->chosen)
        return (mpiopt_algorithm)(k->chosen - 1);
    /* the candidates in turn, a block of calls each; one that cannot take the call leaves its
     * block to the rows' choice (and is never chosen) */
    int i = (int)(k->calls / BLOCK);
    *measuring = 1;
    return candidate_fits(i, c, count, predefined_op) ? candidates[i] : rows_choice;
}

static double median_of_three(const double *t)
{
    double lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
    return t[2] < lo ? lo : t[2] > hi ? hi : t[2];
}
_Static_assert(TIMED == 3, "median_of_three takes the timed calls");

static void agree(const mpiopt_coll *c, size_class *k, size_t count, int predefined_op)
{
    double mean[CANDIDATES];
    for (int i = 0; i < CANDIDATES; i++)
        mean[i] = median_of_three(k->seconds[i]);
    /* every rank's time counts, as in OSU's average over the ranks */
    if (PMPI_Allreduce(MPI_IN_PLACE, mean, CANDIDATES, MPI_DOUBLE, MPI_SUM, c->comm) !=
        MPI_SUCCESS) {
        k->chosen = candidates[0] + 1;  /* every rank gets the same error: keep the rows' */
        return;
    }
    int best = 0;
    for (int i = 0; i < CANDIDATES; i++) {
        mean[i] /= c->size;
        if (i > 0 && candidate_fits(i, c, count, predefined_op) && mean[i] < MARGIN * mean[0] &&
            mean[i] < mean[best])
            best = i;
    }
    k->chosen = candidates[best] + 1;
    if (mpiopt_verbose() && c->rank == 0) {
        fprintf(stderr, "mpiopt: allreduce p=%d bytes<=%zu: measured", c->size,
                (size_t)1 << (FIRST_CLASS + (int)(k - c->measured->classes)));
        for (int i = 0; i < CANDIDATES; i++)
            if (candidate_fits(i, c, count, predefined_op))
                fprintf(stderr, " %s %.1f us,", mpiopt_algorithm_name(candidates[i]),
                        mean[i] * 1e6);
        fprintf(stderr, " chose %s\n", mpiopt_algorithm_name(candidates[best]));
    }
}

void mpiopt_measured_record(const mpiopt_coll *c, size_t count, int predefined_op,
                            double seconds)
{
    size_class *k = class_of(c, count * c->extent);
    if (!k || k->chosen)
        return;
    unsigned place = k->calls % BLOCK;
    if (place > 0)
        k->seconds[k->calls / BLOCK][place - 1] = seconds;
    if (++k->calls == CANDIDATES * BLOCK)
        agree(c, k, count, predefined_op);
}
