! An unmodified Fortran MPI program (`use mpi`) for the profiler's call sites: the same
! MPI_Allreduce at several lines and depths, as tests/c/plain_sites.c. Counts per rank:
! site:A 3 (first_part), site:B 5 (second_part), site:H 3 (helper: twice from site:F, once from site:S),
! site:M 1 (main program). Built with -g -O0 (CMakeLists.txt).
program profile_sites
  use mpi
  implicit none
  integer :: ierr, rank
  double precision :: x, y

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  x = 1
  call first_part()
  call second_part()
  call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr) ! site:M
  if (rank == 0) print '(a,f6.1)', 'fsites: ', y
  call MPI_Finalize(ierr)

contains

  subroutine helper()
    call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr) ! site:H
  end subroutine helper

  subroutine first_part()
    integer :: i
    do i = 1, 3
      call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr) ! site:A
    end do
    do i = 1, 2
      call helper() ! site:F
    end do
  end subroutine first_part

  subroutine second_part()
    integer :: i
    do i = 1, 5
      call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr) ! site:B
    end do
    call helper() ! site:S
  end subroutine second_part
end program profile_sites
