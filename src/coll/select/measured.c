/* `auto` settles what the built-in rows cannot know by timing it: on the communicator's first
 * blocking allreduces of each size class from 4 KiB to 8 MiB where the rows name
 * shared_memory, the ranks run recursive doubling, Rabenseifner, the vendor's allreduce (where
 * it may take the call, below) and shared_memory a few calls each, then agree on the fastest by one collective
 * call and keep it for that class.
 *
 * Why: the rows were measured on the development machines, and the best of the three moves with
 * the machine and the vendor under them. On an AMD EPYC, Intel MPI's point-to-point made
 * Rabenseifner as fast as Intel's own allreduce at 64-128 KiB, twice as fast as the shared-memory
 * stages; on an Intel Xeon the stages win there, and at 128 KiB-1 MiB under Intel MPI the two
 * are within a few per cent (docs/collectives.md, "Measured choice").
 *
 * Why it is safe: the three give the same bits (tests/c/same_bits.c), and so does the vendor
 * where it is a candidate (vendor_ok: at two ranks, or where the order of the reduction cannot
 * change its bits, select.h), so which one runs never changes a result. Every rank makes the same
 * calls on a communicator in the same order with the same byte count (MPI's rule for
 * collectives), so every rank counts the same trials of a class and meets the agreement at the
 * same call. Nonblocking and persistent calls never measure: they
 * keep the rows' choice (their schedules are made of messages anyway).
 *
 * What it costs: 48 calls a class up to 8 KiB, 24 above. OSU warms up with 200 calls up to 8 KiB,
 * so none of its timed calls there is a trial; above, with its default of 10, 14 of its 100 are
 * (mpiopt bench allreduce warms up with 24). After that a call costs nothing more: the
 * plan cache (plan_cache.c) remembers the decided algorithm. A tuning file, MPIOPT_ALLREDUCE or
 * MPIOPT_MEASURE=0 turns it off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/select/select.h"
#include "coll/engine/report.h"

/* (2 KiB, 4 KiB]: below, shared_memory wins by 1.5-9x under every vendor but Intel MPI, and is
 * within 10 % of it at 1-2 KiB */
#define FIRST_CLASS 12
#define LAST_CLASS 23       /* (4 MiB, 8 MiB]: above, a trial call costs milliseconds */
#define CLASSES (LAST_CLASS - FIRST_CLASS + 1)
#define CANDIDATES 4
/* Each candidate runs a block of calls in a row, the first not timed (its buffers are cold after
 * another candidate's calls). Its time is the mean of its timed calls on this rank less the
 * slowest fifth: what OSU reports is a mean, and a rare call slowed by the system should not
 * decide. The fastest call alone, used before, chose by luck where the candidates are close:
 * under Intel MPI at 2-16 KiB, recursive doubling's fastest call was 0.7 us where its mean is
 * 0.7-1.9 us, and which algorithm won changed from run to run.
 * Taking turns call by call instead measured shared_memory half as fast again as it runs alone
 * at 4-8 KiB, and chose another algorithm there.
 * Up to 8 KiB OSU warms up with 200 calls: two passes of blocks of six, so that a stall of the
 * machine that spans one block leaves the candidate its other; above, one pass of blocks of six.
 * Blocks of three there (two timed calls) timed shared_memory's first calls of a size, which are
 * slow one in two (3.6 or 5.0 us at 32 KiB, cause not found), and chose the vendor where
 * shared_memory beats it 1.2-1.3x: OSU, Intel MPI 2021.15, shared_memory's trials at 32 KiB 6.1
 * us and 64 KiB 11.0 against 3.9-4.2 and 6.9-7.2 with blocks of six (steady 3.7 and 7.1). */
#define SMALL_PASSES 2
#define SMALL_BLOCK 6
#define LARGE_BLOCK 6
/* a candidate's timed calls: its blocks' less their first (the small classes have the most) */
#define MAX_TIMED (SMALL_PASSES * (SMALL_BLOCK - 1))
#define SMALL_LAST_CLASS 13     /* (4 KiB, 8 KiB] */
/* an alternative replaces the rows' choice only if it is this much faster: a few timed calls of
 * each are few, and the rows' choice was measured at length. The trials are there for gaps like
 * the EPYC's (2x), not for a few per cent: under Intel MPI at 1 MiB (Xeon), Rabenseifner's
 * fastest of two calls came within 3 % of shared_memory's in half of eleven runs, while over
 * OSU's 100 calls it takes 12 % longer (0.94 of Intel MPI's speed against shared_memory's
 * 1.06); with 0.97 here it was kept in two of those runs, and in two of three runs of a sweep,
 * which then measured 0.91 against Intel MPI. */
