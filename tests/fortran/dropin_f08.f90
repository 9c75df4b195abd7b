! An unmodified `use mpi_f08` program for the drop-in (issue 27): MPI_Allreduce (also in place),
! MPI_Reduce to the last rank and MPI_Reduce_local, with and without ierror; MPI_Iallreduce and
! MPI_Ireduce completed by MPI_Wait, MPI_Test, MPI_Waitall, MPI_Waitany and
! MPI_Request_get_status. Open MPI's f08 binding calls PMPI_* directly, so the drop-in defines
! its f08 names; MPICH's calls the C MPI_* functions, except its completion calls, which call
! PMPI_Wait & co. (a program of this kind hung there). Prints "ff08: ok".
program dropin_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 1000
  integer :: rank, p, i, ierr, which
  double precision :: a(n), b(n), c(n), d(n)
  logical :: bad, anybad, done
  type(MPI_Request) :: req, reqs(2)
  type(MPI_Status) :: status

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, p)
  bad = .false.
  do i = 1, n
    a(i) = rank + i
  end do

  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  bad = bad .or. ierr /= MPI_SUCCESS .or. .not. is_sum(b)
  c = a
  call MPI_Allreduce(MPI_IN_PLACE, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  bad = bad .or. .not. is_sum(c)
  b = -1
  call MPI_Reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, p - 1, MPI_COMM_WORLD, ierr)
  if (rank == p - 1) bad = bad .or. .not. is_sum(b)
  c = 1
  call MPI_Reduce_local(a, c, n, MPI_DOUBLE_PRECISION, MPI_SUM)
  do i = 1, n
    bad = bad .or. c(i) /= a(i) + 1
  end do

  ! nonblocking, each completion call
  b = -1
  call MPI_Iallreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  bad = bad .or. .not. is_sum(b) .or. req /= MPI_REQUEST_NULL
  b = -1
  call MPI_Ireduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, req, ierr)
  done = .false.
  do while (.not. done)
    call MPI_Test(req, done, status)
  end do
  if (rank == 0) bad = bad .or. .not. is_sum(b)
  b = -1
  c = -1
  call MPI_Iallreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1))
  call MPI_Iallreduce(a, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  bad = bad .or. .not. is_sum(b) .or. .not. is_sum(c)
  d = -1
  call MPI_Iallreduce(a, d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1))
  reqs(2) = MPI_REQUEST_NULL
  call MPI_Waitany(2, reqs, which, status)
  bad = bad .or. which /= 1 .or. .not. is_sum(d)
  d = -1
  call MPI_Iallreduce(a, d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req)
  done = .false.
  do while (.not. done)
    call MPI_Request_get_status(req, done, MPI_STATUS_IGNORE)
  end do
  call MPI_Wait(req, status)
  bad = bad .or. .not. is_sum(d)

  call MPI_Allreduce(bad, anybad, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD)
  if (rank == 0) then
    if (anybad) then
      print '(a)', 'ff08: FAILED'
    else
      print '(a)', 'ff08: ok'
    end if
  end if
  call MPI_Finalize()

contains

  logical function is_sum(x)
    double precision, intent(in) :: x(n)
    integer :: j
    is_sum = .true.
    do j = 1, n
      if (x(j) /= p * dble(j) + p * (p - 1) / 2) is_sum = .false.
    end do
  end function

end program
