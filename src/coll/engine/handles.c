/* Object lifetimes for nonblocking and persistent collectives.
 *
 * MPI lets a program free a communicator, datatype or op as soon as it has started an operation
 * with it: the free only marks the object, and operations already started complete normally. The
 * vendor's own collectives keep a reference; a schedule of mpiopt's, which uses the handles later
 * (every MPI_Test, every MPI_Start of a persistent request), must do the same, or it sends on a
 * freed communicator and jumps into a freed op (MPICH's nonblocking3 test at np 2 under Open MPI
 * did, issue 21). What a schedule holds, and who lets go:
 *   communicator  mpiopt's record of it (its tags on the communicator it sends on), by
 *                 reference count (context.c); the user communicator's delete callback drops
 *                 the program's reference, the last schedule drops the last one and gives
 *                 back the tags. Works whatever binding
 *                 the program frees through (C, Fortran, mpi_f08, MPI_Comm_disconnect).
 *   datatype      a derived datatype is duplicated (MPI_Type_dup) into the schedule, which frees
 *                 its copy when it is freed: the program's MPI_Type_free then touches nothing of
 *                 ours. Predefined datatypes are never freed.
 *   op            ops have no duplicate and no attributes, so MPI_Op_free is intercepted
 *                 (src/interpose/user_op.c, C and Fortran): a held op is freed when the last
 *                 schedule using it lets go.
 * A schedule lets go when its request is released: completed (nonblocking), MPI_Request_free
 * (persistent, or any request once it is done), or MPI_Finalize (requests.c drains them first). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "coll/engine/handles.h"

#include "user_op.h"

static int defer_frees(void)
{
    static int decided = -1;
    if (decided < 0) {
        const char *env = getenv("MPIOPT_DEFER_FREES");
        decided = !(env && !strcmp(env, "0"));
    }
    return decided;
}

/* The user ops held now: few at a time, so a plain array. */
typedef struct {
    MPI_Op op;
    int holds;
    int free_pending;   /* the program freed it: free when holds reaches 0 */
} held_op;

static held_op *ops;
static int n_ops, cap_ops;
static pthread_mutex_t ops_lock = PTHREAD_MUTEX_INITIALIZER;

static held_op *find_op(MPI_Op op)
{
    for (int i = 0; i < n_ops; i++)
        if (ops[i].op == op)
            return &ops[i];
    return NULL;
}

static int hold_op(MPI_Op op)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&ops_lock);
    held_op *h = find_op(op);
    if (!h && n_ops == cap_ops) {
        int cap = cap_ops ? 2 * cap_ops : 16;
        held_op *grown = realloc(ops, sizeof *ops * (size_t)cap);
        if (grown) {
            ops = grown;
            cap_ops = cap;
        }
    }
    if (!h && n_ops < cap_ops) {
        h = &ops[n_ops++];
        *h = (held_op){op, 0, 0};
    }
    if (h)
        h->holds++;
    else
        rc = MPI_ERR_NO_MEM;
    pthread_mutex_unlock(&ops_lock);
    return rc;
}

static void free_op_now(MPI_Op op)
{
    mpiopt_user_op_forget(op);
    PMPI_Op_free(&op);
}

static void release_op(MPI_Op op)
{
    pthread_mutex_lock(&ops_lock);
    held_op *h = find_op(op);
    int free_now = 0;
    if (h && --h->holds == 0) {
        free_now = h->free_pending;
        *h = ops[--n_ops];      /* unordered: move the last entry into the hole */
    }
    pthread_mutex_unlock(&ops_lock);
    if (free_now)
        free_op_now(op);
}

int mpiopt_op_free(MPI_Op *op)
{
    if (!op)
        return PMPI_Op_free(op);    /* the vendor reports the bad argument */
    pthread_mutex_lock(&ops_lock);
    held_op *h = *op != MPI_OP_NULL ? find_op(*op) : NULL;
    if (h && !h->free_pending && !mpiopt_predefined_op(*op)) {
        h->free_pending = 1;
        pthread_mutex_unlock(&ops_lock);
        *op = MPI_OP_NULL;
        return MPI_SUCCESS;
    }
    pthread_mutex_unlock(&ops_lock);
    if (*op != MPI_OP_NULL)
        mpiopt_user_op_forget(*op);
    return PMPI_Op_free(op);
}

int mpiopt_hold(mpiopt_held *h, mpiopt_coll *c, MPI_Comm user_comm)
{
    *h = (mpiopt_held){NULL, MPI_DATATYPE_NULL, MPI_OP_NULL};
    int rc = MPI_SUCCESS;
    if (c->size > 1) {     /* a communicator of one sends nothing: no private one, no tag */
        rc = mpiopt_private_hold(user_comm, &h->comm);
        if (rc != MPI_SUCCESS)
            return rc;
        c->tag = mpiopt_private_tag(h->comm);
        if (!defer_frees()) {
            mpiopt_private_release(h->comm);
            h->comm = NULL;
        }
    }
    if (!defer_frees())
        return MPI_SUCCESS;
    int nints, naddrs, ntypes, combiner;
    rc = PMPI_Type_get_envelope(c->datatype, &nints, &naddrs, &ntypes, &combiner);
    if (rc == MPI_SUCCESS && combiner != MPI_COMBINER_NAMED &&
        (rc = PMPI_Type_dup(c->datatype, &h->type)) == MPI_SUCCESS)
        c->datatype = h->type;
    if (rc == MPI_SUCCESS && c->op != MPI_OP_NULL && !mpiopt_predefined_op(c->op) &&
        (rc = hold_op(c->op)) == MPI_SUCCESS)
        h->op = c->op;
    if (rc != MPI_SUCCESS)
        mpiopt_release(h);
    return rc;
}

void mpiopt_release(mpiopt_held *h)
{
    if (h->type != MPI_DATATYPE_NULL)
        PMPI_Type_free(&h->type);
    if (h->op != MPI_OP_NULL)
        release_op(h->op);
    mpiopt_private_release(h->comm);
    *h = (mpiopt_held){NULL, MPI_DATATYPE_NULL, MPI_OP_NULL};
}
