/* The MPI_Wait and MPI_Test family (mpiopt.h's mpiopt_request_wait ... _testsome) over arrays
 * that may mix mpiopt's requests (requests.c) with the vendor's: the vendor's go to PMPI_*, with
 * mpiopt's replaced by MPI_REQUEST_NULL; mpiopt's complete here. Every call keeps every running
 * schedule moving (requests.c, "Progress"); when no request of mpiopt's lives, each is the
 * vendor's at the cost of one test. */
#include <sched.h>
#include <stdlib.h>
#include "coll/engine/request_list.h"

/* Where the status of the i-th request goes (nowhere when the program ignores them all) */
static MPI_Status *status_at(MPI_Status *statuses, int i)
{
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

/* 1 if a schedule of mpiopt's is running (started, not done). */
static int schedules_running(void)
{
    for (request *r = mpiopt_req_list; r; r = r->next)
        if (r->active && !r->done)
            return 1;
    return 0;
}

/* 1 if a call on these requests needs mpiopt: one of them is mpiopt's, or a schedule is running
 * that must be kept moving while the program waits. */
static int involved(int n, const MPI_Request *reqs)
{
    if (!mpiopt_req_list)
        return 0;
    if (schedules_running())
        return 1;
    for (int i = 0; i < n; i++)
        if (mpiopt_req_find(reqs[i]))
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
        (*ours)[i] = mpiopt_req_find(reqs[i]);
        copy[i] = (*ours)[i] ? MPI_REQUEST_NULL : reqs[i];
    }
    return copy;
}

static int test_locked(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (!involved(1, request))
        return PMPI_Test(request, flag, status);
    mpiopt_req_progress_all();
    struct request *r = mpiopt_req_find(*request);
    if (!r)
        return PMPI_Test(request, flag, status);
    *flag = !r->active || r->done;
    if (!r->active) {
        mpiopt_req_empty_status(status);
        return MPI_SUCCESS;
    }
    return r->done ? mpiopt_req_finish(r, request, status) : MPI_SUCCESS;
}

int mpiopt_request_test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (!mpiopt_req_any())
        return PMPI_Test(request, flag, status);
    mpiopt_req_lock();
    int rc = test_locked(request, flag, status);
    mpiopt_req_unlock();
    return rc;
}

/* A vendor request's wait. Where mpiopt yields the core while it waits (an oversubscribed node
 * under a polling MPI, or MPIOPT_YIELD=1: p2p.c), the vendor's request is tested between
 * yields too, not waited for in the vendor's polling loop: with more ranks than cores a polling
 * wait spends whole time slices of the ranks it waits for (MPICH 4.0.2, 17 ranks on 2 cores: a
 * persistent vendor allreduce's checks took 19 s, 5 s with this). The same completion, status
 * and error as PMPI_Wait. */
static int vendor_wait(MPI_Request *request, MPI_Status *status)
{
    if (!mpiopt_yield_when_idle())
        return PMPI_Wait(request, status);
    int flag = 0, rc;
    while ((rc = PMPI_Test(request, &flag, status)) == MPI_SUCCESS && !flag)
        sched_yield();
    return rc;
}

int mpiopt_request_wait(MPI_Request *request, MPI_Status *status)
{
    if (!mpiopt_req_any())
        return vendor_wait(request, status);
    mpiopt_req_lock();
    if (!involved(1, request)) {
        mpiopt_req_unlock();
        return vendor_wait(request, status);
    }
    struct request *r = mpiopt_req_find(*request);
    int rc;
    if (!r) {
        /* a vendor request, while schedules run: test it and keep them moving */
        int flag = 0;
        while ((rc = PMPI_Test(request, &flag, status)) == MPI_SUCCESS && !flag) {
            if (mpiopt_req_progress_all() == 0) {
                mpiopt_req_unlock();
                return vendor_wait(request, status);
            }
            mpiopt_req_unlock();
            mpiopt_req_idle();
            mpiopt_req_lock();
        }
    } else if (!r->active) {
        mpiopt_req_empty_status(status);
        rc = MPI_SUCCESS;
    } else {
        mpiopt_req_complete(r);
        rc = mpiopt_req_finish(r, request, status);
    }
    mpiopt_req_unlock();
    return rc;
}

