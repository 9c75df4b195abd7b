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
 * without mpiopt (nothing). PMPI_X does not pass calls on to a tool behind that defines MPI_X
 * alone: a tool's own PMPI_X calls (a profiler's reductions at MPI_Finalize) must reach the MPI,
 * not the tool again, and who called PMPI_X cannot be told reliably (a tool's wrapper tail-calls
 * it).
 *
 * Some tools define PMPI_X too (Darshan maps both names to one wrapper) and reach the next PMPI_X
 * with dlsym(RTLD_NEXT). Behind mpiopt such a tool is the next MPI_X, and the next PMPI_X as well:
 * both of mpiopt's names hand the call on to it, as without mpiopt the layer in front reaches it
 * by either name. From there the call goes on to the vendor past mpiopt, so mpiopt does not run
 * the calls such a tool wraps (Darshan wraps no reduction), and what mpiopt must do after a call
 * it hands on (MPI_Init's set-up) is done on the way back (MPIOPT_CHAIN_ENTRY_THEN). A tool is
 * told from the vendor by the names its object defines (chain.c, is_vendor).
 * mpiopt's own calls to the vendor never go through these names: vendor.h (generated, included
 * before every source of the library) renames each PMPI_X that mpiopt defines, and those of its
 * own messages (bindings.py, INNER_CALLS), to a pointer to the vendor's, resolved from the
 * vendor's library itself (chain.c), so no tool and no mpiopt entry point ever sees mpiopt's
 * inner messages.
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
    MPIOPT_CHAIN_ENTRY_(ATTRS, NAME, PARAMS, ARGS, CALL, MPIOPT_NOTHING_AFTER)
/* The same, and where a tool follows, AFTER(rc) once its MPI_X has returned rc: a tool that
 * defines PMPI_X itself and reaches the next PMPI_X by dlsym (Darshan) goes on to the vendor past
 * mpiopt's PMPI_X, so what mpiopt must do after the call (MPI_Init's set-up) is done here; AFTER
 * must then be harmless where the tool's call came through mpiopt's PMPI_X and did it already. */
#define MPIOPT_CHAIN_ENTRY_THEN(ATTRS, NAME, PARAMS, ARGS, CALL, AFTER) \
    MPIOPT_CHAIN_ENTRY_(ATTRS, NAME, PARAMS, ARGS, CALL, AFTER)
#define MPIOPT_NOTHING_AFTER(rc) ((void)(rc))
#define MPIOPT_CHAIN_ENTRY_(ATTRS, NAME, PARAMS, ARGS, CALL, AFTER)                           \
    static void *mpiopt_next_##NAME = MPIOPT_CHAIN_UNRESOLVED;                                \
    ATTRS int NAME PARAMS                                                                     \
    {                                                                                         \
        if (__builtin_expect(mpiopt_next_##NAME != NULL, 0) &&                                \
            mpiopt_chain_resolve(&mpiopt_next_##NAME, #NAME)) {                               \
            int mpiopt_rc_ = ((__typeof__(&NAME))mpiopt_next_##NAME) ARGS;                    \
            AFTER(mpiopt_rc_);                                                                \
            return mpiopt_rc_;                                                                \
        }                                                                                     \
        return CALL;                                                                          \
    }                                                                                         \
    static void *mpiopt_pnext_##NAME = MPIOPT_CHAIN_UNRESOLVED;                               \
    ATTRS int mpiopt_pmpi_##NAME PARAMS __asm__("P" #NAME);                                   \
    ATTRS int mpiopt_pmpi_##NAME PARAMS                                                       \
    {                                                                                         \
        if (__builtin_expect(mpiopt_pnext_##NAME != NULL, 0) &&                               \
            mpiopt_chain_resolve(&mpiopt_pnext_##NAME, "P" #NAME)) {                          \
            int mpiopt_rc_ = ((__typeof__(&NAME))mpiopt_pnext_##NAME) ARGS;                   \
            AFTER(mpiopt_rc_);                                                                \
            return mpiopt_rc_;                                                                \
        }                                                                                     \
        return CALL;                                                                          \
    }

/* A hand-written C entry point MPI_NAME and PMPI_NAME (the files of src/interpose; bindings.py finds
 * them by this macro for vendor.h): the body that follows is mpiopt's implementation.
 *     MPIOPT_C_ENTRY(Wait, (MPI_Request *request, MPI_Status *status), (request, status))
 *     { return mpiopt_request_wait(request, status); } */
#define MPIOPT_C_ENTRY(NAME, PARAMS, ARGS) \
    MPIOPT_C_ENTRY_THEN(NAME, PARAMS, ARGS, MPIOPT_NOTHING_AFTER)
/* The same with AFTER(rc) where a tool follows (MPIOPT_CHAIN_ENTRY_THEN). */
#define MPIOPT_C_ENTRY_THEN(NAME, PARAMS, ARGS, AFTER)                                        \
    static inline __attribute__((always_inline)) int mpiopt_own_##NAME PARAMS;               \
    MPIOPT_CHAIN_ENTRY_THEN(, MPI_##NAME, PARAMS, ARGS, mpiopt_own_##NAME ARGS, AFTER)        \
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
