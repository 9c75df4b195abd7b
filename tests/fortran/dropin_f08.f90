! An unmodified `use mpi_f08` program for the drop-in (issue 27): MPI_Allreduce (also in place),
! MPI_Reduce to the last rank and MPI_Reduce_local, with and without ierror. Open MPI's f08
! binding calls PMPI_* directly, so the drop-in defines its f08 names; MPICH's calls the C
! MPI_* functions. Prints "ff08: ok".
program dropin_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 1000
  integer :: rank, p, i, ierr
  double precision :: a(n), b(n), c(n)
  logical :: bad, anybad

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