#define MARGIN 0.90
/* The vendor's own allreduce is a candidate too, where it gives the same bits as mpiopt's (two
 * ranks: one op between two operands; at any p, a call whose result does not depend on the
 * order, as integer sums and logical ops; any call with MPIOPT_REPRODUCIBLE=0), commutative, one
 * of MPI's own ops, and may take the call (vendor_ok says all that but the op: its result is
 * right, it does not poll an oversubscribed node, and the order). Intel MPI 2021.15's
 * shared-memory allreduce beat every algorithm of mpiopt's at p = 2 from 2 to 512 KiB in OSU's
 * own runs (16 KiB: 3.1 against 4.2 us, 2026-11-28; the rows cannot tell Intel MPI from MPICH,
 * whose allreduce mpiopt beats 2x there). It replaces the best of mpiopt's if its time is at
 * most VENDOR_MARGIN times that one's: where they are that close, the vendor's own call is what
 * the program would have had. With 1.0, Rabenseifner's trials at 256 KiB came within noise of
 * Intel MPI's and were kept in some runs (22.5-24 us in OSU against Intel MPI's 21.5); with 1.10
 * Intel MPI's allreduce was kept there in four runs of four. With blocks of three (above) 1.10
 * kept it once at 4 MiB, where it takes 1.45x as long; with blocks of six shared_memory's trials
 * there are 0.55-0.65 of the vendor's. */
#define VENDOR_MARGIN 1.10

static const mpiopt_algorithm candidates[CANDIDATES] = {
    MPIOPT_ALG_SHARED_MEMORY, MPIOPT_ALG_RECURSIVE_DOUBLING, MPIOPT_ALG_RABENSEIFNER,
    MPIOPT_ALG_VENDOR};

typedef struct {
    unsigned calls;                 /* trial calls made so far */
    unsigned timed[CANDIDATES];     /* this rank's timed calls of each so far */
    float seconds[CANDIDATES][MAX_TIMED];
    int chosen;                     /* the agreed algorithm + 1; 0 while trials go on */
} size_class;

/* The blocks of class cls (log2 of its largest byte count): passes over the candidates, and
 * calls a block. */
static unsigned passes(int cls)
{
    return cls <= SMALL_LAST_CLASS ? SMALL_PASSES : 1;
}

static unsigned block(int cls)
{
    return cls <= SMALL_LAST_CLASS ? SMALL_BLOCK : LARGE_BLOCK;
}

_Static_assert(LARGE_BLOCK - 1 <= MAX_TIMED, "a candidate's timed calls must fit its record");

static unsigned trial_calls(int cls)
{
    return passes(cls) * CANDIDATES * block(cls);
}

/* The candidate that trial call n of class cls runs; *timed = 0 for a call not counted. */
static int trial_candidate(int cls, unsigned n, int *timed)
{
    unsigned in_pass = n % (CANDIDATES * block(cls));
    *timed = in_pass % block(cls) != 0;
    /* the rows' choice (candidates[0]) last: what slows the first calls of a new size (the
     * program's buffers, the ranks' skew from the size before) then weighs against the
     * alternatives, which must win by MARGIN anyway */
    return (int)((in_pass / block(cls) + 1) % CANDIDATES);
}

struct mpiopt_measured {
    size_class classes[CLASSES];
};

static mpiopt_measured *measured_new(void)
{
    return calloc(1, sizeof(mpiopt_measured));
}

static void measured_free(mpiopt_measured *m)
{
    free(m);
}

/* Every communicator's record gets its trials, made and freed with it (engine.h). */
__attribute__((constructor)) static void register_measured(void)
{
    mpiopt_record_parts_register(
        &(mpiopt_record_parts){.measured_new = measured_new, .measured_free = measured_free});
}

static size_class *class_of(const mpiopt_coll *c, size_t bytes, int *cls)
{
    int k = mpiopt_size_class(bytes);
    if (!c->measured || k < FIRST_CLASS || k > LAST_CLASS)
        return NULL;
    *cls = k;
    return &c->measured->classes[k - FIRST_CLASS];
}

/* 1 if candidate i can take this call (the same answer on every rank: p, count, the op;
 * vendor_ok already says whether the vendor polls an oversubscribed node). */
static int candidate_fits(int i, const mpiopt_coll *c, size_t count, int predefined_op,
                          int vendor_ok)
{
    if (candidates[i] == MPIOPT_ALG_VENDOR)
        return vendor_ok && c->commutative && predefined_op;
    return mpiopt_algorithm_fits(candidates[i], c->size, c->commutative) &&
           count <= (size_t)__INT_MAX__ &&
           mpiopt_algorithm_takes(candidates[i], (int)count, predefined_op);
}

mpiopt_algorithm mpiopt_measured_pick(const mpiopt_coll *c, mpiopt_algorithm rows_choice,
                                      size_t count, int predefined_op, int vendor_ok,
                                      int *measuring)
{
    *measuring = 0;
    size_class *k = NULL;
    int cls, timed;
    if (rows_choice == MPIOPT_ALG_SHARED_MEMORY && c->size > 1 &&
        !c->record && !c->peers)
        k = class_of(c, count * c->extent, &cls);
    if (!k)
        return rows_choice;
    if (k->chosen) {
        /* the class's choice was measured on the calls that ran its trials, whatever their type
         * and op: this call takes it only where that candidate could have taken this call (a
         * vendor chosen on doubles is wrong for Open MPI 4.1's saturating 8-bit sums) */
        for (int i = 0; i < CANDIDATES; i++)
            if ((int)candidates[i] + 1 == (int)k->chosen)
                return candidate_fits(i, c, count, predefined_op, vendor_ok) ? candidates[i]
                                                                              : rows_choice;
        return rows_choice;
    }
    /* a candidate that cannot take the call leaves its turns to the rows' choice (and is never
     * chosen) */
    int i = trial_candidate(cls, k->calls, &timed);
    *measuring = 1;
    return candidate_fits(i, c, count, predefined_op, vendor_ok) ? candidates[i] : rows_choice;
}

