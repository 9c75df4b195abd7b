! The `mpiopt` Fortran module: threaded user-defined reduction ops (see include/mpiopt.h).
!
!   use mpiopt
!   call mpiopt_op_create_threaded(user_fn, commute, op, ierror)
!
! user_fn is an MPI user function with the usual Fortran interface
! (subroutine user_fn(invec, inoutvec, len, datatype)). The op's calls cut the buffer into
! cache-sized chunks run as OpenMP tasks, each calling user_fn on its chunk: user_fn must be
! element-wise (inoutvec(i) depends only on invec(i) and inoutvec(i)); then results are bit for
! bit those of one call. Free the op with MPI_Op_free. Build: -I<mpiopt lib dir> (a build tree)
! or -I<prefix>/include (installed), link -lmpiopt_fortran -lmpiopt.
module mpiopt
  implicit none
  private
  public :: mpiopt_op_create_threaded
contains
  subroutine mpiopt_op_create_threaded(user_fn, commute, op, ierror)
    external :: user_fn
    logical, intent(in) :: commute
    integer, intent(out) :: op, ierror
    integer :: commute_int
    external :: mpiopt_op_create_threaded_f   ! src/user_op.c, gfortran's convention
    commute_int = 0
    if (commute) commute_int = 1
    call mpiopt_op_create_threaded_f(user_fn, commute_int, op, ierror)
  end subroutine mpiopt_op_create_threaded
end module mpiopt
