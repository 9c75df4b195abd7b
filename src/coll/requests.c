/* mpiopt's requests (the nonblocking and persistent collectives of nonblocking.c) and the MPI_Wait
 * family over arrays that mix them with the vendor's.
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
#include "coll.h"
#include "requests.h"
#include "schedule.h"

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

static request *requests;   /* every live mpiopt request */
static int finalize_keyval = MPI_KEYVAL_INVALID;

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int threaded;        /* MPI_THREAD_MULTIPLE: lock() is a lock */
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

static void lock(void)
{
    pthread_once(&threads_once, find_thread_level);
    if (threaded)
        pthread_mutex_lock(&requests_lock);
}

static void unlock(void)
{
    if (threaded)
        pthread_mutex_unlock(&requests_lock);
}

/* Whether any request of mpiopt's lives, read without the lock: a program's own request cannot
 * become mpiopt's while it is being waited for, so a stale answer only costs a round. */
static int any_requests(void)
{
    return __atomic_load_n(&requests, __ATOMIC_ACQUIRE) != NULL;
}

static request *find(MPI_Request handle)
{
    if (handle == MPI_REQUEST_NULL)
        return NULL;
    for (request *r = requests; r; r = r->next)
        if (r->handle == handle)
            return r;
    return NULL;
}

static void empty_status(MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
}

