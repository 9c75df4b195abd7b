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

void mpiopt_region_begin(const char *name);
void mpiopt_region_end(const char *name);

#ifdef __cplusplus
}
#endif
#endif
