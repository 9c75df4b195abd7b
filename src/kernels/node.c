#include <stdlib.h>
#include "node.h"

static long env_count(const char *name)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end;
    long v = strtol(s, &end, 10);
    return *end == '\0' && v > 0 ? v : 0;
}

long mpiopt_node_ranks(void)
{
    long n = env_count("OMPI_COMM_WORLD_LOCAL_SIZE");
    return n > 0 ? n : env_count("MPI_LOCALNRANKS");
}