/* block = 1 (a wait): once mpiopt's requests are done and no schedule of mpiopt's runs, the
 * vendor's are waited for with PMPI_Waitall, not tested: MPICH 4.0.2's MPI_Testall fails
 * (MPI_ERR_IN_STATUS, no error in any status) on a persistent collective request of its own, so
 * a wait built from tests failed where the vendor's own wait works. */
static int testall_locked(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[],
                          int block)
{
    if (!involved(count, reqs))
        return PMPI_Testall(count, reqs, flag, statuses);
    mpiopt_req_progress_all();
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
    if (*flag && block && !schedules_running()) {
        mpiopt_req_unlock();    /* the vendor's wait blocks: other threads' schedules go on */
        rc = PMPI_Waitall(count, copy, statuses);
        mpiopt_req_lock();
    }
    else if (*flag)
        rc = PMPI_Testall(count, copy, flag, statuses);
    for (int i = 0; *flag && i < count; i++) {
        if (!ours[i]) {
            reqs[i] = copy[i];
            continue;
        }
        int rc_i = MPI_SUCCESS;
        if (ours[i]->active)
            /* may free ours[i] */
            rc_i = mpiopt_req_finish(ours[i], &reqs[i], status_at(statuses, i));
        else
            mpiopt_req_empty_status(status_at(statuses, i));
        if (rc == MPI_SUCCESS)
            rc = rc_i;
    }
    free(copy);
    free(ours);
    return rc;
}

int mpiopt_request_testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    if (!mpiopt_req_any())
        return PMPI_Testall(count, reqs, flag, statuses);
    mpiopt_req_lock();
    int rc = testall_locked(count, reqs, flag, statuses, 0);
    mpiopt_req_unlock();
    return rc;
}

/* 1 if a wait on these requests needs mpiopt (involved), asked under the lock. */
static int involved_now(int n, const MPI_Request *reqs)
{
    if (!mpiopt_req_any())
        return 0;
    mpiopt_req_lock();
    int yes = involved(n, reqs);
    mpiopt_req_unlock();
    return yes;
}

int mpiopt_request_waitall(int count, MPI_Request reqs[], MPI_Status statuses[])
{
    if (!involved_now(count, reqs))
        return PMPI_Waitall(count, reqs, statuses);
    int flag = 0, rc;
    do {
        mpiopt_req_lock();
        rc = testall_locked(count, reqs, &flag, statuses, 1);
        mpiopt_req_unlock();
    } while (rc == MPI_SUCCESS && !flag && (mpiopt_req_idle(), 1));
    return rc;
}

static int testany_locked(int count, MPI_Request reqs[], int *index, int *flag,
                          MPI_Status *status)
{
    if (!involved(count, reqs))
        return PMPI_Testany(count, reqs, index, flag, status);
    mpiopt_req_progress_all();
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
            rc = mpiopt_req_finish(ours[i], &reqs[i], status);
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
    if (!mpiopt_req_any())
        return PMPI_Testany(count, reqs, index, flag, status);
    mpiopt_req_lock();
    int rc = testany_locked(count, reqs, index, flag, status);
    mpiopt_req_unlock();
    return rc;
}

int mpiopt_request_waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status)
{
    if (!involved_now(count, reqs))
        return PMPI_Waitany(count, reqs, index, status);
    int flag = 0, rc;
    while ((rc = mpiopt_request_testany(count, reqs, index, &flag, status)) == MPI_SUCCESS && !flag)
        mpiopt_req_idle();
    return rc;
}

static int testsome_locked(int incount, MPI_Request reqs[], int *outcount, int indices[],
                           MPI_Status statuses[])
{
    if (!involved(incount, reqs))
        return PMPI_Testsome(incount, reqs, outcount, indices, statuses);
    mpiopt_req_progress_all();
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
            int rc_i = mpiopt_req_finish(ours[i], &reqs[i], status_at(statuses, n));
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
    if (!mpiopt_req_any())
        return PMPI_Testsome(incount, reqs, outcount, indices, statuses);
    mpiopt_req_lock();
    int rc = testsome_locked(incount, reqs, outcount, indices, statuses);
    mpiopt_req_unlock();
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
        mpiopt_req_idle();
    return rc;
}
