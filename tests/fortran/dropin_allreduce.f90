! An unmodified Fortran MPI program (`use mpi`) for the LD_PRELOAD drop-in test of MPI_Allreduce
! and MPI_Reduce: plain and MPI_IN_PLACE forms, a root that is not 0. Prints "fdropin: ok".
program dropin_allreduce
  use mpi
  implicit none
  integer, parameter :: n = 5000
  integer :: ierr, rank, p, i, root
  logical :: bad, anybad
  double precision :: a(n), b(n), want

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  bad = .false.
  do i = 1, n
    a(i) = rank + i
  end do
  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    want = p * (p - 1) / 2 + p * i
    if (b(i) /= want) bad = .true.
  end do
  call MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (any(a /= b)) bad = .true.
  root = p - 1
  do i = 1, n
    a(i) = rank + i
  end do
  if (rank == root) then
    call MPI_Reduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    if (any(a /= b)) bad = .true.
  else
    call MPI_Reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, MPI_COMM_WORLD, ierr)
  end if
  if (ierr /= MPI_SUCCESS) bad = .true.
  call MPI_Allreduce(bad, anybad, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (anybad) then
      print '(A)', 'fdropin: FAILED'
    else
      print '(A)', 'fdropin: ok'
    end if
  end if
  call MPI_Finalize(ierr)
end program dropin_allreduce
