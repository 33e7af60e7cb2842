"""``lidframe demo``: the real-voice demo where speech engines and torch are installed, else the simulated one.

The real-voice pipeline is :mod:`lidframe.cli.voice_demo` (it synthesizes speech with
espeak-ng/flite/festival/MBROLA, trains ECAPA-TDNN attackers with torch and, with the
utility extra, measures each system's word error rate and ρ_F0), the simulated one
:mod:`lidframe.cli.simulated_demo`.  Where the real-voice demo cannot run, ``lidframe
demo`` says why in one line on stderr and shows the simulated demo.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lidframe.cli.options import CheckedFlag, non_negative_int, positive_int

__all__ = ["register", "run", "voice_demo_unavailable"]


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


def voice_demo_unavailable() -> str | None:
    """Why the real-voice demo cannot run here, in a few words; None where it can.

    It needs a speech engine (:func:`lidframe.audio.corpus.available_voices`), soundfile
    and torch (checked by importing the ECAPA-TDNN attacker, which imports torch through
    :mod:`lidframe.attackers._torch`).
    """
    from lidframe.audio.corpus import INSTALL_HINT, available_voices

    if not available_voices():
        return f"no speech engine here ({INSTALL_HINT})"
    try:
        import soundfile  # noqa: F401
    except ImportError:
        return "soundfile is not installed, and the real-voice demo reads and writes audio with it (pip install -e '.[audio]')"
    try:
        import lidframe.attackers.ecapa  # noqa: F401 - imports torch
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        from lidframe.attackers import TORCH_INSTALL_HINT

        return f"torch is not installed, and the real-voice demo trains its attackers with it ({TORCH_INSTALL_HINT})"
    return None


def run(args: argparse.Namespace) -> int:
    from lidframe.cli.simulated_demo import PER_TRIAL_FILE, report_unavailable
    from lidframe.data.fileio import check_output_dir

    unavailable = None if args.simulated else voice_demo_unavailable()
    if not args.simulated and unavailable is None:  # speech engines, soundfile and torch are here
        from lidframe.cli.voice_demo import run_voice_demo

        out = check_output_dir(args.out or "demo-out", "--out")
        from lidframe.runtime.workers import check_jobs, default_jobs

        jobs = check_jobs(default_jobs() if args.jobs is None else args.jobs, what="processes", name="--jobs")
        print(
            f"lidframe demo: real voices (synthesized here), a pretrained GE2E attacker up the threat-model ladder and "
            f"small ECAPA-TDNNs trained here, and beside them what each anonymiser costs the speech (word error rate, "
            f"rho_F0); caches in {out}/ (cold: about 4 minutes on 2 quiet cores, "
            "a rerun reuses every cache; lidframe demo --simulated for the seconds-fast simulated version)"
        )
        table, _ = run_voice_demo(out, seed=args.seed, epochs=args.epochs, jobs=jobs, progress=args.progress)
        print(table)
        print(f"\nwrote summary.json, table.txt, {PER_TRIAL_FILE} and the LID CCDF plot lid_ccdf.png to {out}")
        _print_report_path(out, report_unavailable())
        return 0
    from lidframe.cli.simulated_demo import DEMO_OPEN_SET_PRIOR, run_demo

    if args.out:
        check_output_dir(args.out, "--out")
    if unavailable is not None:
        print(f"lidframe demo: {unavailable}; showing the simulated demo", file=sys.stderr)
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
