"""Benchmark: the binned binary view streamed from embeddings vs the exact sorted view (anchor).

Anchor (measured in the same run, where it fits in memory): the exact binary view of an
embedding set -- its T x N cosine matrix materialised as a score set, every pair's LLR
held and sorted (``evaluate_fitted(..., binary_metrics=True)`` on ``ev.to_scoreset()``).
Against it: ``evaluate_fitted(..., binary_metrics=True)`` on the embedding set itself,
which counts every pair's LLR into 2^16-bin histograms in the streaming pass (method
``"binned"``, :mod:`lidframe.metrics.binned`).  Same fitted logistic calibrator, uniform
prior, d = 192.  Printed: medians of the runs, the ratio anchor / binned, the peak extra
memory (tracemalloc, numpy's buffers; and the process's max RSS at the end), and for
every binary metric the binned - exact difference next to the stated bound.

Then the binned path alone at a size whose pair LLRs the exact path cannot hold
(default T = 2^15, N = 2^17: 2^32 pairs, 32 GiB of float64 LLRs).

    python bench/binary_stream.py [--size 8192] [--large-trials 32768] [--large-enrolled 131072]
                                  [--repeats 3] [--no-large] [--quick]

At ``--size 32768`` (2^30 pairs) the anchor needs ~18 GiB: the score set (8 GiB) and the
exact view's LLRs and sort; run it with ``--repeats 1 --no-large`` on a 24-GiB machine.

``--quick`` (T = N = 1024 against the anchor, then 2048 x 8192 binned, one run each)
checks the script in well under a minute; its times mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.provenance import header
from lidframe.core.engine import Engine
from lidframe.core.evaluation import evaluate_fitted, fit_calibrator
from lidframe.data.embedset import EmbeddingSet

METRICS = ("eer", "eer_threshold", "cllr", "min_cllr", "dece_bits", "max_abs_llr_log10", "dsys")


def embedding_set(rng, n_trials, n_enrolled, dim, prefix, noise=3.0):
    """Gaussian speaker profiles; each trial is its speaker's profile plus noise."""
    enrol = rng.normal(size=(n_enrolled, dim)).astype(np.float64)
    speaker = rng.integers(0, n_enrolled, n_trials)
    trial = enrol[speaker] + noise * rng.normal(size=(n_trials, dim))
    ids = np.array([f"{prefix}{j}" for j in range(n_enrolled)])
    return EmbeddingSet(trial, enrol, ids, ids[speaker], [f"{prefix}t{i}" for i in range(n_trials)])


def measure(function, repeats):
    """(last result, run times, tracemalloc peak of one more run)."""
    times, out = [], None
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        out = function()
        times.append(time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, times, peak


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def row(name, times, peak, pairs):
    med = statistics.median(times)
    runs = ", ".join(f"{t:.2f}" for t in times)
    return med, (
        f"{name:34s} median {med:8.2f} s  peak extra {peak / 2**20:9.0f} MiB "
        f"({peak / (pairs * 8):5.2f} x T*N*8)  runs: {runs}"
    )


def compare_with_exact(rng, fitted, cpu, args):
    """The binned and the exact view of one T = N embedding set, timed and compared."""
    n = args.size
    ev = embedding_set(rng, n, n, args.dim, "e")
    ev_scores = ev.to_scoreset(max_values=n * n)  # the anchor's input (8 n^2 bytes), made outside the timing
    print(f"\nT = N = {n} ({n * n:,} pairs; their LLRs in float64: {n * n * 8 / 2**20:,.0f} MiB)")
    exact, exact_times, exact_peak = measure(
        lambda: evaluate_fitted(ev_scores, fitted, binary_metrics=True).summary, args.repeats
    )
    binned, binned_times, binned_peak = measure(
        lambda: evaluate_fitted(ev, fitted, binary_metrics=True, engine=cpu).summary, args.repeats
    )
    exact_med, line = row("anchor: exact (score set, sorted)", exact_times, exact_peak, n * n)
    print(line)
    binned_med, line = row(f"binned ({binned['binary_bins']} bins, streamed)", binned_times, binned_peak, n * n)
    print(line)
    print(
        f"RATIO time exact/binned = {exact_med / binned_med:.2f} (>1: binned faster); "
        f"peak memory exact/binned = {exact_peak / binned_peak:.1f}"
    )
    bounds = binned["binary_error_bounds"]
    print(f"{'metric':20s} {'exact':>12s} {'binned':>12s} {'binned-exact':>13s} {'bound':>10s}")
    for key in METRICS:
        bound = bounds.get(key)
        shown = "exact sum" if key == "cllr" else ("lower bd." if bound is None else f"{bound:10.2e}")
        print(f"{key:20s} {exact[key]:12.6f} {binned[key]:12.6f} {binned[key] - exact[key]:+13.2e} {shown:>10s}")
    print(f"ALID exact {exact['alid']:.6f} binned {binned['alid']:.6f}; engine {binned['engine']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192, help="T = N of the comparison with the exact path")
    parser.add_argument("--large-trials", type=int, default=1 << 15)
    parser.add_argument("--large-enrolled", type=int, default=1 << 17)
    parser.add_argument("--dim", type=int, default=192)
    parser.add_argument(
        "--no-large", action="store_true", help="only the comparison with the exact path (e.g. with --size 32768)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, one run: a check, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.size, args.large_trials, args.large_enrolled, args.repeats = 1024, 2048, 8192, 1
    rng = np.random.default_rng(0)
    dev = embedding_set(rng, 2048, 512, args.dim, "d").to_scoreset()
    fitted = fit_calibrator(dev, "logistic")
    cpu = Engine(device="cpu")
    print(header(f"binary view benchmark: binned (streamed) vs exact (sorted), d = {args.dim}, logistic"))
    print(f"calibrator: {fitted.describe()} slope {fitted.slope_:.4f} intercept {fitted.intercept_:.4f}")

    compare_with_exact(rng, fitted, cpu, args)
    gc.collect()
    if args.no_large:
        print(f"process max RSS at the end: {max_rss_mib():,.0f} MiB (inputs included)")
        return

    t, m = args.large_trials, args.large_enrolled
    big = embedding_set(rng, t, m, args.dim, "b")
    print(
        f"\nT = {t}, N = {m} ({t * m:,} pairs; their LLRs in float64 would be {t * m * 8 / 2**30:,.1f} GiB): binned only"
    )
    large, large_times, large_peak = measure(
        lambda: evaluate_fitted(big, fitted, binary_metrics=True, engine=cpu).summary, max(1, args.repeats - 2)
    )
    _, line = row("binned (streamed)", large_times, large_peak, t * m)
    print(line)
    bounds = large["binary_error_bounds"]
    print("  " + ", ".join(f"{k} {large[k]:.6f}" for k in METRICS))
    print("  bounds: " + ", ".join(f"{k} {v:.1e}" for k, v in bounds.items()))
    print(f"process max RSS at the end: {max_rss_mib():,.0f} MiB (inputs included)")


if __name__ == "__main__":
    main()
