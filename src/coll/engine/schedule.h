/* Schedules: an algorithm's messages and local work as a list of actions, run step by step.
 *
 * The nonblocking and persistent collectives (nonblocking.c) do not have algorithms of their own:
 * they run the blocking ones of the registry once with a recording context (mpiopt_coll.record),
 * in which every call of p2p.c and every reduction or copy of context.c appends an action instead
 * of acting. The actions are what the blocking code would have done, in its order: post a send or
 * a receive, wait for some posted ones, reduce or copy. Running the list later, a step at a time
 * whenever the program tests or waits (the way libNBC progresses its schedules), gives the same
 * messages and the same arithmetic in the same order, so the same bits. A persistent request
 * records once and runs the list again at every MPI_Start.
 *
 * Recording needs the algorithms to decide everything from rank, size and count, never from data
 * (they do), and every buffer to live until the schedule ends: scratch taken while recording
 * belongs to the schedule (scratch.c's keep list). */
#ifndef MPIOPT_SCHEDULE_H
#define MPIOPT_SCHEDULE_H

#include "coll/engine/engine.h"

typedef enum {
    MPIOPT_LOCAL_REDUCE_LEFT,   /* b = a op b                (mpiopt_coll_reduce_left) */
    MPIOPT_LOCAL_REDUCE_RIGHT,  /* a = a op b, b scratch     (mpiopt_coll_reduce_right) */
    MPIOPT_LOCAL_REDUCE3,       /* out = a op b              (mpiopt_coll_reduce3) */
    MPIOPT_LOCAL_COPY           /* out = a, n bytes          (mpiopt_coll_copy) */
} mpiopt_local_kind;

/* A new, empty schedule. */
mpiopt_schedule *mpiopt_schedule_new(void);
/* Makes c (a call on user_comm, just initialised) record into s: gives it the communicator's
 * next schedule tag, takes hold of the objects it uses until s is freed (handles.h), keeps a
 * copy of it to run the actions with, and sets c->record. */
int mpiopt_schedule_attach(mpiopt_schedule *s, mpiopt_coll *c, MPI_Comm user_comm);
/* The program's communicator of the call s records, for raising errors; MPI_COMM_NULL once the
 * program has freed it (or for a communicator of one). */
MPI_Comm mpiopt_schedule_user_comm(const mpiopt_schedule *s);
void mpiopt_schedule_free(mpiopt_schedule *s);

/* ---- recording (called by p2p.c and context.c when c->record is set) ---- */
/* A send (is_send) or receive of n elements with peer; *req is where the algorithm keeps the
 * request: mpiopt_schedule_wait finds the post by that address. */
int mpiopt_schedule_post(mpiopt_schedule *s, int is_send, const void *buf, size_t n, int peer,
                         MPI_Request *req);
/* Waits for the posts whose requests the algorithm keeps in reqs[0..n). */
int mpiopt_schedule_wait(mpiopt_schedule *s, int n, MPI_Request *reqs);
int mpiopt_schedule_local(mpiopt_schedule *s, mpiopt_local_kind kind, const void *a, void *b,
                          void *out, size_t n);
/* Scratch memory that lives as long as the schedule. */
void *mpiopt_schedule_scratch(mpiopt_schedule *s, size_t bytes);

/* The number of actions recorded (posts, waits, local work). */
int mpiopt_schedule_length(const mpiopt_schedule *s);

/* ---- running ---- */
/* From the first action again (a persistent request's MPI_Start). */
void mpiopt_schedule_restart(mpiopt_schedule *s);
/* Runs actions until one must wait for messages that have not arrived. blocking = 1 waits for
 * them instead (mpiopt_waitall: it yields the core where p2p.c says so) and runs to the end.
 * Returns an MPI error code; *done = 1 once the last action has run. */
int mpiopt_schedule_progress(mpiopt_schedule *s, int blocking, int *done);
/* Runs actions up to the first wait, and tests nothing: posts the first messages of a schedule
 * just started (or restarted) without driving the MPI library's progress from the start call. */
int mpiopt_schedule_start(mpiopt_schedule *s, int *done);

#endif
