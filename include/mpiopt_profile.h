/* User regions of libmpiopt-profile (LD_PRELOAD=libmpiopt-profile.so, see docs/profiling.md).
 *
 * Time between mpiopt_region_begin("name") and the matching end is reported per region (calls,
 * total time, MPI time inside, min/max/avg over ranks). Regions nest; end(NULL) closes the
 * innermost. From Fortran: call mpiopt_region_begin('name') / call mpiopt_region_end('name').
 * A program that calls these must be run with the profiler preloaded, or link a stub. */
#ifndef MPIOPT_PROFILE_API_H
#define MPIOPT_PROFILE_API_H

#ifdef __cplusplus
extern "C" {
#endif

/* Regions without linking anything: MPI_Pcontrol(MPIOPT_PCONTROL_BEGIN, "name") and
 * MPI_Pcontrol(MPIOPT_PCONTROL_END) (Fortran: call MPI_Pcontrol(101) opens the region
 * "pcontrol", call MPI_Pcontrol(-101) closes it). Levels far from the 0/1/2 of the MPI
 * standard's suggestions, so programs that switch profiling on and off are not misread. */
#define MPIOPT_PCONTROL_BEGIN 101
#define MPIOPT_PCONTROL_END (-101)

void mpiopt_region_begin(const char *name);
void mpiopt_region_end(const char *name);

#ifdef __cplusplus
}
#endif
#endif
