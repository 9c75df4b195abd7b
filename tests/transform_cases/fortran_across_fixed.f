C A wrapper FUNCTION CONTAINed in a fixed-form program with
C include 'mpif.h', for mpiopt transform
C (tests/python/test_transform_fortran_across.py): its wait moves
C into the time loop of the caller (markers as in fortran_across.f90).
      PROGRAM ACRFIX
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, I, IT
      DOUBLE PRECISION T, W, X
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      W = 0
      DO IT = 1, 4
         X = RANK + IT
         T = GSUM(X)
         DO I = 1, 50
            W = W + SQRT(DBLE(I))
C OVERLAP
         END DO
         IF (RANK .EQ. 0) WRITE (*, '(I3, 2F16.6)') IT, T, W
      END DO
      CALL MPI_FINALIZE(IERR)
      CONTAINS
      DOUBLE PRECISION FUNCTION GSUM(V)
      DOUBLE PRECISION V, LOC
      INTEGER IERR
      LOC = V * 2
      CALL MPI_ALLREDUCE(LOC, GSUM, 1, MPI_DOUBLE_PRECISION, MPI_SUM,
     &                   MPI_COMM_WORLD, IERR)
      GSUM = GSUM + 1
      END FUNCTION GSUM
      END
