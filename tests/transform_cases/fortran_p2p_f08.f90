! Point-to-point in free form with `use mpi_f08` (TYPE(MPI_Status), no ierror), for mpiopt
! transform (tests/python/test_transform_fortran_p2p.py): a send/receive pair whose status
! components are read, a 2-D halo exchange of columns in a time-step loop, a receive with
! MPI_ANY_TAG and a receive into an array section (both stay blocking).
! Markers, each about the nearest MPI call above it:
!   CONFLICT   its wait comes at this line or earlier
!   OVERLAP    its wait comes after this line
!   UNCHANGED  the call on this line stays blocking
program fortran_p2p_f08
  use mpi_f08
  implicit none
  integer, parameter :: m = 6, n = 5, nsteps = 3
  integer :: rank, nprocs, left, right, i, j, step, tagsum
  type(MPI_Status) :: st
  double precision :: a(m), b(m), w(m), u(m, n), unew(m, n), gw(m), ge(m), s, t
  double precision :: buf(2 * m)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)

  ! 1. rank 1 sends to rank 0, which reads the status's components (filled in at the wait)
  a = rank + 1.5d0
  b = 0
  tagsum = 0
  if (rank == 1) then
    call MPI_Send(a, m, MPI_DOUBLE_PRECISION, 0, 11, MPI_COMM_WORLD)
    w = a * 3  ! OVERLAP
    a(2) = 0  ! CONFLICT
  else if (rank == 0 .and. nprocs > 1) then
    call MPI_Recv(b, m, MPI_DOUBLE_PRECISION, 1, 11, MPI_COMM_WORLD, st)
    w = a * 2  ! OVERLAP
    tagsum = st%MPI_TAG + 100 * st%MPI_SOURCE  ! CONFLICT
    write (*, '(a, i6, 6f8.2)') 'pair', tagsum, b
  end if

  ! 2. a halo exchange of columns in a time-step loop: the interior columns overlap it
  left = rank - 1
  right = rank + 1
  if (left < 0) left = MPI_PROC_NULL
  if (right >= nprocs) right = MPI_PROC_NULL
  do j = 1, n
    do i = 1, m
      u(i, j) = rank * 100 + 10 * j + i
    end do
  end do
  gw = 0
  ge = 0
  do step = 1, nsteps
    call MPI_Send(u(1, n), m, MPI_DOUBLE_PRECISION, right, 21, MPI_COMM_WORLD)
    call MPI_Recv(gw, m, MPI_DOUBLE_PRECISION, left, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call MPI_Send(u(1, 1), m, MPI_DOUBLE_PRECISION, left, 22, MPI_COMM_WORLD)
    call MPI_Recv(ge, m, MPI_DOUBLE_PRECISION, right, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    do j = 2, n - 1
      do i = 1, m
        unew(i, j) = 0.5d0 * u(i, j) + 0.25d0 * (u(i, j - 1) + u(i, j + 1))  ! OVERLAP
      end do
    end do
    do i = 1, m
      unew(i, 1) = 0.5d0 * u(i, 1) + 0.25d0 * (gw(i) + u(i, 2))
      unew(i, n) = 0.5d0 * u(i, n) + 0.25d0 * (u(i, n - 1) + ge(i))
    end do
    u = unew
  end do
  s = sum(u)
  call MPI_Allreduce(s, t, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) write (*, '(a, f16.4)') 'halo', t

  ! 3. a receive with any tag stays blocking
  if (rank == 0) then
    s = 0
    do i = 1, nprocs - 1
      call MPI_Recv(t, 1, MPI_DOUBLE_PRECISION, i, MPI_ANY_TAG, MPI_COMM_WORLD, st)  ! UNCHANGED
      s = s + t * st%MPI_TAG
    end do
    write (*, '(a, f12.3)') 'any_tag', s
  else
    t = rank * 0.25d0
    call MPI_Send(t, 1, MPI_DOUBLE_PRECISION, 0, rank, MPI_COMM_WORLD)
  end if

  ! 4. a receive into an array section stays blocking
  buf = -1
  if (rank == 1) then
    call MPI_Send(a, m, MPI_DOUBLE_PRECISION, 0, 31, MPI_COMM_WORLD)
  else if (rank == 0 .and. nprocs > 1) then
    call MPI_Recv(buf(2:m + 1), m, MPI_DOUBLE_PRECISION, 1, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE)  ! UNCHANGED
    write (*, '(a, 12f7.2)') 'section', buf
  end if
  call MPI_Finalize()
end program fortran_p2p_f08
