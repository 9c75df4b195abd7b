/* What every algorithm shares: the private communicator, the call context, and the ways of
 * applying the op: in place with the left or the right operand in the result buffer, or into a
 * third buffer (so that the caller's input is read where it is instead of copied first). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "coll.h"
#include "report.h"
#include "user_op.h"
#include "schedule.h"

static int private_keyval = MPI_KEYVAL_INVALID;
static int keyval_rc;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;

/* What a user communicator carries for mpiopt: its private duplicate, and how many schedules
 * were recorded on it (every member records the same ones in the same order, so the count
 * agrees, and each schedule's messages get a tag of their own).
 *
 * Lifetime (docs/collectives.md, "Handles a schedule holds"): the program may free its
 * communicator while a nonblocking or persistent collective on it is pending (MPI_Comm_free marks
 * it for deallocation; pending operations complete normally). The schedule sends on the private
 * duplicate, so each live schedule holds a reference to this record (mpiopt_private_hold); the
 * user communicator's delete callback drops the communicator's own reference, and whoever drops
 * the last one frees the duplicate. The shared-memory window goes at once, in the delete callback:
 * MPI_Win_free is collective, and only the program's MPI_Comm_free is a moment every rank meets
 * (schedules never use the window). */
struct mpiopt_private_comm {
    MPI_Comm dup;
    unsigned schedules;
    mpiopt_node_window *node_window;    /* shared_memory.c's, once made; freed with the user comm */
    mpiopt_node_layout *node_layout;    /* node_layout.c's, once found */
    mpiopt_measured *measured;          /* measured.c's, made with the record */
    int refs;                           /* the user communicator's 1 + one per live schedule */
    MPI_Comm user;                      /* for raising errors; MPI_COMM_NULL once freed */
    /* A communicator whose first collective of mpiopt's is a nonblocking one gets its duplicate
     * from MPI_Comm_idup: a blocking MPI_Comm_dup inside MPI_Iallreduce is a blocking collective
     * the program did not make, and with an MPI_Comm_idup of the program's pending it deadlocked
     * Open MPI 4.1 at np 3 (MPICH's comm_idup_iallreduce test). Until the idup completes, dup is
     * not usable: ready = 0, and dup_req is the idup's request. */
    int ready;
    MPI_Request dup_req;
};
typedef struct mpiopt_private_comm private_comm;

static pthread_mutex_t refs_lock = PTHREAD_MUTEX_INITIALIZER;

/* Makes pc->dup usable: waits (blocking) or tests for its idup; *ready = 1 once it is. */
static int make_ready(private_comm *pc, int blocking, int *ready)
{
    int rc = MPI_SUCCESS, flag = 1;
    if (!pc->ready) {
        rc = blocking ? PMPI_Wait(&pc->dup_req, MPI_STATUS_IGNORE)
                      : PMPI_Test(&pc->dup_req, &flag, MPI_STATUS_IGNORE);
        /* Errors on the duplicate come back as codes: mpiopt raises them once, on the program's
         * communicator (mpiopt_raise), not a second time through a handler the dup inherited. */
        if (rc == MPI_SUCCESS && flag) {
            rc = PMPI_Comm_set_errhandler(pc->dup, MPI_ERRORS_RETURN);
            pc->ready = 1;
        }
    }
    *ready = pc->ready;
    return rc;
}

static int drop_ref(private_comm *pc)
{
    pthread_mutex_lock(&refs_lock);
    int last = --pc->refs == 0;
    pthread_mutex_unlock(&refs_lock);
    if (!last)
        return MPI_SUCCESS;
    int ready;
    make_ready(pc, 1, &ready);
    int rc = PMPI_Comm_free(&pc->dup);
    mpiopt_node_layout_free(pc->node_layout);
    mpiopt_measured_free(pc->measured);
    free(pc);
    return rc;
}

