! The KNL study's program (Fortran; C twin: user_op_reduce.c): MPI_Reduce of --count REALs per
! rank (default 2**26; the study used 2**30) with MPI_SUM, a serial user sum, a vectorized user
! sum (omp simd) and the vectorized sum threaded by mpiopt_op_create_threaded (use mpiopt).
! Prints `VARIANT SECONDS` from rank 0 (mean of --reps calls after a warm-up); checks results.
! Build: mpifort -O3 -march=native -fopenmp -I LIB user_op_reduce_f.f90 -L LIB -lmpiopt_fortran -lmpiopt
subroutine serial_sum(invec, inoutvec, len, datatype)
  integer, intent(in) :: len, datatype
  real, intent(in) :: invec(len)
  real, intent(inout) :: inoutvec(len)
  integer :: i
  !GCC$ unroll 0
  do i = 1, len
    inoutvec(i) = inoutvec(i) + invec(i)
  end do
end subroutine serial_sum

subroutine vectorized_sum(invec, inoutvec, len, datatype)
  integer, intent(in) :: len, datatype
  real, intent(in) :: invec(len)
  real, intent(inout) :: inoutvec(len)
  integer :: i
  !$omp simd
  do i = 1, len
    inoutvec(i) = inoutvec(i) + invec(i)
  end do
end subroutine vectorized_sum

program user_op_reduce_f
  use mpi
  use mpiopt
  implicit none
  external :: serial_sum, vectorized_sum
  integer :: ierr, rank, nranks, count, reps, i, r, v, ops(4), bad
  character(len=32) :: arg, names(4)
  real, allocatable :: sendbuf(:), recvbuf(:)
  double precision :: t, total

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  count = 2**26
  reps = 10
  i = 1
  do while (i <= command_argument_count())
    call get_command_argument(i, arg)
    if (arg == '--count') then
      call get_command_argument(i + 1, arg)
      if (arg(1:2) == '2^') then
        read(arg(3:), *) r
        count = 2**r
      else
        read(arg, *) count
      end if
    else if (arg == '--reps') then
      call get_command_argument(i + 1, arg)
      read(arg, *) reps
    else
      if (rank == 0) print '(2a)', 'user_op_reduce_f: unknown argument ', trim(arg)
      call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
    end if
    i = i + 2
  end do
  allocate(sendbuf(count), recvbuf(count))
  do i = 1, count
    sendbuf(i) = real(mod(i - 1 + rank, 64))
  end do
  names = [character(len=32) :: 'mpi_sum', 'serial', 'vectorized', 'threaded']
  ops(1) = MPI_SUM
  call MPI_Op_create(serial_sum, .true., ops(2), ierr)
  call MPI_Op_create(vectorized_sum, .true., ops(3), ierr)
  call mpiopt_op_create_threaded(vectorized_sum, .true., ops(4), ierr)
  bad = 0
  do v = 1, 4
    total = 0
    do r = 0, reps
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
      t = MPI_Wtime()
      call MPI_Reduce(sendbuf, recvbuf, count, MPI_REAL, ops(v), 0, MPI_COMM_WORLD, ierr)
      if (r > 0) total = total + (MPI_Wtime() - t)
    end do
    if (rank == 0) then
      do i = 1, count
        if (recvbuf(i) /= real(sum([(mod(i - 1 + r, 64), r = 0, nranks - 1)]))) then
          print '(2a)', 'user_op_reduce_f: wrong result for ', trim(names(v))
          bad = 1
          exit
        end if
      end do
      print '(a,1x,f0.6)', trim(names(v)), total / reps
    end if
  end do
  do v = 2, 4
    call MPI_Op_free(ops(v), ierr)
  end do
  call MPI_Finalize(ierr)
  if (bad /= 0) stop 1
end program user_op_reduce_f
