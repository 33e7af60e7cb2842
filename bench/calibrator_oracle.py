"""Calibrators against the analytic oracle: how much of the attainable ALID each reaches.

Scores s_ij = mu * 1[j = true] + eps_ij with eps ~ N(0, 1) have the exact posterior
softmax_j(mu s_ij); its ALID (the anchor, computed in the same run on the same eval
draw) is the best any attacker can do.  For each calibrator this prints ALID, the
paired difference to the oracle with its standard error, and the ratio ALID / oracle.

    python bench/calibrator_oracle.py [--trials 3000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from lidframe import ScoreSet, evaluate

CALIBRATORS = ("logistic", "temperature", "isotonic", "beta", "gaussian", "gaussian?shared_variance=false")


def draw(rng, n_trials, n_enrolled, mu):
    scores = rng.standard_normal((n_trials, n_enrolled))
    true = rng.integers(0, n_enrolled, n_trials)
    scores[np.arange(n_trials), true] += mu
    enrolled = np.array([f"s{j}" for j in range(n_enrolled)])
    return ScoreSet(scores, enrolled, enrolled[true]), scores, true


def oracle_lid(scores, true, mu):
    a = mu * scores
    peak = a.max(axis=1, keepdims=True)
    lse = np.log(np.exp(a - peak).sum(axis=1)) + peak[:, 0]
    return (a[np.arange(true.size), true] - lse + math.log(scores.shape[1])) / math.log(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for n_enrolled, mu in ((50, 2.0), (20, 1.5), (10, 1.0)):
        rng = np.random.default_rng(args.seed)
        dev, _, _ = draw(rng, args.trials, n_enrolled, mu)
        ev, scores, true = draw(rng, args.trials, n_enrolled, mu)
        oracle = oracle_lid(scores, true, mu)
        se = oracle.std() / math.sqrt(oracle.size)
        print(f"N = {n_enrolled}, mu = {mu}: oracle ALID {oracle.mean():.4f} (Monte-Carlo SE {se:.4f})")
        for spec in CALIBRATORS:
            start = time.perf_counter()
            lid = evaluate(dev, ev, calibrator=spec, binary_metrics=False).lid
            diff = lid - oracle
            print(
                f"  {spec:32s} ALID {lid.mean():.4f}  minus oracle {diff.mean():+.4f} "
                f"(paired SE {diff.std() / math.sqrt(diff.size):.4f})  RATIO {lid.mean() / oracle.mean():.3f}"
                f"  [{time.perf_counter() - start:.2f} s]"
            )


if __name__ == "__main__":
    main()
