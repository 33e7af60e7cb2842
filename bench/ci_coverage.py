"""Coverage of lidframe's bootstrap intervals, by simulation (the procedure of tests/stats/test_stats.py).

Per-trial LIDs of the exact posterior for scores mu 1[true] + N(0, 1), N = 20, so the
true ALID is known (a 10^6-trial Monte-Carlo anchor in the same run).  200 data sets,
nominal 90 % intervals for ALID:

* independent trials (300, mu = 1): trial bootstrap, BCa and percentile;
* clustered trials (30 speakers x 10 trials, speaker leakage mu_s ~ N(1, 0.5)):
  speaker (cluster) bootstrap vs trial bootstrap.

Per speaker (``lidframe.per_speaker``, nominal 95 %): 30 enrolled speakers with 10, 20 or
30 trials each, speaker j's leakage mu_j drawn from PER_SPEAKER_MUS (its true PDR 0.55 to
0.99, its true ALID 0.04 to 4.7 bits, each from 10^6 trials of a Monte-Carlo anchor), the
scores of trial i of speaker j mu_j (e_j + N(0, I)) taken as LLRs (identity calibrator:
the exact posterior).  Coverage over --per-speaker-repetitions data sets x 30 speakers of

* PDR: the Clopper-Pearson interval ``per_speaker`` gives, and the trial bootstrap (BCa)
  it gave before (``bootstrap_ci``'s ``pdr`` of the speaker's trials), with the share of
  zero-width bootstrap intervals;
* ALID: ``per_speaker``'s trial bootstrap, BCa and percentile.

Prints the share of intervals that contain the truth.

    python bench/ci_coverage.py [--repetitions 200] [--n-boot 400] [--per-speaker-repetitions 100]
        [--only {all,alid,per-speaker}]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lidframe import Bootstrap, ScoreSet, evaluate, per_speaker
from lidframe.stats.bootstrap import bootstrap_ci
from tests.reference import oracle_lids

#: Leakage mu of a speaker in the per-speaker case (drawn uniformly from these).
PER_SPEAKER_MUS = (0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)
#: Enrolled speakers of the per-speaker case, and its trials per speaker.
PER_SPEAKER_N, TRIALS_PER_SPEAKER = 30, (10, 20, 30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--n-boot", type=int, default=400)
    parser.add_argument("--per-speaker-repetitions", type=int, default=100)
    parser.add_argument("--only", choices=("all", "alid", "per-speaker"), default="all")
    args = parser.parse_args()
    if args.only in ("all", "alid"):
        alid_coverage(args)
    if args.only in ("all", "per-speaker"):
        per_speaker_coverage(args)


def alid_coverage(args):
    """The overall ALID's intervals: independent and clustered trials (module docstring)."""
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


def speaker_llrs(rng, mus, n_trials):
    """(LLRs (len(mus) * n_trials, N), true column of each row): speaker j's rows score mu_j (e_j + noise)."""
    owner = np.repeat(np.arange(len(mus)), n_trials)
    mu = np.asarray(mus, dtype=np.float64)[owner]
    scores = rng.standard_normal((owner.size, len(mus)))
    scores[np.arange(owner.size), owner] += mu
    return mu[:, None] * scores, owner


def speaker_truth(rng, mu, n_trials=1_000_000, chunk=100_000):
    """(ALID, PDR) of a speaker with leakage *mu* among PER_SPEAKER_N, from *n_trials* trials."""
    total, positive = 0.0, 0
    for _ in range(n_trials // chunk):
        s = rng.standard_normal((chunk, PER_SPEAKER_N))
        s[:, 0] += mu
        a = mu * s
        peak = a.max(1)
        lid = (a[:, 0] - peak - np.log(np.exp(a - peak[:, None]).sum(1)) + math.log(PER_SPEAKER_N)) / math.log(2)
        total += lid.sum()
        positive += int(np.count_nonzero(lid > 0))
    return total / n_trials, positive / n_trials


def per_speaker_coverage(args):
    """Coverage of lidframe.per_speaker's intervals at 10, 20 and 30 trials per speaker (module docstring)."""
    rng = np.random.default_rng(2027)
    truth = {mu: speaker_truth(rng, mu) for mu in PER_SPEAKER_MUS}
    enrolled = [f"s{j:02d}" for j in range(PER_SPEAKER_N)]
    print(f"per speaker: {PER_SPEAKER_N} speakers, mu from {PER_SPEAKER_MUS}, nominal 0.95, n_boot {args.n_boot}")
    print("  true (ALID bits, PDR) per mu: " + ", ".join(f"{mu:g}: ({a:.3f}, {p:.3f})" for mu, (a, p) in truth.items()))
    reps = args.per_speaker_repetitions
    for n_trials in TRIALS_PER_SPEAKER:
        start = time.perf_counter()
        hits = {"pdr clopper-pearson": 0, "pdr bootstrap bca": 0, "alid bca": 0, "alid percentile": 0}
        zero_width = 0
        for rep in range(reps):
            mus = rng.choice(PER_SPEAKER_MUS, PER_SPEAKER_N)
            llr, owner = speaker_llrs(rng, mus, n_trials)
            speakers = np.array(enrolled)[owner]
            ev = ScoreSet(llr, enrolled, speakers, [f"t{i}" for i in range(owner.size)])
            result = evaluate(ev, ev, calibrator="identity", binary_metrics=False)
            true_alid = {s: truth[mu][0] for s, mu in zip(enrolled, mus)}
            true_pdr = {s: truth[mu][1] for s, mu in zip(enrolled, mus)}
            for method in ("bca", "percentile"):
                table = per_speaker(result, bootstrap=Bootstrap(n_boot=args.n_boot, method=method, seed=rep))
                for row in table.rows:
                    hits[f"alid {method}"] += row.alid_low <= true_alid[row.speaker] <= row.alid_high
                    if method == "bca":
                        hits["pdr clopper-pearson"] += row.pdr_low <= true_pdr[row.speaker] <= row.pdr_high
            for j, speaker in enumerate(enrolled):  # the interval per_speaker gave before: a bootstrap of 0/1 values
                old = bootstrap_ci(result.lid[owner == j], Bootstrap(n_boot=args.n_boot, unit="trial", seed=rep))["pdr"]
                hits["pdr bootstrap bca"] += old.low <= true_pdr[speaker] <= old.high
                zero_width += old.low == old.high
        n_intervals = reps * PER_SPEAKER_N
        line = ", ".join(f"{name} {count / n_intervals:.3f}" for name, count in hits.items())
        print(
            f"  {n_trials:2d} trials per speaker: coverage {line} (zero-width bootstrap PDR intervals "
            f"{zero_width / n_intervals:.3f}; {n_intervals} speakers, {time.perf_counter() - start:.0f} s)"
        )


if __name__ == "__main__":
    main()
