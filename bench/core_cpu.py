"""Benchmark: lidframe's tiled LID engine against a naive dense float64 pipeline.

Both sides get the same dev set (so the same calibrator fit) and the same T x N eval
scores; the naive side z-normalises, calibrates and log-softmaxes the whole matrix at
once (scipy.special.log_softmax), the way a short script would.  Printed: median wall
time of several runs, the ratio naive / lidframe (> 1: lidframe is faster), and the
peak memory each allocates beyond its inputs (tracemalloc sees numpy's buffers), in
MiB and in units of one T x N float64 matrix.

    python bench/core_cpu.py [--size 8192] [--repeats 5] [--quick]

``--quick`` (T = N = 1024, one run) checks the script in seconds; its times mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from scipy.special import log_softmax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.provenance import header
from lidframe import ScoreSet, evaluate
from lidframe.core.evaluation import fit_calibrator


def make_scoreset(rng, n_trials, n_enrolled, prefix):
    enrolled = np.array([f"{prefix}{j}" for j in range(n_enrolled)])
    true = np.arange(n_trials) % n_enrolled
    scores = rng.standard_normal((n_trials, n_enrolled))
    scores[np.arange(n_trials), true] += 2.0
    return ScoreSet(scores, enrolled, enrolled[true])


def naive_dense(dev, ev):
    """What a short script does: everything as whole T x N float64 matrices."""
    cal = fit_calibrator(dev)
    s = ev.scores
    z = (s - s.mean(axis=1, keepdims=True)) / s.std(axis=1, ddof=1, keepdims=True)
    llr = cal.slope_ * z + cal.intercept_
    log_post = log_softmax(llr, axis=1)
    n = s.shape[1]
    return (log_post[np.arange(s.shape[0]), ev.true_index] + np.log(n)) / np.log(2.0)


def tiled(dev, ev):
    return evaluate(dev, ev, binary_metrics=False).lid


def tiled_with_binary_metrics(dev, ev):
    return evaluate(dev, ev, binary_metrics=True).lid


def measure(fn, dev, ev, repeats):
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        out = fn(dev, ev)
        times.append(time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    fn(dev, ev)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), times, peak, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192, help="T = N (default 8192)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dev-trials", type=int, default=512)
    parser.add_argument("--quick", action="store_true", help="T = N = 1024, one run: a check, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.size, args.repeats = 1024, 1
    rng = np.random.default_rng(0)
    dev = make_scoreset(rng, args.dev_trials, 256, "d")
    ev = make_scoreset(rng, args.size, args.size, "e")
    matrix_mib = args.size * args.size * 8 / 2**20
    print(header(f"core benchmark: T = N = {args.size} (one T x N float64 = {matrix_mib:.0f} MiB)"))
    results = {}
    for name, fn in (
        ("naive dense", naive_dense),
        ("lidframe tiled", tiled),
        ("lidframe + binary metrics", tiled_with_binary_metrics),
    ):
        med, times, peak, out = measure(fn, dev, ev, args.repeats)
        results[name] = (med, peak, out)
        runs = ", ".join(f"{t:.2f}" for t in times)
        print(
            f"{name:28s} median {med:7.3f} s  (runs: {runs})  peak extra {peak / 2**20:8.1f} MiB = {peak / 2**20 / matrix_mib:.2f} x T*N"
        )
    diff = np.max(np.abs(results["naive dense"][2] - results["lidframe tiled"][2]))
    print(f"max |LID difference| naive vs tiled: {diff:.2e} bit")
    ratio = results["naive dense"][0] / results["lidframe tiled"][0]
    mem_ratio = results["naive dense"][1] / results["lidframe tiled"][1]
    print(
        f"RATIO time naive/lidframe = {ratio:.2f} (>1: lidframe faster); peak memory naive/lidframe = {mem_ratio:.1f}"
    )


if __name__ == "__main__":
    main()
