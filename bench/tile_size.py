"""Benchmark: the dense LID engine's time against its tile size, as multiples of one exp pass (the floor).

At T = N = ``--size`` (float64, binary metrics off, the fit outside the timing; the inputs
and the fit of :mod:`bench.core_cpu`), the engine (``evaluate_fitted`` with
``Engine(device="cpu", threads=..., tile_rows=R)``) runs with each tile size R of
``--rows`` and with the default (``tile_rows=None``: :func:`lidframe.core.lid.default_tile_rows`
of N and the threads), and the floor -- one single-threaded ``np.exp`` pass over the T x N
LLRs, :func:`bench.core_cpu.exp_floor` -- is timed in the same run.  Each repeat times
the floor and every size once, in an order rotated from repeat to repeat, so that a
disturbance hits them alike.  Printed per size: the least disturbed (minimum) and the
median of its runs, and each as a multiple of the floor's minimum / median.  The LIDs
of every size are checked to be the same bytes (the tile size changes no number).

    python bench/tile_size.py [--size 8192] [--repeats 5] [--threads N] [--rows 16,32,64,128,256,512,1024]

``--quick`` (T = N = 512, rows 8 and 64, one repeat) checks the script in seconds; its
times mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.core_cpu import exp_floor, floor_llr, make_inputs, tiled
from bench.provenance import header
from lidframe import Engine
from lidframe.core.lid import default_tile_rows

FLOOR = "floor: one exp pass"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192, help="T = N (default 8192)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dev-trials", type=int, default=512)
    parser.add_argument("--threads", type=int, default=None, help="engine threads (default: every core)")
    parser.add_argument(
        "--rows", default="16,32,64,128,256,512,1024", help="tile sizes in trials, comma-separated (and the default)"
    )
    parser.add_argument("--quick", action="store_true", help="T = N = 512, rows 8,64, one run: a check")
    args = parser.parse_args()
    if args.quick:
        args.size, args.repeats, args.rows = 512, 1, "8,64"
    threads = Engine(threads=args.threads).cpu_threads()
    default = default_tile_rows(args.size, threads)
    sizes = sorted({int(r) for r in args.rows.split(",") if r.strip()})
    _, ev, fitted = make_inputs(args.size, args.dev_trials)
    print(header(f"tile-size benchmark: T = N = {args.size}, float64, binary metrics off"))
    print(f"engine threads: {threads}; default tile: {default} rows; floor: one np.exp pass (one thread)")
    sides = {FLOOR: exp_floor(floor_llr(fitted, ev))}
    for rows in [*sizes, None]:
        engine = Engine(device="cpu", threads=threads, tile_rows=rows)
        sides[f"{rows} rows" if rows is not None else f"default ({default} rows)"] = lambda engine=engine: tiled(
            fitted, ev, engine
        )
    names = list(sides)
    times: dict[str, list[float]] = {name: [] for name in names}
    first = None
    for repeat in range(args.repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            start = time.perf_counter()
            out = sides[name]()
            times[name].append(time.perf_counter() - start)
            if name != FLOOR:
                if first is None:
                    first = out.tobytes()
                elif out.tobytes() != first:
                    raise SystemExit(f"{name}: the LIDs differ from another tile size's (they must not)")
    floor_min, floor_median = min(times[FLOOR]), statistics.median(times[FLOOR])
    print(f"{'side':24s} {'min':>8s} {'median':>8s} {'min/floor':>10s} {'med/floor':>10s}  runs")
    for name in names:
        runs = times[name]
        print(
            f"{name:24s} {min(runs):7.3f}s {statistics.median(runs):7.3f}s {min(runs) / floor_min:10.2f} "
            f"{statistics.median(runs) / floor_median:10.2f}  " + ", ".join(f"{t:.3f}" for t in runs)
        )
    print("(every tile size gave the same LIDs, byte for byte)")


if __name__ == "__main__":
    main()
