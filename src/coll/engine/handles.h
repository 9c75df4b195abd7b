/* The program's objects a pending schedule uses, kept valid until it ends (handles.c). */
#ifndef MPIOPT_HANDLES_H
#define MPIOPT_HANDLES_H

#include "coll/engine/engine.h"

/* What one schedule holds. */
typedef struct {
    mpiopt_private_comm *comm;  /* a reference to mpiopt's record of the communicator, or NULL */
    MPI_Datatype type;          /* the schedule's own duplicate of a derived datatype, or NULL */
    MPI_Op op;                  /* a user-defined op whose free waits for us, or MPI_OP_NULL */
} mpiopt_held;

/* Takes hold of what a schedule recorded for c on user_comm needs: the communicator's record (and
 * sets c->tag to the schedule's tag when c has one), a duplicate of c->datatype if it is derived
 * (c->datatype then names the duplicate), and c->op if user-defined. With MPIOPT_DEFER_FREES=0
 * (the tests' control) nothing is held: the program's frees act at once, as they did before. */
int mpiopt_hold(mpiopt_held *h, mpiopt_coll *c, MPI_Comm user_comm);
/* Lets go of everything h holds; frees that waited for it happen now. */
void mpiopt_release(mpiopt_held *h);

/* MPI_Op_free for the drop-in: an op a schedule holds is only marked (the program's handle
 * becomes MPI_OP_NULL, as after any free) and freed when the last schedule lets go. */
int mpiopt_op_free(MPI_Op *op);

#endif
