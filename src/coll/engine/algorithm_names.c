/* The names of mpiopt's algorithms and selectors (include/mpiopt_algorithms.h), as in
 * MPIOPT_ALLREDUCE, tuning files and MPIOPT_REPORT's table: here in the engine, below the
 * registry, because the report names algorithms too. */
#include <stdio.h>
#include <string.h>
#include "coll/engine/engine.h"

static const struct {
    const char *name, *short_name;
} names[MPIOPT_ALG_COUNT] = {
#define SELECTOR_NAMES(ID, name, short_name) [MPIOPT_ALG_##ID] = {#name, #short_name},
#define ALGORITHM_NAMES(ID, name, short_name, ...) [MPIOPT_ALG_##ID] = {#name, #short_name},
    MPIOPT_SELECTOR_LIST(SELECTOR_NAMES)
    MPIOPT_ALGORITHM_LIST(ALGORITHM_NAMES)
};

const char *mpiopt_algorithm_name(mpiopt_algorithm algorithm)
{
    if ((int)algorithm < 0 || algorithm >= MPIOPT_ALG_COUNT)
        return "unknown";
    return names[algorithm].name;
}

const char *mpiopt_algorithm_short_name(mpiopt_algorithm algorithm)
{
    if ((int)algorithm < 0 || algorithm >= MPIOPT_ALG_COUNT)
        return "unknown";
    return names[algorithm].short_name;
}

int mpiopt_algorithm_from_name(const char *name)
{
    for (int a = 0; a < MPIOPT_ALG_COUNT; a++)
        if (!strcmp(name, names[a].name))
            return a;
    return -1;
}

void mpiopt_algorithm_names(char *out, size_t outlen)
{
    size_t used = 0;
    if (outlen)
        out[0] = 0;
    for (int a = 0; a < MPIOPT_ALG_COUNT && used < outlen; a++) {
        int n = snprintf(out + used, outlen - used, "%s%s", a ? ", " : "", names[a].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}
