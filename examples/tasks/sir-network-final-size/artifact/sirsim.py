#!/usr/bin/env python3
"""sirsim -- final size of SIR epidemics on Erdos-Renyi contact networks.

Discrete-generation (Reed-Frost type) SIR: every infected node gets one
chance to infect each susceptible neighbour, independently with
probability T (the transmissibility), and is then removed.  The final
size is therefore the size of the cluster of the index case in bond
percolation with occupation probability T.

For each transmissibility in the configuration we run many epidemics,
each on a freshly drawn G(N, c/N) graph with one random index case, and
report the probability of a major outbreak, the mean final fraction of
major outbreaks, the mean size of minor ones, and the mean-field value z
solving z = 1 - exp(-c T z).

usage:  python sirsim.py --config experiments/table1.ini
"""
from __future__ import print_function, division

import argparse
import configparser
import csv
import json
import math
import os
import random
import sys
import time

__version__ = "1.2"


def er_graph(n, c, rng):
    """G(n, p) with p = c/n, by geometric skipping (Batagelj & Brandes)."""
    p = c / n
    adj = [[] for _ in range(n)]
    lp = math.log(1.0 - p)
    v, w = 1, -1
    while v < n:
        r = rng.random()
        w = w + 1 + int(math.log(1.0 - r) / lp)
        while w >= v and v < n:
            w -= v
            v += 1
        if v < n:
            adj[v].append(w)
            adj[w].append(v)
    return adj


def epidemic(adj, T, nseed, rng):
    """One outbreak; returns the number of nodes ever infected."""
    n = len(adj)
    susceptible = set(range(n))
    infected = set(random.sample(susceptible, nseed))
    susceptible -= infected
    total = len(infected)
    while infected:
        new = set()
        for u in infected:
            for v in adj[u]:
                if v in susceptible and rng.random() < T:
                    susceptible.discard(v)
                    new.add(v)
        total += len(new)
        infected = new
    return total


def mean_field_z(cT):
    """Largest root of z = 1 - exp(-cT z) (0 below threshold)."""
    if cT <= 1.0:
        return 0.0
    z = 1.0
    for _ in range(200):
        z = 1.0 - math.exp(-cT * z)
    return z


def run(cfg):
    sec = cfg["simulation"]
    n = sec.getint("nodes")
    c = sec.getfloat("mean_degree")
    runs = sec.getint("runs")
    nseed = sec.getint("index_cases", fallback=1)
    cut = sec.getfloat("major_threshold", fallback=0.05)
    Ts = [float(x) for x in sec.get("transmissibility").split(",")]
    rng = random.Random(sec.getint("seed"))
    random.seed(sec.getint("seed"))

    rows = []
    for T in Ts:
        t0 = time.clock()
        sizes = []
        for _ in range(runs):
            adj = er_graph(n, c, rng)
            sizes.append(epidemic(adj, T, nseed, rng))
        major = [s / n for s in sizes if s > cut * n]
        minor = [s for s in sizes if s <= cut * n]
        row = {
            "T": T,
            "cT": round(c * T, 10),
            "runs": runs,
            "p_major": len(major) / runs,
            "mean_major_fraction": sum(major) / len(major) if major else 0.0,
            "sd_major_fraction": (math.sqrt(sum((x - sum(major) / len(major)) ** 2
                                               for x in major) / (len(major) - 1))
                                  if len(major) > 1 else 0.0),
            "mean_minor_size": sum(minor) / len(minor) if minor else 0.0,
            "mean_field_z": mean_field_z(c * T),
            "cpu_seconds": round(time.clock() - t0, 3),
        }
        rows.append(row)
        print("T=%.3f cT=%.2f  P(major)=%.3f  major fraction=%.4f  "
              "minor size=%.2f  z=%.4f" % (T, c * T, row["p_major"],
                                           row["mean_major_fraction"],
                                           row["mean_minor_size"],
                                           row["mean_field_z"]))
        sys.stdout.flush()
    return rows


def main():
    ap = argparse.ArgumentParser(description="SIR final size on ER networks")
    ap.add_argument("--config", required=True)
    ap.add_argument("--outdir", default="results")
    args = ap.parse_args()

    cfg = configparser.ConfigParser()
    if not cfg.read(args.config):
        sys.exit("cannot read " + args.config)
    rows = run(cfg)

    if not os.path.isdir(args.outdir):
        os.makedirs(args.outdir)
    cols = ["T", "cT", "runs", "p_major", "mean_major_fraction",
            "sd_major_fraction", "mean_minor_size", "mean_field_z"]
    with open(os.path.join(args.outdir, "final_size.csv"), "w") as f:
        wr = csv.writer(f, lineterminator="\n")
        wr.writerow(cols)
        for r in rows:
            wr.writerow(["%.6g" % r[k] if isinstance(r[k], float) else r[k]
                         for k in cols])
    summary = {
        "version": __version__,
        "config": {k: v for k, v in cfg["simulation"].items()},
        "by_T": {("%g" % r["T"]): r for r in rows},
    }
    with open(os.path.join(args.outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    print("wrote %s/final_size.csv and %s/summary.json" % (args.outdir, args.outdir))


if __name__ == "__main__":
    main()
