! An unmodified Fortran MPI program (`use mpi`) for the LD_PRELOAD drop-in test of the
! nonblocking allreduce / reduce: MPI_IALLREDUCE with MPI_WAIT, beside MPI_ISEND / MPI_IRECV in
! one MPI_WAITALL (with statuses), MPI_TEST loops, MPI_WAITANY, MPI_IREDUCE to the last rank,
! MPI_IN_PLACE. Prints "fnonblocking: ok".
program dropin_nonblocking
  use mpi
  implicit none
  integer, parameter :: n = 5000
  integer :: ierr, rank, p, i, k, sendval, recvval, idx
  integer :: reqs(4), statuses(MPI_STATUS_SIZE, 4)
  logical :: bad, anybad, flag
  double precision :: a(n), b(n), c(n)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  bad = .false.
  do i = 1, n
    a(i) = rank + i
  end do

  ! MPI_IALLREDUCE + MPI_WAIT
  call MPI_Iallreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
  bad = bad .or. reqs(1) /= MPI_REQUEST_NULL .or. .not. is_sum(b)

  ! two allreduces and a point-to-point pair in one MPI_WAITALL
  sendval = 1000 + rank
  c = a
  call MPI_Iallreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Iallreduce(MPI_IN_PLACE, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, &
                      reqs(2), ierr)
  call MPI_Irecv(recvval, 1, MPI_INTEGER, mod(rank + p - 1, p), 5, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Isend(sendval, 1, MPI_INTEGER, mod(rank + 1, p), 5, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Waitall(4, reqs, statuses, ierr)
  bad = bad .or. .not. is_sum(b) .or. .not. is_sum(c)
  bad = bad .or. recvval /= 1000 + mod(rank + p - 1, p)
  bad = bad .or. statuses(MPI_SOURCE, 3) /= mod(rank + p - 1, p) .or. statuses(MPI_TAG, 3) /= 5
  do k = 1, 4
    bad = bad .or. reqs(k) /= MPI_REQUEST_NULL
  end do

  ! MPI_TEST loop
  call MPI_Iallreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(reqs(1), flag, MPI_STATUS_IGNORE, ierr)
  end do
  bad = bad .or. .not. is_sum(b)

  ! MPI_WAITANY over two allreduces: 1-based indices, each once, then MPI_UNDEFINED
  call MPI_Iallreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Iallreduce(a, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitany(2, reqs, idx, MPI_STATUS_IGNORE, ierr)
  k = idx
  call MPI_Waitany(2, reqs, idx, MPI_STATUS_IGNORE, ierr)
  bad = bad .or. k + idx /= 3 .or. .not. is_sum(b) .or. .not. is_sum(c)
  call MPI_Waitany(2, reqs, idx, MPI_STATUS_IGNORE, ierr)
  bad = bad .or. idx /= MPI_UNDEFINED

  ! MPI_IREDUCE to the last rank
  c = 0
  call MPI_Ireduce(a, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, p - 1, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
  if (rank == p - 1) bad = bad .or. .not. is_sum(c)

  call MPI_Allreduce(bad, anybad, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (anybad) then
      print '(a)', 'fnonblocking: FAILED'
    else
      print '(a)', 'fnonblocking: ok'
    end if
  end if
  call MPI_Finalize(ierr)

contains

  logical function is_sum(x)
    double precision, intent(in) :: x(n)
    integer :: j
    is_sum = .true.
    do j = 1, n
      if (x(j) /= p * (p - 1) / 2 + p * j) is_sum = .false.
    end do
  end function is_sum

end program dropin_nonblocking
