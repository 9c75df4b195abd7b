/* shared_memory's entries in the cost model (shared_memory.c runs the algorithm). Pure C: no MPI
 * calls, like every cost formula (cost_model.h).
 *
 * Priced: an allreduce through the stages (staged.c, staged_groups.c), from STAGED_FROM_BYTES,
 * where every rank is known to be on one node (ranks_per_node >= p). Its bytes in the model's
 * own terms: a message of m bytes on one node is two copies, into the transport's shared
 * buffer and out of it (the second read from another core), so a copy of a byte costs beta / 2.
 * A rank copies its n bytes in and the n bytes of the result out, and reads (p - 1)/p * n of
 * the others' inputs to reduce its share (within the node's groups and then the groups'
 * partials: (G - 1 + S - 1)/G * n, which is (p - 1)/p * n where G = p and at most n):
 *
 *   allreduce: 4 * ceil(n / STAGE) * HANDOVER + (2 + (p-1)/p) * n * beta/2 + (p-1)/p * n * gamma
 *
 * against Rabenseifner's 2 log2(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma: the same
 * reduction, three copies of n a rank where its messages make four, and a handover of a cache
 * line (four a chunk: input, partial, share of the result, done) where it pays a message's
 * alpha. With the built-in model (alpha 1 us, beta 0.25 ns/B, gamma 0.1 ns/B) it prices the
 * stages at 1.16x (p = 8) and 1.25x (p = 64) Rabenseifner's speed at 1 MiB, 1.35x at 64 KiB and
 * p = 8. Not measured above p = 2 (this machine has 2 cores; p = 2 takes its own path, the
 * pair's, and measured 1.0-1.2x Rabenseifner's speed at 64 KiB-4 MiB, select.c). What it leaves
 * out: the sockets. Counted on a described 2-socket node (docs/shared_memory_lines.md, "Large
 * messages"), the groups' stages move 2n a call across the sockets, as Rabenseifner does (its
 * far step is its last, n/p a rank), and the ring about 4n; the flat stages p n.
 *
 * Not priced: calls below the stages (the window's small paths and the tree: a cache line is
 * not a message; `auto` takes them from the measured rows, select.c, or a tuning file, and
 * bench/line_model.py prices them from counted lines), reduces and scans (whose non-root ranks
 * return before the root has reduced: no formula here says when the call ends for whom), and
 * communicators that span nodes or whose layout is unknown. */
#include "coll/algorithms/algorithms.h"

/* From STAGED_FROM_BYTES (shared_memory.c: a ring buffer and one byte) an allreduce at p > 2
 * goes through the stages, in chunks of STAGE_BYTES (node_window.h) */
#define STAGED_FROM_BYTES 8193.0
#define STAGE_BYTES 65536.0
/* One flag's handover between two cores: a rank waits for a line another core has just written
 * (mpiopt-line-pingpong, bench/line_pingpong.c: 160 ns on the 2-core EPYC VM; some 200 ns
 * within a socket of a 2-socket server) */
#define HANDOVER_SECONDS 160e-9

double mpiopt_cost_shared_memory(const mpiopt_cost_call *x, int is_reduce)
{
    if (is_reduce || x->p < 3 || x->n < STAGED_FROM_BYTES || x->ranks_per_node < x->p)
        return -1;
    double share = (double)(x->p - 1) / x->p, chunks = (double)(long)((x->n + STAGE_BYTES - 1) /
                                                                         STAGE_BYTES);
    const mpiopt_cost_params *P = x->params;
    return 4 * chunks * HANDOVER_SECONDS + (2 + share) * x->n * P->beta / 2 +
           share * x->n * P->gamma;
}

/* The reduce-scatter and the scan on the window: not modelled, as the reduce is not. */
double mpiopt_cost_reduce_scatter_shared_memory(const mpiopt_cost_call *x)
{
    (void)x;
    return -1;
}

double mpiopt_cost_scan_shared_memory(const mpiopt_cost_call *x)
{
    (void)x;
    return -1;
}
