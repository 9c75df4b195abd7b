! The Fortran binding of threaded user ops: mpiopt_op_create_threaded from `use mpiopt` gives an
! op whose MPI_Reduce_local results equal one serial call of the same Fortran user function, bit
! for bit, for REAL and DOUBLE PRECISION, odd counts and counts below the thread count.
! MPIOPT_USER_OP_CHUNK=40 (set by the test) forces many chunks. The program links libmpiopt, whose
! MPI_OP_CREATE entry (the drop-in's) takes over the plain MPI_Op_create: checked the same way.
subroutine real_op(invec, inoutvec, len, datatype)
  integer, intent(in) :: len, datatype
  real, intent(in) :: invec(len)
  real, intent(inout) :: inoutvec(len)
  inoutvec = inoutvec * 0.7 + invec * 1.3
end subroutine real_op

subroutine double_op(invec, inoutvec, len, datatype)
  integer, intent(in) :: len, datatype
  double precision, intent(in) :: invec(len)
  double precision, intent(inout) :: inoutvec(len)
  inoutvec = inoutvec / 3.0d0 - invec
end subroutine double_op

program user_op
  use mpi
  use mpiopt
  implicit none
  external :: real_op, double_op
  integer, parameter :: counts(6) = [1, 2, 7, 63, 1001, 100003]
  integer :: ierr, op_r, op_d, op_plain, k, n, failures, dt
  real, allocatable :: a(:), b(:), r(:)
  double precision, allocatable :: da(:), db(:), dr(:)

  call MPI_Init(ierr)
  failures = 0
  call mpiopt_op_create_threaded(real_op, .true., op_r, ierr)
  if (ierr /= MPI_SUCCESS) failures = failures + 1
  call mpiopt_op_create_threaded(double_op, .true., op_d, ierr)
  if (ierr /= MPI_SUCCESS) failures = failures + 1
  call MPI_Op_create(real_op, .true., op_plain, ierr)
  if (ierr /= MPI_SUCCESS) failures = failures + 1
  do k = 1, size(counts)
    n = counts(k)
    allocate(a(n), b(n), r(n), da(n), db(n), dr(n))
    call random_number(a)
    call random_number(b)
    call random_number(da)
    call random_number(db)
    a = a * 1000 - 500
    r = b
    dr = db
    dt = MPI_REAL
    call real_op(a, r, n, dt)
    call MPI_Reduce_local(a, b, n, MPI_REAL, op_r, ierr)
    if (ierr /= MPI_SUCCESS .or. any(transfer(b, 1, n) /= transfer(r, 1, n))) then
      print *, 'FAIL real n=', n
      failures = failures + 1
    end if
    r = b
    call real_op(a, r, n, dt)
    call MPI_Reduce_local(a, b, n, MPI_REAL, op_plain, ierr)
    if (ierr /= MPI_SUCCESS .or. any(transfer(b, 1, n) /= transfer(r, 1, n))) then
      print *, 'FAIL MPI_Op_create real n=', n
      failures = failures + 1
    end if
    dt = MPI_DOUBLE_PRECISION
    call double_op(da, dr, n, dt)
    call MPI_Reduce_local(da, db, n, MPI_DOUBLE_PRECISION, op_d, ierr)
    if (ierr /= MPI_SUCCESS .or. any(transfer(db, 1_8, n) /= transfer(dr, 1_8, n))) then
      print *, 'FAIL double n=', n
      failures = failures + 1
    end if
    deallocate(a, b, r, da, db, dr)
  end do
  call MPI_Op_free(op_r, ierr)
  call MPI_Op_free(op_d, ierr)
  call MPI_Op_free(op_plain, ierr)
  if (failures == 0) print '(a)', 'fortran user_op: ok'
  call MPI_Finalize(ierr)
  if (failures /= 0) stop 1
end program user_op
