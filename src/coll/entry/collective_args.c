/* Argument checks shared by allreduce.c and reduce.c. */
#include <stddef.h>
#include <stdlib.h>
#include "coll/select/select.h"
#include "coll/entry/collective_args.h"
#include "coll/engine/schedule.h"
#include "coll/node/node_layout.h"

/* The plan from the arguments alone; 1 if it may be remembered (plan_cache.c). */
static int plan_uncached(int is_reduce, mpiopt_algorithm requested, MPI_Comm comm, int count,
                         MPI_Datatype datatype, MPI_Op op, int root, int nonblocking,
                         mpiopt_call_plan *plan)
{
    int commutative;
    size_t bytes;
    if (!mpiopt_coll_shape(comm, count, datatype, &plan->p, &bytes)
        || (is_reduce && (root < 0 || root >= plan->p))
        || PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS)
        return 0;    /* the vendor judges bad arguments: nothing to remember */
    PMPI_Comm_rank(comm, &plan->rank);
    plan->algorithm = MPIOPT_ALG_VENDOR;
    /* MPICH's allreduce may give ranks different bits (collective_args.h): not for auto */
    int vendor_ok = !mpiopt_vendor_result_wrong(datatype, op) &&
                    (is_reduce || !mpiopt_vendor_allreduce_ranks_differ(datatype, op));
#if defined(OMPI_MAJOR_VERSION)
    /* Open MPI 4.1's own nonblocking and persistent collectives crash when the program frees
     * their op, datatype or communicator before they complete (legal MPI; tests/c/
     * plain_lifetimes.c, without the drop-in): auto gives such calls to mpiopt's schedules,
     * which hold what they use (handles.c). */
    if (nonblocking)
        vendor_ok = 0;
#endif
    /* a library that polls on an oversubscribed node spends time slices, not microseconds, per
     * step: mpiopt's algorithms yield the core while they wait (p2p.c), the vendor's do not */
    vendor_ok = vendor_ok && !mpiopt_yield_when_idle();
    /* above two ranks the vendor's reduction order is its own: only where the order cannot
     * change the bits (select.h, mpiopt_selection_reproducible) */
    vendor_ok = vendor_ok && (plan->p <= 2 || mpiopt_result_order_free(datatype, op) ||
                              !mpiopt_selection_reproducible());
    plan->vendor_ok = vendor_ok;
    mpiopt_algorithm a = mpiopt_select(is_reduce, requested, plan->p, bytes, commutative,
                                       vendor_ok, plan->rank);
    const mpiopt_algorithm_info *info = &mpiopt_algorithms[a];
    int inter = 0;
    if (a == MPIOPT_ALG_VENDOR)
        plan->why = requested == MPIOPT_ALG_AUTO && mpiopt_env_asks_vendor(is_reduce)
                        ? MPIOPT_WHY_ENV
                        : MPIOPT_WHY_FASTER;
    else if (is_reduce ? info->reduce == NULL : info->allreduce == NULL)
        plan->why = MPIOPT_WHY_ALGORITHM;
    else if (!mpiopt_coll_supported(comm, count, datatype, &plan->p, &bytes) ||
             mpiopt_vendor_takes(datatype, op))
        /* which of the two the report names: asked only of a call mpiopt cannot take */
        plan->why = PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && inter
                        ? MPIOPT_WHY_INTERCOMM
                        : MPIOPT_WHY_DATATYPE;
    else if (!mpiopt_algorithm_takes(a, count, (info->flags & MPIOPT_PREDEFINED_OP) ?
                                                   mpiopt_predefined_op(op) : 1))
        plan->why = MPIOPT_WHY_ALGORITHM;
    else {
        plan->algorithm = a;
        plan->why = MPIOPT_TAKEN;
    }
    return 1;
}

/* What auto runs instead of shared_memory on a communicator that spans nodes: the cost model's
 * choice of the others where it takes the call (it is the same on every rank), else
 * shared_memory still, which then runs messages itself. */
