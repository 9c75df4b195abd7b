/* mpiopt in a chain of PMPI tools (docs/collectives.md, "Other tools").
 *
 * A PMPI tool defines MPI_X and calls PMPI_X. libmpiopt defines both names for every entry point
 * it takes, so it stacks with tools in any order:
 *   - PMPI_X is mpiopt's own implementation: a tool in front of mpiopt (preloaded before it, or
 *     linked into the program) reaches mpiopt through its PMPI_X call;
 *   - MPI_X hands the call to the next MPI_X of the chain when that is a tool's (a tool preloaded
 *     after mpiopt), which then calls PMPI_X and lands in mpiopt; else it is mpiopt's own.
 * As with PMPI tools alone, one layer reaches the next through PMPI_X only once: with tools both
 * in front of mpiopt and behind it, the one behind sees what it would see behind the front one
 * without mpiopt (nothing). PMPI_X does not pass calls on to a tool behind: a tool's own PMPI_X
 * calls (a profiler's reductions at MPI_Finalize) must reach the MPI, not the tool again, and
 * who called PMPI_X cannot be told reliably (a tool's wrapper tail-calls it).
 * mpiopt's own calls to the vendor never go through these names: vendor.h (generated, included
 * before every source of the library) renames each PMPI_X that mpiopt defines to a pointer to
 * the vendor's, resolved from the vendor's library itself (chain.c), so no tool and no mpiopt
 * entry point ever sees mpiopt's inner messages.
 *
 * The next tool's MPI_X is looked up at the first call of each entry point and kept: where no
 * tool follows, an entry point pays one compare of a pointer with NULL. */
#ifndef MPIOPT_INTERPOSE_CHAIN_H
#define MPIOPT_INTERPOSE_CHAIN_H

#include <stddef.h>
#include <mpi.h>

/* A slot of the generated table (vendor_table.c): a vendor PMPI_X name and where its address
 * goes. */
struct mpiopt_vendor_slot {
    const char *name;
    void **address;
};
extern const struct mpiopt_vendor_slot mpiopt_vendor_slots[] __attribute__((visibility("hidden")));

/* The value of a next-tool slot before its first lookup. */
#define MPIOPT_CHAIN_UNRESOLVED ((void *)1)

/* The next definition of the C entry point `name` after this library when it is a tool's, else
 * NULL (the vendor's, or none). */
__attribute__((visibility("hidden"))) void *mpiopt_chain_next(const char *name);

/* Looks *slot up at its first use (name: the C MPI_X); whether a tool follows for it. */
__attribute__((visibility("hidden"))) int mpiopt_chain_resolve(void **slot, const char *name);

/* The same for a Fortran mangling `fname` (mpi_wait_, MPI_WAIT, …): the next tool's Fortran entry
 * point where a tool behind mpiopt has one; the vendor's where a tool wraps only the C name
 * (MPI_Wait), in front of mpiopt or behind it, so that the vendor's Fortran layer reaches that
 * tool through C as it does without mpiopt; else none (mpiopt's own). */
__attribute__((visibility("hidden"))) int mpiopt_chain_resolve_fortran(void **slot,
                                                                       const char *fname);

/* The C entry point NAME (MPI_X; a macro such as PERSISTENT_NAME(…) is expanded first), running
 * CALL (with the parameters PARAMS, passed on as ARGS) unless a tool follows, and its PMPI_X,
 * running CALL.
 * ATTRS: attributes of both (the hand-off's placement). */
#define MPIOPT_CHAIN_ENTRY(ATTRS, NAME, PARAMS, ARGS, CALL) \
    MPIOPT_CHAIN_ENTRY_(ATTRS, NAME, PARAMS, ARGS, CALL)
#define MPIOPT_CHAIN_ENTRY_(ATTRS, NAME, PARAMS, ARGS, CALL)                                  \
    static void *mpiopt_next_##NAME = MPIOPT_CHAIN_UNRESOLVED;                                \
    ATTRS int NAME PARAMS                                                                     \
    {                                                                                         \
        if (__builtin_expect(mpiopt_next_##NAME != NULL, 0) &&                                \
            mpiopt_chain_resolve(&mpiopt_next_##NAME, #NAME))                                 \
            return ((__typeof__(&NAME))mpiopt_next_##NAME) ARGS;                              \
        return CALL;                                                                          \
    }                                                                                         \
    ATTRS int mpiopt_pmpi_##NAME PARAMS __asm__("P" #NAME);                                   \
    ATTRS int mpiopt_pmpi_##NAME PARAMS                                                       \
    {                                                                                         \
        return CALL;                                                                          \
    }

/* A hand-written C entry point MPI_NAME and PMPI_NAME (the files of src/interpose; bindings.py finds
 * them by this macro for vendor.h): the body that follows is mpiopt's implementation.
 *     MPIOPT_C_ENTRY(Wait, (MPI_Request *request, MPI_Status *status), (request, status))
 *     { return mpiopt_request_wait(request, status); } */
#define MPIOPT_C_ENTRY(NAME, PARAMS, ARGS)                                                    \
    static inline __attribute__((always_inline)) int mpiopt_own_##NAME PARAMS;               \
    MPIOPT_CHAIN_ENTRY(, MPI_##NAME, PARAMS, ARGS, mpiopt_own_##NAME ARGS)                    \
    static inline __attribute__((always_inline)) int mpiopt_own_##NAME PARAMS

/* One Fortran mangling NAME, running IMPL ARGS unless a tool follows (mpiopt_chain_resolve_fortran),
 * and its profiling name PNAME (pmpi_x_), running IMPL ARGS. */
#define MPIOPT_FORTRAN_CHAIN_ONE(IMPL, PARAMS, ARGS, NAME, PNAME)                             \
    static void *mpiopt_next_##NAME = MPIOPT_CHAIN_UNRESOLVED;                                \
    void NAME PARAMS                                                                          \
    {                                                                                         \
        if (__builtin_expect(mpiopt_next_##NAME != NULL, 0) &&                                \
            mpiopt_chain_resolve_fortran(&mpiopt_next_##NAME, #NAME)) {                       \
            ((__typeof__(&NAME))mpiopt_next_##NAME) ARGS;                                     \
            return;                                                                           \
        }                                                                                     \
        IMPL ARGS;                                                                            \
    }                                                                                         \
    void PNAME PARAMS                                                                         \
    {                                                                                         \
        IMPL ARGS;                                                                            \
    }

#endif
