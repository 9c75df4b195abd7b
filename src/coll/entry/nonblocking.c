/* MPI_Iallreduce, MPI_Ireduce, MPI_Allreduce_init, MPI_Reduce_init with mpiopt's algorithms.
 *
 * The plan is the blocking call's (collective_args.c: the same selection, the same cases left to
 * the vendor). Where it names one of mpiopt's algorithms, the blocking algorithm is recorded as a
 * schedule (schedule.h) instead of run, and handed to a request (requests.c) that runs it as the
 * program tests and waits. So every algorithm of the registry is also a nonblocking one with no
 * code of its own, and gives the blocking call's bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/select/select.h"
#include "coll/entry/collective_args.h"
#include "coll/engine/requests.h"
#include "coll/engine/schedule.h"

/* One call's arguments (count, datatype, op as MPI's; root only for a reduce). */
typedef struct {
    int is_reduce, persistent;
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    int root;
    MPI_Comm comm;
    MPI_Info info;
} call;

static int vendor_start(const call *a, MPI_Request *request)
{
    if (!a->persistent)
        return a->is_reduce ? PMPI_Ireduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op,
                                           a->root, a->comm, request)
                            : PMPI_Iallreduce(a->sendbuf, a->recvbuf, a->count, a->datatype,
                                              a->op, a->comm, request);
#ifdef MPIOPT_VENDOR_INIT
    return a->is_reduce ? MPIOPT_VENDOR_INIT(Reduce)(a->sendbuf, a->recvbuf, a->count,
                                                     a->datatype, a->op, a->root, a->comm,
                                                     a->info, request)
                        : MPIOPT_VENDOR_INIT(Allreduce)(a->sendbuf, a->recvbuf, a->count,
                                                        a->datatype, a->op, a->comm, a->info,
                                                        request);
#else
    return MPI_ERR_OTHER;   /* no vendor call to fall back on (SimGrid) */
#endif
}

/* 1 where every nonblocking call goes to the vendor: when MPIOPT_NONBLOCKING=0 asks for it. A
 * schedule advances only inside the calls mpiopt intercepts, while the vendor's own advance in
 * any MPI call: a program in which one rank blocks in, say, MPI_Recv until another rank's
 * MPI_Wait on a nonblocking allreduce returns (legal MPI, rare in practice) needs the vendor's.
 * Under MPI_THREAD_MULTIPLE the schedules are mpiopt's too (requests.c: one lock). */
int mpiopt_nonblocking_off(void)
{
    static int decided = -1;
    if (decided < 0) {
        const char *env = getenv("MPIOPT_NONBLOCKING");
        decided = env && !strcmp(env, "0");
    }
    return decided;
}

/* MPIOPT_REPORT: one call of this kind, run by algorithm or handed to the vendor (why). */
static void count_call(const call *a, mpiopt_algorithm algorithm, mpiopt_vendor_reason why)
{
    static const mpiopt_call_kind kinds[4] = {MPIOPT_CALL_IALLREDUCE, MPIOPT_CALL_IREDUCE,
                                              MPIOPT_CALL_ALLREDUCE_INIT,
                                              MPIOPT_CALL_REDUCE_INIT};
    mpiopt_report_call(kinds[2 * a->persistent + a->is_reduce], algorithm, why);
}

/* MPIOPT_VERBOSE: one line on rank 0 per (call, algorithm), so a log shows that a program's
 * nonblocking calls ran mpiopt's algorithm. */
static void report(const call *a, const mpiopt_call_plan *plan, const mpiopt_schedule *s)
{
    static unsigned char printed[4][MPIOPT_ALG_COUNT];
    int kind = 2 * a->persistent + a->is_reduce;
    if (plan->rank != 0 || printed[kind][plan->algorithm])
        return;
    printed[kind][plan->algorithm] = 1;
    static const char *const names[4] = {"iallreduce", "ireduce", "allreduce_init", "reduce_init"};
    fprintf(stderr, "mpiopt: %s p=%d: %s, a schedule of %d actions\n", names[kind], plan->p,
            mpiopt_algorithm_name(plan->algorithm), mpiopt_schedule_length(s));
}