/* This rank's time of candidate i: the mean of its timed calls less the slowest fifth. The
 * median was tried: it hid the 15-60 us calls that Intel MPI's point-to-point showed in one or
 * two of every six trial calls at 2-8 KiB, chose recursive doubling at 4 KiB on a median of 1.0
 * us, and OSU then measured 1.53 us there. */
static double typical_seconds(const size_class *k, int i)
{
    unsigned n = k->timed[i];
    float v[MAX_TIMED];
    memcpy(v, k->seconds[i], n * sizeof v[0]);
    for (unsigned a = 1; a < n; a++)        /* insertion sort: ten at most */
        for (unsigned b = a; b > 0 && v[b] < v[b - 1]; b--) {
            float t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    unsigned keep = n - n / 5;
    double sum = 0;
    for (unsigned a = 0; a < keep; a++)
        sum += v[a];
    return keep ? sum / keep : 0;
}

static void agree(const mpiopt_coll *c, size_class *k, int cls, size_t count, int predefined_op,
                  int vendor_ok)
{
    double mean[CANDIDATES];    /* this rank's time of each; then the ranks' mean */
    for (int i = 0; i < CANDIDATES; i++)
        mean[i] = typical_seconds(k, i);
    /* every rank's time counts, as in OSU's average over the ranks */
    if (PMPI_Allreduce(MPI_IN_PLACE, mean, CANDIDATES, MPI_DOUBLE, MPI_SUM, c->user_comm) !=
        MPI_SUCCESS) {
        k->chosen = candidates[0] + 1;  /* every rank gets the same error: keep the rows' */
        return;
    }
    int best = 0;
    for (int i = 0; i < CANDIDATES; i++) {
        mean[i] /= c->size;
        if (i > 0 && candidates[i] != MPIOPT_ALG_VENDOR &&
            candidate_fits(i, c, count, predefined_op, vendor_ok) && mean[i] < MARGIN * mean[0] &&
            mean[i] < mean[best])
            best = i;
    }
    for (int i = 0; i < CANDIDATES; i++)
        if (candidates[i] == MPIOPT_ALG_VENDOR &&
            candidate_fits(i, c, count, predefined_op, vendor_ok) &&
            mean[i] <= VENDOR_MARGIN * mean[best])
            best = i;
    k->chosen = candidates[best] + 1;
    if (mpiopt_verbose() && c->rank == 0) {
        /* one write: stderr is unbuffered, and the first ranks of other communicators (the
         * halves of a split) print theirs at the same moment */
        char line[256];
        int n = snprintf(line, sizeof line, "mpiopt: allreduce p=%d bytes<=%zu: measured",
                         c->size, (size_t)1 << cls);
        for (int i = 0; i < CANDIDATES; i++)
            if (candidate_fits(i, c, count, predefined_op, vendor_ok) && n > 0 &&
                n < (int)sizeof line)
                n += snprintf(line + n, sizeof line - (size_t)n, " %s %.1f us,",
                              mpiopt_algorithm_name(candidates[i]), mean[i] * 1e6);
        if (n > 0 && n < (int)sizeof line)
            snprintf(line + n, sizeof line - (size_t)n, " chose %s\n",
                     mpiopt_algorithm_name(candidates[best]));
        fputs(line, stderr);
    }
}

/* MPIOPT_TEST_SLOW_CANDIDATES=S, a testing knob: S seconds added to every trial time of mpiopt's
 * own candidates, so that a test can make the vendor win its trials on any machine. */
static double test_slowdown(void)
{
    static double seconds = -1;
    double s;
    __atomic_load(&seconds, &s, __ATOMIC_RELAXED);
    if (s < 0) {
        const char *v = getenv("MPIOPT_TEST_SLOW_CANDIDATES");
        s = v ? atof(v) : 0;
        __atomic_store(&seconds, &s, __ATOMIC_RELAXED);
    }
    return s;
}

void mpiopt_measured_record(const mpiopt_coll *c, size_t count, int predefined_op,
                            int vendor_ok, double seconds)
{
    int cls, timed;
    size_class *k = class_of(c, count * c->extent, &cls);
    if (!k || k->chosen)
        return;
    int i = trial_candidate(cls, k->calls, &timed);
    if (candidates[i] != MPIOPT_ALG_VENDOR)
        seconds += test_slowdown();
    if (timed)
        k->seconds[i][k->timed[i]++] = (float)seconds;
    if (++k->calls == trial_calls(cls))
        agree(c, k, cls, count, predefined_op, vendor_ok);
}
