C=======================================================================
C     QWELL  --  bound states of the 1-D Schroedinger equation
C
C        -1/2 PSI'' + V(X) PSI = E PSI,   PSI(-XL) = PSI(XL) = 0
C
C     by the three-point finite-difference formula on NGRID interior
C     points.  The symmetric tridiagonal matrix is handed to LAPACK
C     DSTEV.  Eigenvalues are computed on two or more grids; the last
C     two grids are combined by Richardson extrapolation (the scheme is
C     second order, so E = (4 E(H/2) - E(H)) / 3 when the spacing is
C     halved, i.e. N2 = 2*N1 + 1).
C
C     Input (stdin, list directed):
C        card 1   title (ignored, max 60 chars)
C        card 2   IPOT  PARAM  XL
C                   IPOT=1  V = 1/2 PARAM**2 X**2       (harmonic)
C                   IPOT=2  V = 1/2 X**2 + PARAM X**4   (anharmonic)
C                   IPOT=3  V = PARAM X**4              (pure quartic)
C        card 3   NG  N(1) ... N(NG)     (NG <= 4)
C        card 4   NEIG                   (NEIG <= 10)
C
C     Output (stdout): one record per level,
C        IPOT, LEVEL, E(N(1)), ..., E(N(NG)), E(extrapolated)
C
C     Written for the anharmonic-oscillator study, 1996/97.
C     Compile:  g77 -O2 qwell.f util.f -llapack -lblas
C=======================================================================
      PROGRAM QWELL
      IMPLICIT DOUBLE PRECISION (A-H,O-Z)
      PARAMETER (NMAX=8192, MAXG=4, MAXE=10)
      DIMENSION D(NMAX), E(NMAX), EV(MAXE,MAXG+1), NG(MAXG)
      CHARACTER*60 TITLE
      CHARACTER*80 FMT
C
      READ (*,'(A)') TITLE
      READ (*,*) IPOT, PARAM, XL
      READ (*,*) NGRID, (NG(I), I=1,NGRID)
      READ (*,*) NEIG
      IF (NGRID.LT.1 .OR. NGRID.GT.MAXG) STOP 'QWELL: BAD NGRID'
      IF (NEIG.LT.1 .OR. NEIG.GT.MAXE) STOP 'QWELL: BAD NEIG'
C
      DO 100 IG = 1, NGRID
         N = NG(IG)
         IF (N.LT.NEIG .OR. N.GT.NMAX) STOP 'QWELL: BAD N'
         CALL DZERO(NMAX, D)
         CALL DZERO(NMAX, E)
         CALL DZERO(1, ZDUM)
         H = 2.0D0*XL/DBLE(N+1)
         DO 10 I = 1, N
            X = -XL + DBLE(I)*H
            D(I) = 1.0D0/(H*H) + POTEN(IPOT, PARAM, X)
            E(I) = -0.5D0/(H*H)
   10    CONTINUE
         CALL DSTEV('N', N, D, E, ZDUM, 1, WDUM, INFO)
         IF (INFO.NE.0) THEN
            WRITE (*,*) 'QWELL: DSTEV FAILED, INFO =', INFO
            STOP
         ENDIF
         DO 20 K = 1, NEIG
            EV(K,IG) = D(K)
   20    CONTINUE
  100 CONTINUE
C
C     Richardson extrapolation on the last two grids
      DO 30 K = 1, NEIG
         IF (NGRID.GE.2) THEN
            EV(K,NGRID+1) = (4.0D0*EV(K,NGRID) - EV(K,NGRID-1))/3.0D0
         ELSE
            EV(K,NGRID+1) = EV(K,NGRID)
         ENDIF
   30 CONTINUE
C
      WRITE (FMT,'(A,I1,A)') '(I1,'','',I2,', NGRID+1,
     &                       '('','',1PE21.13))'
      DO 40 K = 1, NEIG
         WRITE (*,FMT) IPOT, K-1, (EV(K,IG), IG=1,NGRID+1)
   40 CONTINUE
      END
C
C-----------------------------------------------------------------------
      DOUBLE PRECISION FUNCTION POTEN(IPOT, PARAM, X)
      IMPLICIT DOUBLE PRECISION (A-H,O-Z)
      IF (IPOT.EQ.1) THEN
         POTEN = 0.5D0*PARAM*PARAM*X*X
      ELSE IF (IPOT.EQ.2) THEN
         POTEN = 0.5D0*X*X + PARAM*X**4
      ELSE IF (IPOT.EQ.3) THEN
         POTEN = PARAM*X**4
      ELSE
         STOP 'POTEN: UNKNOWN IPOT'
      ENDIF
      RETURN
      END
