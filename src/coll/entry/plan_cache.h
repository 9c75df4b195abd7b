/* The plan cache (plan_cache.c). The test of the hand-off path, "this call repeats the last one
 * handed to the vendor", is inline here so that handoff.h costs a few compares and one branch. */
#ifndef MPIOPT_PLAN_CACHE_H
#define MPIOPT_PLAN_CACHE_H

#include <stdint.h>
#include "coll/entry/collective_args.h"

/* A call's arguments. */
typedef struct {
    /* the handles themselves, compared with == as the standard allows: pointers in Open MPI,
     * ints in MPICH (widened to words, MPICH's took three registers more, and their saving, on
     * the hand-off path). One word each: two adjacent ints GCC compares as one 8-byte load of
     * both, stored on the stack first, and the store-forwarding stall costs ~5 ns (see below). */
    _Alignas(8) MPI_Comm comm;
    _Alignas(8) MPI_Datatype datatype;
    _Alignas(8) MPI_Op op;
    /* count (high half) and root (-1 for allreduce) * MPIOPT_ALG_COUNT + requested (low half) in
     * one word, built in registers: two 4-byte fields that GCC compares as one 8-byte load stall
     * on store forwarding, which cost the hand-off ~12 ns a call */
    uint64_t count_root_request;
} mpiopt_plan_key;

/* A cache line's alignment keeps what the hand-off path reads (seq, generation, key, and the
 * plan's algorithm: its first 48 bytes) on one line, whatever the plan's size. */
typedef struct {
    _Alignas(64) unsigned seq;      /* even: stable; odd: a writer is in it */
    unsigned generation;            /* 0: never written */
    mpiopt_plan_key key;
    mpiopt_call_plan plan;
} mpiopt_plan_slot;

/* moves on when a watched handle is freed (hidden: addressed directly, not through the GOT, on
 * the hand-off path) */
extern __attribute__((visibility("hidden"))) unsigned mpiopt_plan_generation;

/* The collectives whose plans are remembered; a call's kind is part of its key. Only the first
 * two have the hand-off's one-slot shortcut (mpiopt_plan_last_vendor). */
enum {
    MPIOPT_PLAN_ALLREDUCE,
    MPIOPT_PLAN_REDUCE,
    MPIOPT_PLAN_SCAN,
    MPIOPT_PLAN_EXSCAN,
    MPIOPT_PLAN_REDUCE_SCATTER_BLOCK,
    MPIOPT_PLAN_REDUCE_SCATTER_EQUAL,   /* MPI_Reduce_scatter by its total: equal blocks */
    MPIOPT_PLAN_REDUCE_SCATTER_UNEVEN   /* and uneven ones */
};

static inline mpiopt_plan_key mpiopt_plan_make_key(int kind, mpiopt_algorithm requested,
                                                   MPI_Comm comm, int count, MPI_Datatype datatype,
                                                   MPI_Op op, int root)
{
    /* a reduce's root, else -1 - kind: a constant on the hand-off path */
    int root_or_kind = kind == MPIOPT_PLAN_REDUCE ? root : -1 - kind;
    uint32_t root_request = (uint32_t)(root_or_kind * MPIOPT_ALG_COUNT + (int)requested);
    return (mpiopt_plan_key){comm, datatype, op,
                             (uint64_t)(uint32_t)count << 32 | root_request};
}

static inline int mpiopt_plan_same_key(const mpiopt_plan_key *a, const mpiopt_plan_key *b)
{
    return a->comm == b->comm && a->datatype == b->datatype && a->op == b->op &&
           a->count_root_request == b->count_root_request;
}

/* 1 if slot s holds key k, planned for the vendor, and nothing was freed since it was written. */
static inline int mpiopt_plan_slot_vendor(mpiopt_plan_slot *s, const mpiopt_plan_key *k)
{
    unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    int vendor = !(seq & 1) &&
                 s->generation == __atomic_load_n(&mpiopt_plan_generation, __ATOMIC_ACQUIRE) &&
                 mpiopt_plan_same_key(&s->key, k) && s->plan.algorithm == MPIOPT_ALG_VENDOR;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return vendor && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq;
}

/* The last call of each kind (allreduce, reduce) that went to the vendor, at a fixed address:
 * codes repeat the same small call (a dot product, a time-step minimum), and testing it costs no
 * hash on the hand-off path. The hash table above serves the calls in between. */
extern __attribute__((visibility("hidden"))) mpiopt_plan_slot mpiopt_plan_last_vendor[2];

/* 1 if the previous call of this kind had these arguments and went to the vendor: the whole test
 * of the hand-off path (handoff.h). */
static inline int mpiopt_plan_repeats_vendor(int is_reduce, mpiopt_algorithm requested,
                                             MPI_Comm comm, int count, MPI_Datatype datatype,
                                             MPI_Op op, int root)
{
    mpiopt_plan_key k = mpiopt_plan_make_key(is_reduce, requested, comm, count, datatype, op, root);
    return mpiopt_plan_slot_vendor(&mpiopt_plan_last_vendor[is_reduce], &k);
}

/* 1 and *plan if a call with these arguments was planned before and nothing it depends on was
 * freed since; 0 (plan it: *plan may hold anything then) otherwise, also while another thread
 * writes its slot. A call planned for the vendor becomes the last call of its kind
 * (mpiopt_plan_repeats_vendor). */
int mpiopt_plan_cached(int kind, mpiopt_algorithm requested, MPI_Comm comm, int count,
                       MPI_Datatype datatype, MPI_Op op, int root, mpiopt_call_plan *plan);

#endif
