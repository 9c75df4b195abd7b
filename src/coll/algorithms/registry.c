/* The registry: include/mpiopt_algorithms.h turned into one table of functions and restrictions,
 * indexed by mpiopt_algorithm. Every other place that needs a fact about an algorithm asks here
 * (its name: the engine's algorithm_names.c, which the report below the algorithms needs too). */
#include "coll/algorithms/algorithms.h"

/* The vendor reduces in rank order as the standard requires; auto picks an algorithm that fits. */
#define SELECTOR_ENTRY(ID, name, short_name) \
    [MPIOPT_ALG_##ID] = {NULL, NULL, NULL, MPIOPT_KEEPS_ORDER, 0},
#define ALGORITHM_ENTRY(ID, name, short_name, flags, min_count)                              \
    [MPIOPT_ALG_##ID] = {mpiopt_allreduce_##name, mpiopt_reduce_##name, mpiopt_cost_##name, \
                         flags, min_count},
const mpiopt_algorithm_info mpiopt_algorithms[MPIOPT_ALG_COUNT] = {
    MPIOPT_SELECTOR_LIST(SELECTOR_ENTRY)
    MPIOPT_ALGORITHM_LIST(ALGORITHM_ENTRY)
};

int mpiopt_algorithm_fits(mpiopt_algorithm a, int p, int commutative)
{
    unsigned flags = mpiopt_algorithms[a].flags;
    if (!commutative && !(flags & MPIOPT_KEEPS_ORDER))
        return 0;
    return !(flags & MPIOPT_NEEDS_POW2) || (p & (p - 1)) == 0;
}

int mpiopt_algorithm_takes(mpiopt_algorithm a, int count, int predefined_op)
{
    const mpiopt_algorithm_info *info = &mpiopt_algorithms[a];
    return count >= info->min_count && (predefined_op || !(info->flags & MPIOPT_PREDEFINED_OP));
}