static int free_private(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    private_comm *pc = attr;
    int rc = MPI_SUCCESS;
#if defined(OMPI_MAJOR_VERSION)
    /* An idup of the program's communicator must end before that communicator does: Open MPI
     * frees it here and crashed in a later MPI_Comm_dup otherwise. Every rank started the idup
     * with an earlier collective on the communicator and is freeing it now too, so the wait
     * completes. MPICH needs none of this: it keeps a communicator with operations pending and
     * runs its delete callbacks once they end, inside its progress engine, where no wait may be
     * made (it asserted). */
    int ready;
    rc = make_ready(pc, 1, &ready);
#endif
    if (rc == MPI_SUCCESS && pc->node_window) {
        rc = mpiopt_node_window_free(pc->dup);
        pc->node_window = NULL;
    }
    pthread_mutex_lock(&refs_lock);
    pc->user = MPI_COMM_NULL;
    pthread_mutex_unlock(&refs_lock);
    int free_rc = drop_ref(pc);
    return rc != MPI_SUCCESS ? rc : free_rc;
}

static void create_keyval(void)
{
    /* MPI_COMM_NULL_COPY_FN: a duplicate of the user's communicator gets its own private one on
     * its first collective, never a shared one. */
    keyval_rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_private, &private_keyval, NULL);
}

/* The private record of user_comm, made on first use: its duplicate from MPI_Comm_dup, or for a
 * nonblocking call (nonblocking = 1) from MPI_Comm_idup, not usable until make_ready says so. A
 * blocking call waits for a pending idup (started by an earlier collective, in the same order on
 * every rank). */
static int private_of(MPI_Comm user_comm, int nonblocking, private_comm **out)
{
    int rc, found = 0, ready;
    private_comm *cached = NULL;
    pthread_once(&keyval_once, create_keyval);
    if (keyval_rc != MPI_SUCCESS)
        return keyval_rc;
    rc = PMPI_Comm_get_attr(user_comm, private_keyval, &cached, &found);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!found) {
        if (!(cached = calloc(1, sizeof *cached)) || !(cached->measured = mpiopt_measured_new())) {
            free(cached);
            return MPI_ERR_NO_MEM;
        }
        cached->refs = 1;
        cached->user = user_comm;
        cached->dup = MPI_COMM_NULL;
        cached->dup_req = MPI_REQUEST_NULL;
#if !defined(SMPI_SAMPLE_FLOPS) && !defined(OMPI_MAJOR_VERSION)
        /* SimGrid has no MPI_Comm_idup (and its programs are ours); under Open MPI a nonblocking
         * call never gets here (mpiopt_private_exists). */
        if (nonblocking)
            rc = PMPI_Comm_idup(user_comm, &cached->dup, &cached->dup_req);
        else
#endif
            rc = PMPI_Comm_dup(user_comm, &cached->dup);
        if (rc == MPI_SUCCESS && cached->dup_req == MPI_REQUEST_NULL)
            rc = make_ready(cached, 1, &ready);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Comm_set_attr(user_comm, private_keyval, cached);
        if (rc != MPI_SUCCESS) {
            if (cached->dup_req != MPI_REQUEST_NULL)
                PMPI_Wait(&cached->dup_req, MPI_STATUS_IGNORE);
            if (cached->dup != MPI_COMM_NULL)
                PMPI_Comm_free(&cached->dup);
            mpiopt_measured_free(cached->measured);
            free(cached);
            return rc;
        }
    }
    if (!nonblocking && (rc = make_ready(cached, 1, &ready)) != MPI_SUCCESS)
        return rc;
    *out = cached;
    return MPI_SUCCESS;
}

int mpiopt_private_hold(MPI_Comm user_comm, mpiopt_private_comm **held)
{
    private_comm *pc;
    int rc = private_of(user_comm, 1, &pc);
    if (rc != MPI_SUCCESS)
        return rc;
    pthread_mutex_lock(&refs_lock);
    pc->refs++;
    pthread_mutex_unlock(&refs_lock);
    *held = pc;
    return MPI_SUCCESS;
}