static MPI_Status *status_at(MPI_Status *statuses, int i)
{
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

/* The generalized request's callbacks: a completed collective has an empty status and nothing
 * of its own to free (the request record goes with release), and cannot be cancelled. */
static int query_fn(void *extra, MPI_Status *status)
{
    empty_status(status);
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
    for (request **link = &requests; *link; link = &(*link)->next)
        if (*link == r) {
            __atomic_store_n(link, r->next, __ATOMIC_RELEASE);   /* any_requests reads it */
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
static int progress_all(void)
{
    int running = 0;
    request *r = requests;
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

static void idle(void)
{
    if (mpiopt_yield_when_idle())
        sched_yield();
}

/* Runs r's schedule to its end, keeping the others moving. Called and returns with the lock
 * held; lets it go between rounds. */
static void complete(request *r)
{
    while (!r->done) {
        int running = progress_all();
        if (r->done)
            break;
        if (running == 1 && !threaded) {
            step(r, 1);     /* nothing else to keep moving: wait the way the blocking calls do */
        } else {
            unlock();
            idle();
            lock();
        }
    }
}

/* The end of a completed wait or test on r, held in the program's *handle. A schedule that
 * failed raises its error on the program's communicator, as the vendor raises a failed
 * request's (unless the program has freed that communicator since). */
static int finish(request *r, MPI_Request *handle, MPI_Status *status)
{
    MPI_Comm raise_on = r->error != MPI_SUCCESS ? mpiopt_schedule_user_comm(r->schedule)
                                                : MPI_COMM_NULL;
    int rc;
    if (!r->persistent) {
        rc = release(r, handle, status);
    } else {
        empty_status(status);
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
    lock();
    while (progress_all() > 0)
        idle();
    while (requests)
        release(requests, NULL, MPI_STATUS_IGNORE);
    unlock();
    return MPI_SUCCESS;
}

int mpiopt_request_new(mpiopt_schedule *schedule, int persistent, MPI_Request *handle)
{
    lock();
    if (finalize_keyval == MPI_KEYVAL_INVALID &&
        (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_drain, &finalize_keyval, NULL) !=
             MPI_SUCCESS ||
         PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL) != MPI_SUCCESS)) {
        unlock();
        return MPI_ERR_INTERN;
    }
    request *r = calloc(1, sizeof *r);
    int rc = r ? PMPI_Grequest_start(query_fn, free_fn, cancel_fn, NULL, &r->handle)
               : MPI_ERR_NO_MEM;
    if (rc != MPI_SUCCESS) {
        free(r);
        unlock();
        return rc;
    }
    r->schedule = schedule;
    r->persistent = persistent;
    r->next = requests;
    __atomic_store_n(&requests, r, __ATOMIC_RELEASE);
    *handle = r->handle;
    if (!persistent)
        start_schedule(r);
    unlock();
    return MPI_SUCCESS;
}

/* 1 if a call on these requests needs mpiopt: one of them is mpiopt's, or a schedule is running
 * that must be kept moving while the program waits. */
static int involved(int n, const MPI_Request *reqs)
{
    if (!requests)
        return 0;
    for (request *r = requests; r; r = r->next)
        if (r->active && !r->done)
            return 1;
    for (int i = 0; i < n; i++)
        if (find(reqs[i]))
            return 1;
    return 0;
}

/* The array with mpiopt's requests replaced by MPI_REQUEST_NULL, for the vendor's calls; ours[i]
 * is the mpiopt request at i. NULL when out of memory. */
static MPI_Request *vendor_part(int n, const MPI_Request *reqs, request ***ours)
{
    MPI_Request *copy = malloc(sizeof *copy * (size_t)(n ? n : 1));
    *ours = malloc(sizeof **ours * (size_t)(n ? n : 1));
    if (!copy || !*ours) {
        free(copy);
        free(*ours);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        (*ours)[i] = find(reqs[i]);
        copy[i] = (*ours)[i] ? MPI_REQUEST_NULL : reqs[i];
    }
    return copy;
}

static int test_locked(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (!involved(1, request))
        return PMPI_Test(request, flag, status);
    progress_all();
    struct request *r = find(*request);
    if (!r)
        return PMPI_Test(request, flag, status);
    *flag = !r->active || r->done;
    if (!r->active) {
        empty_status(status);
        return MPI_SUCCESS;
    }
    return r->done ? finish(r, request, status) : MPI_SUCCESS;
}

int mpiopt_request_test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (!any_requests())
        return PMPI_Test(request, flag, status);
    lock();
    int rc = test_locked(request, flag, status);
    unlock();
    return rc;
}

int mpiopt_request_wait(MPI_Request *request, MPI_Status *status)
{
    if (!any_requests())
        return PMPI_Wait(request, status);
    lock();
    if (!involved(1, request)) {
        unlock();
        return PMPI_Wait(request, status);
    }
    struct request *r = find(*request);
    int rc;
    if (!r) {
        /* a vendor request, while schedules run: test it and keep them moving */
        int flag = 0;
        while ((rc = PMPI_Test(request, &flag, status)) == MPI_SUCCESS && !flag) {
            if (progress_all() == 0) {
                unlock();
                return PMPI_Wait(request, status);
            }
            unlock();
            idle();
            lock();
        }
    } else if (!r->active) {
        empty_status(status);
        rc = MPI_SUCCESS;
    } else {
        complete(r);
        rc = finish(r, request, status);
    }
    unlock();
    return rc;
}

static int testall_locked(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    if (!involved(count, reqs))
        return PMPI_Testall(count, reqs, flag, statuses);
    progress_all();
    request **ours;
    MPI_Request *copy = vendor_part(count, reqs, &ours);
    if (!copy)
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS;
    *flag = 1;
    for (int i = 0; i < count; i++)
        if (ours[i] && ours[i]->active && !ours[i]->done)
            *flag = 0;
    /* the vendor's requests only when all of ours are done: a false flag changes no request */
    if (*flag)
        rc = PMPI_Testall(count, copy, flag, statuses);
    for (int i = 0; *flag && i < count; i++) {
        if (!ours[i]) {
            reqs[i] = copy[i];
            continue;
        }
        int rc_i = MPI_SUCCESS;
        if (ours[i]->active)
            rc_i = finish(ours[i], &reqs[i], status_at(statuses, i));   /* may free ours[i] */
        else
            empty_status(status_at(statuses, i));
        if (rc == MPI_SUCCESS)
            rc = rc_i;
    }
    free(copy);
    free(ours);
    return rc;
}

int mpiopt_request_testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    if (!any_requests())
        return PMPI_Testall(count, reqs, flag, statuses);
    lock();
    int rc = testall_locked(count, reqs, flag, statuses);
    unlock();
    return rc;
}

/* 1 if a wait on these requests needs mpiopt (involved), asked under the lock. */
static int involved_now(int n, const MPI_Request *reqs)
{
    if (!any_requests())
        return 0;
    lock();
    int yes = involved(n, reqs);
    unlock();
    return yes;
}

int mpiopt_request_waitall(int count, MPI_Request reqs[], MPI_Status statuses[])
{
    if (!involved_now(count, reqs))
        return PMPI_Waitall(count, reqs, statuses);
    int flag = 0, rc;
    while ((rc = mpiopt_request_testall(count, reqs, &flag, statuses)) == MPI_SUCCESS && !flag)
        idle();
    return rc;
}

static int testany_locked(int count, MPI_Request reqs[], int *index, int *flag,
                          MPI_Status *status)
{
    if (!involved(count, reqs))
        return PMPI_Testany(count, reqs, index, flag, status);
    progress_all();
    request **ours;
    MPI_Request *copy = vendor_part(count, reqs, &ours);
    if (!copy)
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS, ours_active = 0;
    *flag = 0;
    for (int i = 0; i < count && !*flag; i++) {
        if (!ours[i] || !ours[i]->active)
            continue;
        ours_active = 1;
        if (ours[i]->done) {
            *flag = 1;
            *index = i;
            rc = finish(ours[i], &reqs[i], status);
        }
    }
    if (!*flag) {
        rc = PMPI_Testany(count, copy, index, flag, status);
        if (*flag && *index != MPI_UNDEFINED)
            reqs[*index] = copy[*index];
        else if (*flag && ours_active)
            *flag = 0;      /* no active vendor request, but ours still run */
    }
    free(copy);
    free(ours);
    return rc;
}

int mpiopt_request_testany(int count, MPI_Request reqs[], int *index, int *flag,
                           MPI_Status *status)
{
    if (!any_requests())
        return PMPI_Testany(count, reqs, index, flag, status);
    lock();
    int rc = testany_locked(count, reqs, index, flag, status);
    unlock();
    return rc;
}

int mpiopt_request_waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status)
{
    if (!involved_now(count, reqs))
        return PMPI_Waitany(count, reqs, index, status);
    int flag = 0, rc;
    while ((rc = mpiopt_request_testany(count, reqs, index, &flag, status)) == MPI_SUCCESS && !flag)
        idle();
    return rc;
}

