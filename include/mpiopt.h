/* mpiopt — fast MPI reductions and collectives.
 *
 * Link with -lmpiopt (build/<flavour>/lib), built against the same MPI as the application, or
 * LD_PRELOAD the library to replace MPI_Reduce_local, MPI_Allreduce and MPI_Reduce in an
 * unmodified program. Every function returns an MPI error code (MPI_SUCCESS on success). What
 * mpiopt has no kernel or algorithm for (user-defined ops in local reductions, non-contiguous
 * derived datatypes, intercommunicators) is passed to the vendor's PMPI_* call unchanged. */
#ifndef MPIOPT_H
#define MPIOPT_H

#include <mpi.h>
#include "mpiopt_algorithms.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- local reductions (kernels) ---- */

/* inoutbuf[i] = inbuf[i] op inoutbuf[i], as MPI_Reduce_local. */
int mpiopt_reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                        MPI_Op op);
/* outbuf[i] = inbuf1[i] op inbuf2[i]; outbuf must not overlap either input. */
int mpiopt_reduce_local3(const void *inbuf1, const void *inbuf2, void *outbuf, int count,
                         MPI_Datatype datatype, MPI_Op op);
/* 1 if mpiopt has its own kernel for (datatype, op), 0 if it would call the vendor. */
int mpiopt_has_kernel(MPI_Datatype datatype, MPI_Op op);
/* The kernel target in use: "baseline", "avx2" or "avx512" (see MPIOPT_ISA). */
const char *mpiopt_kernel_isa(void);

/* ---- threaded user-defined ops (src/user_op.c) ----
 * An MPI_Op like MPI_Op_create(user_fn, commute, op) whose every call (by the vendor's
 * collectives, mpiopt's algorithms or MPI_Reduce_local) cuts the buffer into cache-sized chunks
 * (MPIOPT_USER_OP_CHUNK bytes, default 64 KiB) run as OpenMP tasks of priority
 * MPIOPT_USER_OP_PRIORITY (default 1), on the threads of the process's affinity mask
 * (MPIOPT_THREADS overrides), each calling user_fn on its chunk. The caller promises user_fn is
 * element-wise (out[i] depends only on in[i] and inout[i]): then results are bit for bit those
 * of one call. Never create a non-element-wise op (a scan, a sort) this way. Free with
 * MPI_Op_free. At most 64 such ops live at once; beyond, a plain op is created. */
int mpiopt_op_create_threaded(MPI_User_function *user_fn, int commute, MPI_Op *op);

/* ---- collectives ---- */

/* MPIOPT_ALG_AUTO (0: chosen per call from the tuning table and cost model), MPIOPT_ALG_VENDOR
 * (the MPI library's own PMPI_Allreduce / PMPI_Reduce), then one MPIOPT_ALG_<ID> per algorithm:
 * MPIOPT_ALG_BINOMIAL, MPIOPT_ALG_RECURSIVE_DOUBLING, MPIOPT_ALG_RING, MPIOPT_ALG_RABENSEIFNER,
 * MPIOPT_ALG_BINARY_BLOCKS, … as listed in mpiopt_algorithms.h; MPIOPT_ALG_COUNT last. */
typedef enum {
#define MPIOPT_ENUM_ROW(ID, ...) MPIOPT_ALG_##ID,
    MPIOPT_SELECTOR_LIST(MPIOPT_ENUM_ROW)
    MPIOPT_ALGORITHM_LIST(MPIOPT_ENUM_ROW)
#undef MPIOPT_ENUM_ROW
    MPIOPT_ALG_COUNT
} mpiopt_algorithm;

int mpiopt_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm);
int mpiopt_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm, mpiopt_algorithm algorithm);

