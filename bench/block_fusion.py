"""Benchmark: cache-sized blocks through every step against the engine's 16 MiB tiles, one thread and several.

An experiment kept for its answer.  The engine (``evaluate``, affine calibrator, uniform
prior) takes each tile of about 16 MiB of scores through one NumPy call per step, so every
step streams the tile through memory.  The alternative timed here takes a few rows at a
time (``--block-rows``) through every step while they are in the cache -- the same NumPy
calls on the same rows, so the same LIDs bit for bit (checked) -- in tiles of the engine's
size, in a pool of threads as the engine runs its tiles.  Its calls are short (tens of
microseconds), and a thread that finishes one must take Python's GIL back from the other
before its next: on one thread the blocks win, on several they lose
(``bench/engine_passes.py`` times each call's speed-up on blocks and on tiles).

Printed per side, the least disturbed (minimum) and median of ``--repeats`` runs, timed
alternately with the floor (one single-threaded ``np.exp`` pass over the T x N LLRs), and
each as a multiple of the floor.

    python bench/block_fusion.py [--size 8192] [--repeats 5] [--block-rows 8] [--threads N]

``--quick`` (T = N = 512, one run) checks the script in seconds; its times mean nothing.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import threading
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.core_cpu import exp_floor, floor_llr, make_inputs, tiled, time_alternately
from bench.provenance import header
from lidframe import Engine
from lidframe.core.lid import default_tile_rows, run_tiles
from lidframe.core.znorm import row_sum_of_squares


def block_fused_lid(scores, true_index, slope, intercept, *, block_rows, threads):
    """LID (bits) of every trial, a block of rows at a time through every step; ordinary inputs only.

    The engine's calls on each block (rank count, max, mean, subtract, sum of squares,
    divide, slope, intercept, peak, subtract, exp, row sum) under a uniform prior, for score
    rows that are not constant and LLRs that are finite: what the engine checks and treats
    apart is left out, this is a timing.
    """
    n_trials, n_enrolled = scores.shape
    tile_rows = default_tile_rows(n_enrolled, threads)
    lid_bits = np.empty(n_trials)
    ranks = np.empty(n_trials, dtype=np.int64)
    local = threading.local()

    def work(start, stop):
        if not hasattr(local, "block"):
            local.block = np.empty((block_rows, n_enrolled))
            local.flags = np.empty((block_rows, n_enrolled), dtype=bool)
        tile = scores[start:stop]
        rows = stop - start
        cols = true_index[start:stop]
        true_score = tile[np.arange(rows), cols]
        counts = np.empty(rows, dtype=np.uint16 if n_enrolled <= 0xFFFF else np.int64)  # (as the engine counts)
        peak, llr_true, row_sum = np.empty(rows), np.empty(rows), np.empty(rows)
        for first in range(0, rows, block_rows):
            last = min(first + block_rows, rows)
            block, z = tile[first:last], local.block[: last - first]
            above = np.greater(block, true_score[first:last, None], out=local.flags[: last - first])
            np.add.reduce(above.view(np.uint8), axis=1, dtype=counts.dtype, out=counts[first:last])
            mean = block.mean(axis=1, keepdims=True)
            np.subtract(block, mean, out=z)
            std = np.sqrt(row_sum_of_squares(z) / (n_enrolled - 1))
            z /= std[:, None]
            np.multiply(z, slope, out=z)
            np.add(z, intercept, out=z)
            block_peak = np.maximum.reduce(z, axis=1, out=peak[first:last])
            llr_true[first:last] = z[np.arange(last - first), cols[first:last]]
            z -= block_peak[:, None]
            np.add.reduce(np.exp(z, out=z), axis=1, out=row_sum[first:last])
        lid_bits[start:stop] = ((llr_true - peak) - (np.log(row_sum) - math.log(n_enrolled))) / math.log(2.0)
        ranks[start:stop] = counts.astype(np.int64) + 1

    run_tiles(n_trials, tile_rows, work, threads=threads)
    return lid_bits


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192, help="T = N (default 8192)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--block-rows", type=int, default=8, help="rows per block (default 8: 512 KiB at N = 8192)")
    parser.add_argument("--threads", type=int, default=None, help="threads (default: every core)")
    parser.add_argument("--quick", action="store_true", help="T = N = 512, one run: a check, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.size, args.repeats = 512, 1
    threads = Engine(threads=args.threads).cpu_threads()
    _, ev, fitted = make_inputs(args.size)
    scores = np.ascontiguousarray(ev.scores)
    slope, intercept = float(fitted.slope_), float(fitted.intercept_)
    print(header(f"block fusion: T = N = {args.size}, blocks of {args.block_rows} rows, {threads} threads"))
    sides = {"floor: one exp pass": exp_floor(floor_llr(fitted, ev))}
    for count in sorted({1, threads}):
        engine = Engine(device="cpu", threads=count)
        sides[f"engine, {count} thread(s)"] = lambda engine=engine: tiled(fitted, ev, engine)
        sides[f"blocks, {count} thread(s)"] = lambda count=count: block_fused_lid(
            scores, ev.true_index, slope, intercept, block_rows=args.block_rows, threads=count
        )
    times, outputs = time_alternately(sides, args.repeats)
    engine_lid = outputs[f"engine, {threads} thread(s)"]
    for name, lid_bits in outputs.items():
        if name.startswith("blocks"):
            same = np.array_equal(lid_bits.view(np.uint64), engine_lid.view(np.uint64))
            print(f"{name}: LIDs bit for bit the engine's: {same}")
    floor_min, floor_median = min(times["floor: one exp pass"]), statistics.median(times["floor: one exp pass"])
    for name, runs in times.items():
        print(
            f"{name:24s} min {min(runs):7.3f} s ({min(runs) / floor_min:5.2f} x floor)  "
            f"median {statistics.median(runs):7.3f} s ({statistics.median(runs) / floor_median:5.2f} x floor)"
        )


if __name__ == "__main__":
    main()
