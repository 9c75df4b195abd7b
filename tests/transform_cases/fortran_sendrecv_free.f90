! MPI_SENDRECV in free form with `use mpi`, for mpiopt transform (tests/python/
! test_transform_fortran_p2p.py): a 1-D halo exchange in a time-step loop whose interior update
! overlaps both halves, an exchange whose status is read, and calls that stay blocking (a wildcard
! source, a receive into an array section, a send buffer that is a dummy of an external procedure,
! MPI_SENDRECV_REPLACE). Markers, each about the nearest MPI call above it:
!   SEND       the send half's wait comes at this line or earlier
!   RECV       the receive half's wait comes at this line or earlier
!   OVERLAP    both halves' waits come after this line
!   UNCHANGED  the call on the line above stays blocking
! Rank 0 prints every result, so the original and transformed programs can be compared.
program fortran_sendrecv_free
  use mpi
  implicit none
  integer, parameter :: n = 8, nsteps = 5
  integer :: ierr, rank, nprocs, left, right, i, step, src
  integer :: st(MPI_STATUS_SIZE)
  double precision :: u(0:n + 1), unew(n), sl, sr, gl, gr, s, res, tot(4)
  double precision :: strip(2 * n), ring(n)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  left = rank - 1
  right = rank + 1
  if (left < 0) left = MPI_PROC_NULL
  if (right >= nprocs) right = MPI_PROC_NULL
  do i = 0, n + 1
    u(i) = rank * n + i
  end do

  ! 1. the halo: boundary values copied to scalars, exchanged while the interior is updated
  do step = 1, nsteps
    sr = u(n)
    sl = u(1)
    call MPI_Sendrecv(sr, 1, MPI_DOUBLE_PRECISION, right, 1, gl, 1, MPI_DOUBLE_PRECISION, left, 1, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Sendrecv(sl, 1, MPI_DOUBLE_PRECISION, left, 2, gr, 1, MPI_DOUBLE_PRECISION, right, 2, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    do i = 2, n - 1
      unew(i) = 0.5d0 * u(i) + 0.25d0 * (u(i - 1) + u(i + 1))  ! OVERLAP
    end do
    if (left /= MPI_PROC_NULL) u(0) = gl
    if (right /= MPI_PROC_NULL) u(n + 1) = gr
    unew(1) = 0.5d0 * u(1) + 0.25d0 * (u(0) + u(2))
    unew(n) = 0.5d0 * u(n) + 0.25d0 * (u(n - 1) + u(n + 1))
    u(1:n) = unew
  end do
  s = sum(u(1:n))
  call MPI_Allreduce(s, res, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a, f16.6)') 'halo', res

  ! 2. a ring shift whose status is read: the status moves to the receive half's wait
  do i = 1, n
    ring(i) = rank * 100 + i
  end do
  call MPI_Sendrecv(ring, n, MPI_DOUBLE_PRECISION, mod(rank + 1, nprocs), 3, strip, n, &
                    MPI_DOUBLE_PRECISION, mod(rank + nprocs - 1, nprocs), 3, MPI_COMM_WORLD, st, ierr)
  s = 0
  do i = 1, n
    s = s + ring(i)  ! OVERLAP
  end do
  ring(1) = -1  ! SEND
  src = st(MPI_SOURCE)  ! RECV
  tot(1) = s + src + sum(strip(1:n))
  tot(2) = ring(1)

  ! 3. stays blocking: a wildcard source, a section, MPI_SENDRECV_REPLACE, an external's dummy
  call MPI_Sendrecv(ring, n, MPI_DOUBLE_PRECISION, mod(rank + 1, nprocs), 4, strip, n, &
                    MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, st, ierr)
  ! UNCHANGED
  tot(3) = sum(strip(1:n))
  call MPI_Sendrecv(ring, n, MPI_DOUBLE_PRECISION, mod(rank + 1, nprocs), 5, strip(1:2*n:2), n, &
                    MPI_DOUBLE_PRECISION, mod(rank + nprocs - 1, nprocs), 5, MPI_COMM_WORLD, st, ierr)
  ! UNCHANGED
  tot(3) = tot(3) + sum(strip)
  call MPI_Sendrecv_replace(ring, n, MPI_DOUBLE_PRECISION, mod(rank + 1, nprocs), 6, &
                            mod(rank + nprocs - 1, nprocs), 6, MPI_COMM_WORLD, st, ierr)
  ! UNCHANGED
  call shift(ring, n, rank, nprocs, s)
  tot(4) = sum(ring) + s
  call MPI_Reduce(tot, res, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(tot, strip, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a, 4f16.3)') 'ring', strip(1:4)
  call MPI_Finalize(ierr)
end program fortran_sendrecv_free

! an external procedure: its dummies cannot get ASYNCHRONOUS (fortran_write.external_dummy)
subroutine shift(x, n, rank, nprocs, got)
  use mpi
  implicit none
  integer :: n, rank, nprocs, ierr
  double precision :: x(n), got
  call MPI_Sendrecv(x, 1, MPI_DOUBLE_PRECISION, mod(rank + 1, nprocs), 7, got, 1, &
                    MPI_DOUBLE_PRECISION, mod(rank + nprocs - 1, nprocs), 7, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  ! UNCHANGED
  got = got + 1
end subroutine shift
