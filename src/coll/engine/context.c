/* What every algorithm shares: mpiopt's communicator and tags, the call context, and the ways of
 * applying the op: in place with the left or the right operand in the result buffer, or into a
 * third buffer (so that the caller's input is read where it is instead of copied first). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "coll/engine/engine.h"
#include "coll/engine/report.h"
#include "user_op.h"
#include "coll/engine/schedule.h"

static int private_keyval = MPI_KEYVAL_INVALID;
static int keyval_rc;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;

/* ---- Where mpiopt's messages go, and with which tags ----
 *
 * Every communicator's messages go on one communicator of mpiopt's own, a duplicate of
 * MPI_COMM_WORLD made at MPI_Init (src/interpose/init.c; for the C API, at the first blocking
 * call on a communicator congruent with it): a communicator's ranks are translated to it
 * (p2p.c), and its messages kept apart from every other communicator's by a range of tags of
 * its own, a "slot". A private duplicate per communicator took one of the MPI's context ids a
 * communicator: MPICH has 2048 a process, and a program with 1200 live communicators under the
 * drop-in died in its own MPI_Comm_dup.
 *
 * A slot is agreed by the communicator's ranks in a blocking collective they all make: when the
 * program makes the communicator (the constructors, src/interpose/comm.c) or at its first call of
 * mpiopt's. Each rank offers the slots it has free (a bitmap; offered slots are withheld from
 * agreements of other threads until this one ends) and MPI_BAND over the communicator gives the
 * ones free everywhere; the lowest is taken. A slot goes back when the communicator's record does
 * (the program freed it and no schedule holds it): a slot still held on one rank is not offered
 * by it, so no message of a communicator that is gone meets one of a new one.
 *
 * A nonblocking call never agrees (an MPI_Iallreduce agreement of two new communicators started
 * in opposite orders on two ranks cannot be settled without blocking): on a communicator with no
 * record yet the vendor takes it. Where no slot is free on every rank, or the communicator has a
 * process outside MPI_COMM_WORLD, it gets its own duplicate, as every communicator did before. */
#define SLOTS_MAX 4096
#define SLOT_WORDS (SLOTS_MAX / 64)
#define TAGS_PER_SLOT_MAX 16384

static MPI_Comm world_msg = MPI_COMM_NULL;
static int slots, tags_per_slot;                        /* from the MPI's MPI_TAG_UB */
static uint64_t slot_used[SLOT_WORDS], slot_offered[SLOT_WORDS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t world_lock = PTHREAD_MUTEX_INITIALIZER;

/* The tag layout: tags from MPIOPT_TAG_FIRST, tags_per_slot a slot (the first for blocking
 * calls, the rest for schedules, in turn), as many slots as MPI_TAG_UB holds (at most SLOTS_MAX;
 * at least 256 slots, of fewer tags each, where the MPI has few tags). */
static void lay_out_tags(void)
{
    int *ub = NULL, found = 0;
    long top = 32767;   /* the least MPI_TAG_UB the standard allows */
    if (PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found) == MPI_SUCCESS && found && ub)
        top = *ub;
    long tags = top - MPIOPT_TAG_FIRST + 1;
    tags_per_slot = TAGS_PER_SLOT_MAX;
    slots = (int)(tags / tags_per_slot < SLOTS_MAX ? tags / tags_per_slot : SLOTS_MAX);
    if (slots < 256) {
        slots = 256;
        tags_per_slot = (int)(tags / slots);
    }
}

/* Makes the shared communicator from user_comm if there is none yet and user_comm is congruent
 * with MPI_COMM_WORLD (collective over it). 1 if it exists. */
