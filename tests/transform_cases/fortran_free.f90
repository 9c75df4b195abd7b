! Free-form Fortran with `use mpi` and one module on `use mpi_f08`, for mpiopt transform's
! Fortran front end: each collective below is a case the tests check (tests/python/
! test_transform_fortran.py). The program prints checksums every rank computes; the transformed
! program must print the same.
module state
  implicit none
  integer, parameter :: n = 64
  double precision :: field(n)          ! a module variable: a global of the program
  double precision :: total
end module state

module f08_part
  ! the mpi_f08 binding: TYPE(MPI_Request) requests, ierror optional
  use mpi_f08
  implicit none
contains
  subroutine f08_sum(x, m, s)
    integer, intent(in) :: m
    double precision, intent(in) :: x(m)
    double precision, intent(out) :: s
    double precision :: local, scratch(m)
    integer :: i
    local = sum(x)
    call MPI_Allreduce(local, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    do i = 1, m                          ! independent of s: the wait may follow this loop
      scratch(i) = x(i) * 2
    end do
    s = s + scratch(1) - scratch(1)
  end subroutine f08_sum
end module f08_part

module wrappers
  use mpi
  implicit none
contains
  ! a small wrapper subroutine around a collective, as real codes have
  subroutine global_sum(v, res, comm)
    double precision, intent(in) :: v
    double precision, intent(out) :: res
    integer, intent(in) :: comm
    integer :: ierr
    call MPI_ALLREDUCE(v, res, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  end subroutine global_sum
end module wrappers

program fortran_free
  use mpi
  use state
  use wrappers
  use f08_part, only: f08_sum
  implicit none
  integer :: ierr, rank, nprocs, i, it
  double precision :: a(n), b(n), c(n), work(n), s, t
  integer :: counts(4)
  double precision :: stats(3)
  common /history/ stats

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)

  do i = 1, n
    a(i) = dble(rank + 1) * i
    field(i) = dble(i) / (rank + 1)
  end do

  ! 1. independent work between the call and the first use of b: the wait moves past it
  call MPI_ALLREDUCE(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    work(i) = a(i) * 0.5d0
  end do
  c = b + work
  if (rank == 0) write (*, '(a, es18.10)') 'allreduce sum ', sum(c)

  ! 2. a module variable as the buffer: a call of an external procedure may change it
  call MPI_ALLREDUCE(MPI_IN_PLACE, field, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  t = sum(a)
  call scale(t)
  if (rank == 0) write (*, '(a, es18.10)') 'field max ', sum(field) + t

  ! 3. a COMMON block as the buffer, inside an IF branch
  stats = (/ dble(rank), dble(rank) * 2, 1d0 /)
  if (nprocs > 1) then
    call MPI_ALLREDUCE(MPI_IN_PLACE, stats, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    s = a(1) + a(2)
  else
    s = a(1) + a(2)
  end if
  if (rank == 0) write (*, '(a, 3es18.10, es18.10)') 'stats ', stats, s

  ! 4. an array section: a temporary copy may be passed, so it stays blocking
  call MPI_ALLREDUCE(a(1:n:2), c(1:n/2), n/2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(a, es18.10)') 'section ', sum(c(1:n/2))

  ! 5. a loop of reductions through the wrapper and a Bcast
  total = 0
  do it = 1, 3
    call global_sum(dble(it * (rank + 1)), s, MPI_COMM_WORLD)
    total = total + s
    counts = rank + it
    call MPI_BCAST(counts, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    total = total + sum(counts)
  end do
  if (rank == 0) write (*, '(a, es18.10)') 'loop total ', total

  ! 6. the mpi_f08 module's reduction, and a contained procedure's
  call f08_sum(a, n, s)
  if (rank == 0) write (*, '(a, es18.10)') 'f08 sum ', s
  call contained_max(rank, s)
  if (rank == 0) write (*, '(a, es18.10)') 'contained max ', s

  call MPI_FINALIZE(ierr)

contains

  subroutine contained_max(r, res)
    integer, intent(in) :: r
    double precision, intent(out) :: res
    double precision :: mine
    mine = dble(r) + a(3)            ! host association: reads the host's `a`
    call MPI_ALLREDUCE(mine, res, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  end subroutine contained_max

end program fortran_free

! an external procedure: the transformer sees its body in this file
subroutine scale(x)
  use state
  implicit none
  double precision, intent(inout) :: x
  x = x * 2 + field(1)             ! reads the module variable
end subroutine scale
