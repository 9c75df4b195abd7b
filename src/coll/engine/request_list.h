/* mpiopt's live requests, for the two files that work on them: requests.c (their handles,
 * progress and lifetimes) and request_waits.c (the MPI_Wait and MPI_Test family over arrays that
 * mix them with the vendor's). Internal to src/coll. */
#ifndef MPIOPT_REQUEST_LIST_H
#define MPIOPT_REQUEST_LIST_H

#include "coll/engine/engine.h"
#include "coll/engine/schedule.h"

#define MPIOPT_REQ_INTERNAL __attribute__((visibility("hidden")))

typedef struct request {
    MPI_Request handle;     /* the generalized request the program holds */
    mpiopt_schedule *schedule;
    int persistent;
    int active;             /* started (a nonblocking request from the start) and not completed */
    int done;               /* the schedule has run to its end, or failed (error) */
    int error;
    int freed;              /* MPI_Request_free while active: released when done */
    struct request *next;
} request;

/* every live mpiopt request; changed only under mpiopt_req_lock */
MPIOPT_REQ_INTERNAL extern request *mpiopt_req_list;

/* Whether any request of mpiopt's lives, read without the lock: a program's own request cannot
 * become mpiopt's while it is being waited for, so a stale answer only costs a round. */
static inline int mpiopt_req_any(void)
{
    return __atomic_load_n(&mpiopt_req_list, __ATOMIC_ACQUIRE) != NULL;
}

/* The lock over the list and every schedule's progress (a lock only under
 * MPI_THREAD_MULTIPLE; recursive) */
MPIOPT_REQ_INTERNAL void mpiopt_req_lock(void);
MPIOPT_REQ_INTERNAL void mpiopt_req_unlock(void);
/* The request whose handle this is; NULL for the vendor's own and MPI_REQUEST_NULL */
MPIOPT_REQ_INTERNAL request *mpiopt_req_find(MPI_Request handle);
/* The status of a completed collective: no source, tag or elements */
MPIOPT_REQ_INTERNAL void mpiopt_req_empty_status(MPI_Status *status);
/* Advances every active schedule where it can without waiting; returns how many still run */
MPIOPT_REQ_INTERNAL int mpiopt_req_progress_all(void);
/* Gives the core away between rounds of progress where the machine asks for it */
MPIOPT_REQ_INTERNAL void mpiopt_req_idle(void);
/* Runs r's schedule to its end, keeping the others moving (with the lock held) */
MPIOPT_REQ_INTERNAL void mpiopt_req_complete(request *r);
/* The end of a completed wait or test on r, held in the program's *handle */
MPIOPT_REQ_INTERNAL int mpiopt_req_finish(request *r, MPI_Request *handle, MPI_Status *status);

#endif
