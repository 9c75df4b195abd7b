/* MPI_Op_create / MPI_Op_free for LD_PRELOAD: with MPIOPT_USER_OP_THREADS=N (N >= 1; unset or 0
 * = off), every commutative user op is created as a threaded op on N threads (src/user_op.c), so
 * MPI_Reduce, MPI_Allreduce and MPI_Reduce_local — the vendor's or mpiopt's algorithms — run it
 * chunked across threads. Non-commutative ops are left to the vendor: their operand order is
 * what the program asked for, and the drop-in does not second-guess it. Ops created through the
 * mpif.h / `use mpi` bindings are handled too (their user function has the Fortran convention:
 * count and datatype handle by reference); the mpi_f08 bindings are not intercepted. The program
 * promises nothing about its op being element-wise: MPI itself already calls user functions on
 * pieces of a buffer (pipelined and segmented collectives), so a correct MPI op is. */
#include "mpiopt.h"
#include "fortran.h"
#include "chain.h"
#include "user_op.h"
#include "coll/engine/handles.h"
#include "kernels/kernels.h"

/* MPIOPT_USER_OP_THREADS; 0 (off) when unset or not a count */
static int user_op_threads(void)
{
    long v = mpiopt_env_long("MPIOPT_USER_OP_THREADS", 0);
    return v < 4096 ? (int)v : 0;
}

MPIOPT_C_ENTRY(Op_create, (MPI_User_function *user_fn, int commute, MPI_Op *op),
               (user_fn, commute, op))
{
    int threads = user_op_threads();
    if (threads > 0 && commute &&
        mpiopt_user_op_create((void (*)(void))user_fn, 0, 1, threads, op) == MPI_SUCCESS)
        return MPI_SUCCESS;
    return PMPI_Op_create(user_fn, commute, op);
}

/* A pending schedule of mpiopt's may still hold the op: then it is freed when that ends
 * (coll/handles.c). */
MPIOPT_C_ENTRY(Op_free, (MPI_Op *op), (op))
{
    return mpiopt_op_free(op);
}

#ifdef MPIOPT_HAVE_MPI_FINT    /* Fortran handles: not in the MPI standard ABI (CMakeLists.txt) */
/* The vendor's Fortran MPI_OP_CREATE records that the function has the Fortran convention; a
 * Fortran op we do not thread must therefore go back through the vendor's own Fortran entry,
 * which a preloaded symbol hides. So without threading (or when the pool is full) we report the
 * error rather than guess: only taken when MPIOPT_USER_OP_THREADS is set. */
static void op_create_f(void (*fn)(void), MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierr)
{
    MPI_Op c_op = MPI_OP_NULL;
    int threads = user_op_threads();
    int rc = mpiopt_user_op_create(fn, 1, *commute != 0, threads > 0 && *commute ? threads : 1,
                                   &c_op);
    *op = rc == MPI_SUCCESS ? PMPI_Op_c2f(c_op) : 0;
    if (ierr)
        *ierr = rc;
}

static void op_free_f(MPI_Fint *op, MPI_Fint *ierr)
{
    MPI_Op c_op = PMPI_Op_f2c(*op);
    int rc = mpiopt_op_free(&c_op);
    *op = PMPI_Op_c2f(c_op);
    if (ierr)
        *ierr = rc;
}

MPIOPT_FORTRAN_ENTRY(op_create_f, (void (*a)(void), MPI_Fint *b, MPI_Fint *c, MPI_Fint *d),
                       (a, b, c, d), mpi_op_create, MPI_OP_CREATE)
MPIOPT_FORTRAN_ENTRY(op_free_f, (MPI_Fint *a, MPI_Fint *b), (a, b), mpi_op_free, MPI_OP_FREE)

MPIOPT_FORTRAN_F08_ENTRY(op_free_f, (MPI_Fint *a, MPI_Fint *b), (a, b), mpi_op_free)
#endif
