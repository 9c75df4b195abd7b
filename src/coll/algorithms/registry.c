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

typedef struct {
    mpiopt_family collective;
    mpiopt_algorithm algorithm;
    unsigned flags;
    double (*cost)(const mpiopt_cost_call *x);
} family_row;

#define FAMILY_ENTRY(COLLECTIVE, collective, ID, name, flags) \
    {MPIOPT_FAMILY_##COLLECTIVE, MPIOPT_ALG_##ID, flags, mpiopt_cost_##collective##_##name},
static const family_row family_rows[] = {MPIOPT_FAMILY_LIST(FAMILY_ENTRY)};

static const family_row *family_row_of(mpiopt_family f, mpiopt_algorithm a)
{
    for (size_t i = 0; i < sizeof family_rows / sizeof family_rows[0]; i++)
        if (family_rows[i].collective == f && family_rows[i].algorithm == a)
            return &family_rows[i];
    return NULL;
}

int mpiopt_family_fits(mpiopt_family f, mpiopt_algorithm a, int commutative)
{
    const family_row *row = family_row_of(f, a);
    return row && (commutative || (row->flags & MPIOPT_KEEPS_ORDER));
}

double mpiopt_family_cost(mpiopt_family f, mpiopt_algorithm a, int p, double bytes,
                          const mpiopt_cost_params *params)
{
    const family_row *row = family_row_of(f, a);
    if (!row || p < 1 || bytes < 0 || !params)
        return -1;
    mpiopt_cost_call x = mpiopt_cost_call_of(p, bytes, params);
    return p == 1 ? 0 : row->cost(&x);
}
