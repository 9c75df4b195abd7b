/* mpiopt_reduce_scatter_block and mpiopt_reduce_scatter (MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter), blocking, nonblocking and persistent.
 *
 * Four algorithms (algorithms/reduce_scatter.c), asked for by the ids of the allreduce algorithms
 * they share their phases with: MPIOPT_ALG_RABENSEIFNER (its first half, recursive halving, with
 * its fold where p is not a power of two or the blocks differ: any call), MPIOPT_ALG_RING
 * (commutative ops, any p and blocks), MPIOPT_ALG_BINOMIAL (a binomial reduce and a scatter: any
 * call, in rank order) and MPIOPT_ALG_SHARED_MEMORY (each rank reducing its block from the node's
 * window: any call). auto takes shared memory up to SHARED_MEMORY_MAX_BYTES, else halving for a
 * power of two and equal blocks (log2 p steps; at p = 2 the ring for a commutative op), else
 * halving with the fold for a non-commutative op, else the cheaper of the ring and the fold by the
 * cost model (MPIOPT_FAMILY_LIST's rows, their formulas in algorithms/reduce_scatter.c). The
 * vendor takes what mpiopt cannot (an intercommunicator, a datatype with holes or without a
 * kernel, a total count above INT_MAX) and what the caller or MPIOPT_REDUCE_SCATTER /
 * MPIOPT_REDUCE_SCATTER_BLOCK (= vendor) send to it; those two also force an algorithm (its name;
 * where it cannot take a call, auto chooses); a nonblocking call records the blocking algorithm as
 * a schedule (nonblocking.c). A blocking MPI_Reduce_scatter_block's plan is remembered
 * (plan_cache.c), and an MPI_Reduce_scatter's by its total count and whether its blocks are equal
 * (what auto chooses by). */
#include <limits.h>
#include <stdlib.h>
#include "coll/algorithms/algorithms.h"
#include "coll/select/select.h"
#include "coll/entry/collective_args.h"
#include "coll/entry/plan_cache.h"

typedef struct {
    int block;                  /* 1: MPI_Reduce_scatter_block (recvcount), 0: recvcounts[] */
    const void *sendbuf;
    void *recvbuf;
    int recvcount;
    const int *recvcounts;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
    size_t *displs;             /* p + 1 block offsets (make_displs): in `small` up to 64 ranks */
    size_t small[65];
    long long total;            /* displs[p], or what make_displs says */
    int equal;                  /* every block the same size */
    mpiopt_call_plan plan;
} reduce_scatter_call;

/* Up to this many bytes in all (one buffer of the node's window), auto takes the shared-memory
 * reduce-scatter (each rank copies its input in and reduces its own block: no message on one
 * node) over any exchange of messages. OSU at p = 2, float, against the ring auto took before:
 * 4 KiB 0.81-0.85 us against 1.41-1.47 (Open MPI 4.1.4), 0.87-0.95 against 1.06-1.16 (MPICH
 * 4.0.2), 0.82 against 1.06 (Intel MPI 2021.15); 8 KiB 1.18-1.23 against 2.01-2.15 and 1.33-1.49.
 * With equal blocks, so long as what a rank copies in (all but its own block) fits that buffer:
 * at p = 2, 16 KiB in 2.0-2.1 us against the ring's 2.8-3.5 (Open MPI 4.1.4, MPICH 4.0.2); at
 * 32 KiB the window's pieces (5.5-5.8) lose to the ring (3.9-4.4). */
#define SHARED_MEMORY_MAX_BYTES 8192

typedef struct {
    int equal;          /* every block has the same size */
    size_t bytes;       /* the whole buffer's */
} call_shape;

/* An algorithm asked for that cannot take the call leaves it to auto's choice (not to the
 * vendor, whose op kernels may be wrong). */
