/* The plan cache (plan_cache.c): the lookup is inline so that a call handed to the vendor costs
 * one lookup and one branch in mpiopt_allreduce / mpiopt_reduce themselves. */
#ifndef MPIOPT_PLAN_CACHE_H
#define MPIOPT_PLAN_CACHE_H

#include <stdint.h>
#include <string.h>
#include "collective_args.h"

#define MPIOPT_PLAN_SLOTS 256

/* A call's arguments, as plain words. */
typedef struct {
    uintptr_t comm, datatype, op;   /* handle bits: pointers in Open MPI, integers in MPICH */
    /* count (high half) and root (-1 for allreduce) * MPIOPT_ALG_COUNT + requested (low half) in
     * one word, built in registers: two 4-byte fields that GCC compares as one 8-byte load stall
     * on store forwarding, which cost the hand-off ~12 ns a call */
    uint64_t count_root_request;
} mpiopt_plan_key;

typedef struct {
    unsigned seq;                   /* even: stable; odd: a writer is in it */
    unsigned generation;            /* 0: never written */
    mpiopt_plan_key key;
    mpiopt_call_plan plan;
} mpiopt_plan_slot;

/* hidden: addressed directly, not through the GOT, on the hand-off path */
extern __attribute__((visibility("hidden"))) mpiopt_plan_slot mpiopt_plan_slots[MPIOPT_PLAN_SLOTS];
/* moves on when a watched handle is freed */
extern __attribute__((visibility("hidden"))) unsigned mpiopt_plan_generation;

static inline uintptr_t mpiopt_handle_bits(const void *handle, size_t size)
{
    uintptr_t v = 0;
    memcpy(&v, handle, size < sizeof v ? size : sizeof v);
    return v;
}

static inline mpiopt_plan_key mpiopt_plan_make_key(int is_reduce, mpiopt_algorithm requested,
                                                   MPI_Comm comm, int count, MPI_Datatype datatype,
                                                   MPI_Op op, int root)
{
    uint32_t root_request = (uint32_t)((is_reduce ? root : -1) * MPIOPT_ALG_COUNT + (int)requested);
    return (mpiopt_plan_key){mpiopt_handle_bits(&comm, sizeof comm),
                             mpiopt_handle_bits(&datatype, sizeof datatype),
                             mpiopt_handle_bits(&op, sizeof op),
                             (uint64_t)(uint32_t)count << 32 | root_request};
}

static inline int mpiopt_plan_same_key(const mpiopt_plan_key *a, const mpiopt_plan_key *b)
{
    return a->comm == b->comm && a->datatype == b->datatype && a->op == b->op &&
           a->count_root_request == b->count_root_request;
}

static inline mpiopt_plan_slot *mpiopt_plan_slot_of(const mpiopt_plan_key *k)
{
    /* shifts and xors only (no multiply on the hand-off path); Open MPI's handles are aligned
     * pointers, MPICH's carry their kind in the top bits: fold the middle bits down */
    uint64_t h = (uint64_t)k->comm ^ (uint64_t)k->datatype << 3 ^ (uint64_t)k->op << 6 ^
                 k->count_root_request << 4 ^ k->count_root_request >> 27;
    h ^= h >> 8 ^ h >> 16;
    return &mpiopt_plan_slots[(h >> 4) % MPIOPT_PLAN_SLOTS];
}

/* 1 and *plan if a call with these arguments was planned before and nothing it depends on was
 * freed since; 0 (take the slow path) otherwise, also while another thread writes the slot. */
static inline int mpiopt_plan_cached(int is_reduce, mpiopt_algorithm requested, MPI_Comm comm,
                                     int count, MPI_Datatype datatype, MPI_Op op, int root,
                                     mpiopt_call_plan *plan)
{
    mpiopt_plan_key k = mpiopt_plan_make_key(is_reduce, requested, comm, count, datatype, op, root);
    mpiopt_plan_slot *s = mpiopt_plan_slot_of(&k);
    unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if (seq & 1)
        return 0;
    int hit = s->generation == __atomic_load_n(&mpiopt_plan_generation, __ATOMIC_ACQUIRE) &&
              mpiopt_plan_same_key(&s->key, &k);
    mpiopt_call_plan found = s->plan;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (!hit || __atomic_load_n(&s->seq, __ATOMIC_RELAXED) != seq)
        return 0;
    *plan = found;
    return 1;
}

/* 1 if a call with these arguments was planned before and goes to the vendor: the whole test of
 * the hand-off path, with nothing copied out. */
static inline int mpiopt_plan_cached_vendor(int is_reduce, mpiopt_algorithm requested,
                                            MPI_Comm comm, int count, MPI_Datatype datatype,
                                            MPI_Op op, int root)
{
    mpiopt_plan_key k = mpiopt_plan_make_key(is_reduce, requested, comm, count, datatype, op, root);
    mpiopt_plan_slot *s = mpiopt_plan_slot_of(&k);
    unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    int vendor = !(seq & 1) &&
                 s->generation == __atomic_load_n(&mpiopt_plan_generation, __ATOMIC_ACQUIRE) &&
                 mpiopt_plan_same_key(&s->key, &k) && s->plan.algorithm == MPIOPT_ALG_VENDOR;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return vendor && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq;
}

#endif
