#!/usr/bin/env python
"""Experiments of "How much data does Baum-Welch need?" (Tables 2 and 3).

Table 2: a 3-state, 2-d Gaussian HMM with sticky transitions.  For each
training-set size we fit a GaussianHMM (diagonal covariances) with EM and
report the per-observation log-likelihood on the training and on a held-out
test set, the same quantity under the true model, and the accuracy of
Viterbi and posterior (MAP) decoding on the test set, after matching the
learned states to the true ones.

Table 3: the "occasionally dishonest casino" (fair / loaded die), fitted
with MultinomialHMM.

    python experiments/segmentation.py --config experiments/table2.json

All randomness comes from one numpy RandomState seeded from the config.
Uses the hmmlearn in this checkout (build it in place first, see
EXPERIMENTS.md).
"""
from __future__ import division, print_function

import argparse
import itertools
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))   # the hmmlearn checkout

import numpy as np

import hmmlearn
from hmmlearn import _hmmc, hmm

# ---------------------------------------------------------------- true models

GAUSS_START = np.array([0.5, 0.3, 0.2])
GAUSS_TRANS = np.array([[0.90, 0.06, 0.04],
                        [0.05, 0.92, 0.03],
                        [0.07, 0.05, 0.88]])
GAUSS_MEANS = np.array([[0.0, 0.0],
                        [2.5, 1.0],
                        [-0.5, 2.5]])
GAUSS_SDS = np.array([[1.0, 0.8],
                      [0.9, 1.1],
                      [1.2, 0.7]])

CASINO_START = np.array([0.5, 0.5])
CASINO_TRANS = np.array([[0.95, 0.05],
                         [0.10, 0.90]])
CASINO_EMIT = np.array([[1 / 6.] * 6,
                        [0.1, 0.1, 0.1, 0.1, 0.1, 0.5]])


def _draw(rs, p):
    return int(np.searchsorted(np.cumsum(p), rs.rand(), side="right"))


def sample_states(rs, start, trans, n_seq, length):
    Z = np.empty(n_seq * length, dtype=int)
    k = 0
    for _ in range(n_seq):
        z = _draw(rs, start)
        for t in range(length):
            if t > 0:
                z = _draw(rs, trans[z])
            Z[k] = z
            k += 1
    return Z, [length] * n_seq


def sample_gaussian(rs, n_seq, length):
    Z, lengths = sample_states(rs, GAUSS_START, GAUSS_TRANS, n_seq, length)
    X = GAUSS_MEANS[Z] + GAUSS_SDS[Z] * rs.randn(len(Z), GAUSS_MEANS.shape[1])
    return X, Z, lengths


def sample_casino(rs, n_seq, length):
    Z, lengths = sample_states(rs, CASINO_START, CASINO_TRANS, n_seq, length)
    X = np.array([_draw(rs, CASINO_EMIT[z]) for z in Z], dtype=int)
    return X.reshape(-1, 1), Z, lengths


def best_permutation(pred, truth, k):
    best, best_acc = None, -1.0
    for perm in itertools.permutations(range(k)):
        acc = float(np.mean(np.asarray(perm)[pred] == truth))
        if acc > best_acc:
            best, best_acc = perm, acc
    return np.asarray(best), best_acc


def true_gaussian_model():
    m = hmm.GaussianHMM(n_components=3, covariance_type="diag",
                        init_params="")
    m.startprob_ = GAUSS_START
    m.transmat_ = GAUSS_TRANS
    m.means_ = GAUSS_MEANS
    m.covars_ = GAUSS_SDS ** 2
    return m


def true_casino_model():
    m = hmm.MultinomialHMM(n_components=2, init_params="")
    m.startprob_ = CASINO_START
    m.transmat_ = CASINO_TRANS
    m.emissionprob_ = CASINO_EMIT
    return m

# ---------------------------------------------------------------- experiments


