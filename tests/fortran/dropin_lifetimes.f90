! An unmodified Fortran MPI program (`use mpi`) for the drop-in's conformance (issue 21, the
! Fortran side of tests/c/plain_lifetimes.c): a user op freed with MPI_OP_FREE and a communicator
! freed with MPI_COMM_FREE while a nonblocking allreduce on them is pending (another op and
! communicator, likely with the freed handles, used in between), and bad arguments under
! MPI_ERRORS_RETURN answered with the standard's error classes. Prints "flifetimes: ok".
subroutine int_sum(invec, inoutvec, len, datatype)
  implicit none
  integer :: len, datatype, i
  integer :: invec(len), inoutvec(len)
  do i = 1, len
    inoutvec(i) = inoutvec(i) + invec(i)
  end do
end subroutine

subroutine int_max_plus(invec, inoutvec, len, datatype)
  implicit none
  integer :: len, datatype, i
  integer :: invec(len), inoutvec(len)
  do i = 1, len
    inoutvec(i) = max(inoutvec(i), invec(i)) + 1000
  end do
end subroutine

program dropin_lifetimes
  use mpi
  implicit none
  integer, parameter :: n = 300
  integer :: ierr, rank, p, i, op, other, comm, newcomm, req, cls, rc
  integer :: a(n), b(n), c(n)
  logical :: bad, anybad
  external :: int_sum, int_max_plus

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  bad = .false.
  do i = 1, n
    a(i) = rank + i
  end do

  ! a user op freed before the wait; another op takes its place meanwhile
  call MPI_Op_create(int_sum, .true., op, ierr)
  call MPI_Iallreduce(a, b, n, MPI_INTEGER, op, MPI_COMM_WORLD, req, ierr)
  call MPI_Op_free(op, ierr)
  bad = bad .or. op /= MPI_OP_NULL
  call MPI_Op_create(int_max_plus, .true., other, ierr)
  call MPI_Allreduce(a, c, n, MPI_INTEGER, other, MPI_COMM_WORLD, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  bad = bad .or. .not. is_sum(b)
  call MPI_Op_free(other, ierr)

  ! a communicator freed with the allreduce on it pending
  ! (a blocking reduction first: under Open MPI only those make mpiopt's private communicator,
  ! and a nonblocking call on a communicator without one goes to the vendor, which crashes here)
  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
  call MPI_Allreduce(a, c, n, MPI_INTEGER, MPI_SUM, comm, ierr)
  call MPI_Iallreduce(a, b, n, MPI_INTEGER, MPI_SUM, comm, req, ierr)
  call MPI_Comm_free(comm, ierr)
  bad = bad .or. comm /= MPI_COMM_NULL
  call MPI_Comm_dup(MPI_COMM_WORLD, newcomm, ierr)
  call MPI_Allreduce(a, c, n, MPI_INTEGER, MPI_SUM, newcomm, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  bad = bad .or. .not. is_sum(b) .or. .not. is_sum(c)

  ! bad arguments: the standard's classes, returned
  call MPI_Comm_set_errhandler(newcomm, MPI_ERRORS_RETURN, ierr)
  call MPI_Allreduce(a, b, -1, MPI_INTEGER, MPI_SUM, newcomm, rc)
  call MPI_Error_class(rc, cls, ierr)
  bad = bad .or. cls /= MPI_ERR_COUNT
  call MPI_Reduce(a, b, n, MPI_INTEGER, MPI_SUM, p, newcomm, rc)
  call MPI_Error_class(rc, cls, ierr)
  bad = bad .or. cls /= MPI_ERR_ROOT
  call MPI_Iallreduce(a, b, -3, MPI_INTEGER, MPI_SUM, newcomm, req, rc)
  call MPI_Error_class(rc, cls, ierr)
  bad = bad .or. cls /= MPI_ERR_COUNT
  call MPI_Ireduce(a, b, n, MPI_INTEGER, MPI_OP_NULL, 0, newcomm, req, rc)
  call MPI_Error_class(rc, cls, ierr)
  bad = bad .or. cls /= MPI_ERR_OP
  call MPI_Comm_free(newcomm, ierr)

  call MPI_Allreduce(bad, anybad, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (anybad) then
      print '(a)', 'flifetimes: FAILED'
    else
      print '(a)', 'flifetimes: ok'
    end if
  end if
  call MPI_Finalize(ierr)

contains

  logical function is_sum(x)
    integer, intent(in) :: x(n)
    integer :: j
    is_sum = .true.
    do j = 1, n
      if (x(j) /= p * j + p * (p - 1) / 2) is_sum = .false.
    end do
  end function

end program
