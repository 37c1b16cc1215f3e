"""Load the deployed extension as the package does and call its Fortran
routines directly, on inputs of the verifier's.

Prints JSON: the file the module was loaded from, whether that file is
mapped into this process (a real extension is), the type of BRSOLV's
wrapper (f2py's is `fortran`), and for each (N, m) what BRSOLV and BRRES
return from the sine initial guess. Run from the artifact's directory.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.getcwd())
import bratu._bratu as ext  # noqa: E402


def mapped_files():
    """The files mapped into this process (the sixth field of its maps)."""
    with open("/proc/self/maps") as maps:
        fields = [line.split(None, 5) for line in maps]
    return {f[5].strip() for f in fields if len(f) == 6}


def solve(N, m):
    x = np.arange(1, N + 1, dtype=float) / (N + 1)
    t = math.acosh(math.exp(0.5 * m))
    u, lam, nit, info = ext.brsolv(m, m * np.sin(np.pi * x), 8.0 * t * t * math.exp(-m), 1e-12, 50)
    q = (N + 1) // 4
    return {"lambda": float(lam), "newton": int(nit), "info": int(info),
            "residual": float(ext.brres(u, lam)),
            "u_quarter": float(u[q - 1]), "u_three_quarters": float(u[N - q])}


path = os.path.realpath(ext.__file__)
print(json.dumps({
    "file": path,
    "mapped": path in mapped_files(),
    "wrapper": type(ext.brsolv).__name__,
    "solve": {"%d_%g" % (N, m): solve(N, m) for N, m in [(63, 0.5), (127, 1.2), (127, 4.0)]},
}, indent=1, sort_keys=True))
