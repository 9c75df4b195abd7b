! An unmodified Fortran MPI program (`use mpi`) for the drop-in's MPI_SCAN, MPI_EXSCAN,
! MPI_REDUCE_SCATTER_BLOCK and MPI_REDUCE_SCATTER: plain, MPI_IN_PLACE and nonblocking (the MPI_I
! forms waited with MPI_WAIT). Prints "ffamily: ok".
program dropin_reduction_family
  use mpi
  implicit none
  integer, parameter :: n = 3001
  integer :: ierr, rank, p, i, req
  logical :: bad, anybad
  double precision :: a(n), b(n), incl(n), excl(n)
  double precision, allocatable :: s(:), blk(:)
  integer, allocatable :: counts(:)

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
  ! reduce-scatter of p*n elements, element k of rank q being q + k: block `rank` sums to
  ! p*(p-1)/2 + p*k
  allocate(s(n * p), blk(n * p), counts(p))
  counts = n
  do i = 1, n * p
    s(i) = rank + i
  end do
  do i = 1, n
    incl(i) = p * (p - 1) / 2 + p * (rank * n + i)
  end do
  call MPI_Reduce_scatter_block(s, blk, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS .or. any(blk(1:n) /= incl)) bad = .true.
  call MPI_Reduce_scatter(s, blk, counts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS .or. any(blk(1:n) /= incl)) bad = .true.
  blk = s
  call MPI_Reduce_scatter_block(MPI_IN_PLACE, blk, n, MPI_DOUBLE_PRECISION, MPI_SUM, &
                                MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS .or. any(blk(1:n) /= incl)) bad = .true.
  call MPI_Ireduce_scatter_block(s, blk, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, &
                                 ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS .or. any(blk(1:n) /= incl)) bad = .true.
  call MPI_Ireduce_scatter(s, blk, counts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS .or. any(blk(1:n) /= incl)) bad = .true.
  call MPI_Allreduce(bad, anybad, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (anybad) then
      print '(A)', 'ffamily: FAILED'
    else
      print '(A)', 'ffamily: ok'
    end if
  end if
  call MPI_Finalize(ierr)
end program dropin_reduction_family