static int world_msg_exists(MPI_Comm user_comm)
{
    pthread_mutex_lock(&world_lock);
    int cmp = MPI_UNEQUAL;
    if (world_msg == MPI_COMM_NULL &&
        PMPI_Comm_compare(user_comm, MPI_COMM_WORLD, &cmp) == MPI_SUCCESS &&
        (cmp == MPI_IDENT || cmp == MPI_CONGRUENT)) {
        MPI_Comm dup;
        if (PMPI_Comm_dup(user_comm, &dup) == MPI_SUCCESS) {
            /* errors on it come back as codes: mpiopt raises them once, on the program's
             * communicator (mpiopt_raise) */
            PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
            lay_out_tags();
            world_msg = dup;
        }
    }
    int exists = world_msg != MPI_COMM_NULL;
    pthread_mutex_unlock(&world_lock);
    return exists;
}

/* user_comm's ranks in the shared communicator: *table = NULL where they are the same; 0 where
 * a rank is not in it. */
static int ranks_in_world(MPI_Comm user_comm, int p, int **table)
{
    MPI_Group mine, world;
    int *ranks = malloc(2 * sizeof(int) * (size_t)p), ok = 0, same = 1;
    *table = NULL;
    if (!ranks)
        return 0;
    for (int r = 0; r < p; r++)
        ranks[r] = r;
    if (PMPI_Comm_group(user_comm, &mine) == MPI_SUCCESS) {
        if (PMPI_Comm_group(world_msg, &world) == MPI_SUCCESS) {
            ok = PMPI_Group_translate_ranks(mine, p, ranks, world, ranks + p) == MPI_SUCCESS;
            PMPI_Group_free(&world);
        }
        PMPI_Group_free(&mine);
    }
    for (int r = 0; ok && r < p; r++) {
        ok = ranks[p + r] != MPI_UNDEFINED;
        same = same && ranks[p + r] == r;
    }
    if (ok && !same) {
        memmove(ranks, ranks + p, sizeof(int) * (size_t)p);
        *table = ranks;
    } else {
        free(ranks);
    }
    return ok;
}

/* Offers every free slot (withheld from other agreements until take_slot). */
static void offer_slots(uint64_t *offer)
{
    pthread_mutex_lock(&slots_lock);
    for (int s = 0; s < slots; s++) {
        uint64_t bit = 1ull << (s % 64);
        if (!((slot_used[s / 64] | slot_offered[s / 64]) & bit)) {
            offer[s / 64] |= bit;
            slot_offered[s / 64] |= bit;
        }
    }
    pthread_mutex_unlock(&slots_lock);
}

/* Ends an agreement: the lowest slot free on every rank (agreed), or -1; the rest of this
 * rank's offer is free again. */
static int take_slot(const uint64_t *offer, const uint64_t *agreed)
{
    int slot = -1;
    pthread_mutex_lock(&slots_lock);
    for (int w = 0; w < SLOT_WORDS; w++) {
        slot_offered[w] &= ~offer[w];
        uint64_t both = agreed[w] & offer[w];
        if (slot < 0 && both) {
            slot = w * 64 + __builtin_ctzll(both);
            slot_used[w] |= 1ull << (slot % 64);
        }
    }
    pthread_mutex_unlock(&slots_lock);
    return slot;
}

static void give_back_slot(int slot)
{
    pthread_mutex_lock(&slots_lock);
    slot_used[slot / 64] &= ~(1ull << (slot % 64));
    pthread_mutex_unlock(&slots_lock);
}

/* What a user communicator carries for mpiopt: where its messages go, its tags, and how many
 * schedules were recorded on it (every member records the same ones in the same order, so the
 * count agrees, and each schedule's messages get a tag of their own).
 *
 * Lifetime (docs/collectives.md, "Handles a schedule holds"): the program may free its
 * communicator while a nonblocking or persistent collective on it is pending (MPI_Comm_free marks
 * it for deallocation; pending operations complete normally). The schedule sends on mpiopt's
 * communicator with this record's tags, so each live schedule holds a reference to the record
 * (mpiopt_private_hold); the user communicator's delete callback drops the communicator's own
 * reference, and whoever drops the last one gives back the slot (or frees the own duplicate).
 * The shared-memory window goes at once, in the delete callback: MPI_Win_free is collective,
 * and only the program's MPI_Comm_free is a moment every rank meets (schedules never use the
 * window). */
