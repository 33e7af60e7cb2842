"""Benchmark: streaming LID across a dask.distributed LocalCluster (1 and 2 workers) vs one process (anchor).

Anchor (measured in the same run): ``evaluate_fitted(ev, fitted, binary_metrics=True)`` of
an eval embedding set in this process -- the streaming engine, numpy float64, binned
binary metrics (2^16 bins) counted in the same pass, BLAS threaded over every core.
Against it: the same call with ``scheduler=`` a LocalCluster of 1, then 2 worker
processes (one thread each; dask limits each worker's BLAS to one thread), the trials cut
into the default blocks (:func:`lidframe.core.cluster.lid_on_cluster`).  Cosine
embeddings, d = 192, a logistic calibrator fitted on a small dev set, uniform prior.
Printed: the cluster's start-up (not in the timings), medians of the runs, the ratio
anchor / cluster (> 1: the cluster is faster), and the largest |LID difference| and
whether the ranks and pair counts equal the anchor's.  On a machine of 2 cores expect
overhead (the anchor's BLAS already uses both), not a speed-up: the script reports what
it measures.

    python bench/cluster_lid.py [--size 65536] [--dim 192] [--repeats 1] [--quick]

``--quick`` (T = N = 2^12, one run) checks the script in well under a minute; its times
mean little.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.provenance import header
from lidframe.core.engine import Engine
from lidframe.core.evaluation import evaluate_fitted, fit_calibrator
from lidframe.data.embedset import EmbeddingSet


def embedding_set(rng, n_trials, n_enrolled, dim, prefix, noise=3.0):
    """Gaussian speaker profiles; each trial is its speaker's profile plus noise."""
    enrol = rng.normal(size=(n_enrolled, dim))
    speaker = rng.integers(0, n_enrolled, n_trials)
    trial = enrol[speaker] + noise * rng.normal(size=(n_trials, dim))
    ids = np.array([f"{prefix}{j}" for j in range(n_enrolled)])
    return EmbeddingSet(trial, enrol, ids, ids[speaker], [f"{prefix}t{i}" for i in range(n_trials)])


def timed(function, repeats):
    """(last result, run times in s)."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = function()
        times.append(time.perf_counter() - start)
    return out, times


def line(name, times):
    med = statistics.median(times)
    return med, f"{name:36s} median {med:8.2f} s  runs: {', '.join(f'{t:.2f}' for t in times)}"


def same_as(anchor, result) -> str:
    closed = ~anchor.is_outsider
    lid_diff = float(np.max(np.abs(result.lid[closed] - anchor.lid[closed])))
    ranks = bool(np.array_equal(result.true_rank, anchor.true_rank))
    keys = ("eer", "cllr", "min_cllr", "dece_bits")
    metric_diff = max(abs(result.summary[k] - anchor.summary[k]) for k in keys)
    return f"max |dLID| {lid_diff:.1e} bit, ranks equal {ranks}, max |d(eer, cllr, min_cllr, dece)| {metric_diff:.1e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 16, help="T = N of the eval embedding set")
    parser.add_argument("--dim", type=int, default=192)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="T = N = 2^12, one run: a check, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.size, args.repeats = 1 << 12, 1
    from distributed import Client, LocalCluster

    rng = np.random.default_rng(0)
    dev = embedding_set(rng, 2048, 512, args.dim, "d").to_scoreset()
    fitted = fit_calibrator(dev, "logistic")
    ev = embedding_set(rng, args.size, args.size, args.dim, "e")
    cpu = Engine(device="cpu", kernel="numpy", precision="float64")
    print(header(f"cluster LID benchmark: LocalCluster vs one process, T = N = {args.size}, d = {args.dim}"))
    print(f"{args.size**2:,} pairs; binned binary metrics on; {os.cpu_count()} CPUs on this machine")

    def run(scheduler=None):
        return evaluate_fitted(ev, fitted, binary_metrics=True, engine=cpu, scheduler=scheduler)

    anchor, anchor_times = timed(run, args.repeats)
    anchor_med, text = line("anchor: one process (all cores)", anchor_times)
    print(text)
    for n_workers in (1, 2):
        start = time.perf_counter()
        with (
            LocalCluster(
                n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            client.wait_for_workers(n_workers)
            startup = time.perf_counter() - start
            result, times = timed(lambda client=client: run(client), args.repeats)
        med, text = line(f"LocalCluster {n_workers} worker(s), {result.summary['n_blocks']} blocks", times)
        print(f"{text}  (start-up {startup:.1f} s, not timed)")
        print(
            f"RATIO time anchor/cluster({n_workers}) = {anchor_med / med:.2f} (>1: cluster faster); {same_as(anchor, result)}"
        )


if __name__ == "__main__":
    main()
