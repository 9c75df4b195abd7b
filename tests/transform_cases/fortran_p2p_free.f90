! Point-to-point in free form with `use mpi`, for mpiopt transform (tests/python/
! test_transform_fortran_p2p.py): a send/receive pair with work between, a receive whose status
! is read, a 1-D halo exchange in a time-step loop (blocking, then already nonblocking), a
! wildcard receive and a receive into an array section (both stay blocking).
! Markers, each about the nearest MPI call above it:
!   CONFLICT   its wait comes at this line or earlier
!   OVERLAP    its wait comes after this line
!   UNCHANGED  the call on this line stays blocking
! Rank 0 prints every result, so the original and transformed programs can be compared.
program fortran_p2p_free
  use mpi
  implicit none
  integer, parameter :: n = 8, nsteps = 4
  integer :: ierr, rank, nprocs, next, prev, left, right, i, step
  integer :: status(MPI_STATUS_SIZE), reqs(2)
  double precision :: out(n), in(n), work(n), total(n), x, s
  double precision :: u(n), unew(n), gl, gr, res(2)
  double precision, asynchronous :: el, er
  double precision :: strip(2 * n)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  next = mod(rank + 1, nprocs)
  prev = mod(rank + nprocs - 1, nprocs)

  ! 1. a ring, even ranks sending first: the send overlaps work that only reads its buffer, the
  !    receive work on other data; the status moves to the wait
  do i = 1, n
    out(i) = rank * 10.0d0 + i
  end do
  in = 0
  if (mod(rank, 2) == 0) then
    call MPI_Send(out, n, MPI_DOUBLE_PRECISION, next, 7, MPI_COMM_WORLD, ierr)
    do i = 1, n
      work(i) = out(i) * 2.0d0  ! OVERLAP
    end do
    out(1) = -1.0d0  ! CONFLICT
    call MPI_Recv(in, n, MPI_DOUBLE_PRECISION, prev, 7, MPI_COMM_WORLD, status, ierr)
    work(2) = work(2) + 1.0d0  ! OVERLAP
    work(3) = work(3) + status(MPI_SOURCE)  ! CONFLICT
  else
    call MPI_Recv(in, n, MPI_DOUBLE_PRECISION, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    do i = 1, n
      work(i) = out(i) * 2.0d0  ! OVERLAP
    end do
    call MPI_Ssend(out, n, MPI_DOUBLE_PRECISION, next, 7, MPI_COMM_WORLD, ierr)
    out(1) = -1.0d0  ! CONFLICT
  end if
  work = work + in + out
  call MPI_Allreduce(work, total, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a, 8f12.3)') 'ring', total

  ! 2. a 1-D halo exchange in a time-step loop (non-periodic: the ends talk to MPI_PROC_NULL);
  !    the interior update overlaps the exchange of the boundary values
  left = rank - 1
  right = rank + 1
  if (left < 0) left = MPI_PROC_NULL
  if (right >= nprocs) right = MPI_PROC_NULL
  do i = 1, n
    u(i) = rank * n + i
  end do
  gl = 0
  gr = 0
  do step = 1, nsteps
    call MPI_Send(u(n), 1, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
    call MPI_Recv(gl, 1, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Send(u(1), 1, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, ierr)
    call MPI_Recv(gr, 1, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    do i = 2, n - 1
      unew(i) = 0.5d0 * u(i) + 0.25d0 * (u(i - 1) + u(i + 1))  ! OVERLAP
    end do
    unew(1) = 0.5d0 * u(1) + 0.25d0 * (gl + u(2))
    unew(n) = 0.5d0 * u(n) + 0.25d0 * (u(n - 1) + gr)
    u = unew
  end do
  s = sum(u)
  call MPI_Reduce(s, res(1), 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a, f16.6)') 'halo', res(1)

  ! 3. the same exchange already nonblocking (understood, not unknown MPI): the Allreduce's wait
  !    moves past the Irecv and Isend of other buffers
  el = 0
  er = 0
  do step = 1, nsteps
    x = sum(u)
    call MPI_Allreduce(x, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_Irecv(el, 1, MPI_DOUBLE_PRECISION, left, 3, MPI_COMM_WORLD, reqs(1), ierr)  ! OVERLAP
    call MPI_Isend(u(n), 1, MPI_DOUBLE_PRECISION, right, 3, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
    u(1) = u(1) + 0.5d0 * el + 1.0d-3 * s
  end do
  call MPI_Allreduce(u, total, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a, 8f14.4)') 'existing', total

  ! 4. a receive from any source stays blocking (the order of matching is the original's)
  s = 0
  if (rank == 0) then
    do i = 1, nprocs - 1
      call MPI_Recv(x, 1, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, status, ierr)  ! UNCHANGED
      s = s + x
    end do
    write (*, '(a, f10.3)') 'any_source', s
  else
    x = rank + 0.5d0
    call MPI_Send(x, 1, MPI_DOUBLE_PRECISION, 0, 5, MPI_COMM_WORLD, ierr)
  end if

  ! 5. a receive into an array section stays blocking (the compiler may pass a temporary)
  strip = 0
  if (rank == 1) then
    call MPI_Send(out, n, MPI_DOUBLE_PRECISION, 0, 6, MPI_COMM_WORLD, ierr)
  else if (rank == 0 .and. nprocs > 1) then
    call MPI_Recv(strip(1:2 * n:2), n, MPI_DOUBLE_PRECISION, 1, 6, MPI_COMM_WORLD, status, ierr)  ! UNCHANGED
    write (*, '(a, 16f8.2)') 'section', strip
  end if
  call MPI_Finalize(ierr)
end program fortran_p2p_free
