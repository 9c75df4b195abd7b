/* The registry: include/mpiopt_algorithms.h turned into one table of names, functions and
 * restrictions, indexed by mpiopt_algorithm. Every other place that needs a fact about an
 * algorithm asks here. */
#include <stdio.h>
#include <string.h>
#include "coll.h"

/* The vendor reduces in rank order as the standard requires; auto picks an algorithm that fits. */
#define SELECTOR_ENTRY(ID, name, short_name) \
    [MPIOPT_ALG_##ID] = {#name, #short_name, NULL, NULL, NULL, MPIOPT_KEEPS_ORDER, 0},
#define ALGORITHM_ENTRY(ID, name, short_name, flags, min_count)                                \
    [MPIOPT_ALG_##ID] = {#name, #short_name, mpiopt_allreduce_##name, mpiopt_reduce_##name, \
                         mpiopt_cost_##name, flags, min_count},
const mpiopt_algorithm_info mpiopt_algorithms[MPIOPT_ALG_COUNT] = {
    MPIOPT_SELECTOR_LIST(SELECTOR_ENTRY)
    MPIOPT_ALGORITHM_LIST(ALGORITHM_ENTRY)
};

const char *mpiopt_algorithm_name(mpiopt_algorithm algorithm)
{
    if ((int)algorithm < 0 || algorithm >= MPIOPT_ALG_COUNT)
        return "unknown";
    return mpiopt_algorithms[algorithm].name;
}

int mpiopt_algorithm_from_name(const char *name)
{
    for (int a = 0; a < MPIOPT_ALG_COUNT; a++)
        if (!strcmp(name, mpiopt_algorithms[a].name))
            return a;
    return -1;
}

void mpiopt_algorithm_names(char *out, size_t outlen)
{
    size_t used = 0;
    if (outlen)
        out[0] = 0;
    for (int a = 0; a < MPIOPT_ALG_COUNT && used < outlen; a++) {
        int n = snprintf(out + used, outlen - used, "%s%s", a ? ", " : "",
                         mpiopt_algorithms[a].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

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