int mpiopt_start_recorded(int (*record)(const void *args, mpiopt_schedule *s), const void *args,
                          int persistent, MPI_Request *request)
{
    if (!request)
        return MPI_ERR_REQUEST;
    mpiopt_schedule *s = mpiopt_schedule_new();
    if (!s)
        return MPI_ERR_NO_MEM;
    mpiopt_scratch_recording(1);
    int rc = record(args, s);
    mpiopt_scratch_recording(0);
    if (rc == MPI_SUCCESS)
        rc = mpiopt_request_new(s, persistent, request);
    if (rc != MPI_SUCCESS)
        mpiopt_schedule_free(s);
    return rc;
}

typedef struct {
    const call *a;
    const mpiopt_call_plan *plan;
} planned_call;

/* An allreduce or reduce recorded (mpiopt_start_recorded's `record`). */
static int record_planned(const void *args, mpiopt_schedule *s)
{
    const planned_call *pc = args;
    const call *a = pc->a;
    int rc = a->is_reduce ? mpiopt_reduce_run(pc->plan, a->sendbuf, a->recvbuf, a->count,
                                              a->datatype, a->op, a->root, a->comm, s)
                          : mpiopt_allreduce_run(pc->plan, a->sendbuf, a->recvbuf, a->count,
                                                 a->datatype, a->op, a->comm, s);
    if (rc == MPI_SUCCESS && mpiopt_verbose())
        report(a, pc->plan, s);
    return rc;
}

/* Errors reach the program through its communicator's error handler (issue 21), and a failed
 * start leaves nothing behind: the schedule goes, with what it held. */
static int start(const call *a, mpiopt_algorithm algorithm, MPI_Request *request)
{
    mpiopt_call_plan plan;
    int rc;
    if (mpiopt_nonblocking_off()) {    /* checked, and nothing of mpiopt's made (no communicator record) */
        static int said;
        int rank = 0;
        if (!said && mpiopt_verbose() && PMPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS &&
            rank == 0)
            fprintf(stderr, "mpiopt: nonblocking and persistent calls go to the vendor "
                            "(MPIOPT_NONBLOCKING=0)\n");
        said = 1;
        rc = mpiopt_check_arguments(a->is_reduce, a->comm, a->count, a->datatype, a->op, a->root);
        count_call(a, MPIOPT_ALG_VENDOR, MPIOPT_WHY_NONBLOCKING_OFF);
        return rc != MPI_SUCCESS ? mpiopt_raise(a->comm, rc) : vendor_start(a, request);
    }
    rc = mpiopt_plan_call(a->is_reduce, algorithm, a->comm, a->count, a->datatype, a->op,
                          a->root, 1, &plan);
    if (rc != MPI_SUCCESS)
        return mpiopt_raise(a->comm, rc);
    count_call(a, plan.algorithm, plan.why);
    if (plan.algorithm == MPIOPT_ALG_VENDOR)
        return vendor_start(a, request);
    planned_call pc = {a, &plan};
    return mpiopt_raise(a->comm, mpiopt_start_recorded(record_planned, &pc, a->persistent,
                                                       request));
}

int mpiopt_iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm, MPI_Request *request)
{
    call a = {0, 0, sendbuf, recvbuf, count, datatype, op, 0, comm, MPI_INFO_NULL};
    return start(&a, algorithm, request);
}

int mpiopt_ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, int root, MPI_Comm comm, mpiopt_algorithm algorithm,
                   MPI_Request *request)
{
    call a = {1, 0, sendbuf, recvbuf, count, datatype, op, root, comm, MPI_INFO_NULL};
    return start(&a, algorithm, request);
}

int mpiopt_allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm, MPI_Info info, mpiopt_algorithm algorithm,
                          MPI_Request *request)
{
    call a = {0, 1, sendbuf, recvbuf, count, datatype, op, 0, comm, info};
    return start(&a, algorithm, request);
}

int mpiopt_reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, int root, MPI_Comm comm, MPI_Info info,
                       mpiopt_algorithm algorithm, MPI_Request *request)
{
    call a = {1, 1, sendbuf, recvbuf, count, datatype, op, root, comm, info};
    return start(&a, algorithm, request);
}
