"""Benchmark: fitting each calibrator on dev sets of 10^5 ... 10^9 pairs.

Dev sets are T = N (about sqrt(pairs) each) row-z-normed Gaussian scores with the mated
column shifted (the dev set of a 1-to-N evaluation).  Up to 10^8 pairs the z-scores are in
memory and each calibrator is fitted with its defaults: on every pair up to
``max_pairs`` = 10^6, on the pooled pairs (2^16 z bins per class) above, Temperature by
Newton steps above 10^6.  The 10^9 dev set comes from embeddings (d = 192) through
:func:`lidframe.core.dev_pairs.dev_pair_groups`, which streams the z-scores into the
pooled groups without holding them, and the pair calibrators are fitted on the groups;
Temperature needs the (T, N) rows and is not fitted there.

Anchor (measured in the same run, up to ``--anchor-max`` pairs, 10^7 by default): the fit
on every pair (``max_pairs=None``; Logistic with its statsmodels standard errors, as
before), with the largest |difference| of the pooled fit's LLR map on z in [-3, 8].

    python bench/calibrator_fit.py [--sizes 1e5 1e6 1e7 1e8] [--embedding-pairs 1e9]
                                   [--anchor-max 1e7] [--repeats 3] [--quick]

``--quick`` (10^5 and 2 x 10^6 pairs, 4 x 10^6 from embeddings, one run) checks the
script in under a minute; its times mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.provenance import header
from lidframe.calibrators import Beta, GaussianBackend, Isotonic, Logistic, Temperature
from lidframe.core.dev_pairs import dev_pair_groups

CALIBRATORS = {
    "logistic": Logistic,
    "isotonic": Isotonic,
    "beta": Beta,
    "gaussian": GaussianBackend,
    "gaussian-uneq": lambda **kw: GaussianBackend(shared_variance=False, **kw),
    "temperature": Temperature,
}
GRID = np.linspace(-3.0, 8.0, 45)


def z_normed_dev(n_pairs, seed):
    """(z (T, N), labels (T, N) int8, true_index (T,)) with T = N = round(sqrt(n_pairs))."""
    n = round(math.sqrt(n_pairs))
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, n))
    true_index = rng.integers(0, n, n)
    z[np.arange(n), true_index] += 2.5
    z -= z.mean(axis=1, keepdims=True)
    z /= z.std(axis=1, ddof=1, keepdims=True)
    labels = np.zeros(z.shape, dtype=np.int8)
    labels[np.arange(n), true_index] = 1
    return z, labels, true_index


def fit(name, z, labels, true_index, **params):
    factory = CALIBRATORS[name]
    if name == "temperature":
        params.pop("bins", None)
        return factory(**params).fit_rows(z, true_index)
    if name.startswith("gaussian"):  # a closed form, O(pairs): no pooling parameters
        params = {}
    return factory(**params).fit(z.ravel(), labels.ravel())


def timed(function, repeats):
    times, out = [], None
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        out = function()
        times.append(time.perf_counter() - start)
    return out, times


def in_memory_rows(size, args):
    """One table row per calibrator for a dev set of about *size* pairs held in memory."""
    z, labels, true_index = z_normed_dev(size, seed=int(math.log10(size)))
    for name in CALIBRATORS:
        fitted, times = timed(lambda name=name: fit(name, z, labels, true_index), args.repeats)
        med = statistics.median(times)
        anchor = ratio = diff = ""
        if 1e6 < z.size <= args.anchor_max and not name.startswith("gaussian"):
            full, full_times = timed(lambda name=name: fit(name, z, labels, true_index, max_pairs=None), 1)
            anchor = f"{full_times[0]:9.2f}s"
            ratio = f"{full_times[0] / med:7.1f}"
            diff = f"{np.abs(full.llr(GRID) - fitted.llr(GRID)).max():11.1e}"
        runs = ", ".join(f"{t:.2f}" for t in times)
        print(f"{z.size:14,d} {name:14s} {med:11.2f}s {anchor:>10s} {ratio:>7s} {diff:>11s}  {runs}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e5, 1e6, 1e7, 1e8])
    parser.add_argument("--embedding-pairs", type=float, default=1e9)
    parser.add_argument("--anchor-max", type=float, default=1e7, help="largest dev set also fitted on every pair")
    parser.add_argument("--dim", type=int, default=192)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, one run: a check, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.embedding_pairs, args.anchor_max, args.repeats = [1e5, 2e6], 4e6, 2e6, 1
    print(header("calibrator fit benchmark: defaults (pooled above 10^6 pairs) vs every pair (anchor)"))
    print(
        f"{'pairs':>14s} {'calibrator':14s} {'fit (median)':>12s} {'anchor':>10s} {'ratio':>7s} {'max |dLLR|':>11s}  runs"
    )
    for size in args.sizes:
        in_memory_rows(size, args)
        gc.collect()

    n = round(math.sqrt(args.embedding_pairs))
    rng = np.random.default_rng(9)
    enrol = rng.normal(size=(n, args.dim))
    true_index = rng.integers(0, n, n)
    trial = enrol[true_index] + 3.0 * rng.normal(size=(n, args.dim))
    groups, times = timed(lambda: dev_pair_groups(trial, enrol, true_index), 1)
    scores, labels, weights = groups
    print(
        f"{n * n:14,d} pairs from embeddings (d = {args.dim}): streamed into {scores.size:,} groups in "
        f"{times[0]:.2f} s; each fit on the groups:"
    )
    for name, factory in CALIBRATORS.items():
        if name == "temperature":
            print(f"{n * n:14,d} {name:14s} {'n/a':>12s}  (fits on whole (T, N) dev rows, which are not streamed)")
            continue
        fitted, fit_times = timed(lambda f=factory: f().fit(scores, labels, sample_weight=weights), args.repeats)
        runs = ", ".join(f"{t:.2f}" for t in fit_times)
        print(f"{n * n:14,d} {name:14s} {statistics.median(fit_times):11.2f}s  runs: {runs}")


if __name__ == "__main__":
    main()
