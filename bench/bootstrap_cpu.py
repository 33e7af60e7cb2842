"""Benchmark: vectorised bootstrap intervals against a per-resample loop.

1,000 resamples (speaker cluster bootstrap) of a 1,000-trial x 30-speaker set: all LID
metrics plus ROCCH EER and Cllr.  Anchor, measured in the same run: the loop a script
writes -- for each resample, gather the resampled trials and recompute every metric
with lidframe's plain functions (lid_summary, eer_rocch, cllr).  Both give the same
per-resample values (checked).  Prints medians of several runs and the ratio.

    python bench/bootstrap_cpu.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

from lidframe.metrics.aggregates import lid_summary
from lidframe.metrics.detection import cllr, eer_rocch
from lidframe.stats.bootstrap import Bootstrap, bootstrap_ci
from lidframe.stats.weighted import PairLLRs, binary_metrics_weighted, lid_metrics_weighted

T, N, SPEAKERS, B = 1000, 30, 30, 1000


def data(seed=0):
    rng = np.random.default_rng(seed)
    speakers = np.repeat(np.arange(SPEAKERS), T // SPEAKERS + 1)[:T]
    lid = rng.normal(0.3, 1.0, T)
    mated = rng.normal(1.0, 1.0, T)
    non_mated = rng.normal(0.0, 1.0, (T, N - 1))
    return lid, speakers, mated, non_mated


def loop_bootstrap(lid, speakers, mated, non_mated, weights):
    out = []
    for w in weights:
        rows = np.repeat(np.arange(T), w.astype(int))
        s = lid_summary(lid[rows])
        out.append(
            (
                s["alid"],
                s["lid_q99"],
                eer_rocch(mated[rows], non_mated[rows].ravel()),
                cllr(mated[rows], non_mated[rows].ravel()),
            )
        )
    return np.array(out)


def vectorised(lid, speakers, mated, non_mated, weights):
    m = lid_metrics_weighted(lid, weights)
    b = binary_metrics_weighted(PairLLRs(mated, non_mated), weights)
    return np.column_stack([m["alid"], m["lid_q99"], b["eer"], b["cllr"]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    lid, speakers, mated, non_mated = data()
    rng = np.random.default_rng(1)
    unit_w = rng.multinomial(SPEAKERS, np.full(SPEAKERS, 1 / SPEAKERS), size=B).astype(float)
    weights = unit_w[:, speakers]
    print(f"bootstrap benchmark: {B} resamples of {T} trials x {N} enrolled ({SPEAKERS} speakers)")
    print(f"machine: {platform.machine()} python {platform.python_version()} numpy {np.__version__}")
    t_loop, t_vec, t_full = [], [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        ref = loop_bootstrap(lid, speakers, mated, non_mated, weights)
        t_loop.append(time.perf_counter() - start)
        start = time.perf_counter()
        got = vectorised(lid, speakers, mated, non_mated, weights)
        t_vec.append(time.perf_counter() - start)
        start = time.perf_counter()
        bootstrap_ci(lid, Bootstrap(n_boot=B), speakers=speakers, pairs=PairLLRs(mated, non_mated))
        t_full.append(time.perf_counter() - start)
    print(f"max |difference| loop vs vectorised: {np.max(np.abs(ref - got)):.2e}")
    m_loop, m_vec, m_full = (statistics.median(t) for t in (t_loop, t_vec, t_full))
    print(f"per-resample loop        median {m_loop:7.3f} s  (runs {', '.join(f'{t:.2f}' for t in t_loop)})")
    print(f"vectorised resamples     median {m_vec:7.3f} s  (runs {', '.join(f'{t:.2f}' for t in t_vec)})")
    print(f"bootstrap_ci (BCa, +jackknife, 8 metrics) median {m_full:.3f} s")
    print(f"RATIO loop / vectorised = {m_loop / m_vec:.1f}")


if __name__ == "__main__":
    main()
