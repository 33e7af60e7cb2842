"""Benchmark: streaming LID from embeddings on the CPU vs a dense float64 script (anchor).

Anchor (measured in the same run): what a short script does with embeddings -- form the
T x N cosine matrix in float64, row-z-normalise it, apply the fitted affine calibrator
and ``scipy.special.log_softmax``.  Against it: ``lid_from_embeddings`` on the numpy
path (float64, float32) and the torch path (float32, bfloat16 with float32 products),
d = 192, uniform prior, logistic slope.  Prints medians, the ratio anchor / path, the
peak extra memory of the numpy paths (tracemalloc) and each path's error against the
anchor (max |delta LID| in bits and relative L2).  The floor, measured in the same run:
the float64 GEMM that forms the T x N products (BLAS, every thread it has) plus one
single-threaded ``np.exp`` pass over a T x N float64 matrix -- the work no streaming
engine avoids; each path's time is also printed as a multiple of it.

    python bench/stream_cpu.py [--size 16384] [--dim 192] [--repeats 3] [--threads 2]

``--threads`` sets torch's threads and the engine's (``Engine(threads=)``).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from scipy.special import log_softmax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.core_cpu import exp_floor
from lidframe.calibrators.maps import AffineMap
from lidframe.core.engine import Engine
from lidframe.core.streaming import lid_from_embeddings

SLOPE = 3.0  # a typical fitted logistic slope on z-scores (nats per unit z)


def dense_script(trial, enrol, true_index):
    trial = trial / np.linalg.norm(trial, axis=1, keepdims=True)
    enrol = enrol / np.linalg.norm(enrol, axis=1, keepdims=True)
    scores = trial @ enrol.T
    z = (scores - scores.mean(axis=1, keepdims=True)) / scores.std(axis=1, ddof=1, keepdims=True)
    log_post = log_softmax(SLOPE * z, axis=1)
    n = enrol.shape[0]
    return (log_post[np.arange(trial.shape[0]), true_index] + np.log(n)) / np.log(2.0)


def floor_times(trial, enrol, repeats):
    """Times of the float64 GEMM forming the T x N products, and of one np.exp pass over them."""
    products = np.empty((trial.shape[0], enrol.shape[0]))
    _, gemm_times, _ = timed(lambda: np.matmul(trial, enrol.T, out=products), repeats)
    _, exp_times, _ = timed(exp_floor(products), repeats)
    return gemm_times, exp_times


def timed(function, repeats, memory=False):
    times, peak, out = [], 0, None
    for _ in range(repeats):
        if memory:
            tracemalloc.start()
        start = time.perf_counter()
        out = function()
        times.append(time.perf_counter() - start)
        if memory:
            peak = max(peak, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
    return out, times, peak


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=16384, help="T = N (default 16384)")
    parser.add_argument("--dim", type=int, default=192)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    try:
        import torch

        torch.set_num_threads(args.threads)
        torch_version = torch.__version__
    except ImportError:
        torch, torch_version = None, "not installed"
    rng = np.random.default_rng(0)
    n = args.size
    enrol = rng.normal(size=(n, args.dim))
    true_index = rng.integers(0, n, n)
    trial = enrol[true_index] + 4.0 * rng.normal(size=(n, args.dim))
    log_prior = np.full(n, -np.log(n))
    calibrator = AffineMap(SLOPE)
    print(f"T = N = {n}, d = {args.dim}, uniform prior, affine calibrator (slope {SLOPE})")
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()} "
        f"numpy {np.__version__} torch {torch_version}, {args.threads} torch threads"
    )
    input_mib = (trial.nbytes + enrol.nbytes) / 2**20
    reference, anchor_times, anchor_peak = timed(
        lambda: dense_script(trial, enrol, true_index), args.repeats, memory=True
    )
    anchor = statistics.median(anchor_times)
    gemm_times, exp_times = floor_times(trial, enrol, args.repeats)
    floor = statistics.median(gemm_times) + statistics.median(exp_times)
    print(
        f"floor: float64 GEMM {statistics.median(gemm_times):.3f} s + one exp pass {statistics.median(exp_times):.3f} s"
        f" = {floor:.3f} s (medians)"
    )
    print(
        f"{'path':28s} {'median':>9s} {'ratio':>7s} {'x floor':>8s} {'peak extra':>11s} {'max |dLID|':>11s} {'rel L2':>9s}  runs"
    )
    print(
        f"{'anchor: dense float64 script':28s} {anchor:8.3f}s {1.0:7.2f} {anchor / floor:8.2f} "
        f"{anchor_peak / 2**20:9.0f}Mi {0.0:11.1e} {0.0:9.1e}  " + ", ".join(f"{t:.3f}" for t in anchor_times)
    )
    paths = [("numpy", "float64"), ("numpy", "float32")]
    if torch is not None:
        paths += [("torch", "float32"), ("torch", "bfloat16")]
    for kernel, precision in paths:

        def run():
            return lid_from_embeddings(
                trial,
                enrol,
                true_index,
                calibrator,
                log_prior,
                engine=Engine(device="cpu", kernel=kernel, precision=precision, threads=args.threads),
            ).lid_bits

        lid, times, peak = timed(run, args.repeats, memory=kernel == "numpy")
        med = statistics.median(times)
        err = np.abs(lid - reference).max()
        rel = np.linalg.norm(lid - reference) / np.linalg.norm(reference)
        mem = f"{peak / 2**20:9.0f}Mi" if kernel == "numpy" else f"{'-':>11s}"
        print(
            f"{kernel + ' ' + precision:28s} {med:8.3f}s {anchor / med:7.2f} {med / floor:8.2f} {mem} {err:11.1e} "
            f"{rel:9.1e}  " + ", ".join(f"{t:.3f}" for t in times)
        )
    print(f"(inputs: {input_mib:.0f} MiB of float64 embeddings; a T x N float64 matrix is {n * n * 8 / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
