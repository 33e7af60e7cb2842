"""Coverage of lidframe's bootstrap intervals, by simulation (the procedure of tests/stats/test_stats.py).

Per-trial LIDs of the exact posterior for scores mu 1[true] + N(0, 1), N = 20, so the
true ALID is known (a 10^6-trial Monte-Carlo anchor in the same run).  200 data sets,
nominal 90 % intervals for ALID:

* independent trials (300, mu = 1): trial bootstrap, BCa and percentile;
* clustered trials (30 speakers x 10 trials, speaker leakage mu_s ~ N(1, 0.5)):
  speaker (cluster) bootstrap vs trial bootstrap.

Prints the share of intervals that contain the truth.

    python bench/ci_coverage.py [--repetitions 200] [--n-boot 400]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lidframe.stats.bootstrap import Bootstrap, bootstrap_ci
from tests.reference import oracle_lids


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--n-boot", type=int, default=400)
    args = parser.parse_args()
    reps = args.repetitions
    rng = np.random.default_rng(123)
    truth = oracle_lids(rng, np.full(1_000_000, 1.0)).mean()
    print(f"independent trials: true ALID {truth:.4f}")
    for method in ("bca", "percentile"):
        hits = 0
        for rep in range(reps):
            lid = oracle_lids(rng, np.full(300, 1.0))
            ci = bootstrap_ci(lid, Bootstrap(unit="trial", n_boot=args.n_boot, level=0.9, method=method, seed=rep))[
                "alid"
            ]
            hits += ci.low <= truth <= ci.high
        print(f"  trial bootstrap, {method:10s}: coverage {hits / reps:.3f} (nominal 0.90)")
    truth_c = oracle_lids(rng, np.repeat(rng.normal(1.0, 0.5, 100_000), 10)).mean()
    print(f"clustered trials (30 speakers x 10): true ALID {truth_c:.4f}")
    speakers = np.repeat(np.arange(30), 10)
    cover = {"speaker": 0, "trial": 0}
    for rep in range(reps):
        lid = oracle_lids(rng, np.repeat(rng.normal(1.0, 0.5, 30), 10))
        for unit in cover:
            ci = bootstrap_ci(lid, Bootstrap(unit=unit, n_boot=args.n_boot, level=0.9, seed=rep), speakers=speakers)[
                "alid"
            ]
            cover[unit] += ci.low <= truth_c <= ci.high
    for unit, hits in cover.items():
        print(f"  {unit:7s} bootstrap, bca       : coverage {hits / reps:.3f} (nominal 0.90)")


if __name__ == "__main__":
    main()
