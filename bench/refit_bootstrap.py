"""Benchmark: the bootstrap that refits the calibrator on resampled dev speakers (issue 41).

Three parts (``--only``):

* ``cost``: ``evaluate`` with 200 speaker-bootstrap resamples of a 600-trial x 60-enrolled
  eval set, calibrated on a 600 x 60 dev set (logistic): the intervals of the calibrator
  held fixed (``resample="eval"``, the anchor), refitted on each resample
  (``resample="dev+eval"``), and the naive refit -- for each resample, build the resampled
  dev and eval score sets and run ``evaluate`` on them (the whole pipeline, B times),
  whose percentile interval of ALID the refit's must equal (checked: max difference of the
  ends printed; the refits are pooled fits, the naive ones exact).
  Medians of ``--repeats`` runs, and the ratios.
* ``width``: the ALID interval's width with the calibrator held fixed and refitted,
  against the dev set's size: 3 to 40 dev speakers (of 40 enrolled) with 5, 10 or 20
  trials each, the eval set 40 speakers x 10 trials; means over ``--width-seeds`` seeds.
  What ``lidframe.core.devsize`` chose its thresholds from.
* ``coverage``: nominal 95 % BCa intervals against the true ALID of the model of
  ``tests/stats/calibration_sim.py`` (20 enrolled speakers, 5 trials per dev speaker; dev
  sets of 5 and 20 of the speakers with eval sets of 5 trials per speaker, and a dev set
  of 3 speakers with an eval set of 40 trials per speaker, where the calibrator is the
  larger part of the uncertainty), over ``--audits`` simulated audits, each held fixed and
  refitted.

    python bench/refit_bootstrap.py [--only {all,cost,width,coverage}] [--repeats 3]
        [--width-seeds 6] [--audits 200] [--n-boot 300]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lidframe import Bootstrap, ScoreSet, evaluate
from lidframe.data.simulate import simulate_scoreset
from tests.stats.calibration_sim import dev_set, eval_set, true_alid

COST_BOOT = 200
#: The coverage part's audits: (dev speakers, eval trials per speaker); dev speakers speak 5 trials each.
COVERAGE_CASES = ((5, 5), (20, 5), (3, 40))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("all", "cost", "width", "coverage"), default="all")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--width-seeds", type=int, default=6)
    parser.add_argument("--audits", type=int, default=200)
    parser.add_argument("--n-boot", type=int, default=300)
    args = parser.parse_args()
    print(f"machine: {platform.machine()} python {platform.python_version()} numpy {np.__version__}")
    if args.only in ("all", "cost"):
        cost(args.repeats)
    if args.only in ("all", "width"):
        width(args.width_seeds)
    if args.only in ("all", "coverage"):
        coverage(args.audits, args.n_boot)


def _resampled(scores: ScoreSet, counts: np.ndarray) -> ScoreSet:
    """The set of *scores*' trials, each repeated by its count (trial ids made unique)."""
    rows = np.repeat(np.arange(scores.n_trials), counts.astype(int))
    ids = [f"{scores.trial_ids[r]}#{k}" for k, r in enumerate(rows)]
    return ScoreSet(scores.scores[rows], scores.enrolled, scores.trial_speakers[rows], ids)


def _counts(seed, speakers: np.ndarray, n_boot: int) -> np.ndarray:
    """(n_boot, T) trial counts of a speaker bootstrap: the draws of lidframe's (one multinomial call)."""
    units, unit_of_trial = np.unique(speakers, return_inverse=True)
    draws = np.random.default_rng(seed).multinomial(units.size, np.full(units.size, 1 / units.size), size=n_boot)
    return draws[:, unit_of_trial.ravel()]


