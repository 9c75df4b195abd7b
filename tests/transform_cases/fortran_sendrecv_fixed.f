C MPI_SENDRECV in fixed form with include 'mpif.h', for mpiopt transform
C (tests/python/test_transform_fortran_p2p.py): a periodic 1-D halo
C exchange in a time-step loop, the interior update between the
C exchange and the use of the ghost cells; a wildcard tag stays blocking.
C Markers as in fortran_sendrecv_free.f90.
      PROGRAM SRFIX
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER N, NSTEPS
      PARAMETER (N = 6, NSTEPS = 4)
      INTEGER IERR, RANK, NPROCS, LEFT, RIGHT, I, STEP
      INTEGER STATUS(MPI_STATUS_SIZE)
      DOUBLE PRECISION U(0:N+1), UNEW(N), SL, SR, GL, GR, S, RES
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NPROCS, IERR)
      LEFT = MOD(RANK + NPROCS - 1, NPROCS)
      RIGHT = MOD(RANK + 1, NPROCS)
      DO 10 I = 0, N + 1
         U(I) = RANK * N + I
   10 CONTINUE
      DO STEP = 1, NSTEPS
         SR = U(N)
         SL = U(1)
         CALL MPI_SENDRECV(SR, 1, MPI_DOUBLE_PRECISION, RIGHT, 1,
     &                     GL, 1, MPI_DOUBLE_PRECISION, LEFT, 1,
     &                     MPI_COMM_WORLD, STATUS, IERR)
         CALL MPI_SENDRECV(SL, 1, MPI_DOUBLE_PRECISION, LEFT, 2,
     &                     GR, 1, MPI_DOUBLE_PRECISION, RIGHT, 2,
     &                     MPI_COMM_WORLD, MPI_STATUS_IGNORE, IERR)
         DO I = 2, N - 1
            UNEW(I) = 0.5D0 * U(I) + 0.25D0 * (U(I - 1) + U(I + 1))
C OVERLAP
         END DO
         U(0) = GL + STATUS(MPI_SOURCE) * 0
         U(N + 1) = GR
         UNEW(1) = 0.5D0 * U(1) + 0.25D0 * (U(0) + U(2))
         UNEW(N) = 0.5D0 * U(N) + 0.25D0 * (U(N - 1) + U(N + 1))
         DO I = 1, N
            U(I) = UNEW(I)
         END DO
      END DO
      S = 0
      DO I = 1, N
         S = S + U(I)
      END DO
      CALL MPI_SENDRECV(S, 1, MPI_DOUBLE_PRECISION, RIGHT, 9,
     &                  GL, 1, MPI_DOUBLE_PRECISION, LEFT, MPI_ANY_TAG,
     &                  MPI_COMM_WORLD, STATUS, IERR)
C UNCHANGED
      S = S + GL
      CALL MPI_ALLREDUCE(S, RES, 1, MPI_DOUBLE_PRECISION, MPI_SUM,
     &                   MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) WRITE (*, '(A, F16.6)') 'halo', RES
      CALL MPI_FINALIZE(IERR)
      END