/* ---- nonblocking and persistent allreduce / reduce (src/coll/entry/nonblocking.c, requests.c) ----
 * As MPI_Iallreduce, MPI_Ireduce and MPI-4's MPI_Allreduce_init, MPI_Reduce_init, with the
 * algorithm chosen as for the blocking calls (or the vendor's own call where those would use
 * it). mpiopt's algorithm runs as a schedule: the blocking algorithm recorded once as its posts,
 * waits and reductions, then advanced a step at a time whenever the program tests, waits or
 * starts an mpiopt request, and run to the end in mpiopt_request_wait. A persistent request
 * records at init and replays at every start. Complete them with the calls below, which take
 * arrays that mix mpiopt's requests with any others (those go to the vendor's PMPI_* calls); the
 * LD_PRELOAD library's MPI_Wait, MPI_Test, MPI_Start, … are these. Under MPI_THREAD_MULTIPLE
 * every call goes to the vendor (the schedules are advanced without locks). */
int mpiopt_iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm, MPI_Request *request);
int mpiopt_ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, int root, MPI_Comm comm, mpiopt_algorithm algorithm,
                   MPI_Request *request);
int mpiopt_allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm, MPI_Info info, mpiopt_algorithm algorithm,
                          MPI_Request *request);
int mpiopt_reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, int root, MPI_Comm comm, MPI_Info info,
                       mpiopt_algorithm algorithm, MPI_Request *request);

/* ---- scan and exscan (src/coll/entry/scan.c) ----
 * As MPI_Scan, MPI_Exscan and their nonblocking and persistent forms: mpiopt's recursive doubling
 * (algorithm MPIOPT_ALG_AUTO or MPIOPT_ALG_RECURSIVE_DOUBLING; it keeps rank order, so every op),
 * or the vendor's call (MPIOPT_ALG_VENDOR, MPIOPT_SCAN / MPIOPT_EXSCAN=vendor, and what mpiopt
 * cannot take). */
int mpiopt_scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, mpiopt_algorithm algorithm);
int mpiopt_exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm);
int mpiopt_iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm, MPI_Request *request);
int mpiopt_iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm, mpiopt_algorithm algorithm, MPI_Request *request);
int mpiopt_scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, MPI_Info info, mpiopt_algorithm algorithm,
                     MPI_Request *request);
int mpiopt_exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, MPI_Info info, mpiopt_algorithm algorithm,
                       MPI_Request *request);

/* ---- reduce-scatter (src/coll/entry/reduce_scatter.c) ----
 * As MPI_Reduce_scatter_block, MPI_Reduce_scatter and their nonblocking and persistent forms:
 * algorithm MPIOPT_ALG_AUTO, MPIOPT_ALG_RABENSEIFNER (recursive halving: a power-of-two number of
 * processes and equal blocks), MPIOPT_ALG_RING (commutative ops), MPIOPT_ALG_BINOMIAL (a binomial
 * reduce and a scatter: any call; auto takes over a call the one asked for cannot), or the
 * vendor's (MPIOPT_ALG_VENDOR, MPIOPT_REDUCE_SCATTER_BLOCK / MPIOPT_REDUCE_SCATTER=vendor, and
 * what mpiopt cannot take). */
int mpiopt_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                mpiopt_algorithm algorithm);
int mpiopt_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                          mpiopt_algorithm algorithm);
int mpiopt_ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                 mpiopt_algorithm algorithm, MPI_Request *request);
int mpiopt_ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                           mpiopt_algorithm algorithm, MPI_Request *request);
int mpiopt_reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                     MPI_Info info, mpiopt_algorithm algorithm,
                                     MPI_Request *request);
int mpiopt_reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                               mpiopt_algorithm algorithm, MPI_Request *request);

/* MPI_Wait, MPI_Test, MPI_Waitall, … for requests of any kind. */
int mpiopt_request_wait(MPI_Request *request, MPI_Status *status);
int mpiopt_request_test(MPI_Request *request, int *flag, MPI_Status *status);
int mpiopt_request_waitall(int count, MPI_Request requests[], MPI_Status statuses[]);
int mpiopt_request_testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]);
int mpiopt_request_waitany(int count, MPI_Request requests[], int *index, MPI_Status *status);
int mpiopt_request_testany(int count, MPI_Request requests[], int *index, int *flag,
                           MPI_Status *status);