static mpiopt_algorithm across_nodes(int is_reduce, MPI_Comm comm, int count, MPI_Datatype datatype,
                                     MPI_Op op, const mpiopt_call_plan *plan)
{
    int p, commutative;
    size_t bytes;
    if (!mpiopt_coll_shape(comm, count, datatype, &p, &bytes) ||
        PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS)
        return plan->algorithm;
    mpiopt_algorithm a = mpiopt_select_across_nodes(is_reduce, p, bytes, commutative, plan->rank);
    const mpiopt_algorithm_info *info = &mpiopt_algorithms[a];
    if (a == MPIOPT_ALG_VENDOR || (is_reduce ? info->reduce == NULL : info->allreduce == NULL) ||
        !mpiopt_algorithm_takes(a, count, (info->flags & MPIOPT_PREDEFINED_OP) ?
                                              mpiopt_predefined_op(op) : 1))
        return plan->algorithm;
    return a;
}

int mpiopt_check_arguments(int is_reduce, MPI_Comm comm, int count, MPI_Datatype datatype,
                           MPI_Op op, int root)
{
    int inter = 0, p;
    if (comm == MPI_COMM_NULL)
        return MPI_SUCCESS;     /* no communicator to raise it on: the vendor's rules (above) */
    if (count < 0)
        return MPI_ERR_COUNT;
    if (datatype == MPI_DATATYPE_NULL)
        return MPI_ERR_TYPE;
    if (op == MPI_OP_NULL)
        return MPI_ERR_OP;
    if (is_reduce && PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter &&
        PMPI_Comm_size(comm, &p) == MPI_SUCCESS && (root < 0 || root >= p))
        return MPI_ERR_ROOT;    /* an intercommunicator's root (MPI_ROOT, MPI_PROC_NULL, a remote
                                   rank) is the vendor's to judge */
    return MPI_SUCCESS;
}

int mpiopt_plan_call(int is_reduce, mpiopt_algorithm requested, MPI_Comm comm, int count,
                     MPI_Datatype datatype, MPI_Op op, int root, int nonblocking,
                     mpiopt_call_plan *plan)
{
    if ((int)requested < 0 || requested >= MPIOPT_ALG_COUNT)
        return MPI_ERR_ARG;
    int rc = mpiopt_check_arguments(is_reduce, comm, count, datatype, op, root);
    if (rc != MPI_SUCCESS)
        return rc;
    plan->algorithm = MPIOPT_ALG_VENDOR;
    plan->why = MPIOPT_WHY_REQUESTED;
    plan->measuring = 0;
    plan->vendor_ok = 0;
    if (requested == MPIOPT_ALG_VENDOR)
        return MPI_SUCCESS;
    if (!plan_uncached(is_reduce, requested, comm, count, datatype, op, root, nonblocking, plan)) {
        plan->why = MPIOPT_WHY_ARGUMENTS;
        return MPI_SUCCESS;
    }
    /* a nonblocking call may not block to make the communicator's record (engine/context.c): where it
     * has none, the vendor takes it (the same on every rank: records are made collectively). So
     * every blocking call makes it, also one the vendor then runs (once a communicator: this is
     * the uncached path), for the nonblocking calls that follow: a communicator made by a
     * constructor mpiopt does not see (Open MPI's Fortran MPI_COMM_DUP) would otherwise leave
     * them to the vendor's libnbc, which crashed when the program freed it before the wait. */
    if (!nonblocking && plan->algorithm == MPIOPT_ALG_VENDOR)
        mpiopt_private_prepare(comm);
    if (nonblocking && plan->algorithm != MPIOPT_ALG_VENDOR && plan->p > 1 &&
        !mpiopt_private_exists(comm)) {
        plan->algorithm = MPIOPT_ALG_VENDOR;
        plan->why = MPIOPT_WHY_NO_PRIVATE_COMM;
    }
    if (plan->algorithm != MPIOPT_ALG_VENDOR) {
        /* every rank plans the same call alike, so all of them get here together (the first
         * call on a communicator agrees on its tags) */
        rc = mpiopt_coll_init(&plan->coll, comm, datatype, op, nonblocking);
        if (rc != MPI_SUCCESS)
            return rc;
        /* auto's shared_memory is for the ranks of one node: across nodes it would run messages
         * in its place, so a communicator that spans nodes gets the cost model's choice of the
         * others (a blocking call: finding the nodes is collective) */
        if (!nonblocking && requested == MPIOPT_ALG_AUTO && !mpiopt_selection_forced(is_reduce) &&
            plan->algorithm == MPIOPT_ALG_SHARED_MEMORY && mpiopt_node_spans_nodes(&plan->coll))
            plan->algorithm = across_nodes(is_reduce, comm, count, datatype, op, plan);
    }
    /* the cache serves the blocking calls' hand-off: a nonblocking call's plan (its choice may
     * differ) is not theirs */
    if (nonblocking)
        return MPI_SUCCESS;
    /* where the built-in rows chose, a blocking allreduce's algorithm may be timed (measured.c);
     * a trial's plan is not remembered, so the next call of the class is planned again */
    if (!is_reduce && requested == MPIOPT_ALG_AUTO && plan->algorithm != MPIOPT_ALG_VENDOR &&
        mpiopt_selection_measures(is_reduce)) {
        plan->algorithm = mpiopt_measured_pick(&plan->coll, plan->algorithm, (size_t)count,
                                               mpiopt_predefined_op(op), plan->vendor_ok,
                                               &plan->measuring);
        if (plan->algorithm == MPIOPT_ALG_VENDOR)
            plan->why = MPIOPT_WHY_MEASURED;
        if (plan->measuring)
            return MPI_SUCCESS;
    }
    mpiopt_plan_remember(is_reduce, requested, comm, count, datatype, op, root, plan);
    return MPI_SUCCESS;
}

