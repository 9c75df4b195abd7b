/* The point-to-point calls the algorithms are made of, and how a process waits in them.
 *
 * Every message of an algorithm goes through here: c->datatype, c->tag and c->comm are the
 * same for all of them, so a call site names only the buffer, the element count and the peer.
 * While a nonblocking call records an algorithm (c->record, schedule.h), these calls append the
 * posts and waits they would have made to the schedule and return at once.
 *
 * Waiting. An MPI library waits for a message by polling. With more processes on a node than
 * cores, a polling process holds a core that the process it waits for needs, until the kernel's
 * time slice (milliseconds) runs out. Open MPI yields the core by itself when it sees
 * oversubscription (mpi_yield_when_idle); MPICH 4's ch4 device never does, so there each step of a
 * collective can cost a whole time slice (4 ms here, against 10 us). When this node runs more
 * ranks than it has cores and the library does not yield by itself, mpiopt's algorithms wait by
 * testing their requests and calling sched_yield() between tests, which hands the core to a
 * process that has work. Under Open MPI that would only add system calls to its own yields (it
 * measured up to 8 % slower). MPIOPT_YIELD=1 / 0 forces the choice either way. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include "coll/engine/engine.h"
#include "kernels/node.h"
#include "coll/engine/schedule.h"
#include "coll/engine/message_count.h"

#ifdef MPIOPT_COUNT_LINES
void (*mpiopt_count_message_hook)(int peer, size_t bytes);
#endif

/* 1 if the MPI library would poll away a core that another rank on this node needs. */
static int library_polls_oversubscribed(void)
{
#ifdef OMPI_MAJOR_VERSION
    return 0;  /* Open MPI yields by itself when oversubscribed */
#else
    /* unknown (0) under launchers that do not say, and under SimGrid, whose ranks are not
     * processes */
    return mpiopt_node_ranks() > sysconf(_SC_NPROCESSORS_ONLN);
#endif
}

int mpiopt_yield_when_idle(void)
{
    static int decided = -1;  /* the environment does not change within a run */
    if (decided < 0) {
        const char *forced = getenv("MPIOPT_YIELD");
        decided = forced && *forced ? atoi(forced) != 0 : library_polls_oversubscribed();
    }
    return decided;
}

int mpiopt_waitall(const mpiopt_coll *c, int n, MPI_Request *reqs)
{
    if (c->record)
        return mpiopt_schedule_wait(c->record, n, reqs);
    /* one request at a time: each wait or test drives the progress of all of them */
    for (int i = 0; i < n; i++) {
        int rc, done = 0;
        if (!mpiopt_yield_when_idle()) {
            rc = PMPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
        } else {
            while ((rc = PMPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done)
                sched_yield();
        }
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* The communicator's rank of the algorithm's peer (engine.h: peers). A schedule records it so: it
 * runs with the context of the whole communicator. */
static inline int user_rank(const mpiopt_coll *c, int peer)
{
    return c->peers ? c->peers[peer] : peer;
}

/* Its rank on c->comm, where the message goes (engine.h: msg_rank). */
static inline int peer_rank(const mpiopt_coll *c, int peer)
{
    int r = user_rank(c, peer);
    return c->msg_rank ? c->msg_rank[r] : r;
}

int mpiopt_isend(const mpiopt_coll *c, const void *buf, size_t n, int dst, MPI_Request *req)
{
    if (c->record)
        return mpiopt_schedule_post(c->record, 1, buf, n, user_rank(c, dst), req);
    return PMPI_Isend(buf, (int)n, c->datatype, peer_rank(c, dst), c->tag, c->comm, req);
}

int mpiopt_irecv(const mpiopt_coll *c, void *buf, size_t n, int src, MPI_Request *req)
{
    if (c->record)
        return mpiopt_schedule_post(c->record, 0, buf, n, user_rank(c, src), req);
    /* counted where a blocking call posts it (a schedule's posts run later, uncounted) */
    MPIOPT_COUNT_MESSAGE(user_rank(c, src), n * c->extent);
    return PMPI_Irecv(buf, (int)n, c->datatype, peer_rank(c, src), c->tag, c->comm, req);
}

int mpiopt_send(const mpiopt_coll *c, const void *buf, size_t n, int dst)
{
    if (!mpiopt_yield_when_idle() && !c->record)
        return PMPI_Send(buf, (int)n, c->datatype, peer_rank(c, dst), c->tag, c->comm);
    MPI_Request req;
    int rc = mpiopt_isend(c, buf, n, dst, &req);
    return rc == MPI_SUCCESS ? mpiopt_waitall(c, 1, &req) : rc;
}

int mpiopt_recv(const mpiopt_coll *c, void *buf, size_t n, int src)
{
    if (!mpiopt_yield_when_idle() && !c->record) {
        MPIOPT_COUNT_MESSAGE(user_rank(c, src), n * c->extent);    /* else mpiopt_irecv's */
        return PMPI_Recv(buf, (int)n, c->datatype, peer_rank(c, src), c->tag, c->comm,
                         MPI_STATUS_IGNORE);
    }
    MPI_Request req;
    int rc = mpiopt_irecv(c, buf, n, src, &req);
    return rc == MPI_SUCCESS ? mpiopt_waitall(c, 1, &req) : rc;
}

int mpiopt_sendrecv(const mpiopt_coll *c, const void *sbuf, size_t sn, int dst, void *rbuf,
                    size_t rn, int src)
{
    if (!mpiopt_yield_when_idle() && !c->record) {
        MPIOPT_COUNT_MESSAGE(user_rank(c, src), rn * c->extent);   /* else mpiopt_irecv's */
        return PMPI_Sendrecv(sbuf, (int)sn, c->datatype, peer_rank(c, dst), c->tag, rbuf,
                             (int)rn, c->datatype, peer_rank(c, src), c->tag, c->comm,
                             MPI_STATUS_IGNORE);
    }
    MPI_Request reqs[2];
    int rc = mpiopt_irecv(c, rbuf, rn, src, &reqs[0]);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = mpiopt_isend(c, sbuf, sn, dst, &reqs[1]);
    if (rc != MPI_SUCCESS) {
        PMPI_Cancel(&reqs[0]);
        PMPI_Request_free(&reqs[0]);
        return rc;
    }
    return mpiopt_waitall(c, 2, reqs);
}