def table2(cfg, rs):
    g = cfg["gaussian"]
    Xte, Zte, lte = sample_gaussian(rs, g["n_test_seqs"], g["length"])
    true_ll = true_gaussian_model().score(Xte, lte) / len(Xte)
    rows = {}
    for n_seq in g["n_train_seqs"]:
        Xtr, Ztr, ltr = sample_gaussian(rs, n_seq, g["length"])
        t0 = time.time()
        model = hmm.GaussianHMM(n_components=3, covariance_type="diag",
                                n_iter=g["n_iter"], tol=g["tol"],
                                random_state=cfg["seed"])
        model.fit(Xtr, ltr)
        secs = time.time() - t0
        vit = model.predict(Xte, lte)
        perm, vit_acc = best_permutation(vit, Zte, 3)
        post = model.predict_proba(Xte, lte).argmax(axis=1)
        post_acc = float(np.mean(perm[post] == Zte))
        # learned state i corresponds to true state perm[i]
        means = np.empty_like(model.means_)
        means[perm] = model.means_
        rows[str(n_seq)] = {
            "n_obs": int(len(Xtr)),
            "train_ll_per_obs": float(model.score(Xtr, ltr) / len(Xtr)),
            "test_ll_per_obs": float(model.score(Xte, lte) / len(Xte)),
            "viterbi_acc": vit_acc,
            "posterior_acc": post_acc,
            "max_mean_err": float(np.abs(means - GAUSS_MEANS).max()),
            "em_iters": int(model.monitor_.iter),
            "converged": bool(model.monitor_.converged),
            "seconds": secs,
        }
    return {"true_test_ll_per_obs": float(true_ll), "rows": rows}


def table3(cfg, rs):
    c = cfg["casino"]
    Xtr, Ztr, ltr = sample_casino(rs, c["n_train_seqs"], c["length"])
    Xte, Zte, lte = sample_casino(rs, c["n_test_seqs"], c["length"])
    model = hmm.MultinomialHMM(n_components=2, n_iter=c["n_iter"],
                               tol=c["tol"], random_state=cfg["seed"])
    model.fit(Xtr, ltr)
    perm, acc = best_permutation(model.predict(Xte, lte), Zte, 2)
    emit = np.empty_like(model.emissionprob_)
    emit[perm] = model.emissionprob_
    return {
        "train_ll_per_obs": float(model.score(Xtr, ltr) / len(Xtr)),
        "test_ll_per_obs": float(model.score(Xte, lte) / len(Xte)),
        "true_test_ll_per_obs":
            float(true_casino_model().score(Xte, lte) / len(Xte)),
        "viterbi_acc": acc,
        "loaded_p6": float(emit[1, 5]),
        "fair_p6": float(emit[0, 5]),
        "em_iters": int(model.monitor_.iter),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", default=None,
                    help="default: results/<config name>.json")
    args = ap.parse_args()
    with open(args.config) as f:
        cfg = json.load(f)
    out = args.out or os.path.join(
        "results", os.path.splitext(os.path.basename(args.config))[0] + ".json")

    rs = np.random.RandomState(cfg["seed"])
    res = {"config": cfg,
           "table2": table2(cfg, rs),
           "table3": table3(cfg, rs),
           "hmmlearn_version": hmmlearn.__version__,
           "hmmc": os.path.relpath(_hmmc.__file__, os.path.dirname(HERE)),
           "numpy": np.__version__}

    d = os.path.dirname(out)
    if d and not os.path.isdir(d):
        os.makedirs(d)
    with open(out, "w") as f:
        json.dump(res, f, indent=2, sort_keys=True)

    t2 = res["table2"]
    print("Table 2 (true model: test LL/obs %.4f)" % t2["true_test_ll_per_obs"])
    print("%8s %10s %10s %8s %8s %6s" % ("n_seq", "train LL", "test LL",
                                        "viterbi", "MAP", "iters"))
    for n in cfg["gaussian"]["n_train_seqs"]:
        r = t2["rows"][str(n)]
        print("%8d %10.4f %10.4f %8.4f %8.4f %6d" % (
            n, r["train_ll_per_obs"], r["test_ll_per_obs"], r["viterbi_acc"],
            r["posterior_acc"], r["em_iters"]))
    t3 = res["table3"]
    print("Table 3: test LL/obs %.4f (true %.4f), viterbi acc %.4f, "
          "P(6|loaded) %.3f" % (t3["test_ll_per_obs"], t3["true_test_ll_per_obs"],
                                t3["viterbi_acc"], t3["loaded_p6"]))
    print("hmmlearn", res["hmmlearn_version"], "from", res["hmmc"])
    print("wrote", out)


if __name__ == "__main__":
    main()
