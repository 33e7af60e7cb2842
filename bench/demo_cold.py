"""Benchmark: wall time of a cold ``lidframe demo --out <fresh folder>`` (what ``make demo`` does after the install).

Each run is a subprocess ``lidframe demo --out TMP/demo-out`` in a fresh temporary folder,
so nothing is cached: synthesis, anonymisation, training, embedding, scoring and the
report all run.  The anchor, measured in the same invocation, is the simulated demo
(``lidframe demo --simulated --out TMP/sim-out``, with its report): the ratio cold demo /
simulated demo says how much more the real thing costs than the seconds-fast version on
this machine.  The figure is the median over ``--repeats`` runs (default 1: a cold demo
takes minutes); the target is under ~3 minutes on 2 cores.

``--quick`` runs the cold demo with ``--epochs 1`` to check that the script works: its
time is NOT the figure to record (a real ``make demo`` trains 15 epochs).

    python bench/demo_cold.py [--repeats 1] [--anchor-repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIDFRAME = Path(sys.executable).with_name("lidframe")


def timed(argv: list[str], folder: Path) -> float:
    """Seconds of wall time of ``lidframe ARGV`` run in *folder*; its output is kept in *folder*/log.txt."""
    start = time.perf_counter()
    with open(folder / "log.txt", "w", encoding="utf-8") as log:
        proc = subprocess.run([str(LIDFRAME), *argv], cwd=folder, stdout=log, stderr=subprocess.STDOUT, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"lidframe {' '.join(argv)} exited {proc.returncode}; see {folder / 'log.txt'}")
    report = folder / argv[argv.index("--out") + 1] / "report.html"
    if not report.is_file():
        sys.exit(f"lidframe {' '.join(argv)} wrote no {report}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="cold demo runs (default 1: each takes minutes)")
    parser.add_argument("--anchor-repeats", type=int, default=3, help="simulated demo runs (the anchor)")
    parser.add_argument("--quick", action="store_true", help="--epochs 1: checks the script, NOT the figure")
    args = parser.parse_args()
    if not LIDFRAME.is_file():
        sys.exit(f"no lidframe next to {sys.executable}; run with the venv's python (.venv/bin/python)")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from lidframe.demo import voice_demo_unavailable

    unavailable = voice_demo_unavailable()
    if unavailable is not None:
        sys.exit(f"the real-voice demo cannot run here: {unavailable}")
    demo = ["demo", "--out", "demo-out"] + (["--epochs", "1"] if args.quick else [])
    print(f"cold `lidframe {' '.join(demo)}` in a fresh folder" + (" (--quick: NOT the figure)" if args.quick else ""))
    print(f"machine: {platform.machine()} python {platform.python_version()}, {os.cpu_count()} CPUs")
    anchor, cold = [], []
    for _ in range(args.anchor_repeats):
        with tempfile.TemporaryDirectory(prefix="lidframe-bench-") as folder:
            anchor.append(timed(["demo", "--simulated", "--out", "sim-out"], Path(folder)))
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="lidframe-bench-") as folder:
            cold.append(timed(demo, Path(folder)))
    rows = [
        ("simulated demo (anchor)", args.anchor_repeats, statistics.median(anchor), anchor),
        ("cold real-voice demo", args.repeats, statistics.median(cold), cold),
    ]
    print(f"{'run':<26}{'n':>3}{'median s':>11}   all runs (s)")
    for name, n, median, runs in rows:
        print(f"{name:<26}{n:>3}{median:>11.1f}   {', '.join(f'{r:.1f}' for r in runs)}")
    ratio = statistics.median(cold) / statistics.median(anchor)
    print(f"ratio cold demo / simulated demo: {ratio:.1f}; cold demo {statistics.median(cold) / 60:.2f} min")


if __name__ == "__main__":
    main()
