/* MPI-4's persistent collectives (MPI_Allreduce_init, …): by their MPI-4 names where the MPI has
 * them (also Intel MPI 2021.15, which says 3.1), by Open MPI 4.1's MPIX_ names where its
 * pcollreq extension has them, else not at all. PERSISTENT_NAME(Allreduce_init) is the C name the
 * drop-in defines, VENDOR_PERSISTENT_NAME(Allreduce_init) the vendor's profiling name it calls;
 * MPIOPT_PERSISTENT_MPI4 / MPIOPT_PERSISTENT_MPIX say which (vendor.h). */
#ifndef MPIOPT_PERSISTENT_NAME_H
#define MPIOPT_PERSISTENT_NAME_H

#include <mpi.h>

#if MPI_VERSION >= 4 || defined(MPIOPT_HAVE_PERSISTENT_COLL)
#define PERSISTENT_NAME(name) MPI_##name
#define VENDOR_PERSISTENT_NAME(name) PMPI_##name
#define MPIOPT_PERSISTENT_MPI4 1
#elif defined(OMPI_MAJOR_VERSION)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PERSISTENT_NAME(name) MPIX_##name
#define VENDOR_PERSISTENT_NAME(name) PMPIX_##name
#define MPIOPT_PERSISTENT_MPIX 1
#endif
#endif

#endif
