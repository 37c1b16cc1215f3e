"""Bratu problem: finite-difference solutions and the fold point."""
from _bratu import brsolv, brres
from continuation import solve_mid, branch, fold, lambda_exact