int mpiopt_private_release(mpiopt_private_comm *held)
{
    return held ? drop_ref(held) : MPI_SUCCESS;
}

int mpiopt_private_prepare(MPI_Comm user_comm)
{
    int size, inter = 0;
    private_comm *pc;
    if (user_comm == MPI_COMM_NULL || PMPI_Comm_test_inter(user_comm, &inter) != MPI_SUCCESS ||
        inter || PMPI_Comm_size(user_comm, &size) != MPI_SUCCESS || size < 2)
        return MPI_SUCCESS;     /* nothing mpiopt would make (or the vendor's error to give) */
    return private_of(user_comm, 0, &pc);
}

int mpiopt_private_exists(MPI_Comm user_comm)
{
    void *cached;
    int found = 0;
    pthread_once(&keyval_once, create_keyval);
    return keyval_rc == MPI_SUCCESS &&
           PMPI_Comm_get_attr(user_comm, private_keyval, &cached, &found) == MPI_SUCCESS && found;
}

int mpiopt_private_ready(mpiopt_private_comm *pc, int blocking, MPI_Comm *dup)
{
    int ready, rc = make_ready(pc, blocking, &ready);
    *dup = ready ? pc->dup : MPI_COMM_NULL;
    return rc;
}

MPI_Comm mpiopt_private_user_comm(const mpiopt_private_comm *held)
{
    pthread_mutex_lock(&refs_lock);
    MPI_Comm user = held ? held->user : MPI_COMM_NULL;
    pthread_mutex_unlock(&refs_lock);
    return user;
}

