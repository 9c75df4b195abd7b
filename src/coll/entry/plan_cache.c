/* The plans of recent calls, so that a call handed to the vendor costs one lookup and one branch
 * before PMPI_* (issue: the drop-in must never be slower than the vendor, and codes call
 * MPI_Allreduce on 8 bytes millions of times).
 *
 * A plan depends only on the call's handles and integers (communicator, datatype, op, count, root,
 * the algorithm asked for) and on settings fixed for the run (environment, tuning table), so it is
 * remembered under exactly those. A handle can be freed and its value handed out again for another
 * object: every communicator and derived datatype whose plans are remembered carries an attribute
 * whose delete callback, run by MPI when the object is freed, moves the cache to a new generation
 * (forgets everything). Ops have no attributes: only predefined ops, which are never freed, are
 * remembered. Frees are rare next to calls, so forgetting everything is cheap enough.
 *
 * Direct-mapped, one seqlock per slot: a thread reading a slot that another thread is writing sees
 * a changed sequence number and takes the slow path; no locks on the way to the vendor. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "coll/select/select.h"
#include "coll/entry/collective_args.h"
#include "coll/entry/plan_cache.h"

#define PLAN_SLOTS 256
static mpiopt_plan_slot plan_slots[PLAN_SLOTS];
mpiopt_plan_slot mpiopt_plan_last_vendor[2];
unsigned mpiopt_plan_generation = 1;

static uint64_t handle_bits(const void *handle, size_t size)
{
    uint64_t v = 0;
    memcpy(&v, handle, size < sizeof v ? size : sizeof v);
    return v;
}

static mpiopt_plan_slot *slot_of(const mpiopt_plan_key *k)
{
    /* shifts and xors only (cheap); Open MPI's handles are aligned
     * pointers, MPICH's carry their kind in the top bits: fold the middle bits down */
    uint64_t h = handle_bits(&k->comm, sizeof k->comm) ^
                 handle_bits(&k->datatype, sizeof k->datatype) << 3 ^
                 handle_bits(&k->op, sizeof k->op) << 6 ^
                 k->count_root_request << 4 ^ k->count_root_request >> 27;
    h ^= h >> 8 ^ h >> 16;
    return &plan_slots[(h >> 4) % PLAN_SLOTS];
}

static int comm_keyval = MPI_KEYVAL_INVALID, type_keyval = MPI_KEYVAL_INVALID;
static int keyvals_ok;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;

static int forget_all(void)
{
    __atomic_add_fetch(&mpiopt_plan_generation, 1, __ATOMIC_RELEASE);
    return MPI_SUCCESS;
}

static int comm_freed(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    return forget_all();
}

static int type_freed(MPI_Datatype type, int keyval, void *attr, void *extra)
{
    return forget_all();
}

static void create_keyvals(void)
{
    keyvals_ok = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_freed, &comm_keyval, NULL) ==
                     MPI_SUCCESS &&
                 PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_freed, &type_keyval, NULL) ==
                     MPI_SUCCESS;
}

/* 1 once `comm` and `datatype` will tell us when they are freed (predefined datatypes never are). */
static int watched(MPI_Comm comm, MPI_Datatype datatype)
{
    void *value;
    int found = 0, nints, naddrs, ntypes, combiner;
    pthread_once(&keyval_once, create_keyvals);
    if (!keyvals_ok || PMPI_Comm_get_attr(comm, comm_keyval, &value, &found) != MPI_SUCCESS)
        return 0;
    if (!found && PMPI_Comm_set_attr(comm, comm_keyval, NULL) != MPI_SUCCESS)
        return 0;
    if (PMPI_Type_get_envelope(datatype, &nints, &naddrs, &ntypes, &combiner) != MPI_SUCCESS)
        return 0;
    if (combiner == MPI_COMBINER_NAMED)
        return 1;
    if (PMPI_Type_get_attr(datatype, type_keyval, &value, &found) != MPI_SUCCESS)
        return 0;
    return found || PMPI_Type_set_attr(datatype, type_keyval, NULL) == MPI_SUCCESS;
}

/* Writes slot s under its seqlock; gen: the generation read before the plan was made. */
static void write_slot(mpiopt_plan_slot *s, const mpiopt_plan_key *k, const mpiopt_call_plan *plan,
                       unsigned gen)
{
    unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
    if ((seq & 1) || !__atomic_compare_exchange_n(&s->seq, &seq, seq + 1, 0, __ATOMIC_ACQUIRE,
                                                  __ATOMIC_RELAXED))
        return;    /* another thread is writing this slot: leave it to it */
    s->key = *k;
    s->plan = *plan;
    s->generation = gen;
    __atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
}

void mpiopt_plan_remember(int kind, mpiopt_algorithm requested, MPI_Comm comm, int count,
                          MPI_Datatype datatype, MPI_Op op, int root, const mpiopt_call_plan *plan)
{
    if (!mpiopt_predefined_op(op) || !watched(comm, datatype))
        return;
    unsigned gen = __atomic_load_n(&mpiopt_plan_generation, __ATOMIC_ACQUIRE);
    mpiopt_plan_key k = mpiopt_plan_make_key(kind, requested, comm, count, datatype, op, root);
    write_slot(slot_of(&k), &k, plan, gen);
    /* MPIOPT_REPORT counts every call on the planned path (report.h): no shortcut past it */
    if (kind <= MPIOPT_PLAN_REDUCE && plan->algorithm == MPIOPT_ALG_VENDOR && !mpiopt_report_on)
        write_slot(&mpiopt_plan_last_vendor[kind], &k, plan, gen);
}

int mpiopt_plan_cached(int kind, mpiopt_algorithm requested, MPI_Comm comm, int count,
                       MPI_Datatype datatype, MPI_Op op, int root, mpiopt_call_plan *plan)
{
    mpiopt_plan_key k = mpiopt_plan_make_key(kind, requested, comm, count, datatype, op, root);
    mpiopt_plan_slot *s = slot_of(&k);
    unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if (seq & 1)
        return 0;
    unsigned gen = s->generation;
    int hit = gen == __atomic_load_n(&mpiopt_plan_generation, __ATOMIC_ACQUIRE) &&
              mpiopt_plan_same_key(&s->key, &k);
    if (!hit)
        return 0;
    *plan = s->plan;    /* straight into the caller's: a miss leaves it to be planned anyway */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) != seq)
        return 0;
    if (kind <= MPIOPT_PLAN_REDUCE && plan->algorithm == MPIOPT_ALG_VENDOR && !mpiopt_report_on)
        write_slot(&mpiopt_plan_last_vendor[kind], &k, plan, gen);
    return 1;
}
