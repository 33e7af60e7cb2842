"""Benchmark: AS-norm of a T x N score matrix against a cohort vs the plain cosine T x N scoring (anchor).

Anchor (measured in the same run): ``EmbeddingAttacker.compare(trials, profiles)``, the
cosine of every trial with every enrolled profile, float64 -- what every embedding
attacker computes without a cohort.  Against it: what ``score_norm="asnorm"`` adds to that
(:func:`lidframe.attackers.cohort.normalise_with_cohort`, the code ``score`` runs): the
trials and the profiles scored against the C cohort profiles, the top-K statistics of
each side (:func:`numpy.partition`) and the normalisation of the T x N scores in place.
Gaussian embeddings, d = 192, T = N = 16,384, C = 1,000, K = 300 by default.  Printed:
medians of the runs, the ratio AS-norm / anchor (the extra cost in units of the plain
scoring) and the peak extra memory of the normalisation (tracemalloc, beyond the scores).

    python bench/asnorm.py [--size 16384] [--cohort 1000] [--top-k 300] [--dim 192] [--repeats 5] [--quick]

``--quick`` (T = N = 2,048, one run) checks the script in seconds; its times mean little.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.provenance import header
from lidframe.attackers import RandomAttacker
from lidframe.attackers.cohort import Cohort, normalise_with_cohort
from lidframe.core.cohort import CohortNorm


def line(name: str, times: list[float]) -> tuple[float, str]:
    med = statistics.median(times)
    return med, f"{name:44s} median {med:8.3f} s  runs: {', '.join(f'{t:.3f}' for t in times)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 14, help="T = N")
    parser.add_argument("--cohort", type=int, default=1000, help="C, cohort speakers")
    parser.add_argument("--top-k", type=int, default=300, help="K of AS-norm")
    parser.add_argument("--dim", type=int, default=192)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="T = N = 2,048, one run: a check, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.size, args.repeats = 1 << 11, 1
    rng = np.random.default_rng(0)
    profiles = rng.normal(size=(args.size, args.dim))
    trials = profiles[rng.integers(0, args.size, args.size)] + 2.0 * rng.normal(size=(args.size, args.dim))
    cohort = Cohort(
        "bench", np.array([f"c{j}" for j in range(args.cohort)]), profiles=rng.normal(size=(args.cohort, args.dim))
    )
    norm = CohortNorm(method="asnorm", top_k=args.top_k)
    attacker = RandomAttacker(dim=args.dim)
    trial_ids, enrolled = [f"t{i}" for i in range(args.size)], [f"s{j}" for j in range(args.size)]
    print(header(f"AS-norm benchmark: T = N = {args.size:,}, C = {args.cohort:,}, K = {args.top_k}, d = {args.dim}"))
    print(
        f"{args.size**2:,} scores ({args.size**2 * 8 / 2**30:.1f} GiB float64); {args.repeats} runs each, alternating"
    )

    anchor_times, norm_times, peaks = [], [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        scores = attacker.compare(trials, profiles)
        anchor_times.append(time.perf_counter() - start)
        tracemalloc.start()
        start = time.perf_counter()
        normalise_with_cohort(attacker, cohort, norm, scores, trials, profiles, trial_ids=trial_ids, enrolled=enrolled)
        norm_times.append(time.perf_counter() - start)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        del scores
    anchor, text = line("anchor: cosine T x N (compare)", anchor_times)
    print(text)
    extra, text = line(f"AS-norm (K = {args.top_k}) on top, in place", norm_times)
    print(text)
    print(f"peak extra memory of AS-norm: {max(peaks) / 2**20:.0f} MiB (scores: {args.size**2 * 8 / 2**20:.0f} MiB)")
    print(
        f"RATIO time AS-norm/anchor = {extra / anchor:.2f}; scoring with AS-norm / without = {(anchor + extra) / anchor:.2f}"
    )


if __name__ == "__main__":
    main()
