/* mpiopt_reduce: argument handling, then the algorithm select.c names. Non-root ranks reduce in
 * scratch, the root in its recvbuf. The algorithms flagged MPIOPT_REDUCE_READS_SRC read the
 * sendbuf where it is (c->src); the others start in place, from a copy of it there. */
#include <stdlib.h>
#include "coll/select/select.h"
#include "coll/entry/collective_args.h"
#include "coll/entry/handoff.h"
#include "coll/engine/schedule.h"
#include "coll/node/line_count.h"

/* The vendor's reduce, except that MPI_IN_PLACE at a non-zero root is replaced by a copy of the
 * root's data: MPICH 4.0.2 crashes on it. The copy goes through MPI so any datatype works. */
static int vendor_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, int root, MPI_Comm comm)
{
    int rank, inter = 0;
    if (sendbuf != MPI_IN_PLACE || root == 0 || comm == MPI_COMM_NULL || count <= 0 ||
        PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
        PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || rank != root)
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    MPI_Aint lb, extent, true_lb, true_extent;
    PMPI_Type_get_extent(datatype, &lb, &extent);
    PMPI_Type_get_true_extent(datatype, &true_lb, &true_extent);
    char *copy = malloc((size_t)true_extent + (size_t)(count - 1) * (size_t)extent);
    if (!copy)
        return MPI_ERR_NO_MEM;
    char *copy_buf = copy - true_lb;
    int rc = PMPI_Sendrecv(recvbuf, count, datatype, 0, 0, copy_buf, count, datatype, 0, 0,
                           MPI_COMM_SELF, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Reduce(copy_buf, recvbuf, count, datatype, op, root, comm);
    free(copy);
    return rc;
}

int mpiopt_reduce_run(const mpiopt_call_plan *plan, const void *sendbuf, void *recvbuf,
                      int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
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
    void *buf = recvbuf;
    if (plan->rank != root && !(buf = mpiopt_coll_scratch(&c, (size_t)count)))
        return MPI_ERR_NO_MEM;
    const mpiopt_algorithm_info *alg = &mpiopt_algorithms[plan->algorithm];
    c.src = sendbuf == MPI_IN_PLACE ? NULL : sendbuf;
    if (plan->p == 1 || !(alg->flags & MPIOPT_REDUCE_READS_SRC))
        mpiopt_coll_take_input(&c, buf, (size_t)count);
    /* the counting build counts blocking calls here (allreduce.c says why) */
    if (!record && plan->p > 1) {
        MPIOPT_COUNT_BEGIN(REDUCE);
        MPIOPT_COUNT_COMM(c.rank, c.size);
    }
    int rc = plan->p > 1 ? alg->reduce(&c, buf, (size_t)count, root) : MPI_SUCCESS;
    if (!record && plan->p > 1)
        MPIOPT_COUNT_END();
    if (buf != recvbuf)
        mpiopt_scratch_free(buf);
    return rc;
}

/* Everything but the hand-off to the vendor (handoff.h) of a call planned before. */
int mpiopt_reduce_planned(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm, mpiopt_algorithm algorithm)
{
    mpiopt_call_plan plan;
    if (!mpiopt_plan_cached(1, algorithm, comm, count, datatype, op, root, &plan)) {
        int rc = mpiopt_plan_call(1, algorithm, comm, count, datatype, op, root, 0, &plan);
        if (rc != MPI_SUCCESS)
            return mpiopt_raise(comm, rc);
    }
    mpiopt_report_call(MPIOPT_CALL_REDUCE, plan.algorithm, plan.why);
    if (plan.algorithm == MPIOPT_ALG_VENDOR)
        return vendor_reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    int rc = mpiopt_reduce_run(&plan, sendbuf, recvbuf, count, datatype, op, root, comm, NULL);
    return mpiopt_raise(comm, rc);
}

int mpiopt_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm, mpiopt_algorithm algorithm)
{
    return mpiopt_reduce_entry(sendbuf, recvbuf, count, datatype, op, root, comm, algorithm);
}