struct mpiopt_private_comm {
    MPI_Comm dup;                       /* where messages go: world_msg, or an own duplicate */
    int own_dup;                        /* 1: dup is this communicator's own */
    int *world_rank;                    /* [p] its ranks in dup, or NULL where the same */
    int slot;                           /* -1 with an own duplicate */
    int tag_base;                       /* blocking calls' tag; schedules' follow it */
    int tags;                           /* how many from tag_base are this communicator's */
    unsigned schedules;
    mpiopt_node_window *node_window;    /* node_window.c's, once made; freed with the user comm */
    mpiopt_node_layout *node_layout;    /* node_layout.c's, once found */
    mpiopt_measured *measured;          /* select/measured.c's, made with the record */
    int refs;                           /* the user communicator's 1 + one per live schedule */
    MPI_Comm user;                      /* for raising errors; MPI_COMM_NULL once freed */
};
typedef struct mpiopt_private_comm private_comm;

static pthread_mutex_t refs_lock = PTHREAD_MUTEX_INITIALIZER;

/* The layers above's makers and destructors of their parts of a record (engine.h). */
static mpiopt_record_parts parts;

void mpiopt_record_parts_register(const mpiopt_record_parts *p)
{
    if (p->measured_new)
        __atomic_store_n(&parts.measured_new, p->measured_new, __ATOMIC_RELEASE);
    if (p->measured_free)
        __atomic_store_n(&parts.measured_free, p->measured_free, __ATOMIC_RELEASE);
    if (p->node_layout_free)
        __atomic_store_n(&parts.node_layout_free, p->node_layout_free, __ATOMIC_RELEASE);
    if (p->node_window_free)
        __atomic_store_n(&parts.node_window_free, p->node_window_free, __ATOMIC_RELEASE);
}

static void free_record(private_comm *pc)
{
    free(pc->world_rank);
    if (pc->node_layout && parts.node_layout_free)
        parts.node_layout_free(pc->node_layout);
    if (pc->measured && parts.measured_free)
        parts.measured_free(pc->measured);
    free(pc);
}

static int drop_ref(private_comm *pc)
{
    pthread_mutex_lock(&refs_lock);
    int last = --pc->refs == 0;
    pthread_mutex_unlock(&refs_lock);
    if (!last)
        return MPI_SUCCESS;
    int rc = MPI_SUCCESS;
    if (pc->own_dup)
        rc = PMPI_Comm_free(&pc->dup);
    else
        give_back_slot(pc->slot);
    free_record(pc);
    return rc;
}

static int free_private(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    private_comm *pc = attr;
    int rc = MPI_SUCCESS;
    if (pc->node_window && parts.node_window_free) {
        rc = parts.node_window_free(pc->node_window);
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
    /* MPI_COMM_NULL_COPY_FN: a duplicate of the user's communicator gets its own record (and
     * slot), never a shared one. */
    keyval_rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_private, &private_keyval, NULL);
}