static mpiopt_algorithm choose(mpiopt_algorithm requested, int p, int commutative,
                               const void *ctx)
{
    const call_shape *shape = ctx;
    int pow2 = (p & (p - 1)) == 0;
    if (mpiopt_family_fits(MPIOPT_FAMILY_REDUCE_SCATTER, requested, commutative))
        return requested;
    if (shape->bytes <= SHARED_MEMORY_MAX_BYTES ||
        (shape->equal && shape->bytes - shape->bytes / (size_t)p <= SHARED_MEMORY_MAX_BYTES))
        return MPIOPT_ALG_SHARED_MEMORY;
    /* at p = 2 both halving and the ring are one exchange; the ring's reduction writes the
     * result straight into recvbuf, halving's into scratch first */
    if (pow2 && shape->equal && !(p == 2 && commutative))
        return MPIOPT_ALG_RABENSEIFNER;
    /* a non-commutative op elsewhere: halving with the fold, log2 p steps of shrinking halves
     * where binomial's reduce sends the whole buffer at each */
    if (!commutative)
        return MPIOPT_ALG_RABENSEIFNER;
    /* a commutative one: the ring's p - 1 steps or the fold's extra pass, as the model prices
     * them (the fold wins at many ranks and few bytes) */
    const mpiopt_cost_params *model = mpiopt_selection_model();
    double ring = mpiopt_family_cost(MPIOPT_FAMILY_REDUCE_SCATTER, MPIOPT_ALG_RING, p,
                                     (double)shape->bytes, model);
    double halving = mpiopt_family_cost(MPIOPT_FAMILY_REDUCE_SCATTER, MPIOPT_ALG_RABENSEIFNER, p,
                                        (double)shape->bytes, model);
    return halving >= 0 && halving < ring ? MPIOPT_ALG_RABENSEIFNER : MPIOPT_ALG_RING;
}

/* The block offsets into a->displs (the caller frees them unless they are a->small), a->total
 * (-1 for a negative count: MPI_ERR_COUNT; LLONG_MAX past INT_MAX; 0 without a communicator,
 * which the vendor judges) and a->equal; MPI_ERR_NO_MEM or MPI_SUCCESS. */
static int make_displs(reduce_scatter_call *a)
{
    int p;
    a->displs = NULL;
    a->total = 0;
    a->equal = 1;
    if (a->comm == MPI_COMM_NULL || PMPI_Comm_size(a->comm, &p) != MPI_SUCCESS)
        return MPI_SUCCESS;
    a->displs = p < 65 ? a->small : malloc(sizeof(size_t) * ((size_t)p + 1));
    if (!a->displs)
        return MPI_ERR_NO_MEM;
    long long total = 0;
    a->displs[0] = 0;
    for (int r = 0; r < p; r++) {
        int n = a->block ? a->recvcount : a->recvcounts ? a->recvcounts[r] : -1;
        if (n < 0) {
            a->total = -1;
            return MPI_SUCCESS;
        }
        total += n;
        a->displs[r + 1] = (size_t)total;
        a->equal &= a->displs[r + 1] - a->displs[r] == a->displs[1];
    }
    a->total = total > INT_MAX ? LLONG_MAX : total;
    return MPI_SUCCESS;
}

/* Who runs the call (make_displs first), in a->plan; an MPI error code for arguments the
 * standard calls wrong. */
static int plan(reduce_scatter_call *a, mpiopt_algorithm requested, int nonblocking)
{
    if (a->total == LLONG_MAX) {
        a->plan.algorithm = MPIOPT_ALG_VENDOR;
        a->plan.why = MPIOPT_WHY_LARGE_COUNT;
        return MPI_SUCCESS;
    }
    call_shape shape = {.equal = a->equal};
    int size;
    if (a->total > 0 && a->datatype != MPI_DATATYPE_NULL &&   /* raised below */
        PMPI_Type_size(a->datatype, &size) == MPI_SUCCESS)
        shape.bytes = (size_t)a->total * (size_t)size;
    static int env_cache[2] = {-1, -1};
    mpiopt_algorithm env = mpiopt_env_algorithm(
        a->block ? "MPIOPT_REDUCE_SCATTER_BLOCK" : "MPIOPT_REDUCE_SCATTER", &env_cache[a->block]);
    return mpiopt_plan_collective(requested, env, a->comm, (int)a->total, a->datatype, a->op,
                                  nonblocking, choose, &shape, &a->plan);
}

/* The algorithm on a planned call: run now, or recorded into `record`.
 *
 * In place, the caller's input is recvbuf, and the standard puts the result only in its first n
 * elements (this rank's block): the rest must come back as the caller left it (both vendors leave
 * it so, and mpi4py's own tests check it). So the algorithms never get recvbuf to work in: they
 * read the input from it (c.src, read and never written) and write the block into scratch, copied
 * to recvbuf's start once every rank's reads of it are done. */
