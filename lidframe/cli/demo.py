"""``lidframe demo``: the real-voice demo where speech engines and torch are installed, else the simulated one.

The real-voice pipeline is :mod:`lidframe.demo.voice` (it synthesizes speech with
espeak-ng/flite/festival/MBROLA, trains ECAPA-TDNN attackers with torch and, with the
utility extra, measures each system's word error rate and ρ_F0), the simulated one
:mod:`lidframe.demo.simulated`.  Where the real-voice demo cannot run
(:func:`lidframe.demo.voice_demo_unavailable`), ``lidframe demo`` says why in one line on
stderr and shows the simulated demo.  This module only parses, calls the wing and prints.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from lidframe.cli.options import CheckedFlag, non_negative_int, positive_int

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="the main job: real synthesized voices where engines exist, else simulated"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="write score sets, summary.json, table.txt, per_trial.csv and report.html here (the real-voice demo: "
        "also lid_ccdf.png and its caches; default demo-out); the report's path is printed last",
    )
    parser.add_argument(
        "--seed", type=int, action=CheckedFlag, check=non_negative_int, default=0, help="seed (default 0)"
    )
    parser.add_argument(
        "--simulated", action="store_true", help="the simulated demo (seconds) even where speech engines are installed"
    )
    parser.add_argument(
        "--epochs",
        type=int,
        action=CheckedFlag,
        check=positive_int,
        default=15,
        help="attacker training epochs of the real-voice demo (default 15)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="speech engines and anonymiser processes run at once by the real-voice demo (default: the CPU count)",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="tqdm bars for the real-voice demo's synthesis, recognition, training, embedding and scoring (stage names "
        "are always shown)",
    )
    parser.set_defaults(run=run)


def _load_now() -> str:
    """``; here now: load L on C cores`` (the 1-minute load average), or nothing where the OS does not say."""
    import os

    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return ""
    return f"; here now: load {load:.1f} on {os.cpu_count() or 1} cores"


def run(args: argparse.Namespace) -> int:
    from lidframe.data.runpaths import check_outputs, no_empty_folders_left
    from lidframe.demo import (
        DEMO_OPEN_SET_PRIOR,
        PER_TRIAL_FILE,
        report_unavailable,
        run_demo,
        run_voice_demo,
        voice_demo_unavailable,
    )

    unavailable = None if args.simulated else voice_demo_unavailable()
    if not args.simulated and unavailable is None:  # speech engines, soundfile and torch are here
        out = check_outputs(folders={"--out": args.out or "demo-out"})["--out"]  # a demo reads no input
        assert out is not None
        from lidframe.runtime.workers import check_jobs, default_jobs

        jobs = check_jobs(default_jobs() if args.jobs is None else args.jobs, what="processes", name="--jobs")
        print(
            f"lidframe demo: real voices (synthesized here), a pretrained GE2E attacker up the threat-model ladder and "
            f"small ECAPA-TDNNs trained here, and beside them what each anonymiser costs the speech (word error rate, "
            f"rho_F0); caches in {out}/ (cold: about 4 minutes on 2 quiet cores, but 34 minutes measured on 2 "
            f"cores busy with other work, load 6-11{_load_now()}; a rerun reuses every cache; lidframe demo "
            "--simulated for the seconds-fast simulated version)"
        )
        with no_empty_folders_left(out):  # its caches stay for a rerun; no empty folder does
            table, _ = run_voice_demo(out, seed=args.seed, epochs=args.epochs, jobs=jobs, progress=args.progress)
        print(table)
        print(f"\nwrote summary.json, table.txt, {PER_TRIAL_FILE} and the LID CCDF plot lid_ccdf.png to {out}")
        _print_report_path(out, report_unavailable())
        return 0
    if args.out:
        check_outputs(folders={"--out": args.out})
    if unavailable is not None:
        print(f"lidframe demo: {unavailable}; showing the simulated demo", file=sys.stderr)
    with no_empty_folders_left(args.out) if args.out else contextlib.nullcontext():
        table, _ = run_demo(args.out, seed=args.seed, log=lambda m: print(f"lidframe demo: {m}", file=sys.stderr))
    print(
        "lidframe demo: simulated systems (see docs/quickstart.md), logistic calibrator, uniform prior; "
        f"outALID and misattr: the outsider trials under the prior {DEMO_OPEN_SET_PRIOR} (see docs/openset.md)"
    )
    print(table)
    if args.out:
        print(f"\nwrote score sets, summary.json, table.txt and {PER_TRIAL_FILE} to {args.out}")
        _print_report_path(Path(args.out), report_unavailable())
    return 0


def _print_report_path(out: Path, unavailable: str | None) -> None:
    """The last line of a demo: where its report.html is (or, where it cannot be rendered, why not: stderr too)."""
    from lidframe.report import REPORT_FILE

    if unavailable is None:
        print(f"wrote the audit report to {out / REPORT_FILE}")
