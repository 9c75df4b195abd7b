/* Fortran MPI_IN_PLACE / MPI_BOTTOM sentinels of Open MPI and MPICH, found at run time so one
 * source serves both (each build links only one MPI, and the Fortran library may not be loaded
 * at all in a C program, where no Fortran call can arrive anyway). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include "fortran.h"

/* Fortran handles (MPI_Fint, PMPI_*_f2c) are not in the MPI standard ABI: without them (CMakeLists.txt,
 * MPIOPT_HAVE_MPI_FINT) this file is left out, as no Fortran call can reach a C-only build. */
#ifdef MPIOPT_HAVE_MPI_FINT

static void *in_place_addr, *bottom_addr;
static int resolved;

static void *symbol(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

static void resolve(void)
{
    /* Open MPI: common blocks whose addresses are the sentinels. */
    in_place_addr = symbol("mpi_fortran_in_place_");
    bottom_addr = symbol("mpi_fortran_bottom_");
    /* MPICH: pointers, set by its Fortran library at init, to the common blocks. */
    if (!in_place_addr) {
        void **p = symbol("MPIR_F_MPI_IN_PLACE");
        in_place_addr = p ? *p : NULL;
    }
    if (!bottom_addr) {
        void **p = symbol("MPIR_F_MPI_BOTTOM");
        bottom_addr = p ? *p : NULL;
    }
    resolved = in_place_addr != NULL;   /* MPICH sets its pointers late: try again until set */
}

void *mpiopt_fortran_buffer(void *addr)
{
    if (!resolved)
        resolve();
    if (addr && addr == in_place_addr)
        return MPI_IN_PLACE;
    if (addr && addr == bottom_addr)
        return MPI_BOTTOM;
    return addr;
}
#endif
