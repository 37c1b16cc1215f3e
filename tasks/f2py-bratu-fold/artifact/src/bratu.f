C=======================================================================
C     BRATU.F  --  finite-difference continuation of the Bratu problem
C
C          u'' + LAMBDA exp(u) = 0   on (0,1),   u(0) = u(1) = 0
C
C     Three-point finite differences on N interior points (N odd), so
C     that the midpoint x = 1/2 is the grid point MID = (N+1)/2.
C     The solution branch is parametrised by UMID = u(1/2), which is
C     monotone along the whole branch (through the fold).  For given
C     UMID the N+1 unknowns (U, LAMBDA) are found by Newton's method;
C     each step solves the bordered system by two tridiagonal solves
C     (LAPACK DGTSV with two right-hand sides).
C
C     Wrapped for Python with f2py (see setup.py).
C
C     M. Kessler, 2011/12
C=======================================================================
      SUBROUTINE BRSOLV(N, UMID, U, XLAM, TOL, MAXIT, NIT, INFO)
      INTEGER N, MAXIT, NIT, INFO
      DOUBLE PRECISION UMID, U(N), XLAM, TOL
Cf2py integer intent(hide),depend(u) :: n = len(u)
Cf2py intent(in) umid, tol, maxit
Cf2py intent(in,out) u, xlam
Cf2py intent(out) nit, info
      INTEGER NMAX
      PARAMETER (NMAX=8001)
      DOUBLE PRECISION DL(NMAX), D(NMAX), DU(NMAX), B(NMAX,2)
      DOUBLE PRECISION H2I, EU, DLAM, DNRM, XLAM0, UL, UR
      INTEGER I, MID, IT
C
      INFO = 0
      NIT  = 0
      IF (N .GT. NMAX .OR. MOD(N,2) .EQ. 0) THEN
         INFO = -1
         RETURN
      ENDIF
      MID = (N+1)/2
      H2I = DBLE(N+1)**2
      CALL VCOPY(1, XLAM, XLAM0)
C
      DO 100 IT = 1, MAXIT
C        residual F (into B(.,1), negated) and F_lambda (B(.,2))
         DO 10 I = 1, N
            UL = 0.0D0
            UR = 0.0D0
            IF (I .GT. 1) UL = U(I-1)
            IF (I .LT. N) UR = U(I+1)
            EU = EXP(U(I))
            B(I,1) = -((UL - 2.0D0*U(I) + UR)*H2I + XLAM*EU)
            B(I,2) = EU
            D(I)   = -2.0D0*H2I + XLAM*EU
            DL(I)  = H2I
            DU(I)  = H2I
   10    CONTINUE
         CALL DGTSV(N, 2, DL, D, DU, B, NMAX, INFO)
         IF (INFO .NE. 0) RETURN
C        J a = -F,  J b = F_lambda,  du = a - dlam b,  u_mid + du_mid = UMID
         DLAM = (B(MID,1) - (UMID - U(MID))) / B(MID,2)
         DNRM = ABS(DLAM)
         DO 20 I = 1, N
            U(I) = U(I) + (B(I,1) - DLAM*B(I,2))
            DNRM = MAX(DNRM, ABS(B(I,1) - DLAM*B(I,2)))
   20    CONTINUE
         XLAM = XLAM + DLAM
         NIT = IT
         IF (DNRM .LT. TOL) RETURN
  100 CONTINUE
C     no convergence: restore lambda, flag it
      CALL VCOPY(1, XLAM0, XLAM)
      INFO = 1
      RETURN
      END
C
C-----------------------------------------------------------------------
C     BRRES -- max-norm residual of the discrete equations
C-----------------------------------------------------------------------
      DOUBLE PRECISION FUNCTION BRRES(N, U, XLAM)
      INTEGER N
      DOUBLE PRECISION U(N), XLAM
Cf2py integer intent(hide),depend(u) :: n = len(u)
Cf2py intent(in) u, xlam
      DOUBLE PRECISION H2I, UL, UR, R
      INTEGER I
      H2I = DBLE(N+1)**2
      BRRES = 0.0D0
      DO 10 I = 1, N
         UL = 0.0D0
         UR = 0.0D0
         IF (I .GT. 1) UL = U(I-1)
         IF (I .LT. N) UR = U(I+1)
         R = (UL - 2.0D0*U(I) + UR)*H2I + XLAM*EXP(U(I))
         BRRES = MAX(BRRES, ABS(R))
   10 CONTINUE
      RETURN
      END
C
C-----------------------------------------------------------------------
C     VCOPY -- Y := X  (N elements)
C-----------------------------------------------------------------------
      SUBROUTINE VCOPY(N, X, Y)
      INTEGER N
      DOUBLE PRECISION X(N), Y(N)
      INTEGER I
      DO 10 I = 1, N
         Y(I) = X(I)
   10 CONTINUE
      RETURN
      END
