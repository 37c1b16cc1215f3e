C     Small helpers shared with the 2-D code.
      SUBROUTINE DZERO(N, X)
      INTEGER N, I
      DOUBLE PRECISION X(N)
      DO 10 I = 1, N
         X(I) = 0.0D0
   10 CONTINUE
      RETURN
      END
