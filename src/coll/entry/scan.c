/* mpiopt_scan and mpiopt_exscan (MPI_Scan, MPI_Exscan), blocking, nonblocking and persistent.
 *
 * Two algorithms, both in rank order, so both take every op: recursive doubling
 * (algorithms/scan.c), ceil(log2 p) steps where the vendors' linear scans (Open MPI's default at
 * small p) need p - 1 in a chain; and shared memory (algorithms/shared_memory.c), where each rank
 * copies its input into the node's window once and rank r folds the r below it, no message at all.
 * auto takes shared memory up to SHARED_MEMORY_MAX_RANKS ranks (where the communicator has no
 * window it runs recursive doubling), recursive doubling above. The vendor takes what mpiopt
 * cannot (an intercommunicator, a datatype with holes or without a kernel) and what the caller or
 * MPIOPT_SCAN / MPIOPT_EXSCAN (= vendor) send to it; a nonblocking call records the blocking
 * algorithm as a schedule (nonblocking.c), as allreduce's do. A blocking call's plan is remembered
 * (plan_cache.c), so a repeated scan asks MPI for nothing before it runs. */
#include <stdio.h>
#include <stdlib.h>
#include "coll/select/select.h"
#include "coll/entry/collective_args.h"
#include "coll/entry/plan_cache.h"

typedef struct {
    int exclusive;
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
    mpiopt_call_plan plan;
} scan_call;

/* Rank r of the shared-memory scan reads r inputs where recursive doubling's rank exchanges
 * log2 p messages */
#define SHARED_MEMORY_MAX_RANKS 8

/* Either algorithm (MPIOPT_FAMILY_LIST's SCAN rows) takes every call mpiopt can (both keep rank
 * order), where asked for or chosen; another name asked for goes to the vendor. */
static mpiopt_algorithm choose(mpiopt_algorithm requested, int p, int commutative,
                               const void *ctx)
{
    (void)ctx;
    if (mpiopt_family_fits(MPIOPT_FAMILY_SCAN, requested, commutative))
        return requested;
    if (requested != MPIOPT_ALG_AUTO)
        return MPIOPT_ALG_VENDOR;
    return p > SHARED_MEMORY_MAX_RANKS ? MPIOPT_ALG_RECURSIVE_DOUBLING
                                       : MPIOPT_ALG_SHARED_MEMORY;
}

/* Who runs the call, in a->plan; an MPI error code for arguments the standard calls wrong. */
static int plan(scan_call *a, mpiopt_algorithm requested, int nonblocking)
{
    static int env_cache[2] = {-1, -1};
    mpiopt_algorithm env = mpiopt_env_algorithm(a->exclusive ? "MPIOPT_EXSCAN" : "MPIOPT_SCAN",
                                                &env_cache[a->exclusive]);
    int rc = mpiopt_plan_collective(requested, env, a->comm, a->count, a->datatype, a->op,
                                    nonblocking, choose, NULL, &a->plan);
    /* a schedule is made of messages: what a nonblocking call records (run) is said as such */
    if (nonblocking && a->plan.algorithm == MPIOPT_ALG_SHARED_MEMORY)
        a->plan.algorithm = MPIOPT_ALG_RECURSIVE_DOUBLING;
    return rc;
}

/* The algorithm on a planned call: run now, or recorded into `record`. */
static int run(const void *args, mpiopt_schedule *record)
{
    const scan_call *a = args;
    mpiopt_coll c;
    int rc = mpiopt_planned_context(&a->plan, a->comm, a->sendbuf, record, &c);
    if (rc != MPI_SUCCESS)
        return rc;
    if (a->plan.algorithm == MPIOPT_ALG_SHARED_MEMORY) {
        int done;
        rc = mpiopt_scan_shared_memory(&c, a->recvbuf, (size_t)a->count, a->exclusive, &done);
        if (rc != MPI_SUCCESS || done)
            return rc;
    }
    return mpiopt_scan_recursive_doubling(&c, a->recvbuf, (size_t)a->count, a->exclusive);
}