int mpiopt_request_waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[]);
int mpiopt_request_testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[]);
int mpiopt_request_start(MPI_Request *request);
int mpiopt_request_startall(int count, MPI_Request requests[]);
/* An active request is freed once it completes (advanced by later calls, at the latest in
 * MPI_Finalize). */
int mpiopt_request_free(MPI_Request *request);
int mpiopt_request_get_status(MPI_Request request, int *flag, MPI_Status *status);

/* MPI_Barrier that, when this node runs more ranks than it has cores under an MPI library that
 * polls regardless (MPICH), or MPIOPT_YIELD=1, waits by yielding the core instead of polling (a
 * dissemination barrier over PMPI point-to-point); otherwise, and on intercommunicators, the
 * vendor's PMPI_Barrier. See src/coll/p2p.c. */
int mpiopt_barrier(MPI_Comm comm);

/* ---- the cost model (src/coll/algorithms/cost_model.c), shared by `auto` selection and `mpiopt model` ----
 * Hockney/Rabenseifner model: a message of m bytes costs alpha + m*beta, reducing m bytes costs
 * m*gamma.
 *
 * On a network where distance and link sharing matter (a torus, a fat-tree), one alpha and beta
 * for every message misprices the algorithms: recursive doubling sends its whole vector to the
 * farthest partners, Rabenseifner only small pieces. mpiopt-exchange (bench/exchange.c) measures
 * the patterns the algorithms are made of on a communicator of `exchange_ranks` processes; for
 * that size the model prices each step with its own pattern. */
#define MPIOPT_COST_MAX_STEPS 30
/* The names of the measured patterns, as mpiopt-exchange writes them and tuning files hold them. */
#define MPIOPT_PATTERN_STEP "step"                      /* group member g with g XOR 2^k */
#define MPIOPT_PATTERN_FOLD "fold"                      /* rank 2i to 2i+1 */
#define MPIOPT_PATTERN_RING "ring"                      /* rank r to r+1 */
#define MPIOPT_PATTERN_DOUBLING "doubling"              /* steps 0 … L-1 in sequence */
#define MPIOPT_PATTERN_HALVING_DOUBLING "halving_doubling"  /* steps 0 … L-1, then L-1 … 0 */

typedef struct {
    double alpha;   /* seconds per message, with every process of the pattern sending at once */
    double beta;    /* seconds per byte */
} mpiopt_link_cost;

typedef struct {
    double alpha;   /* seconds per message (latency) */
    double beta;    /* seconds per byte sent */
    double gamma;   /* seconds per byte reduced */
    /* Measured patterns (all zero: none). For exchange_ranks processes: */
    int exchange_ranks;
    int exchange_steps;                             /* floor(log2 exchange_ranks) */
    mpiopt_link_cost step[MPIOPT_COST_MAX_STEPS];   /* folded-group member g with g XOR 2^k */
    mpiopt_link_cost fold;                          /* rank 2i to 2i+1, the surplus fold */
    mpiopt_link_cost ring;                          /* rank r to r+1 */
    double doubling_latency;          /* steps 0 … L-1 in sequence, smallest message */
    double halving_doubling_latency;  /* steps 0 … L-1, then L-1 … 0 */
    /* The second level (the node-aware `hierarchical`): ranks a node (0 or 1: not known, or one a
     * node; then it is not priced), and alpha and beta between ranks of one node (0: the same as
     * alpha, beta, which then are the network's). */
    int ranks_per_node;
    double intra_alpha, intra_beta;
} mpiopt_cost_params;

/* Predicted seconds for one MPI_Allreduce (is_reduce = 0) or MPI_Reduce (is_reduce = 1) of
 * `bytes` bytes on p processes with the given algorithm; a negative value if the algorithm does
 * not apply (e.g. a non-commutative op). Pure: needs no MPI_Init. */
double mpiopt_cost_seconds(mpiopt_algorithm algorithm, int is_reduce, int p, double bytes,
                           const mpiopt_cost_params *params);
/* The name of an algorithm as in MPIOPT_ALLREDUCE ("auto", "vendor", "binomial", …). */
const char *mpiopt_algorithm_name(mpiopt_algorithm algorithm);

#ifdef __cplusplus
}
#endif
#endif
