#!/usr/bin/env python
"""Symbolic-regression benchmark of Table 1: can gplearn rediscover
textbook polynomial and rational formulas from noisy-free samples?

    python benchmarks/run_benchmarks.py --config benchmarks/table1.json

For every problem of the config we draw training and test inputs
uniformly from the problem's domain, fit a SymbolicRegressor with the
arithmetic function set, and record the best program, its length, the
training MAE and the test RMSE / R^2.  Writes results/<config>.csv.
"""
from __future__ import division, print_function

import argparse
import csv
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))    # the gplearn of this checkout

import numpy as np

import gplearn
from gplearn.genetic import SymbolicRegressor


# Targets: polynomials and rationals only (exactly representable with
# add/sub/mul/div), after Uy et al. (Nguyen) and Keijzer (2003).
PROBLEMS = {
    "nguyen1": (1, lambda x: x[:, 0] ** 3 + x[:, 0] ** 2 + x[:, 0]),
    "nguyen3": (1, lambda x: x[:, 0] ** 5 + x[:, 0] ** 4 + x[:, 0] ** 3
                + x[:, 0] ** 2 + x[:, 0]),
    "keijzer14": (2, lambda x: 8.0 / (2.0 + x[:, 0] ** 2 + x[:, 1] ** 2)),
    "nguyen12": (2, lambda x: x[:, 0] ** 4 - x[:, 0] ** 3
                 + 0.5 * x[:, 1] ** 2 - x[:, 1]),
    "rational1": (1, lambda x: x[:, 0] / (1.0 + x[:, 0] ** 2)),
    "coulomb": (3, lambda x: x[:, 0] * x[:, 1] / (x[:, 2] * x[:, 2])),
}


def run_problem(name, spec, cfg, rs):
    n_vars, f = PROBLEMS[name]
    lo, hi = spec.get("domain", cfg["domain"])
    Xtr = rs.uniform(lo, hi, size=(cfg["n_train"], n_vars))
    Xte = rs.uniform(lo, hi, size=(cfg["n_test"], n_vars))
    ytr, yte = f(Xtr), f(Xte)
    est = SymbolicRegressor(population_size=cfg["population_size"],
                            generations=cfg["generations"],
                            tournament_size=cfg["tournament_size"],
                            stopping_criteria=cfg["stopping_criteria"],
                            function_set=("add", "sub", "mul", "div"),
                            metric="mean absolute error",
                            parsimony_coefficient=cfg["parsimony"],
                            p_crossover=0.7, p_subtree_mutation=0.1,
                            p_hoist_mutation=0.05, p_point_mutation=0.1,
                            max_samples=1.0, n_jobs=1, verbose=0,
                            random_state=spec["seed"])
    t0 = time.time()
    est.fit(Xtr, ytr)
    secs = time.time() - t0
    pred = est.predict(Xte)
    rmse = float(np.sqrt(np.mean((pred - yte) ** 2)))
    r2 = float(1.0 - np.sum((pred - yte) ** 2) / np.sum((yte - yte.mean()) ** 2))
    prog = est._program
    return {
        "problem": name,
        "n_vars": n_vars,
        "seed": spec["seed"],
        "generations_run": len(est._programs),
        "length": prog.length_,
        "depth": prog.depth_,
        "train_mae": "%.10g" % prog.raw_fitness_,
        "test_rmse": "%.10g" % rmse,
        "test_r2": "%.10f" % r2,
        "solved": int(rmse < cfg["solved_rmse"]),
        "program": str(prog),
        "seconds": "%.1f" % secs,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", default=None, help="default: results/<config>.csv")
    args = ap.parse_args()
    with open(args.config) as fh:
        cfg = json.load(fh)
    out = args.out or os.path.join(
        "results", os.path.splitext(os.path.basename(args.config))[0] + ".csv")

    rs = np.random.RandomState(cfg["data_seed"])
    rows = []
    for spec in cfg["problems"]:
        row = run_problem(spec["name"], spec, cfg, rs)
        rows.append(row)
        print("%-10s gens=%2d len=%3d train MAE=%-12s test RMSE=%-12s R2=%s  %s"
              % (row["problem"], row["generations_run"], row["length"],
                 row["train_mae"], row["test_rmse"], row["test_r2"],
                 row["program"]))
        sys.stdout.flush()

    d = os.path.dirname(out)
    if d and not os.path.isdir(d):
        os.makedirs(d)
    with open(out, "w") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()),
                           lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print("solved %d of %d (gplearn %s)" % (sum(r["solved"] for r in rows),
                                           len(rows), gplearn.__version__))
    print("wrote", out)


if __name__ == "__main__":
    main()
