! An ordinary Fortran MPI program (`use mpi`) for the PMPI-chain tests
! (tests/python/test_pmpi_chain.py): MPI_ALLREDUCE (also MPI_IN_PLACE), MPI_REDUCE at the first
! and the last rank, MPI_IALLREDUCE with MPI_WAIT, two of them in one MPI_WAITALL, each result
! checked exactly. Prints "fchain: ok, N checks" or what was wrong.
program chain_program
  use mpi
  implicit none
  integer, parameter :: n = 1000
  integer :: ierr, rank, p, i, root, req, reqs(2), wrong, checks, all_wrong, all_checks
  double precision :: a(n), b(n), c(n), ranks

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  ranks = p * (p - 1) / 2.0d0
  wrong = 0
  checks = 0
  do i = 1, n
    a(i) = rank + i
  end do

  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(b, 0)
  c = a
  call MPI_Allreduce(MPI_IN_PLACE, c, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(c, 0)
  do root = 0, p - 1, max(p - 1, 1)
    b = -1
    call MPI_Reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    if (rank == root) call expect(b, 0)
  end do
  call MPI_Iallreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call expect(b, 0)
  call MPI_Iallreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Iallreduce(a, c, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call expect(b, 0)
  call expect(c, 1)

  call MPI_Reduce(wrong, all_wrong, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(checks, all_checks, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (all_wrong == 0) then
      print '(a, i0, a)', 'fchain: ok, ', all_checks, ' checks'
    else
      print '(a, i0, a, i0, a)', 'fchain: ', all_wrong, ' of ', all_checks, ' checks wrong'
    end if
  end if
  call MPI_Finalize(ierr)

contains

  ! x(i) is the sum over ranks of r + i (max = 0), or their maximum, p - 1 + i (max = 1)
  subroutine expect(x, max)
    double precision, intent(in) :: x(n)
    integer, intent(in) :: max
    double precision :: want
    do i = 1, n
      if (max == 1) then
        want = p - 1 + i
      else
        want = ranks + p * i
      end if
      checks = checks + 1
      if (x(i) /= want) then
        wrong = wrong + 1
        if (wrong <= 5) print '(a, i0, a, f0.1, a, f0.1)', 'fchain: element ', i, ' is ', x(i), &
                                                         ', expected ', want
      end if
    end do
  end subroutine expect
end program chain_program