int mpiopt_raise(MPI_Comm comm, int rc)
{
    if (rc == MPI_SUCCESS)
        return rc;
    mpiopt_report_door_now = MPIOPT_DOOR_C;    /* a call refused before it was counted */
    if (comm != MPI_COMM_NULL)
        PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

static int init_comm(mpiopt_coll *c, MPI_Comm user_comm, int nonblocking)
{
    memset(c, 0, sizeof *c);
    int rc = PMPI_Comm_size(user_comm, &c->size);
    if (rc != MPI_SUCCESS)
        return rc;
    c->comm = user_comm;
    if (c->size > 1) {
        private_comm *pc;
        if ((rc = private_of(user_comm, nonblocking, &pc)) != MPI_SUCCESS)
            return rc;
        c->comm = pc->dup;      /* not usable yet while pc->ready = 0: see comm_pending */
        c->comm_pending = !pc->ready;
        c->node_window = &pc->node_window;
        c->node_layout = &pc->node_layout;
        c->measured = pc->measured;
    }
    PMPI_Comm_rank(user_comm, &c->rank);    /* the same in the duplicate */
    c->datatype = MPI_BYTE;
    c->extent = 1;
    c->tag = MPIOPT_TAG;
    return MPI_SUCCESS;
}

int mpiopt_coll_init_comm(mpiopt_coll *c, MPI_Comm user_comm)
{
    return init_comm(c, user_comm, 0);
}

int mpiopt_private_tag(mpiopt_private_comm *pc)
{
    return MPIOPT_SCHEDULE_TAG_FIRST + (int)(pc->schedules++ % MPIOPT_SCHEDULE_TAGS);
}

int mpiopt_coll_init(mpiopt_coll *c, MPI_Comm user_comm, MPI_Datatype datatype, MPI_Op op,
                     int nonblocking)
{
    int rc = init_comm(c, user_comm, nonblocking);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(datatype, &lb, &extent);
    c->extent = (size_t)extent;
    c->datatype = datatype;
    c->op = op;
    PMPI_Op_commutative(op, &c->commutative);
    c->has_kernel = mpiopt_find_kernel(datatype, op, &c->kernel);
    return MPI_SUCCESS;
}

void mpiopt_coll_take_input(mpiopt_coll *c, void *buf, size_t count)
{
    if (c->src && c->src != buf && count > 0)
        mpiopt_coll_copy(c, buf, c->src, count * c->extent);
    c->src = NULL;
}

int mpiopt_coll_copy(const mpiopt_coll *c, void *dst, const void *src, size_t n)
{
    if (c->record)
        return mpiopt_schedule_local(c->record, MPIOPT_LOCAL_COPY, src, NULL, dst, n);
    memcpy(dst, src, n);
    return MPI_SUCCESS;
}

int mpiopt_coll_reduce_left(const mpiopt_coll *c, const void *in, void *inout, size_t n)
{
    if (n == 0)
        return MPI_SUCCESS;
    if (c->record)
        return mpiopt_schedule_local(c->record, MPIOPT_LOCAL_REDUCE_LEFT, in, inout, NULL, n);
    if (c->has_kernel) {
        mpiopt_run2(c->kernel.k2, in, inout, n, c->kernel.elem_size);
        return MPI_SUCCESS;
    }
    return mpiopt_user_op_reduce_local(in, inout, n, c->datatype, c->op);
}

int mpiopt_coll_reduce_right(const mpiopt_coll *c, void *inout, void *in, size_t n)
{
    if (n == 0)
        return MPI_SUCCESS;
    if (c->record)
        return mpiopt_schedule_local(c->record, MPIOPT_LOCAL_REDUCE_RIGHT, inout, in, NULL, n);
    /* Predefined ops are commutative, and IEEE addition and multiplication are commutative bit
     * for bit, so swapping the operands changes nothing there. */
    if (c->commutative)
        return mpiopt_coll_reduce_left(c, in, inout, n);
    int rc = mpiopt_user_op_reduce_local(inout, in, n, c->datatype, c->op);
    if (rc == MPI_SUCCESS)
        memcpy(inout, in, n * c->extent);
    return rc;
}

int mpiopt_coll_reduce3(const mpiopt_coll *c, const void *left, const void *right, void *out,
                        size_t n)
{
    if (n == 0)
        return MPI_SUCCESS;
    if (out == right)
        return mpiopt_coll_reduce_left(c, left, out, n);
    if (c->record)
        return mpiopt_schedule_local(c->record, MPIOPT_LOCAL_REDUCE3, left, (void *)right, out,
                                     n);
    if (c->has_kernel && c->kernel.k3) {
        mpiopt_run3(c->kernel.k3, left, right, out, n, c->kernel.elem_size);
        return MPI_SUCCESS;
    }
    /* MPI_Reduce_local has no 3-buffer form: user ops (and types without a kernel) pay the copy
     * the kernel path saves */
    memcpy(out, right, n * c->extent);
    return mpiopt_user_op_reduce_local(left, out, n, c->datatype, c->op);
}

int mpiopt_coll_reduce_mine(const mpiopt_coll *c, const void *mine, void *theirs, void *buf,
                            size_t n, int mine_left)
{
    if (!mine_left)
        return mpiopt_coll_reduce3(c, theirs, mine, buf, n);
    if (mine == buf)    /* theirs is scratch: no temporary for a non-commutative op */
        return mpiopt_coll_reduce_right(c, buf, theirs, n);
    return mpiopt_coll_reduce3(c, mine, theirs, buf, n);
}

void mpiopt_halving_range(size_t count, unsigned path, int levels, size_t *lo, size_t *hi)
{
    size_t l = 0, h = count;
    for (int i = 0; i < levels; i++) {
        size_t mid = l + (h - l) / 2;
        if (path & (1u << i))
            l = mid;
        else
            h = mid;
    }
    *lo = l;
    *hi = h;
}

int mpiopt_forward_result(const mpiopt_coll *c, void *buf, size_t count, int from, int to)
{
    if (from == to)
        return MPI_SUCCESS;
    if (c->rank == from)
        return mpiopt_send(c, buf, count, to);
    if (c->rank == to)
        return mpiopt_recv(c, buf, count, from);
    return MPI_SUCCESS;
}
