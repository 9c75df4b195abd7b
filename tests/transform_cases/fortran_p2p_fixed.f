C     Point-to-point in fixed form with include 'mpif.h', for mpiopt transform
C     (tests/python/test_transform_fortran_p2p.py): a send/receive pair
C     with work between and an integer status array, a halo exchange in
C     a labelled DO loop (blocking, then with MPI_ISEND/MPI_IRECV/
C     MPI_WAITALL already), a wildcard receive and a receive into an
C     array section (both stay blocking).
C     Markers, each about the nearest MPI call above it:
C       CONFLICT   its wait comes at this line or earlier
C       OVERLAP    its wait comes after this line
C       UNCHANGED  the call on this line stays blocking
      PROGRAM P2PFIX
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER N, NSTEPS
      PARAMETER (N = 10, NSTEPS = 4)
      INTEGER IERR, RANK, NPROCS, LEFT, RIGHT, I, STEP, ISRC
      INTEGER STATUS(MPI_STATUS_SIZE), REQS(2)
      INTEGER STATS(MPI_STATUS_SIZE, 2)
      DOUBLE PRECISION A(N), B(N), W(N), U(N), UNEW(N), GL, GR, S, T
      DOUBLE PRECISION BUF(2 * N)
      ASYNCHRONOUS GL, U
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NPROCS, IERR)
C     1. the last rank sends to rank 0, which reads the status
      DO 10 I = 1, N
         A(I) = DBLE(RANK) + DBLE(I) * 0.5D0
         B(I) = 0.0D0
   10 CONTINUE
      IF (RANK .EQ. NPROCS - 1 .AND. NPROCS .GT. 1) THEN
         CALL MPI_SEND(A, N, MPI_DOUBLE_PRECISION, 0, 4,
     &                 MPI_COMM_WORLD, IERR)
         DO 20 I = 1, N
            W(I) = A(I) * 2.0D0
C           OVERLAP
   20    CONTINUE
         A(1) = 0.0D0
C        CONFLICT
      ELSE IF (RANK .EQ. 0 .AND. NPROCS .GT. 1) THEN
         CALL MPI_RECV(B, N, MPI_DOUBLE_PRECISION, NPROCS - 1, 4,
     &                 MPI_COMM_WORLD, STATUS, IERR)
         DO 30 I = 1, N
            W(I) = A(I) * 3.0D0
C           OVERLAP
   30    CONTINUE
         ISRC = STATUS(MPI_SOURCE)
C        CONFLICT
         S = 0.0D0
         DO 40 I = 1, N
            S = S + B(I) * DBLE(I)
   40    CONTINUE
         WRITE (6, 100) 'PAIR', ISRC, S
      END IF
C     2. a halo exchange in a time-step loop (a labelled DO)
      LEFT = RANK - 1
      RIGHT = RANK + 1
      IF (LEFT .LT. 0) LEFT = MPI_PROC_NULL
      IF (RIGHT .GE. NPROCS) RIGHT = MPI_PROC_NULL
      DO 50 I = 1, N
         U(I) = DBLE(RANK * N + I)
   50 CONTINUE
      GL = 0.0D0
      GR = 0.0D0
      DO 70 STEP = 1, NSTEPS
         CALL MPI_SEND(U(N), 1, MPI_DOUBLE_PRECISION, RIGHT, 1,
     &                 MPI_COMM_WORLD, IERR)
         CALL MPI_RECV(GL, 1, MPI_DOUBLE_PRECISION, LEFT, 1,
     &                 MPI_COMM_WORLD, MPI_STATUS_IGNORE, IERR)
         CALL MPI_SEND(U(1), 1, MPI_DOUBLE_PRECISION, LEFT, 2,
     &                 MPI_COMM_WORLD, IERR)
         CALL MPI_RECV(GR, 1, MPI_DOUBLE_PRECISION, RIGHT, 2,
     &                 MPI_COMM_WORLD, MPI_STATUS_IGNORE, IERR)
         DO 60 I = 2, N - 1
            UNEW(I) = 0.5D0 * U(I) + 0.25D0 * (U(I - 1) + U(I + 1))
C           OVERLAP
   60    CONTINUE
         UNEW(1) = 0.5D0 * U(1) + 0.25D0 * (GL + U(2))
         UNEW(N) = 0.5D0 * U(N) + 0.25D0 * (U(N - 1) + GR)
         DO 65 I = 1, N
            U(I) = UNEW(I)
   65    CONTINUE
   70 CONTINUE
      S = 0.0D0
      DO 75 I = 1, N
         S = S + U(I)
   75 CONTINUE
      CALL MPI_REDUCE(S, T, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0,
     &                MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) WRITE (6, 101) 'HALO', T
C     3. the same exchange already nonblocking: understood, not unknown
      DO 80 STEP = 1, NSTEPS
         S = U(1) + U(N)
         CALL MPI_ALLREDUCE(S, T, 1, MPI_DOUBLE_PRECISION, MPI_MAX,
     &                      MPI_COMM_WORLD, IERR)
         CALL MPI_IRECV(GL, 1, MPI_DOUBLE_PRECISION, LEFT, 3,
     &                  MPI_COMM_WORLD, REQS(1), IERR)
C        OVERLAP
         CALL MPI_ISEND(U(N), 1, MPI_DOUBLE_PRECISION, RIGHT, 3,
     &                  MPI_COMM_WORLD, REQS(2), IERR)
         CALL MPI_WAITALL(2, REQS, STATS, IERR)
         U(1) = U(1) + 0.5D0 * GL + 1.0D-3 * T
   80 CONTINUE
      CALL MPI_ALLREDUCE(U, UNEW, N, MPI_DOUBLE_PRECISION, MPI_SUM,
     &                   MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) WRITE (6, 102) 'EXISTING', UNEW
C     4. a receive from any source stays blocking
      IF (RANK .EQ. 0) THEN
         S = 0.0D0
         DO 90 I = 1, NPROCS - 1
            CALL MPI_RECV(T, 1, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 5,
     &                    MPI_COMM_WORLD, STATUS, IERR)
C           UNCHANGED
            S = S + T
   90    CONTINUE
         WRITE (6, 101) 'ANYSOURCE', S
      ELSE
         T = DBLE(RANK) * 1.5D0
         CALL MPI_SEND(T, 1, MPI_DOUBLE_PRECISION, 0, 5,
     &                 MPI_COMM_WORLD, IERR)
      END IF
C     5. a receive into an array section stays blocking
      DO 95 I = 1, 2 * N
         BUF(I) = -1.0D0
   95 CONTINUE
      IF (RANK .EQ. 1) THEN
         CALL MPI_SEND(A, N, MPI_DOUBLE_PRECISION, 0, 6,
     &                 MPI_COMM_WORLD, IERR)
      ELSE IF (RANK .EQ. 0 .AND. NPROCS .GT. 1) THEN
         CALL MPI_RECV(BUF(1:2*N:2), N, MPI_DOUBLE_PRECISION, 1, 6,
     &                 MPI_COMM_WORLD, STATUS, IERR)
C        UNCHANGED
         WRITE (6, 103) 'SECTION', BUF
      END IF
      CALL MPI_FINALIZE(IERR)
  100 FORMAT (A, I4, F14.4)
  101 FORMAT (A, F16.4)
  102 FORMAT (A, 10F12.4)
  103 FORMAT (A, 20F6.2)
      END
