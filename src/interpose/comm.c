/* The communicator constructors for LD_PRELOAD: the vendor makes the communicator, then its ranks
 * agree on its tags on mpiopt's shared communicator (coll/engine/context.c), in the same blocking
 * collective, so that a nonblocking reduction that is the first call on it is mpiopt's schedule
 * (which keeps what it needs alive should the program free the communicator before the wait:
 * Open MPI's own crashed then). A communicator made by a constructor not listed here gets its
 * record at its first blocking reduction instead, and its nonblocking ones before that go to the
 * vendor. */
#include "mpiopt.h"
#include "coll/engine/engine.h"
#include "chain.h"

/* The new communicator's record, where the vendor made one (collective over its ranks: those
 * that got MPI_COMM_NULL are not in it). Its failure is not the program's: it only leaves the
 * communicator's nonblocking calls to the vendor until a blocking one makes the record. */
static int made(int rc, MPI_Comm *newcomm)
{
    if (rc == MPI_SUCCESS && newcomm && *newcomm != MPI_COMM_NULL)
        mpiopt_private_prepare(*newcomm);
    return rc;
}

MPIOPT_C_ENTRY(Comm_dup, (MPI_Comm comm, MPI_Comm *newcomm), (comm, newcomm))
{
    return made(PMPI_Comm_dup(comm, newcomm), newcomm);
}

MPIOPT_C_ENTRY(Comm_dup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm), (comm, info, newcomm))
{
    return made(PMPI_Comm_dup_with_info(comm, info, newcomm), newcomm);
}

MPIOPT_C_ENTRY(Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm *newcomm), (comm, color, key, newcomm))
{
    return made(PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}

MPIOPT_C_ENTRY(Comm_split_type, (MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm), (comm, split_type, key, info, newcomm))
{
    return made(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm);
}

MPIOPT_C_ENTRY(Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm), (comm, group, newcomm))
{
    return made(PMPI_Comm_create(comm, group, newcomm), newcomm);
}

MPIOPT_C_ENTRY(Comm_create_group, (MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm), (comm, group, tag, newcomm))
{
    return made(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}