static int run(const void *args, mpiopt_schedule *record)
{
    const reduce_scatter_call *a = args;
    mpiopt_coll c;
    int rc = mpiopt_planned_context(&a->plan, a->comm, a->sendbuf, record, &c);
    if (rc != MPI_SUCCESS)
        return rc;
    if (a->displs[c.size] == 0)
        return MPI_SUCCESS;     /* every block empty */
    size_t n = a->displs[c.rank + 1] - a->displs[c.rank];
    void *out = a->recvbuf;
    if (!c.src) {
        c.src = a->recvbuf;
        if (n > 0 && !(out = mpiopt_coll_scratch(&c, n)))
            return MPI_ERR_NO_MEM;
    }
    switch (a->plan.algorithm) {
    case MPIOPT_ALG_RABENSEIFNER:
        rc = mpiopt_reduce_scatter_blocks_halving(&c, out, a->displs);
        break;
    case MPIOPT_ALG_RING:
        rc = mpiopt_reduce_scatter_blocks_ring(&c, out, a->displs);
        break;
    case MPIOPT_ALG_SHARED_MEMORY:
        rc = mpiopt_reduce_scatter_blocks_shared_memory(&c, out, a->displs);
        break;
    default:
        rc = mpiopt_reduce_scatter_blocks_binomial(&c, out, a->displs);
    }
    if (out != a->recvbuf) {
        if (rc == MPI_SUCCESS)
            rc = mpiopt_coll_copy(&c, a->recvbuf, out, n * c.extent);
        mpiopt_scratch_free(out);
    }
    return rc;
}

static int vendor(const reduce_scatter_call *a)
{
    return a->block ? PMPI_Reduce_scatter_block(a->sendbuf, a->recvbuf, a->recvcount, a->datatype,
                                                a->op, a->comm)
                    : PMPI_Reduce_scatter(a->sendbuf, a->recvbuf, a->recvcounts, a->datatype,
                                          a->op, a->comm);
}

static int blocking(reduce_scatter_call *a, mpiopt_algorithm requested)
{
    int rc = make_displs(a);
    /* the plan's key: a block call's count, or a call's total and whether its blocks are equal,
     * which is all auto chooses by */
    int kind = a->block ? MPIOPT_PLAN_REDUCE_SCATTER_BLOCK
                        : a->equal ? MPIOPT_PLAN_REDUCE_SCATTER_EQUAL
                                   : MPIOPT_PLAN_REDUCE_SCATTER_UNEVEN;
    int key = a->block ? a->recvcount : (int)a->total;
    int cacheable = rc == MPI_SUCCESS && a->displs && a->total >= 0 && a->total != LLONG_MAX;
    if (!(cacheable &&
          mpiopt_plan_cached(kind, requested, a->comm, key, a->datatype, a->op, 0, &a->plan))) {
        if (rc == MPI_SUCCESS)
            rc = plan(a, requested, 0);
        if (rc == MPI_SUCCESS && cacheable && a->plan.why != MPIOPT_WHY_ARGUMENTS)
            mpiopt_plan_remember(kind, requested, a->comm, key, a->datatype, a->op, 0, &a->plan);
    }
    if (rc == MPI_SUCCESS) {
        mpiopt_report_call(a->block ? MPIOPT_CALL_REDUCE_SCATTER_BLOCK
                                    : MPIOPT_CALL_REDUCE_SCATTER,
                           a->plan.algorithm, a->plan.why);
        rc = a->plan.algorithm == MPIOPT_ALG_VENDOR ? vendor(a) : mpiopt_raise(a->comm, run(a, NULL));
    } else {
        rc = mpiopt_raise(a->comm, rc);
    }
    if (a->displs != a->small)
        free(a->displs);
    return rc;
}

static int vendor_start(const reduce_scatter_call *a, int persistent, MPI_Info info,
                        MPI_Request *request)
{
    if (!persistent)
        return a->block ? PMPI_Ireduce_scatter_block(a->sendbuf, a->recvbuf, a->recvcount,
                                                     a->datatype, a->op, a->comm, request)
                        : PMPI_Ireduce_scatter(a->sendbuf, a->recvbuf, a->recvcounts,
                                               a->datatype, a->op, a->comm, request);
#ifdef MPIOPT_VENDOR_INIT
    return a->block ? MPIOPT_VENDOR_INIT(Reduce_scatter_block)(a->sendbuf, a->recvbuf,
                                                               a->recvcount, a->datatype, a->op,
                                                               a->comm, info, request)
                    : MPIOPT_VENDOR_INIT(Reduce_scatter)(a->sendbuf, a->recvbuf, a->recvcounts,
                                                         a->datatype, a->op, a->comm, info,
                                                         request);
#else
    (void)info;
    return MPI_ERR_OTHER;   /* no vendor call to fall back on (SimGrid) */
#endif
}

