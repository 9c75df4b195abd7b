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
    int count;
    int root_and_request;           /* root (-1 for allreduce) * MPIOPT_ALG_COUNT + requested */
} mpiopt_plan_key;

typedef struct {
    unsigned seq;                   /* even: stable; odd: a writer is in it */
    unsigned generation;            /* 0: never written */
    mpiopt_plan_key key;
    mpiopt_call_plan plan;
} mpiopt_plan_slot;

extern mpiopt_plan_slot mpiopt_plan_slots[MPIOPT_PLAN_SLOTS];
extern unsigned mpiopt_plan_generation;    /* moves on when a watched handle is freed */

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
    return (mpiopt_plan_key){mpiopt_handle_bits(&comm, sizeof comm),
                             mpiopt_handle_bits(&datatype, sizeof datatype),
                             mpiopt_handle_bits(&op, sizeof op), count,
                             (is_reduce ? root : -1) * MPIOPT_ALG_COUNT + (int)requested};
}

static inline int mpiopt_plan_same_key(const mpiopt_plan_key *a, const mpiopt_plan_key *b)
{
    return a->comm == b->comm && a->datatype == b->datatype && a->op == b->op &&
           a->count == b->count && a->root_and_request == b->root_and_request;
}

static inline mpiopt_plan_slot *mpiopt_plan_slot_of(const mpiopt_plan_key *k)
{
    uint64_t h = ((uint64_t)k->comm ^ (uint64_t)k->datatype << 5 ^ (uint64_t)k->op << 11 ^
                  (uint64_t)(unsigned)k->count << 17 ^ (uint64_t)(unsigned)k->root_and_request) *
                 0x9E3779B97F4A7C15ull;
    return &mpiopt_plan_slots[h >> 56];    /* the top 8 bits: MPIOPT_PLAN_SLOTS = 256 */
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

#endif
