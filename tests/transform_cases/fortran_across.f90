! Collectives in small wrappers, for mpiopt transform (tests/python/test_transform_fortran_across.py):
! a module FUNCTION and a module SUBROUTINE that call MPI_ALLREDUCE and return, called in a loop
! with work after the call, are split (fortran_across.py): their waits move into the caller.
! A CONTAINed subroutine called in an IF branch (its finish after the IF, with a flag). Stays as
! it is: a call whose result is read at once, a call passing an expression where the wrapper's
! buffer is, an external wrapper. Markers, each about the nearest call above it:
!   OVERLAP    the finish comes after this line
!   CONFLICT   the finish comes at this line or earlier
!   UNCHANGED  the call on the line above is left as it is
! Rank 0 prints every result, so the original and transformed programs can be compared.
module sums
  use mpi
  implicit none
contains
  function global_sum(x) result(s)
    double precision, intent(in) :: x
    double precision :: s, local
    integer :: ierr
    local = x
    call MPI_Allreduce(local, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    s = s * 0.5d0
  end function global_sum

  subroutine vec_sum(n, a, b)
    integer, intent(in) :: n
    double precision, intent(in) :: a(n)
    double precision, intent(inout) :: b(n)
    integer :: ierr
    call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end subroutine vec_sum
end module sums

program fortran_across
  use mpi
  use sums
  implicit none
  integer :: ierr, rank, i, it
  double precision :: t, u, w, x, a(4), b(4), m

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  w = 0
  do it = 1, 3
    x = rank + 1.0d0 * it
    t = global_sum(x)
    do i = 1, 100
      w = w + sqrt(dble(i))  ! OVERLAP
    end do
    a = rank + it
    call vec_sum(4, a, b)
    w = w + 1  ! OVERLAP
    b(1) = b(1) + 1  ! CONFLICT
    if (rank == 0) print *, it, t, sum(b), w
  end do

  ! the result is read at once: nothing to overlap, the call stays
  u = global_sum(x)
  ! UNCHANGED
  w = w + u
  ! an expression where the wrapper's buffer (its dummy) is: the finish could not take it again
  call vec_sum(4, a + 1, b)
  ! UNCHANGED
  m = 0
  if (rank >= 0) then
    call local_max(dble(rank), m)
    w = w + 2  ! OVERLAP
  end if
  w = w + 3  ! OVERLAP
  call external_sum(x, u)
  ! UNCHANGED
  if (rank == 0) print *, 'end', w, u, m, b
  call MPI_Finalize(ierr)

contains

  subroutine local_max(v, r)
    double precision, intent(in) :: v
    double precision, intent(inout) :: r
    double precision :: mine
    integer :: ierr
    mine = v
    call MPI_Allreduce(mine, r, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  end subroutine local_max
end program fortran_across

! an external wrapper: its start and finish would need an explicit interface at every caller
subroutine external_sum(x, s)
  use mpi
  implicit none
  double precision :: x, s, local
  integer :: ierr
  local = x
  call MPI_Allreduce(local, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
end subroutine external_sum
