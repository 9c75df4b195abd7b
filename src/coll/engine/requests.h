/* mpiopt's requests (requests.c), as nonblocking.c creates them. */
#ifndef MPIOPT_REQUESTS_H
#define MPIOPT_REQUESTS_H

#include "coll/engine/engine.h"

/* A request running `schedule` (which it owns from now on), returned in *handle: a nonblocking
 * one starts at once, a persistent one at each mpiopt_request_start. */
int mpiopt_request_new(mpiopt_schedule *schedule, int persistent, MPI_Request *handle);

#endif
