/* How mpiopt finds its place in a chain of PMPI tools (chain.h): the vendor's entry points for
 * its own calls, the tool that follows it. Built into
 * libmpiopt and into libmpiopt-profile (each with its own copy: every symbol is hidden). */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "chain.h"

/* The base address of the object holding `address`, or NULL. */
static void *object_of(const void *address)
{
    Dl_info di;
    return address && dladdr(address, &di) ? di.dli_fbase : NULL;
}

static void *this_object(void)
{
    return object_of((const void *)&object_of);
}

/* Whether the object `h` itself (not one it depends on) defines `name`. */
static int defines(void *h, void *base, const char *name)
{
    void *p = dlsym(h, name);
    return p && object_of(p) == base;
}

/* Whether `name` is a C entry point (MPI_Allreduce), not a Fortran mangling (mpi_allreduce_,
 * MPI_ALLREDUCE): C names are mixed case. */
static int is_c_name(const char *name)
{
    if (name[0] != 'M')
        return 0;
    for (const char *c = name; *c; c++)
        if (islower((unsigned char)*c))
            return 1;
    return 0;
}

/* Whether `f`, a definition of `name` (an MPI_X, its PMPI_X or a Fortran name), is the vendor's.
 * Its object also defines the profiling name
 * (PMPI_X for MPI_X, pmpi_x_ for mpi_x_) or, where the vendor has none for it (MPICH's mpi_f08
 * names), its initialisation's (PMPI_Init, pmpi_init_): the vendor's libraries do, a PMPI tool
 * as mpiP builds one does not. But some tools define PMPI_X too: Darshan maps both names to its
 * wrapper and reaches the next PMPI_X with dlsym(RTLD_NEXT). So for a C name the object must also
 * define PMPI_Get_version, a call the MPI library has and no tool wraps (Darshan's are MPI_Init,
 * MPI_Finalize and MPI-IO's): taking such a tool for the vendor skipped it, its MPI_Init never
 * ran, and it lost its record without a word. (The vendor's Fortran libraries are told by the
 * first rule alone: they define the Fortran names only.) */
static int is_vendor(void *f, const char *name)
{
    Dl_info di;
    char pname[160];
    if (strncmp(name, "PMPI_", 5) == 0)
        name++;     /* a profiling name's own: the same rules */
    if (!dladdr(f, &di) || !di.dli_fname ||
        snprintf(pname, sizeof pname, "%c%s", islower((unsigned char)name[0]) ? 'p' : 'P', name) >=
            (int)sizeof pname)
        return 0;
    void *h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    void *base = di.dli_fbase;
    int vendor = defines(h, base, pname) || defines(h, base, "PMPI_Init") ||
                 defines(h, base, "pmpi_init_") || defines(h, base, "pmpi_init_f08_");
    if (vendor && is_c_name(name))
        vendor = defines(h, base, "PMPI_Get_version");
    dlclose(h);
    return vendor;
}

void *mpiopt_chain_next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    return f && !is_vendor(f, name) ? f : NULL;
}

int mpiopt_chain_resolve(void **slot, const char *name)
{
    void *next = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (next == MPIOPT_CHAIN_UNRESOLVED) {
        next = mpiopt_chain_next(name);
        __atomic_store_n(slot, next, __ATOMIC_RELEASE);
    }
    return next != NULL;
}

/* The C name of a Fortran mangling: mpi_wait_, mpi_wait__, mpi_wait, MPI_WAIT, mpi_wait_f08_
 * -> MPI_Wait (every MPI name is MPI_ or MPIX_ and one capital). */
static void c_name(const char *fname, char *out, size_t size)
{
    size_t n = strlen(fname);
    if (n > 5 && strcmp(fname + n - 5, "_f08_") == 0)
        n -= 5;
    while (n > 0 && fname[n - 1] == '_')
        n--;
    if (n >= size)
        n = size - 1;
    size_t prefix = strncasecmp(fname, "mpix_", 5) == 0 ? 5 : 4;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)(i < prefix || i == prefix ? toupper((unsigned char)fname[i])
                                                  : tolower((unsigned char)fname[i]));
    out[n] = '\0';
}

/* Whether a tool wraps the C entry point `cname` but not its Fortran name `fname`: one behind
 * mpiopt (whose Fortran name, if it had one, would have come first), or one in front of it (the
 * program's first definition of cname is neither mpiopt's nor the vendor's, while its first
 * fname is mpiopt's). */
static int c_tool_wraps(const char *cname, const char *fname)
{
    if (mpiopt_chain_next(cname))
        return 1;
    void *first = dlsym(RTLD_DEFAULT, cname);
    return first && object_of(first) != this_object() && !is_vendor(first, cname) &&
           object_of(dlsym(RTLD_DEFAULT, fname)) == this_object();
}

int mpiopt_chain_resolve_fortran(void **slot, const char *fname)
{
    void *next = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (next == MPIOPT_CHAIN_UNRESOLVED) {
        char cname[160];
        next = dlsym(RTLD_NEXT, fname);
        c_name(fname, cname, sizeof cname);
        /* a Fortran tool behind mpiopt: it; the vendor's Fortran binding: only where a C-only
         * tool is to see the call through it */
        if (next && is_vendor(next, fname) && !c_tool_wraps(cname, fname))
            next = NULL;
        __atomic_store_n(slot, next, __ATOMIC_RELEASE);
    }
    return next != NULL;
}

/* ---- the vendor's entry points ---- */

/* At load, before any call: every slot of vendor_table.c from the vendor's library itself (the
 * one defining PMPI_Comm_rank, which mpiopt does not define), so that neither a tool nor mpiopt
 * can stand between mpiopt and the vendor. */
__attribute__((constructor)) static void resolve_vendor(void)
{
    Dl_info di;
    void *self = this_object(), *vendor = NULL;
    const char *missing = NULL;
    if (dladdr((const void *)&PMPI_Comm_rank, &di) && di.dli_fname && di.dli_fbase != self)
        vendor = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    for (const struct mpiopt_vendor_slot *s = mpiopt_vendor_slots; s->name; s++) {
        void *f = vendor ? dlsym(vendor, s->name) : NULL;
        if (!f || object_of(f) == self)
            f = dlsym(RTLD_NEXT, s->name);
        if (f && object_of(f) == self)
            f = NULL;
        *s->address = f;
        if (!f && !missing)
            missing = s->name;
    }
    if (missing)
        fprintf(stderr, "mpiopt: warning: the MPI library has no %s (built against another "
                "MPI?): a call that needs it will fail\n", missing);
}