int mpiopt_coll_shape(MPI_Comm comm, int count, MPI_Datatype datatype, int *p, size_t *bytes)
{
    int size;
    if (comm == MPI_COMM_NULL || datatype == MPI_DATATYPE_NULL || count < 0 ||
        PMPI_Comm_size(comm, p) != MPI_SUCCESS || PMPI_Type_size(datatype, &size) != MPI_SUCCESS)
        return 0;
    *bytes = (size_t)count * (size_t)size;
    return 1;
}

int mpiopt_coll_supported(MPI_Comm comm, int count, MPI_Datatype datatype, int *p, size_t *bytes)
{
    int inter = 0, size;
    if (comm == MPI_COMM_NULL || datatype == MPI_DATATYPE_NULL || count < 0)
        return 0;   /* the vendor reports the error */
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return 0;
    MPI_Aint lb, extent, true_lb, true_extent;
    if (PMPI_Type_get_extent(datatype, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(datatype, &true_lb, &true_extent) != MPI_SUCCESS ||
        PMPI_Type_size(datatype, &size) != MPI_SUCCESS)
        return 0;
    if (lb != 0 || true_lb != 0 || extent <= 0)
        return 0;
    int nints, naddrs, ntypes, combiner;
    PMPI_Type_get_envelope(datatype, &nints, &naddrs, &ntypes, &combiner);
    /* Predefined pair types (MPI_DOUBLE_INT, …) have padding: their extent exceeds their size,
     * and they are still sent and copied whole. A derived type must have no holes at all. */
    if (combiner != MPI_COMBINER_NAMED && (true_extent != extent || (MPI_Aint)size != extent))
        return 0;
    PMPI_Comm_size(comm, p);
    *bytes = (size_t)count * (size_t)size;
    return 1;
}

int mpiopt_vendor_result_wrong(MPI_Datatype datatype, MPI_Op op)
{
    if (datatype == MPI_REAL16 || datatype == MPI_COMPLEX32)
        return 1;   /* both reduce binary128 as something else (docs/kernels.md) */
#if defined(OMPI_MAJOR_VERSION)
    if (op == MPI_SUM)
        return datatype == MPI_SIGNED_CHAR || datatype == MPI_UNSIGNED_CHAR ||
               datatype == MPI_CHAR || datatype == MPI_INT8_T || datatype == MPI_UINT8_T ||
               datatype == MPI_SHORT || datatype == MPI_UNSIGNED_SHORT ||
               datatype == MPI_INT16_T || datatype == MPI_UINT16_T ||
               datatype == MPI_INTEGER1 || datatype == MPI_INTEGER2;
    if (op == MPI_MAX || op == MPI_MIN)
        return datatype == MPI_UNSIGNED_LONG || datatype == MPI_OFFSET;
#elif defined(MPICH_VERSION)
    if (op == MPI_MAX || op == MPI_MIN)
        return datatype == MPI_UNSIGNED_CHAR || datatype == MPI_UNSIGNED_SHORT ||
               datatype == MPI_UNSIGNED || datatype == MPI_UNSIGNED_LONG ||
               datatype == MPI_UNSIGNED_LONG_LONG || datatype == MPI_UINT8_T ||
               datatype == MPI_UINT16_T || datatype == MPI_UINT32_T || datatype == MPI_UINT64_T;
#endif
    return 0;
}

int mpiopt_vendor_allreduce_ranks_differ(MPI_Datatype datatype, MPI_Op op)
{
#if defined(MPICH_VERSION)
    if (op == MPI_MAX || op == MPI_MIN)
        return datatype == MPI_FLOAT || datatype == MPI_DOUBLE || datatype == MPI_LONG_DOUBLE ||
               datatype == MPI_REAL || datatype == MPI_DOUBLE_PRECISION ||
               datatype == MPI_REAL4 || datatype == MPI_REAL8;
#endif
    return 0;
}

mpiopt_algorithm mpiopt_env_algorithm(const char *variable, int *cache)
{
    int a = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (a < 0) {
        const char *v = getenv(variable);
        a = v ? mpiopt_algorithm_from_name(v) : -1;
        if (a < 0)
            a = MPIOPT_ALG_AUTO;
        __atomic_store_n(cache, a, __ATOMIC_RELAXED);
    }
    return (mpiopt_algorithm)a;
}

int mpiopt_plan_collective(mpiopt_algorithm requested, mpiopt_algorithm env, MPI_Comm comm,
                           int count, MPI_Datatype datatype, MPI_Op op, int nonblocking,
                           mpiopt_choose_fn choose, const void *ctx, mpiopt_call_plan *plan)
{
    int inter = 0, commutative = 1;
    size_t bytes;
    mpiopt_vendor_reason *why = &plan->why;
    mpiopt_algorithm chosen = MPIOPT_ALG_VENDOR;
    plan->algorithm = MPIOPT_ALG_VENDOR;
    plan->measuring = 0;
    if ((int)requested < 0 || requested >= MPIOPT_ALG_COUNT)
        return MPI_ERR_ARG;
    int rc = mpiopt_check_arguments(0, comm, count, datatype, op, 0);
    if (rc != MPI_SUCCESS)
        return rc;
    if (requested == MPIOPT_ALG_AUTO && env != MPIOPT_ALG_VENDOR)
        requested = env;    /* the algorithm the environment names, or auto */
    if (requested == MPIOPT_ALG_VENDOR)
        *why = MPIOPT_WHY_REQUESTED;
    else if (requested == MPIOPT_ALG_AUTO && env == MPIOPT_ALG_VENDOR)
        *why = MPIOPT_WHY_ENV;
    else if (!mpiopt_coll_shape(comm, count, datatype, &plan->p, &bytes) ||
             PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS)
        *why = MPIOPT_WHY_ARGUMENTS;
    else if (!mpiopt_coll_supported(comm, count, datatype, &plan->p, &bytes) ||
             mpiopt_vendor_takes(datatype, op))
        *why = PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && inter
                   ? MPIOPT_WHY_INTERCOMM
                   : MPIOPT_WHY_DATATYPE;
    else if ((chosen = choose(requested, plan->p, commutative, ctx)) == MPIOPT_ALG_VENDOR)
        *why = MPIOPT_WHY_ALGORITHM;
    else if (nonblocking && plan->p > 1 && !mpiopt_private_exists(comm))
        *why = MPIOPT_WHY_NO_PRIVATE_COMM;  /* a nonblocking call may not make the record */
    else
        *why = MPIOPT_TAKEN;
    if (*why != MPIOPT_TAKEN) {
        if (!nonblocking && *why != MPIOPT_WHY_ARGUMENTS && *why != MPIOPT_WHY_INTERCOMM)
            mpiopt_private_prepare(comm);    /* for the nonblocking calls that follow */
        return MPI_SUCCESS;
    }
    rc = mpiopt_coll_init(&plan->coll, comm, datatype, op, nonblocking);
    if (rc == MPI_SUCCESS)
        plan->algorithm = chosen;
    return rc;
}

int mpiopt_planned_context(const mpiopt_call_plan *plan, MPI_Comm comm, const void *sendbuf,
                           mpiopt_schedule *record, mpiopt_coll *c)
{
    *c = plan->coll;
    c->src = sendbuf == MPI_IN_PLACE ? NULL : sendbuf;
    return record ? mpiopt_schedule_attach(record, c, comm) : MPI_SUCCESS;
}
