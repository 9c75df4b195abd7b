/* shared_memory's entries in the cost model (shared_memory.c runs the algorithm): none of its
 * calls are priced. Pure C: no MPI calls, like every cost formula (cost_model.h). */
#include "coll/algorithms/algorithms.h"

double mpiopt_cost_shared_memory(const mpiopt_cost_call *x, int is_reduce)
{
    /* Not modelled: it runs only where the ranks share a node, which the model does not know, and
     * a cache line is not a message. `auto` takes it from the measured rows (select.c's defaults
     * for p = 2 and 4, or a tuning file from `mpiopt tune`), never from the formulas.
     * bench/line_model.py prices its paths from counted cache lines instead. */
    (void)x, (void)is_reduce;
    return -1;
}

/* The reduce-scatter and the scan on the window: not modelled either, for the same reasons. */
double mpiopt_cost_reduce_scatter_shared_memory(const mpiopt_cost_call *x)
{
    return mpiopt_cost_shared_memory(x, 0);
}

double mpiopt_cost_scan_shared_memory(const mpiopt_cost_call *x)
{
    return mpiopt_cost_shared_memory(x, 0);
}
