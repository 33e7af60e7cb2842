"""``lidframe demo``: the real-voice demo where speech engines are installed, else the simulated one.

The real-voice pipeline is :mod:`lidframe.cli.voice_demo`, the simulated one
:mod:`lidframe.cli.simulated_demo`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="the main job: real synthesized voices where engines exist, else simulated"
    )
    parser.add_argument("--out", metavar="DIR", help="also write score sets, summary.json and table.txt here")
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    parser.add_argument(
        "--simulated", action="store_true", help="the simulated demo (seconds) even where speech engines are installed"
    )
    parser.add_argument("--epochs", type=int, default=15, help="attacker training epochs of the real-voice demo")
    parser.add_argument("--progress", action="store_true")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.audio.corpus import INSTALL_HINT, available_voices

    if not args.simulated and available_voices():
        from lidframe.cli.voice_demo import run_voice_demo

        out = args.out or "demo-out"
        print(
            f"lidframe demo: real voices (synthesized here), trained attackers, caches in {out}/ "
            "(lidframe demo --simulated for the seconds-fast simulated version)"
        )
        table, _ = run_voice_demo(out, seed=args.seed, epochs=args.epochs, progress=args.progress)
        print(table)
        print(f"\nwrote the LID CCDF plot to {Path(out) / 'lid_ccdf.png'}")
        return 0
    from lidframe.cli.simulated_demo import run_demo

    if not args.simulated:
        print(f"lidframe demo: no speech engine here ({INSTALL_HINT}); showing the simulated demo")
    table, _ = run_demo(args.out, seed=args.seed)
    print("lidframe demo: simulated systems (see docs/quickstart.md), logistic calibrator, uniform prior")
    print(table)
    if args.out:
        print(f"\nwrote score sets, summary.json and table.txt to {args.out}")
    return 0
