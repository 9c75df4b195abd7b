/* Schedules (schedule.h): recording an algorithm's actions, and running them later. */
#include <stdlib.h>
#include <string.h>
#include "coll/engine/schedule.h"
#include "coll/engine/handles.h"

typedef enum { POST_SEND, POST_RECV, WAIT, LOCAL } action_kind;

typedef struct {
    action_kind kind;
    mpiopt_local_kind local;
    const void *a;
    void *b, *out;
    size_t n;           /* elements (bytes for a copy) */
    int peer;
    int slot;           /* POST: its index in s->posts; WAIT: first of s->waited */
    int count;          /* WAIT: how many slots */
} action;

struct mpiopt_schedule {
    mpiopt_coll c;      /* what the actions run with (record = NULL) */
    mpiopt_held held;   /* the program's objects c uses, valid until the schedule is freed */
    action *actions;
    int n_actions, cap_actions;
    struct post {
        MPI_Request req;
        MPI_Request *where; /* recording: the algorithm's variable for it (NULL once waited) */
    } *posts;
    int n_posts, cap_posts;
    int *waited;        /* the slots each WAIT covers, one run per WAIT */
    int n_waited, cap_waited;
    void **scratch;
    int n_scratch, cap_scratch;
    int pos;            /* running: the next action */
    int error;          /* recording: the first failure, returned by every later call */
};

/* Grows *arr (elements of size `size`) to hold one more than *n. */
static int grow(void **arr, int *cap, int n, size_t size)
{
    if (n < *cap)
        return 1;
    int cap2 = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, (size_t)cap2 * size);
    if (!p)
        return 0;
    *arr = p;
    *cap = cap2;
    return 1;
}

mpiopt_schedule *mpiopt_schedule_new(void)
{
    mpiopt_schedule *s = calloc(1, sizeof(mpiopt_schedule));
    if (s)   /* holds nothing until attached (a call of count 0 never is); null handles are not 0 */
        s->held = (mpiopt_held){NULL, MPI_DATATYPE_NULL, MPI_OP_NULL};
    return s;
}

int mpiopt_schedule_attach(mpiopt_schedule *s, mpiopt_coll *c, MPI_Comm user_comm)
{
    int rc = mpiopt_hold(&s->held, c, user_comm);
    if (rc != MPI_SUCCESS)
        return rc;
    s->c = *c;
    s->c.src = NULL;
    c->record = s;
    return MPI_SUCCESS;
}

MPI_Comm mpiopt_schedule_user_comm(const mpiopt_schedule *s)
{
    return mpiopt_private_user_comm(s->held.comm);
}

void mpiopt_schedule_free(mpiopt_schedule *s)
{
    if (!s)
        return;
    mpiopt_release(&s->held);
    for (int i = 0; i < s->n_scratch; i++)
        free(s->scratch[i]);
    free(s->scratch);
    free(s->actions);
    free(s->posts);
    free(s->waited);
    free(s);
}

static action *append(mpiopt_schedule *s, action_kind kind)
{
    if (s->error)
        return NULL;
    if (!grow((void **)&s->actions, &s->cap_actions, s->n_actions, sizeof(action))) {
        s->error = MPI_ERR_NO_MEM;
        return NULL;
    }
    action *a = &s->actions[s->n_actions++];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    return a;
}

int mpiopt_schedule_post(mpiopt_schedule *s, int is_send, const void *buf, size_t n, int peer,
                         MPI_Request *req)
{
    *req = MPI_REQUEST_NULL;
    if (!s->error && !grow((void **)&s->posts, &s->cap_posts, s->n_posts, sizeof(struct post)))
        s->error = MPI_ERR_NO_MEM;
    action *a = append(s, is_send ? POST_SEND : POST_RECV);
    if (!a)
        return s->error;
    a->a = buf;
    a->b = (void *)buf;
    a->n = n;
    a->peer = peer;
    a->slot = s->n_posts;
    s->posts[s->n_posts].req = MPI_REQUEST_NULL;
    s->posts[s->n_posts++].where = req;
    return MPI_SUCCESS;
}

