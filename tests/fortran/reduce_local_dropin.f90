! An unmodified Fortran MPI program for the MPI_Reduce_local drop-in test (`use mpi` bindings):
! it prints results where the vendors disagree with mpiopt, so the output shows whether mpiopt
! was preloaded.
program reduce_local_dropin
  use mpi
  use, intrinsic :: ieee_arithmetic
  implicit none
  integer :: ierr, i
  integer(kind=1) :: a8(64), b8(64)
  double precision :: da(64), db(64), ea(64), eb(64)
  real(kind=16) :: qa(5), qb(5)

  call MPI_Init(ierr)
  a8 = 100_1
  b8 = 100_1
  call MPI_Reduce_local(a8, b8, 64, MPI_INTEGER1, MPI_SUM, ierr)
  do i = 1, 64
    da(i) = ieee_value(1.0d0, ieee_quiet_nan)
    db(i) = 1.0d0
    ea(i) = 1.0d0
    eb(i) = ieee_value(1.0d0, ieee_quiet_nan)
  end do
  call MPI_Reduce_local(da, db, 64, MPI_DOUBLE_PRECISION, MPI_MAX, ierr)
  call MPI_Reduce_local(ea, eb, 64, MPI_DOUBLE_PRECISION, MPI_MAX, ierr)
  ! REAL(16) is IEEE binary128: Open MPI reduces it as x87 long double, MPICH gets garbage
  qa = 1.5_16
  qb = 1.25_16
  call MPI_Reduce_local(qa, qb, 5, MPI_REAL16, MPI_SUM, ierr)
  print '(A,I0)', 'int1_sum ', b8(64)
  print '(A,L1)', 'max_nan_in ', ieee_is_nan(db(64))
  print '(A,L1)', 'max_nan_inout ', ieee_is_nan(eb(64))
  print '(A,F6.3)', 'real16_sum ', qb(5)
  print '(A,I0)', 'ierr ', ierr
  call MPI_Finalize(ierr)
end program reduce_local_dropin