static int blocking(scan_call *a, mpiopt_algorithm requested)
{
    int kind = a->exclusive ? MPIOPT_PLAN_EXSCAN : MPIOPT_PLAN_SCAN;
    if (!mpiopt_plan_cached(kind, requested, a->comm, a->count, a->datatype, a->op, 0,
                            &a->plan)) {
        int rc = plan(a, requested, 0);
        if (rc != MPI_SUCCESS)
            return mpiopt_raise(a->comm, rc);
        if (a->plan.why != MPIOPT_WHY_ARGUMENTS)
            mpiopt_plan_remember(kind, requested, a->comm, a->count, a->datatype, a->op, 0,
                                 &a->plan);
    }
    mpiopt_report_call(a->exclusive ? MPIOPT_CALL_EXSCAN : MPIOPT_CALL_SCAN, a->plan.algorithm,
                       a->plan.why);
    if (a->plan.algorithm == MPIOPT_ALG_VENDOR)
        return a->exclusive ? PMPI_Exscan(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op,
                                          a->comm)
                            : PMPI_Scan(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op,
                                        a->comm);
    return mpiopt_raise(a->comm, run(a, NULL));
}

static int vendor_start(const scan_call *a, int persistent, MPI_Info info, MPI_Request *request)
{
    if (!persistent)
        return a->exclusive ? PMPI_Iexscan(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op,
                                           a->comm, request)
                            : PMPI_Iscan(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op,
                                         a->comm, request);
#ifdef MPIOPT_VENDOR_INIT
    return a->exclusive ? MPIOPT_VENDOR_INIT(Exscan)(a->sendbuf, a->recvbuf, a->count,
                                                     a->datatype, a->op, a->comm, info, request)
                        : MPIOPT_VENDOR_INIT(Scan)(a->sendbuf, a->recvbuf, a->count, a->datatype,
                                                   a->op, a->comm, info, request);
#else
    (void)info;
    return MPI_ERR_OTHER;   /* no vendor call to fall back on (SimGrid) */
#endif
}

static int start(scan_call *a, mpiopt_algorithm requested, int persistent, MPI_Info info,
                 MPI_Request *request)
{
    static const mpiopt_call_kind kinds[2][2] = {{MPIOPT_CALL_ISCAN, MPIOPT_CALL_IEXSCAN},
                                                 {MPIOPT_CALL_SCAN_INIT, MPIOPT_CALL_EXSCAN_INIT}};
    mpiopt_call_kind kind = kinds[persistent][a->exclusive];
    int rc;
    if (mpiopt_nonblocking_off()) {
        rc = mpiopt_check_arguments(0, a->comm, a->count, a->datatype, a->op, 0);
        mpiopt_report_call(kind, MPIOPT_ALG_VENDOR, MPIOPT_WHY_NONBLOCKING_OFF);
        return rc != MPI_SUCCESS ? mpiopt_raise(a->comm, rc)
                                 : vendor_start(a, persistent, info, request);
    }
    if ((rc = plan(a, requested, 1)) != MPI_SUCCESS)
        return mpiopt_raise(a->comm, rc);
    mpiopt_report_call(kind, a->plan.algorithm, a->plan.why);
    if (a->plan.algorithm == MPIOPT_ALG_VENDOR)
        return vendor_start(a, persistent, info, request);
    return mpiopt_raise(a->comm, mpiopt_start_recorded(run, a, persistent, request));
}

int mpiopt_scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, mpiopt_algorithm algorithm)
{
    scan_call a = {.exclusive = 0, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
                   .datatype = datatype, .op = op, .comm = comm};
    return blocking(&a, algorithm);
}

int mpiopt_exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm)
{
    scan_call a = {.exclusive = 1, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
                   .datatype = datatype, .op = op, .comm = comm};
    return blocking(&a, algorithm);
}

int mpiopt_iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm, MPI_Request *request)
{
    scan_call a = {.exclusive = 0, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
                   .datatype = datatype, .op = op, .comm = comm};
    return start(&a, algorithm, 0, MPI_INFO_NULL, request);
}

int mpiopt_iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm, MPI_Request *request)
{
    scan_call a = {.exclusive = 1, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
                   .datatype = datatype, .op = op, .comm = comm};
    return start(&a, algorithm, 0, MPI_INFO_NULL, request);
}

int mpiopt_scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, MPI_Info info, mpiopt_algorithm algorithm,
                     MPI_Request *request)
{
    scan_call a = {.exclusive = 0, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
                   .datatype = datatype, .op = op, .comm = comm};
    return start(&a, algorithm, 1, info, request);
}

int mpiopt_exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, MPI_Info info, mpiopt_algorithm algorithm,
                       MPI_Request *request)
{
    scan_call a = {.exclusive = 1, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
                   .datatype = datatype, .op = op, .comm = comm};
    return start(&a, algorithm, 1, info, request);
}