int mpiopt_schedule_wait(mpiopt_schedule *s, int n, MPI_Request *reqs)
{
    action *a = append(s, WAIT);
    if (!a)
        return s->error;
    a->slot = s->n_waited;
    /* the posts this wait covers: those whose request variable lies in reqs[0..n) and that no
     * earlier wait covered (an array may be reused for the next step's posts) */
    for (int i = 0; i < s->n_posts; i++) {
        MPI_Request *w = s->posts[i].where;
        if (!w || w < reqs || w >= reqs + n)
            continue;
        if (!grow((void **)&s->waited, &s->cap_waited, s->n_waited, sizeof(int)))
            return s->error = MPI_ERR_NO_MEM;
        s->waited[s->n_waited++] = i;
        s->posts[i].where = NULL;
        a->count++;
    }
    return MPI_SUCCESS;
}

int mpiopt_schedule_local(mpiopt_schedule *s, mpiopt_local_kind kind, const void *a, void *b,
                          void *out, size_t n)
{
    action *x = append(s, LOCAL);
    if (!x)
        return s->error;
    x->local = kind;
    x->a = a;
    x->b = b;
    x->out = out;
    x->n = n;
    return MPI_SUCCESS;
}

void *mpiopt_schedule_scratch(mpiopt_schedule *s, size_t bytes)
{
    void *m;
    if (s->error || !grow((void **)&s->scratch, &s->cap_scratch, s->n_scratch, sizeof(void *)) ||
        !(m = mpiopt_scratch_aligned(bytes)))
        return NULL;
    return s->scratch[s->n_scratch++] = m;
}

int mpiopt_schedule_length(const mpiopt_schedule *s)
{
    return s->n_actions;
}

void mpiopt_schedule_restart(mpiopt_schedule *s)
{
    s->pos = 0;
}

static int run_local(const mpiopt_schedule *s, const action *x)
{
    const mpiopt_coll *c = &s->c;
    switch (x->local) {
    case MPIOPT_LOCAL_REDUCE_LEFT:
        return mpiopt_coll_reduce_left(c, x->a, x->b, x->n);
    case MPIOPT_LOCAL_REDUCE_RIGHT:
        return mpiopt_coll_reduce_right(c, (void *)x->a, x->b, x->n);
    case MPIOPT_LOCAL_REDUCE3:
        return mpiopt_coll_reduce3(c, x->a, x->b, x->out, x->n);
    case MPIOPT_LOCAL_COPY:
        return mpiopt_coll_copy(c, x->out, x->a, x->n);
    }
    return MPI_ERR_INTERN;
}

/* 1 if every request of the wait is complete (blocking: waits for them). */
static int wait_done(mpiopt_schedule *s, const action *x, int blocking, int *rc)
{
    for (int i = 0; i < x->count; i++) {
        MPI_Request *r = &s->posts[s->waited[x->slot + i]].req;
        int flag = 1;
        if (*r == MPI_REQUEST_NULL)
            continue;
        *rc = blocking ? mpiopt_waitall(&s->c, 1, r) : PMPI_Test(r, &flag, MPI_STATUS_IGNORE);
        if (*rc != MPI_SUCCESS || !flag)
            return 0;
    }
    return 1;
}

/* Runs actions from s->pos; stop_at_wait: returns at the first wait without testing it. */
static int run(mpiopt_schedule *s, int blocking, int stop_at_wait, int *done)
{
    int rc = s->error;
    *done = 0;
    while (rc == MPI_SUCCESS && s->pos < s->n_actions) {
        const action *x = &s->actions[s->pos];
        switch (x->kind) {
        case POST_SEND:
            rc = mpiopt_isend(&s->c, x->a, x->n, x->peer, &s->posts[x->slot].req);
            break;
        case POST_RECV:
            rc = mpiopt_irecv(&s->c, x->b, x->n, x->peer, &s->posts[x->slot].req);
            break;
        case WAIT:
            if (stop_at_wait || !wait_done(s, x, blocking, &rc))
                return rc;
            break;
        case LOCAL:
            rc = run_local(s, x);
            break;
        }
        if (rc == MPI_SUCCESS)
            s->pos++;
    }
    *done = rc == MPI_SUCCESS;
    return rc;
}

int mpiopt_schedule_progress(mpiopt_schedule *s, int blocking, int *done)
{
    return run(s, blocking, 0, done);
}

int mpiopt_schedule_start(mpiopt_schedule *s, int *done)
{
    return run(s, 0, 1, done);
}
