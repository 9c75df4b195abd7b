C     Fixed-form Fortran 77 style with include 'mpif.h', for mpiopt transform's Fortran front
C     end (tests/python/test_transform_fortran.py): a COMMON block, labelled DO loops, a GO TO,
C     a Reduce, a reduction in a loop, buffers that must stay blocking (an expression, a vector
C     subscript) and an external wrapper subroutine (its dummies: blocking too).
C     Rank 0 prints checksums; the transformed program must print the same.
      PROGRAM FIXED
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER N
      PARAMETER (N = 32)
      INTEGER IERR, RANK, NPROCS, I, K, IDX(4)
      DOUBLE PRECISION X(N), Y(N), Z(N), S, T, U(4)
      DOUBLE PRECISION GSUM(N)
      COMMON /GLOB/ GSUM
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NPROCS, IERR)
      DO 10 I = 1, N
         X(I) = DBLE(RANK + 1) * DBLE(I)
         GSUM(I) = DBLE(I + RANK)
   10 CONTINUE
C     1. the wait may move past the independent loop, up to the read of Y
      CALL MPI_ALLREDUCE(X, Y, N, MPI_DOUBLE_PRECISION, MPI_SUM,
     &                   MPI_COMM_WORLD, IERR)
      DO 20 I = 1, N
         Z(I) = X(I) * 3.0D0
   20 CONTINUE
      S = 0.0D0
      DO 30 I = 1, N
         S = S + Y(I) + Z(I)
   30 CONTINUE
      IF (RANK .EQ. 0) WRITE (6, 100) 'ALLREDUCE', S
C     2. a COMMON block reduced in place: ADDUP reads it through the block
      CALL MPI_ALLREDUCE(MPI_IN_PLACE, GSUM, N, MPI_DOUBLE_PRECISION,
     &                   MPI_MAX, MPI_COMM_WORLD, IERR)
      T = DBLE(RANK)
      CALL ADDUP(T)
      IF (RANK .EQ. 0) WRITE (6, 100) 'COMMON', T
C     3. a Reduce to rank 0, then a jump: the wait stops at the GO TO
      CALL MPI_REDUCE(X, Z, N, MPI_DOUBLE_PRECISION, MPI_SUM, 0,
     &                MPI_COMM_WORLD, IERR)
      K = 0
      IF (RANK .NE. 0) GO TO 40
      K = INT(Z(N))
   40 CONTINUE
      IF (RANK .EQ. 0) WRITE (6, 101) 'REDUCE', K
C     4. an expression as the send buffer: a temporary, stays blocking
      CALL MPI_ALLREDUCE(X(1) * 2.0D0, S, 1, MPI_DOUBLE_PRECISION,
     &                   MPI_SUM, MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) WRITE (6, 100) 'EXPRESSION', S
C     5. a vector subscript: a temporary, stays blocking
      DO 50 I = 1, 4
         IDX(I) = 2 * I
   50 CONTINUE
      CALL MPI_ALLREDUCE(X(IDX), U, 4, MPI_DOUBLE_PRECISION,
     &                   MPI_SUM, MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) WRITE (6, 100) 'VECTOR', U(1) + U(4)
C     6. a reduction in a loop (persistent with --mode persistent on Open MPI)
      T = 0.0D0
      DO 60 K = 1, 3
         S = DBLE(RANK + K)
         CALL MPI_ALLREDUCE(S, U(1), 1, MPI_DOUBLE_PRECISION, MPI_SUM,
     &                      MPI_COMM_WORLD, IERR)
         T = T + U(1)
   60 CONTINUE
      IF (RANK .EQ. 0) WRITE (6, 100) 'LOOP', T
C     7. a wrapper: an external subroutine reducing its dummy arguments
      CALL GTOTAL(X, N, Z)
      IF (RANK .EQ. 0) WRITE (6, 100) 'WRAPPER', Z(1) + Z(N)
      CALL MPI_FINALIZE(IERR)
  100 FORMAT (A12, ES18.10)
  101 FORMAT (A12, I10)
      END

      SUBROUTINE ADDUP(V)
      IMPLICIT NONE
      DOUBLE PRECISION V, GSUM(32)
      COMMON /GLOB/ GSUM
      INTEGER I
      DO 10 I = 1, 32
         V = V + GSUM(I)
   10 CONTINUE
      END

C     An external procedure: its dummies get ASYNCHRONOUS in a BLOCK (in its specification part
C     it would change its interface, which the caller above does not see)
      SUBROUTINE GTOTAL(V, M, RES)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER M, I, IERR
      DOUBLE PRECISION V(M), RES(M), W(64)
      CALL MPI_ALLREDUCE(V, RES, M, MPI_DOUBLE_PRECISION, MPI_SUM,
     &                   MPI_COMM_WORLD, IERR)
      DO 10 I = 1, M
         W(I) = V(I) * 2.0D0
   10 CONTINUE
      RES(1) = RES(1) + W(1)
      END
