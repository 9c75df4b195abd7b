/* mpiopt_allreduce: the plan (collective_args.c), then the algorithm with the result in recvbuf.
 * The algorithms flagged MPIOPT_READS_SRC read the sendbuf where it is (c->src): the usual
 * up-front copy into recvbuf costs n bytes read + written, 10-15% of a large allreduce on two
 * cores. The others start from that copy. */
#include "coll/select/select.h"
#include "coll/entry/collective_args.h"
#include "coll/entry/handoff.h"
#include "coll/engine/schedule.h"
#include "coll/node/line_count.h"

int mpiopt_allreduce_run(const mpiopt_call_plan *plan, const void *sendbuf, void *recvbuf,
                         int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                         mpiopt_schedule *record)
{
    if (count == 0)
        return MPI_SUCCESS;
    mpiopt_coll c = plan->coll;
    if (record) {
        int rc = mpiopt_schedule_attach(record, &c, comm);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    const mpiopt_algorithm_info *alg = &mpiopt_algorithms[plan->algorithm];
    c.src = sendbuf == MPI_IN_PLACE ? NULL : sendbuf;
    if (plan->p == 1 || !(alg->flags & MPIOPT_READS_SRC))
        mpiopt_coll_take_input(&c, recvbuf, (size_t)count);
    if (plan->p == 1)
        return MPI_SUCCESS;
    /* The counting build (line_count.h) counts a blocking call here, the one place every
     * algorithm is run from, so a forced ring's messages count as the window's lines do; a
     * recording (nonblocking) call's messages go later, outside the call. */
    if (!record) {
        MPIOPT_COUNT_BEGIN(ALLREDUCE);
        MPIOPT_COUNT_COMM(c.rank, c.size);
    }
    int rc = alg->allreduce(&c, recvbuf, (size_t)count);
    if (!record)
        MPIOPT_COUNT_END();
    return rc;
}

/* Everything but the hand-off to the vendor (handoff.h) of a call planned before. */
int mpiopt_allreduce_planned(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm)
{
    mpiopt_call_plan plan;
    if (!mpiopt_plan_cached(0, algorithm, comm, count, datatype, op, 0, &plan)) {
        int rc = mpiopt_plan_call(0, algorithm, comm, count, datatype, op, 0, 0, &plan);
        if (rc != MPI_SUCCESS)
            return mpiopt_raise(comm, rc);
    }
    mpiopt_report_call(MPIOPT_CALL_ALLREDUCE, plan.algorithm, plan.why);
    int vendor = plan.algorithm == MPIOPT_ALG_VENDOR;
    if (vendor && !plan.measuring)
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    if (!plan.measuring)
        return mpiopt_raise(comm, mpiopt_allreduce_run(&plan, sendbuf, recvbuf, count, datatype,
                                                       op, comm, NULL));
    /* a trial (measured.c), the vendor's too: the vendor raises its own errors */
    double start = PMPI_Wtime();
    int rc = vendor ? PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm)
                    : mpiopt_allreduce_run(&plan, sendbuf, recvbuf, count, datatype, op, comm,
                                           NULL);
    mpiopt_measured_record(&plan.coll, (size_t)count, mpiopt_predefined_op(op), plan.vendor_ok,
                           PMPI_Wtime() - start);
    return vendor ? rc : mpiopt_raise(comm, rc);
}

int mpiopt_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm)
{
    return mpiopt_allreduce_entry(sendbuf, recvbuf, count, datatype, op, comm, algorithm);
}