/* user_comm's record: a slot agreed by all its ranks (collective), or an own duplicate. */
static int make_record(MPI_Comm user_comm, int p, private_comm **out)
{
    private_comm *pc;
    uint64_t offer[SLOT_WORDS] = {0}, agreed[SLOT_WORDS];
    int rc;
    if (!(pc = calloc(1, sizeof *pc)) ||
        (parts.measured_new && !(pc->measured = parts.measured_new()))) {
        free(pc);
        return MPI_ERR_NO_MEM;
    }
    pc->refs = 1;
    pc->user = user_comm;
    pc->slot = -1;
    /* no shared communicator, or a rank outside it: nothing offered, so no slot (every rank
     * comes to the same) */
    if (world_msg_exists(user_comm) && ranks_in_world(user_comm, p, &pc->world_rank))
        offer_slots(offer);
    rc = PMPI_Allreduce(offer, agreed, SLOT_WORDS, MPI_UINT64_T, MPI_BAND, user_comm);
    pc->slot = take_slot(offer, rc == MPI_SUCCESS ? agreed : (uint64_t[SLOT_WORDS]){0});
    if (rc == MPI_SUCCESS && pc->slot >= 0) {
        pc->dup = world_msg;
        pc->tag_base = MPIOPT_TAG_FIRST + pc->slot * tags_per_slot;
        pc->tags = tags_per_slot;
    } else if (rc == MPI_SUCCESS) {
        pc->own_dup = 1;
        pc->tag_base = MPIOPT_TAG_FIRST;
        pc->tags = TAGS_PER_SLOT_MAX;
        free(pc->world_rank);
        pc->world_rank = NULL;
        if ((rc = PMPI_Comm_dup(user_comm, &pc->dup)) == MPI_SUCCESS)
            rc = PMPI_Comm_set_errhandler(pc->dup, MPI_ERRORS_RETURN);
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_set_attr(user_comm, private_keyval, pc);
    if (rc != MPI_SUCCESS) {
        if (pc->slot >= 0)
            give_back_slot(pc->slot);
        if (pc->own_dup && pc->dup != MPI_COMM_NULL)
            PMPI_Comm_free(&pc->dup);
        free_record(pc);
        return rc;
    }
    *out = pc;
    return MPI_SUCCESS;
}

/* The record of user_comm (NULL in *out where it has none and `make` is 0), made on demand
 * (collective: every rank makes it in the same call). */
static int private_of(MPI_Comm user_comm, int make, private_comm **out)
{
    int rc, found = 0, p;
    private_comm *pc = NULL;
    *out = NULL;
    pthread_once(&keyval_once, create_keyval);
    if (keyval_rc != MPI_SUCCESS)
        return keyval_rc;
    rc = PMPI_Comm_get_attr(user_comm, private_keyval, &pc, &found);
    if (rc != MPI_SUCCESS || found || !make) {
        *out = found ? pc : NULL;
        return rc;
    }
    if ((rc = PMPI_Comm_size(user_comm, &p)) != MPI_SUCCESS)
        return rc;
    return make_record(user_comm, p, out);
}

int mpiopt_private_hold(MPI_Comm user_comm, mpiopt_private_comm **held)
{
    private_comm *pc;
    int rc = private_of(user_comm, 0, &pc);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!pc)
        return MPI_ERR_INTERN;  /* mpiopt_private_exists said yes before the call was planned */
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
    return private_of(user_comm, 1, &pc);
}

int mpiopt_private_exists(MPI_Comm user_comm)
{
    private_comm *pc;
    return private_of(user_comm, 0, &pc) == MPI_SUCCESS && pc;
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
    c->comm = c->user_comm = user_comm;
    if (c->size > 1) {
        private_comm *pc;
        if ((rc = private_of(user_comm, !nonblocking, &pc)) != MPI_SUCCESS)
            return rc;
        if (!pc)
            return MPI_ERR_INTERN;  /* a nonblocking call is planned only where there is one */
        c->comm = pc->dup;
        c->msg_rank = pc->world_rank;
        c->tag = pc->tag_base;
        c->node_window = &pc->node_window;
        c->node_layout = &pc->node_layout;
        c->measured = pc->measured;
    }
    PMPI_Comm_rank(user_comm, &c->rank);
    c->datatype = MPI_BYTE;
    c->extent = 1;
    return MPI_SUCCESS;
}

int mpiopt_coll_init_comm(mpiopt_coll *c, MPI_Comm user_comm)
{
    return init_comm(c, user_comm, 0);
}

int mpiopt_private_tag(mpiopt_private_comm *pc)
{
    return pc->tag_base + 1 + (int)(pc->schedules++ % (unsigned)(pc->tags - 1));
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