static int testsome_locked(int incount, MPI_Request reqs[], int *outcount, int indices[],
                           MPI_Status statuses[])
{
    if (!involved(incount, reqs))
        return PMPI_Testsome(incount, reqs, outcount, indices, statuses);
    progress_all();
    request **ours;
    MPI_Request *copy = vendor_part(incount, reqs, &ours);
    if (!copy)
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS, n = 0, ours_active = 0, vendor_n = 0;
    for (int i = 0; i < incount; i++) {
        if (!ours[i] || !ours[i]->active)
            continue;
        ours_active = 1;
        if (ours[i]->done) {
            indices[n] = i;
            int rc_i = finish(ours[i], &reqs[i], status_at(statuses, n));
            if (rc == MPI_SUCCESS)
                rc = rc_i;
            n++;
        }
    }
    int rc_v = PMPI_Testsome(incount, copy, &vendor_n, indices + n,
                             statuses == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : statuses + n);
    if (rc == MPI_SUCCESS)
        rc = rc_v;
    if (vendor_n == MPI_UNDEFINED)
        *outcount = n == 0 && !ours_active ? MPI_UNDEFINED : n;
    else {
        for (int j = n; j < n + vendor_n; j++)
            reqs[indices[j]] = copy[indices[j]];
        *outcount = n + vendor_n;
    }
    free(copy);
    free(ours);
    return rc;
}

int mpiopt_request_testsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
                            MPI_Status statuses[])
{
    if (!any_requests())
        return PMPI_Testsome(incount, reqs, outcount, indices, statuses);
    lock();
    int rc = testsome_locked(incount, reqs, outcount, indices, statuses);
    unlock();
    return rc;
}

int mpiopt_request_waitsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
                            MPI_Status statuses[])
{
    if (!involved_now(incount, reqs))
        return PMPI_Waitsome(incount, reqs, outcount, indices, statuses);
    int rc;
    while ((rc = mpiopt_request_testsome(incount, reqs, outcount, indices, statuses)) ==
               MPI_SUCCESS && *outcount == 0)
        idle();
    return rc;
}

int mpiopt_request_start(MPI_Request *request)
{
    if (!any_requests())
        return PMPI_Start(request);
    lock();
    struct request *r = find(*request);
    int rc = MPI_SUCCESS;
    if (!r)
        rc = PMPI_Start(request);
    else if (r->active)
        rc = MPI_ERR_REQUEST;   /* MPI: a persistent request is started only when inactive */
    else {
        mpiopt_schedule_restart(r->schedule);
        start_schedule(r);
    }
    unlock();
    return rc;
}

int mpiopt_request_startall(int count, MPI_Request reqs[])
{
    if (!any_requests())
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
    if (!any_requests())
        return PMPI_Request_free(request);
    lock();
    struct request *r = find(*request);
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
    unlock();
    return rc;
}

int mpiopt_request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    if (!any_requests())
        return PMPI_Request_get_status(request, flag, status);
    lock();
    struct request *r = find(request);
    int rc = MPI_SUCCESS;
    if (!r) {
        rc = PMPI_Request_get_status(request, flag, status);
    } else {
        progress_all();
        *flag = !r->active || r->done;
        if (*flag)
            empty_status(status);
    }
    unlock();
    return rc;
}
