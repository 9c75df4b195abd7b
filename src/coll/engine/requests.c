/* mpiopt's requests (the nonblocking and persistent collectives of nonblocking.c): their handles,
 * their progress, and their starts and frees. The MPI_Wait and MPI_Test family over arrays that
 * mix them with the vendor's is request_waits.c.
 *
 * The handle. The program holds an MPI_Request; for an mpiopt request it is a generalized request
 * of the vendor's (MPI_Grequest_start), which the vendor never completes by itself. That makes it
 * a handle no other request has, one that MPI calls mpiopt does not intercept accept (status
 * queries, the profiler's bookkeeping), and one MPI_Wait can retire: when the schedule is done,
 * MPI_Grequest_complete and PMPI_Wait set the program's variable to MPI_REQUEST_NULL and fill
 * the status as for any completed collective. A persistent request keeps its handle until
 * MPI_Request_free.
 *
 * Progress. Every call here first advances every active schedule a step where it can (test, not
 * wait), the way libNBC progresses its schedules from any MPI call: a rank waiting on one request
 * must keep the others moving, since another rank may be waiting for their messages. A wait on
 * a single mpiopt request when no other schedule is active runs it with blocking waits instead.
 * When nothing of mpiopt's is live, every call is the vendor's at the cost of one test.
 *
 * Threads. Under MPI_THREAD_MULTIPLE, one lock (recursive: an error handler the program calls
 * from inside may call MPI) covers the list of requests and every schedule's progress, so any
 * thread may start, test, wait for and free requests while the others do the same on their own
 * communicators. A waiting thread takes it for one round of progress at a time and yields the
 * core in between, and never waits blocking for one schedule: the others' would stall. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include "coll/engine/request_list.h"
#include "coll/engine/requests.h"

request *mpiopt_req_list;   /* every live mpiopt request */
static int finalize_keyval = MPI_KEYVAL_INVALID;

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int threaded;        /* MPI_THREAD_MULTIPLE: mpiopt_req_lock() is a lock */
static pthread_mutex_t requests_lock;

static void find_thread_level(void)
{
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    threaded = level == MPI_THREAD_MULTIPLE;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&requests_lock, &attr);
    pthread_mutexattr_destroy(&attr);
}

void mpiopt_req_lock(void)
{
    pthread_once(&threads_once, find_thread_level);
    if (threaded)
        pthread_mutex_lock(&requests_lock);
}

void mpiopt_req_unlock(void)
{
    if (threaded)
        pthread_mutex_unlock(&requests_lock);
}

request *mpiopt_req_find(MPI_Request handle)
{
    if (handle == MPI_REQUEST_NULL)
        return NULL;
    for (request *r = mpiopt_req_list; r; r = r->next)
        if (r->handle == handle)
            return r;
    return NULL;
}

void mpiopt_req_empty_status(MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
}

/* The generalized request's callbacks: a completed collective has an empty status and nothing
 * of its own to free (the request record goes with release), and cannot be cancelled. */
static int query_fn(void *extra, MPI_Status *status)
{
    mpiopt_req_empty_status(status);
    status->MPI_ERROR = MPI_SUCCESS;
    return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    return MPI_SUCCESS;
}

/* Unlinks r and frees it with its schedule; the handle is retired through *handle (the
 * program's variable, set to MPI_REQUEST_NULL, with the status) or r's own copy. */
static int release(request *r, MPI_Request *handle, MPI_Status *status)
{
    for (request **link = &mpiopt_req_list; *link; link = &(*link)->next)
        if (*link == r) {
            __atomic_store_n(link, r->next, __ATOMIC_RELEASE);   /* mpiopt_req_any reads it */
            break;
        }
    MPI_Request own = r->handle;
    if (!handle)
        handle = &own;
    int rc = r->error;
    mpiopt_schedule_free(r->schedule);
    free(r);
    PMPI_Grequest_complete(*handle);
    int wait_rc = PMPI_Wait(handle, status);
    return rc != MPI_SUCCESS ? rc : wait_rc;
}

static void step(request *r, int blocking)
{
    int done = 0;
    int rc = mpiopt_schedule_progress(r->schedule, blocking, &done);
    if (rc != MPI_SUCCESS) {
        r->error = rc;
        done = 1;
    }
    r->done = done;
}

/* Starts r: posts its schedule's first messages and nothing more. The MPI call that starts a
 * collective makes no progress on anything else, as the vendors' own nonblocking collectives do:
 * testing other requests there drove Open MPI 4.1's nonblocking communicator-id agreement
 * (MPI_Comm_idup) out of step between ranks, and MPICH's comm_idup_iallreduce test hung about one
 * run in two at np 2 (issue 21; tests/c/lifetimes.c, case "idup"). */
static void start_schedule(request *r)
{
    r->active = 1;
    r->done = 0;
    r->error = MPI_SUCCESS;
    int done = 0;
    int rc = mpiopt_schedule_start(r->schedule, &done);
    if (rc != MPI_SUCCESS) {
        r->error = rc;
        done = 1;
    }
    r->done = done;
}

/* Advances every active schedule where it can without waiting; releases the freed ones that
 * are done. Returns the number still running. */
