! A 1-D heat equation in Fortran, for `mpiopt advise` and `mpiopt transform` on Fortran: each rank
! holds a block of the rod, exchanges its edge values with its neighbours (MPI_SENDRECV), updates
! its block, and sums the squared change over all ranks (MPI_ALLREDUCE) while it copies the new
! values back; the sum is read only after the copy, so the transformer can overlap the two.
! usage: heat_f [STEPS (default 200)] [CELLS a rank (default 200000)]
program heat_f
  use mpi
  implicit none
  integer :: ierr, rank, nranks, left, right, step, steps, i, n
  character(len=32) :: arg
  double precision, allocatable :: u(:), unew(:)
  double precision :: local, global, total
  integer :: status(MPI_STATUS_SIZE)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  steps = 200
  n = 200000
  if (command_argument_count() >= 1) then
     call get_command_argument(1, arg)
     read (arg, *) steps
  end if
  if (command_argument_count() >= 2) then
     call get_command_argument(2, arg)
     read (arg, *) n
  end if
  allocate(u(0:n+1), unew(0:n+1))
  left = rank - 1
  right = rank + 1
  if (left < 0) left = MPI_PROC_NULL
  if (right >= nranks) right = MPI_PROC_NULL
  do i = 0, n + 1
     u(i) = 0.0d0
  end do
  if (rank == 0) u(0) = 100.0d0
  unew(0) = u(0)
  unew(n+1) = u(n+1)
  total = 0.0d0
  do step = 1, steps
     call MPI_SENDRECV(u(n), 1, MPI_DOUBLE_PRECISION, right, 1, u(0), 1, MPI_DOUBLE_PRECISION, &
                       left, 1, MPI_COMM_WORLD, status, ierr)
     call MPI_SENDRECV(u(1), 1, MPI_DOUBLE_PRECISION, left, 2, u(n+1), 1, MPI_DOUBLE_PRECISION, &
                       right, 2, MPI_COMM_WORLD, status, ierr)
     if (rank == 0) u(0) = 100.0d0
     local = 0.0d0
     do i = 1, n
        unew(i) = u(i) + 0.25d0 * (u(i-1) - 2.0d0 * u(i) + u(i+1))
        local = local + (unew(i) - u(i))**2
     end do
     call MPI_ALLREDUCE(local, global, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
     do i = 1, n
        u(i) = unew(i)
     end do
     total = total + sqrt(global)
  end do
  if (rank == 0) write (*, '(A, ES22.15)') 'heat_f: total change ', total
  deallocate(u, unew)
  call MPI_FINALIZE(ierr)
end program heat_f