def cost(repeats: int) -> None:
    """Seconds of the fixed, refitted and naive bootstraps (module docstring), medians of *repeats* runs."""
    dev = simulate_scoreset(leakage=0.5, n_enrolled=60, trials_per_speaker=10, prefix="d", rng=1)
    ev = simulate_scoreset(leakage=0.5, n_enrolled=60, trials_per_speaker=10, prefix="e", rng=2)
    print(f"cost: {COST_BOOT} resamples; dev and eval {ev.n_trials} trials x {ev.n_enrolled} enrolled, logistic")
    times: dict[str, list[float]] = {"fixed": [], "refit": [], "naive": []}
    refit_interval = None
    eval_counts, dev_counts = _counts(0, ev.trial_speakers, COST_BOOT), _counts([0, 1], dev.trial_speakers, COST_BOOT)
    for _ in range(repeats):
        for name, resample in (("fixed", "eval"), ("refit", "dev+eval")):
            start = time.perf_counter()
            options = Bootstrap(n_boot=COST_BOOT, method="percentile", resample=resample)
            summary = evaluate(dev, ev, bootstrap=options).summary
            times[name].append(time.perf_counter() - start)
            if name == "refit":
                refit_interval = summary.intervals["alid"]
        start = time.perf_counter()
        naive = [
            evaluate(_resampled(dev, d), _resampled(ev, e), binary_metrics=False).summary.alid
            for d, e in zip(dev_counts, eval_counts, strict=True)
        ]
        times["naive"].append(time.perf_counter() - start)
    assert refit_interval is not None
    naive_ends = np.quantile(naive, [0.025, 0.975])
    median = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"  {name:6s}: {median[name]:.3f} s ({', '.join(f'{v:.2f}' for v in values)})")
    print(
        f"  refit / fixed {median['refit'] / median['fixed']:.1f}; naive / refit {median['naive'] / median['refit']:.1f}; "
        "ALID interval ends, refit vs the naive resamples' percentiles: max |difference| "
        f"{np.max(np.abs(np.subtract(refit_interval.bounds, naive_ends))):.1e} bit"
    )


def width(seeds: int) -> None:
    """ALID interval widths, calibrator fixed and refitted, against dev speakers and trials (module docstring)."""
    print(f"width: eval 40 speakers x 10 trials, dev k of 40 enrolled; 400 resamples; means of {seeds} seeds")
    print("  trials/speaker  dev speakers  mated pairs  fixed (bit)  refitted (bit)  refitted / fixed")
    for trials in (5, 10, 20):
        for k in (3, 5, 10, 20, 40):
            ratios, fixed, refit = [], [], []
            for seed in range(seeds):
                ev = simulate_scoreset(leakage=0.5, n_enrolled=40, trials_per_speaker=10, prefix="e", rng=100 + seed)
                full = simulate_scoreset(
                    leakage=0.5, n_enrolled=40, trials_per_speaker=trials, prefix="d", rng=200 + seed
                )
                dev = full.subset(np.flatnonzero(np.isin(full.trial_speakers, full.enrolled[:k])))
                w = {}
                for resample in ("eval", "dev+eval"):
                    options = Bootstrap(n_boot=400, resample=resample, seed=seed)
                    i = evaluate(dev, ev, binary_metrics=False, bootstrap=options).summary.intervals["alid"]
                    w[resample] = i.high - i.low
                fixed.append(w["eval"])
                refit.append(w["dev+eval"])
                ratios.append(w["dev+eval"] / w["eval"])
            print(
                f"  {trials:14d}  {k:12d}  {trials * k:11d}  {np.mean(fixed):11.3f}  {np.mean(refit):14.3f}  "
                f"{np.mean(ratios):16.2f}"
            )


def coverage(audits: int, n_boot: int) -> None:
    """Coverage of the true ALID by nominal 95 % BCa intervals, fixed and refitted (module docstring)."""
    start = time.perf_counter()
    truth = true_alid()
    print(
        f"coverage: true ALID {truth:.4f} bit ({time.perf_counter() - start:.0f} s); {audits} audits, {n_boot} resamples"
    )
    for k, eval_trials in COVERAGE_CASES:
        hits = {"eval": 0, "dev+eval": 0}
        widths: dict[str, list[float]] = {"eval": [], "dev+eval": []}
        estimates = []
        for audit in range(audits):
            dev, ev = dev_set(audit, k), eval_set(audit, trials=eval_trials)
            for resample in hits:
                options = Bootstrap(n_boot=n_boot, resample=resample, seed=audit)
                summary = evaluate(dev, ev, binary_metrics=False, bootstrap=options).summary
                interval = summary.intervals["alid"]
                hits[resample] += interval.low <= truth <= interval.high
                widths[resample].append(interval.high - interval.low)
            estimates.append(summary.alid)
        print(
            f"  {k:2d} dev speakers, eval {eval_trials:2d} trials each: coverage fixed {hits['eval'] / audits:.3f}, refitted {hits['dev+eval'] / audits:.3f}"
            f"; mean width fixed {np.mean(widths['eval']):.3f}, refitted {np.mean(widths['dev+eval']):.3f} bit; "
            f"ALID estimates {np.mean(estimates):.3f} +- {np.std(estimates):.3f} bit"
        )


if __name__ == "__main__":
    main()
