"""Benchmark: what each NumPy call of the LID engine costs, and how it scales over threads, by block size.

``evaluate`` with an affine calibrator (logistic, temperature, identity) under a uniform
prior computes, per trial row of N raw scores, bit for bit the numbers of these NumPy
calls, each rounding as NumPy rounds it:

    rank count    np.greater(s, s_true) then the flags summed per row
    z-norm        max(s), mean(s) (a pairwise sum), s - mean, einsum("ij,ij->i") of it, / std
    calibrate     * slope, + intercept
    softmax       - peak, np.exp, the row sum (a pairwise sum)

No engine made of NumPy calls that keeps those numbers avoids one of them: a fused loop
would have to reproduce NumPy's summation orders and its SIMD exp bit for bit.  Printed:

- each call's time per score on a block of ``--rows`` rows kept in the cache (one thread,
  the least of ``--repeats``), their sum, and the floor of ``bench/core_cpu.py`` measured in
  the same run (one single-threaded ``np.exp`` pass over the T x N LLRs); the sum over the
  threads and the floor is the least engine/floor ratio of these calls if every one ran in
  the cache and the threads scaled perfectly;
- each call's speed-up on ``--threads`` threads (each on a block of its own) over one, on
  blocks of ``--rows`` rows and on tiles of the engine's default size: on short calls the
  threads wait for each other to take Python's GIL back, which is why the engine streams
  tiles of 16 MiB through memory rather than cache-sized blocks through every step.

    python bench/engine_passes.py [--size 8192] [--rows 16] [--repeats 2000] [--threads 2]

``--quick`` (N = 512, few repeats) checks the script in seconds; its times mean nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.core_cpu import exp_floor, floor_llr, make_inputs
from bench.provenance import header
from lidframe import Engine
from lidframe.core.lid import default_tile_rows, exp_block_rows


def engine_calls(n_enrolled: int, rows: int, seed: int = 0) -> dict[str, Callable[[], object]]:
    """The engine's NumPy calls on a (rows, N) block of scores of their own, ``"(reset)"`` first.

    Each call may be repeated any number of times without its values drifting towards an
    overflow or a subnormal (whose arithmetic takes other time): the map is ``z * 1.0 + 0.0``,
    the std 1.0 and the peak 1e-3 (the arithmetic costs the same for any normal value), and the
    exponentials go to a buffer of their own, as the engine's do.
    """
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((rows, n_enrolled))
    true_score = scores[:, :1].copy()
    z, exps = np.empty_like(scores), np.empty_like(scores)
    flags = np.empty(scores.shape, dtype=bool)
    per_row = np.empty(rows)
    counts = np.empty(rows, dtype=np.uint16 if n_enrolled <= 0xFFFF else np.int64)
    mean = scores.mean(axis=1, keepdims=True)
    std, peak = np.ones((rows, 1)), np.full((rows, 1), 1e-3)
    slope, intercept = 1.0, 0.0

    def reset() -> None:
        np.subtract(scores, mean, out=z)

    return {
        "(reset)": reset,
        "rank: greater": lambda: np.greater(scores, true_score, out=flags),
        "rank: count flags": lambda: np.add.reduce(flags.view(np.uint8), axis=1, dtype=counts.dtype, out=counts),
        "z-norm: max": lambda: np.maximum.reduce(scores, axis=1, out=per_row),
        "z-norm: mean (sum)": lambda: np.add.reduce(scores, axis=1, out=per_row),
        "z-norm: subtract mean": lambda: np.subtract(scores, mean, out=z),
        "z-norm: einsum sum of squares": lambda: np.einsum("ij,ij->i", z, z, out=per_row),
        "z-norm: divide by std": lambda: np.divide(z, std, out=z),
        "calibrate: multiply slope": lambda: np.multiply(z, slope, out=z),
        "calibrate: add intercept": lambda: np.add(z, intercept, out=z),
        "softmax: subtract peak": lambda: np.subtract(z, peak, out=z),
        "softmax: exp": lambda: np.exp(z, out=exps),
        "softmax: row sum": lambda: np.add.reduce(exps, axis=1, out=per_row),
    }


def call_costs(n_enrolled: int, rows: int, repeats: int) -> dict[str, float]:
    """Seconds per score of each call: the least of *repeats* calls on one (rows, N) block in the cache."""
    calls = engine_calls(n_enrolled, rows)
    reset = calls.pop("(reset)")
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeats):
        reset()
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: seconds / (rows * n_enrolled) for name, seconds in best.items()}


def thread_speedups(n_enrolled: int, rows: int, threads: int, rounds: int = 5) -> dict[str, float]:
    """Each call's speed-up on *threads* threads, each calling it on a (rows, N) block of its own, over one thread.

    The least of *rounds* timings of a loop of about 2^24 scores' worth of calls, alone and
    on every thread at once: ``threads x time alone / time together`` (*threads*: perfect).
    """
    blocks = [engine_calls(n_enrolled, rows, seed) for seed in range(threads)]
    for calls in blocks:
        calls.pop("(reset)")()
    loops = max(5, (1 << 24) // (rows * n_enrolled))
    speedups = {}
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for name in blocks[0]:

            def loop(index: int, name: str = name) -> None:
                call = blocks[index][name]
                for _ in range(loops):
                    call()

            alone = min(_seconds(lambda: loop(0)) for _ in range(rounds))
            together = min(_seconds(lambda: list(pool.map(loop, range(threads)))) for _ in range(rounds))
            speedups[name] = threads * alone / together
    return speedups


def _seconds(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192, help="T = N (default 8192)")
    parser.add_argument("--rows", type=int, default=None, help="rows of a block in the cache (default: the engine's)")
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--floor-repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="threads (default: every core)")
    parser.add_argument("--quick", action="store_true", help="N = 512, few repeats: a check, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.size, args.repeats, args.floor_repeats = 512, 20, 1
    rows = args.rows or exp_block_rows(args.size)
    threads = Engine(threads=args.threads).cpu_threads()
    tile_rows = default_tile_rows(args.size, threads)
    print(header(f"engine calls: N = {args.size}; blocks of {rows} rows, tiles of {tile_rows}; floor at T = N"))
    _, ev, fitted = make_inputs(args.size)
    floor = exp_floor(floor_llr(fitted, ev))
    floor_ns = min(_seconds(floor) for _ in range(args.floor_repeats)) / args.size**2 * 1e9
    costs = call_costs(args.size, rows, args.repeats)
    on_blocks = thread_speedups(args.size, rows, threads)
    on_tiles = thread_speedups(args.size, tile_rows, threads)
    print(
        f"{'call':32s} {'ns per score':>12s}  speed-up on {threads} threads: {rows}-row blocks  {tile_rows}-row tiles"
    )
    for name, seconds in costs.items():
        print(f"{name:32s} {seconds * 1e9:12.3f}  {on_blocks[name]:39.2f}  {on_tiles[name]:15.2f}")
    total_ns = sum(costs.values()) * 1e9
    print(f"{'all calls':32s} {total_ns:12.3f} (one thread, each in the cache)")
    print(f"floor: one np.exp pass over T x N (one thread, least of {args.floor_repeats}): {floor_ns:.3f} ns per score")
    print(
        f"RATIO least engine/floor of these calls on {threads} threads, in the cache and scaling perfectly: "
        f"{total_ns / threads / floor_ns:.2f} (one exp pass = 1)"
    )


if __name__ == "__main__":
    main()
