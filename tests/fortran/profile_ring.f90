! An unmodified Fortran MPI program (`use mpi`) for the profiler test: each rank sends N doubles
! to rank+1 with MPI_Sendrecv ITERS times, once with MPI_Isend/MPI_Irecv/MPI_Waitall, then one
! MPI_Allreduce of one double, with the loop in a region opened by MPI_Pcontrol(101) (MPIOPT_PCONTROL_BEGIN).
program profile_ring
  use mpi
  implicit none
  integer, parameter :: n = 1000, iters = 3
  integer :: ierr, rank, p, i, next, prev, req(2)
  double precision :: a(n), b(n), x, y

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  next = mod(rank + 1, p)
  prev = mod(rank + p - 1, p)
  a = rank
  call MPI_Pcontrol(101)
  do i = 1, iters
    call MPI_Sendrecv(a, n, MPI_DOUBLE_PRECISION, next, 0, b, n, MPI_DOUBLE_PRECISION, prev, 0, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end do
  call MPI_Pcontrol(-101)
  call MPI_Irecv(b, n, MPI_DOUBLE_PRECISION, prev, 1, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(a, n, MPI_DOUBLE_PRECISION, next, 1, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
  x = rank
  call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,f6.1)', 'fprofile: ', y
  call MPI_Finalize(ierr)
end program profile_ring
