#!/usr/bin/env python
"""Reproduce Table 2: kernel approximation error and test RMSE of ridge
regression with random Fourier features, against exact kernel ridge
regression, on the synthetic problem of Section 4.

    python run_experiments.py --config configs/table2.json
"""
from __future__ import print_function

import argparse
import json
import os
import time

import numpy as np
import scipy
from tqdm import tqdm

from rff import (RandomFourierFeatures, gaussian_kernel, kernel_ridge_fit,
                 kernel_ridge_predict, make_regression, ridge_fit)


def rmse(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)))


def run(cfg):
    rng = np.random.RandomState(cfg["seed"])
    Xtr, ytr = make_regression(cfg["n_train"], cfg["noise"], rng)
    Xte, yte = make_regression(cfg["n_test"], cfg["noise"], rng)
    sigma, lam = cfg["sigma"], cfg["lambda"]

    t0 = time.time()
    alpha = kernel_ridge_fit(Xtr, ytr, sigma, lam)
    exact = {"test_rmse": rmse(kernel_ridge_predict(Xtr, alpha, Xte, sigma), yte),
             "seconds": time.time() - t0}

    sub = Xtr[:cfg["n_kernel_subset"]]
    K = gaussian_kernel(sub, sub, sigma)
    rows = {}
    for D in tqdm(cfg["n_features"], desc="D"):
        t0 = time.time()
        feats = RandomFourierFeatures(D, sigma, random_state=rng).fit(Xtr)
        Zs = feats.transform(sub)
        kerr = np.linalg.norm(Zs.dot(Zs.T) - K) / np.linalg.norm(K)
        w = ridge_fit(feats.transform(Xtr), ytr, lam)
        rows[str(D)] = {"kernel_rel_err": float(kerr),
                        "test_rmse": rmse(feats.transform(Xte).dot(w), yte),
                        "seconds": time.time() - t0}
    return {"config": cfg, "exact_krr": exact, "rff": rows,
            "versions": {"numpy": np.__version__, "scipy": scipy.__version__}}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", default=None, help="default: results/<config name>.json")
    args = ap.parse_args()
    with open(args.config) as f:
        cfg = json.load(f)
    out = args.out or os.path.join(
        "results", os.path.splitext(os.path.basename(args.config))[0] + ".json")
    res = run(cfg)
    d = os.path.dirname(out)
    if d and not os.path.isdir(d):
        os.makedirs(d)
    with open(out, "w") as f:
        json.dump(res, f, indent=2, sort_keys=True)
    print("exact KRR test RMSE: %.4f" % res["exact_krr"]["test_rmse"])
    for D in cfg["n_features"]:
        r = res["rff"][str(D)]
        print("D=%5d  kernel rel. err %.4f  test RMSE %.4f"
              % (D, r["kernel_rel_err"], r["test_rmse"]))
    print("wrote", out)


if __name__ == "__main__":
    main()
