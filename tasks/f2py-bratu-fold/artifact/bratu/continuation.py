"""
Continuation in the midpoint value m = u(1/2) and location of the fold.

The discrete problem for a given m is solved by the Fortran routine
BRSOLV (Newton on the bordered system).  lambda(m) has a single maximum,
the fold lambda_c; we find it by golden-section search.
"""
import math
import numpy as np

from _bratu import brsolv, brres

GOLD = (math.sqrt(5.0) - 1.0) / 2.0


def lambda_exact(m):
    """Continuum branch: u(1/2) = m  <=>  lambda = 8 acosh(e^(m/2))^2 e^(-m)."""
    t = math.acosh(math.exp(0.5 * m))
    return 8.0 * t * t * math.exp(-m)


def initial_guess(N, m):
    x = np.arange(1, N + 1, dtype=np.float) / (N + 1)
    return m * np.sin(np.pi * x)


def solve_mid(N, m, u0=None, lam0=None, tol=1e-12, maxit=50):
    """Solve the N-point discrete problem with u(1/2) = m.

    Returns (u, lambda, newton iterations)."""
    if u0 is None:
        u0 = initial_guess(N, m)
    if lam0 is None:
        lam0 = lambda_exact(m)
    u = np.array(u0, dtype=np.float)
    mid = (N + 1) / 2
    u[mid - 1] = m
    u, lam, nit, info = brsolv(m, u, lam0, tol, maxit)
    if info != 0:
        raise RuntimeError("BRSOLV failed (info=%d) for N=%d, m=%g" % (info, N, m))
    return u, lam, nit


def branch(N, ms):
    """lambda(m) along the branch, warm-started from the previous point."""
    out = []
    u, lam = None, None
    for m in ms:
        u, lam, nit = solve_mid(N, m, u, lam)
        out.append((m, lam, nit, brres(u, lam)))
    return out


def fold(N, a, b, tol=1e-10):
    """Golden-section search for max lambda(m) on [a, b]."""
    cache = {}
    def lam(m):
        if m not in cache:
            cache[m] = solve_mid(N, m)[1]
        return cache[m]
    c = b - GOLD * (b - a)
    d = a + GOLD * (b - a)
    nev = 0
    while abs(b - a) > tol:
        if lam(c) > lam(d):
            b = d
        else:
            a = c
        c = b - GOLD * (b - a)
        d = a + GOLD * (b - a)
        nev += 1
    m = 0.5 * (a + b)
    return m, lam(m), nev
