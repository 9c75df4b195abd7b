! An unmodified Fortran MPI program (`use mpi`) for the drop-in's MPI_SCAN and MPI_EXSCAN: plain,
! MPI_IN_PLACE and nonblocking (MPI_ISCAN, MPI_IEXSCAN waited with MPI_WAIT). Prints "fscan: ok".
program dropin_scan
  use mpi
  implicit none
  integer, parameter :: n = 3001
  integer :: ierr, rank, p, i, req
  logical :: bad, anybad
  double precision :: a(n), b(n), incl(n), excl(n)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  bad = .false.
  do i = 1, n
    a(i) = rank + i
    incl(i) = rank * (rank + 1) / 2 + (rank + 1) * i   ! sum over ranks 0..rank of (r + i)
    excl(i) = (rank - 1) * rank / 2 + rank * i          ! over ranks 0..rank-1
  end do
  call MPI_Scan(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS .or. any(b /= incl)) bad = .true.
  call MPI_Exscan(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS .or. (rank > 0 .and. any(b /= excl))) bad = .true.
  b = a
  call MPI_Scan(MPI_IN_PLACE, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS .or. any(b /= incl)) bad = .true.
  call MPI_Iscan(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS .or. any(b /= incl)) bad = .true.
  call MPI_Iexscan(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS .or. (rank > 0 .and. any(b /= excl))) bad = .true.
  call MPI_Allreduce(bad, anybad, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (anybad) then
      print '(A)', 'fscan: FAILED'
    else
      print '(A)', 'fscan: ok'
    end if
  end if
  call MPI_Finalize(ierr)
end program dropin_scan