static int start(reduce_scatter_call *a, mpiopt_algorithm requested, int persistent,
                 MPI_Info info, MPI_Request *request)
{
    static const mpiopt_call_kind kinds[2][2] = {
        {MPIOPT_CALL_IREDUCE_SCATTER, MPIOPT_CALL_IREDUCE_SCATTER_BLOCK},
        {MPIOPT_CALL_REDUCE_SCATTER_INIT, MPIOPT_CALL_REDUCE_SCATTER_BLOCK_INIT}};
    mpiopt_call_kind kind = kinds[persistent][a->block];
    int rc = make_displs(a);
    if (rc == MPI_SUCCESS)
        rc = plan(a, requested, 1);
    if (rc == MPI_SUCCESS && mpiopt_nonblocking_off()) {
        a->plan.algorithm = MPIOPT_ALG_VENDOR;
        a->plan.why = MPIOPT_WHY_NONBLOCKING_OFF;
    }
    if (rc == MPI_SUCCESS) {
        mpiopt_report_call(kind, a->plan.algorithm, a->plan.why);
        /* the schedule keeps its blocks' addresses: the offsets are not needed after this */
        rc = a->plan.algorithm == MPIOPT_ALG_VENDOR
                 ? vendor_start(a, persistent, info, request)
                 : mpiopt_raise(a->comm, mpiopt_start_recorded(run, a, persistent, request));
    } else {
        rc = mpiopt_raise(a->comm, rc);
    }
    if (a->displs != a->small)
        free(a->displs);
    return rc;
}

#define BLOCK_CALL(sendbuf, recvbuf, count, datatype, op, comm)                               \
    {.block = 1, .sendbuf = sendbuf, .recvbuf = recvbuf, .recvcount = count,                  \
     .datatype = datatype, .op = op, .comm = comm}
#define VECTOR_CALL(sendbuf, recvbuf, counts, datatype, op, comm)                             \
    {.block = 0, .sendbuf = sendbuf, .recvbuf = recvbuf, .recvcounts = counts,                \
     .datatype = datatype, .op = op, .comm = comm}

int mpiopt_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                mpiopt_algorithm algorithm)
{
    /* nothing to reduce (OSU's smallest size at p = 2): answered at once, as the vendors do,
     * unless the report counts it */
    if (recvcount == 0 && !mpiopt_report_on && comm != MPI_COMM_NULL &&
        datatype != MPI_DATATYPE_NULL && op != MPI_OP_NULL && (int)algorithm >= 0 &&
        algorithm < MPIOPT_ALG_COUNT)
        return MPI_SUCCESS;
    reduce_scatter_call a = BLOCK_CALL(sendbuf, recvbuf, recvcount, datatype, op, comm);
    return blocking(&a, algorithm);
}

int mpiopt_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                          mpiopt_algorithm algorithm)
{
    reduce_scatter_call a = VECTOR_CALL(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    return blocking(&a, algorithm);
}

int mpiopt_ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                 mpiopt_algorithm algorithm, MPI_Request *request)
{
    reduce_scatter_call a = BLOCK_CALL(sendbuf, recvbuf, recvcount, datatype, op, comm);
    return start(&a, algorithm, 0, MPI_INFO_NULL, request);
}

int mpiopt_ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                           mpiopt_algorithm algorithm, MPI_Request *request)
{
    reduce_scatter_call a = VECTOR_CALL(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    return start(&a, algorithm, 0, MPI_INFO_NULL, request);
}

int mpiopt_reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                     MPI_Info info, mpiopt_algorithm algorithm,
                                     MPI_Request *request)
{
    reduce_scatter_call a = BLOCK_CALL(sendbuf, recvbuf, recvcount, datatype, op, comm);
    return start(&a, algorithm, 1, info, request);
}

int mpiopt_reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                               mpiopt_algorithm algorithm, MPI_Request *request)
{
    reduce_scatter_call a = VECTOR_CALL(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    return start(&a, algorithm, 1, info, request);
}
