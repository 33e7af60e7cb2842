"""Benchmark: lidframe's tiled LID engine against a naive dense float64 pipeline and the floor.

Both sides get the same calibrator, fitted once on the same dev set (the fit is not
timed), and the same T x N eval scores; the naive side z-normalises, calibrates and
log-softmaxes the whole matrix at once (scipy.special.log_softmax), the way a short
script would.  The floor is the work no engine avoids: one single-threaded ``np.exp``
pass over the T x N LLRs (into a preallocated buffer).  The three are timed alternately,
run after run, so that a disturbance hits them alike.  Printed per side: the least
disturbed (minimum) and the median of the runs; the ratios naive / lidframe (> 1:
lidframe is faster) and lidframe / floor (the engine as a multiple of one exp pass),
from the minima and from the medians; and the peak memory each allocates beyond its
inputs (tracemalloc sees numpy's buffers), in MiB and in units of one T x N float64
matrix.  ``lidframe + binary metrics`` (every pair's LLR kept) is timed after, alone.

    python bench/core_cpu.py [--size 8192] [--repeats 5] [--threads N] [--quick]

``--threads`` sets the engine's threads (default: every core, ``Engine().cpu_threads()``).
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
from lidframe import Engine, ScoreSet, evaluate_fitted
from lidframe.core.evaluation import fit_calibrator


def make_scoreset(rng, n_trials, n_enrolled, prefix):
    enrolled = np.array([f"{prefix}{j}" for j in range(n_enrolled)])
    true = np.arange(n_trials) % n_enrolled
    scores = rng.standard_normal((n_trials, n_enrolled))
    scores[np.arange(n_trials), true] += 2.0
    return ScoreSet(scores, enrolled, enrolled[true])


def naive_dense(fitted, ev):
    """What a short script does: everything as whole T x N float64 matrices."""
    s = ev.scores
    z = (s - s.mean(axis=1, keepdims=True)) / s.std(axis=1, ddof=1, keepdims=True)
    llr = fitted.slope_ * z + fitted.intercept_
    log_post = log_softmax(llr, axis=1)
    n = s.shape[1]
    return (log_post[np.arange(s.shape[0]), ev.true_index] + np.log(n)) / np.log(2.0)


def tiled(fitted, ev, engine, binary_metrics=False):
    return evaluate_fitted(ev, fitted, binary_metrics=binary_metrics, engine=engine).lid


def make_inputs(size, dev_trials=512, seed=0):
    """(dev, ev, fitted): a dev set of *dev_trials* x 256, an eval set of *size* x *size*, the logistic fit on dev."""
    rng = np.random.default_rng(seed)
    dev = make_scoreset(rng, dev_trials, 256, "d")
    ev = make_scoreset(rng, size, size, "e")
    return dev, ev, fit_calibrator(dev)


def floor_llr(fitted, ev):
    """The T x N LLRs whose exponentials are the floor: the z-scores of *ev* times the fitted slope."""
    s = ev.scores
    return fitted.slope_ * (s - s.mean(axis=1, keepdims=True)) / s.std(axis=1, ddof=1, keepdims=True)


def exp_floor(llr):
    """The floor as a function to time: one single-threaded ``np.exp`` pass over *llr* into a buffer of its own.

    Not in place: a second pass would take the exponential of the exponential (and overflow).
    """
    buffer = np.empty_like(llr)
    return lambda: np.exp(llr, out=buffer)


def time_alternately(sides, repeats):
    """({name: [seconds of each run]}, {name: last output}): every side once per repeat, in turn.

    Run after run, so that a disturbance of the machine hits every side alike.
    """
    times: dict[str, list[float]] = {name: [] for name in sides}
    outputs = {}
    for _ in range(repeats):
        for name, function in sides.items():
            gc.collect()
            start = time.perf_counter()
            outputs[name] = function()
            times[name].append(time.perf_counter() - start)
    return times, outputs


def peak_memory(function):
    gc.collect()
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192, help="T = N (default 8192)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dev-trials", type=int, default=512)
    parser.add_argument("--threads", type=int, default=None, help="engine threads (default: every core)")
    parser.add_argument("--quick", action="store_true", help="T = N = 1024, one run: a check, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.size, args.repeats = 1024, 1
    _, ev, fitted = make_inputs(args.size, args.dev_trials)
    engine = Engine(device="cpu", threads=args.threads)
    matrix_mib = args.size * args.size * 8 / 2**20
    print(header(f"core benchmark: T = N = {args.size} (one T x N float64 = {matrix_mib:.0f} MiB)"))
    print(f"engine threads: {engine.cpu_threads()}; floor: one np.exp pass over the T x N LLRs (one thread)")
    sides = {
        "naive dense": lambda: naive_dense(fitted, ev),
        "lidframe tiled": lambda: tiled(fitted, ev, engine),
        "floor: one exp pass": exp_floor(floor_llr(fitted, ev)),
    }
    times, outputs = time_alternately(sides, args.repeats)
    with_binary = []
    for _ in range(args.repeats):
        gc.collect()
        start = time.perf_counter()
        tiled(fitted, ev, engine, binary_metrics=True)
        with_binary.append(time.perf_counter() - start)
    times["lidframe + binary metrics"] = with_binary
    peaks = {
        "naive dense": peak_memory(sides["naive dense"]),
        "lidframe tiled": peak_memory(sides["lidframe tiled"]),
        "lidframe + binary metrics": peak_memory(lambda: tiled(fitted, ev, engine, binary_metrics=True)),
    }
    for name, runs in times.items():
        memory = ""
        if name in peaks:
            memory = f"  peak extra {peaks[name] / 2**20:8.1f} MiB = {peaks[name] / 2**20 / matrix_mib:.2f} x T*N"
        print(
            f"{name:28s} min {min(runs):7.3f} s  median {statistics.median(runs):7.3f} s"
            f"  (runs: {', '.join(f'{t:.3f}' for t in runs)}){memory}"
        )
    diff = np.max(np.abs(outputs["naive dense"] - outputs["lidframe tiled"]))
    print(f"max |LID difference| naive vs tiled: {diff:.2e} bit")
    for label, pick in (("least disturbed (min)", min), ("median", statistics.median)):
        naive, engine_time, floor = (pick(times[k]) for k in ("naive dense", "lidframe tiled", "floor: one exp pass"))
        print(
            f"RATIO {label}: naive/lidframe = {naive / engine_time:.2f} (>1: lidframe faster); "
            f"lidframe/floor = {engine_time / floor:.2f} (one exp pass = 1)"
        )
    print(f"peak memory naive/lidframe = {peaks['naive dense'] / peaks['lidframe tiled']:.1f}")


if __name__ == "__main__":
    main()
