#!/usr/bin/env python
"""
Tables 1 and 2 of the paper.

    python bratu_tables.py configs/paper.json [results/paper.json]

Table 1: lambda(m) along the branch on one grid, with the continuum value.
Table 2: the fold lambda_c on a sequence of grids, and its Richardson
         extrapolation (the scheme is second order).
"""
import sys
import os
import json
import time

import numpy as np

import bratu

LAMBDA_C = 3.513830719125162   # Bratu's critical value (continuum)


def main(argv):
    if len(argv) < 2:
        print "usage: bratu_tables.py config.json [out.json]"
        return 2
    cfg = json.load(open(argv[1]))
    if len(argv) > 2:
        out = argv[2]
    else:
        out = os.path.join("results",
                           os.path.splitext(os.path.basename(argv[1]))[0] + ".json")
    t0 = time.time()
    res = {"config": os.path.basename(argv[1])}

    # ---- Table 1
    t1 = cfg["table1"]
    N = t1["N"]
    ms = t1["m"]
    rows = bratu.branch(N, ms)
    res["table1"] = {"N": N, "rows": {}}
    print "Table 1. lambda(m) on N = %d" % N
    print "%8s %16s %16s %10s %4s" % ("m", "lambda_h", "lambda", "error", "nit")
    for m, lam, nit, r in rows:
        ex = bratu.lambda_exact(m)
        res["table1"]["rows"]["%g" % m] = {"lambda": lam, "lambda_exact": ex,
                                           "error": lam - ex, "newton": nit,
                                           "residual": r}
        print "%8g %16.10f %16.10f %10.2e %4d" % (m, lam, ex, lam - ex, nit)

    # ---- Table 2
    t2 = cfg["table2"]
    a, b = t2["bracket"]
    res["table2"] = {"rows": {}}
    print
    print "Table 2. fold point lambda_c(h)"
    print "%6s %16s %14s %10s" % ("N", "lambda_c", "m_c", "error")
    prev = None
    for N in t2["N"]:
        m, lam, nev = bratu.fold(N, a, b, t2.get("tol", 1e-10))
        row = {"lambda_c": lam, "m_c": m, "error": lam - LAMBDA_C}
        if prev is not None:
            # h halves: N+1 doubles
            ratio = float(N + 1) / (prev[0] + 1)
            row["richardson"] = (ratio**2 * lam - prev[1]) / (ratio**2 - 1.0)
        res["table2"]["rows"][str(N)] = row
        print "%6d %16.12f %14.10f %10.2e" % (N, lam, m, lam - LAMBDA_C)
        prev = (N, lam)
    last = res["table2"]["rows"][str(t2["N"][-1])]
    res["table2"]["lambda_c_extrapolated"] = last.get("richardson")
    res["table2"]["lambda_c_exact"] = LAMBDA_C
    print "Richardson: %.12f  (exact %.12f)" % (last.get("richardson"), LAMBDA_C)

    res["wall_seconds"] = round(time.time() - t0, 3)
    d = os.path.dirname(out)
    if d and not os.path.isdir(d):
        os.makedirs(d)
    f = open(out, "w")
    json.dump(res, f, indent=1, sort_keys=True)
    f.close()
    print "wrote", out
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