int mpiopt_req_progress_all(void)
{
    int running = 0;
    request *r = mpiopt_req_list;
    while (r) {
        request *next = r->next;
        if (r->active && !r->done)
            step(r, 0);
        if (r->freed && r->done)
            release(r, NULL, MPI_STATUS_IGNORE);
        else if (r->active && !r->done)
            running++;
        r = next;
    }
    return running;
}

void mpiopt_req_idle(void)
{
    if (mpiopt_yield_when_idle())
        sched_yield();
}

/* Runs r's schedule to its end, keeping the others moving. Called and returns with the lock
 * held; lets it go between rounds. */
void mpiopt_req_complete(request *r)
{
    while (!r->done) {
        int running = mpiopt_req_progress_all();
        if (r->done)
            break;
        if (running == 1 && !threaded) {
            step(r, 1);     /* nothing else to keep moving: wait the way the blocking calls do */
        } else {
            mpiopt_req_unlock();
            mpiopt_req_idle();
            mpiopt_req_lock();
        }
    }
}

/* The end of a completed wait or test on r, held in the program's *handle. A schedule that
 * failed raises its error on the program's communicator, as the vendor raises a failed
 * request's (unless the program has freed that communicator since). */
int mpiopt_req_finish(request *r, MPI_Request *handle, MPI_Status *status)
{
    MPI_Comm raise_on = r->error != MPI_SUCCESS ? mpiopt_schedule_user_comm(r->schedule)
                                                : MPI_COMM_NULL;
    int rc;
    if (!r->persistent) {
        rc = release(r, handle, status);
    } else {
        mpiopt_req_empty_status(status);
        r->active = r->done = 0;
        rc = r->error;
        r->error = MPI_SUCCESS;
    }
    return raise_on != MPI_COMM_NULL ? mpiopt_raise(raise_on, rc) : rc;
}

/* Drains every schedule at MPI_Finalize (the delete callback of an attribute on MPI_COMM_SELF
 * runs first thing there): a request freed while active must still send its messages. */
static int finalize_drain(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    mpiopt_req_lock();
    while (mpiopt_req_progress_all() > 0)
        mpiopt_req_idle();
    while (mpiopt_req_list)
        release(mpiopt_req_list, NULL, MPI_STATUS_IGNORE);
    mpiopt_req_unlock();
    return MPI_SUCCESS;
}

int mpiopt_request_new(mpiopt_schedule *schedule, int persistent, MPI_Request *handle)
{
    mpiopt_req_lock();
    if (finalize_keyval == MPI_KEYVAL_INVALID &&
        (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_drain, &finalize_keyval, NULL) !=
             MPI_SUCCESS ||
         PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL) != MPI_SUCCESS)) {
        mpiopt_req_unlock();
        return MPI_ERR_INTERN;
    }
    request *r = calloc(1, sizeof *r);
    int rc = r ? PMPI_Grequest_start(query_fn, free_fn, cancel_fn, NULL, &r->handle)
               : MPI_ERR_NO_MEM;
    if (rc != MPI_SUCCESS) {
        free(r);
        mpiopt_req_unlock();
        return rc;
    }
    r->schedule = schedule;
    r->persistent = persistent;
    r->next = mpiopt_req_list;
    __atomic_store_n(&mpiopt_req_list, r, __ATOMIC_RELEASE);
    *handle = r->handle;
    if (!persistent)
        start_schedule(r);
    mpiopt_req_unlock();
    return MPI_SUCCESS;
}

int mpiopt_request_start(MPI_Request *request)
{
    if (!mpiopt_req_any())
        return PMPI_Start(request);
    mpiopt_req_lock();
    struct request *r = mpiopt_req_find(*request);
    int rc = MPI_SUCCESS;
    if (!r)
        rc = PMPI_Start(request);
    else if (r->active)
        rc = MPI_ERR_REQUEST;   /* MPI: a persistent request is started only when inactive */
    else {
        mpiopt_schedule_restart(r->schedule);
        start_schedule(r);
    }
    mpiopt_req_unlock();
    return rc;
}

int mpiopt_request_startall(int count, MPI_Request reqs[])
{
    if (!mpiopt_req_any())
        return PMPI_Startall(count, reqs);
    for (int i = 0; i < count; i++) {
        int rc = mpiopt_request_start(&reqs[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int mpiopt_request_free(MPI_Request *request)
{
    if (!mpiopt_req_any())
        return PMPI_Request_free(request);
    mpiopt_req_lock();
    struct request *r = mpiopt_req_find(*request);
    int rc = MPI_SUCCESS;
    if (!r) {
        rc = PMPI_Request_free(request);
    } else if (r->active && !r->done) {
        r->freed = 1;       /* released by a later call once done, at the latest at finalize */
        *request = MPI_REQUEST_NULL;
    } else {
        rc = release(r, request, MPI_STATUS_IGNORE);
        *request = MPI_REQUEST_NULL;
    }
    mpiopt_req_unlock();
    return rc;
}

int mpiopt_request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    if (!mpiopt_req_any())
        return PMPI_Request_get_status(request, flag, status);
    mpiopt_req_lock();
    struct request *r = mpiopt_req_find(request);
    int rc = MPI_SUCCESS;
    if (!r) {
        rc = PMPI_Request_get_status(request, flag, status);
    } else {
        mpiopt_req_progress_all();
        *flag = !r->active || r->done;
        if (*flag)
            mpiopt_req_empty_status(status);
    }
    mpiopt_req_unlock();
    return rc;
}
