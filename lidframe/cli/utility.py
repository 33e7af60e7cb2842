"""``lidframe utility``: word error rate and ρ_F0 of a Kaldi data dir (what anonymisation costs the speech)."""

from __future__ import annotations

import argparse
import math

from lidframe.cli.options import (
    CheckedFlag,
    add_bootstrap_arguments,
    add_wav_paths_argument,
    bootstrap_from_args,
    positive_int,
)

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "utility",
        help="word error rate (and, against the original, the F0 correlation) of a Kaldi data dir",
        description=(
            "Recognise every utterance of a Kaldi data dir (wav.scp, text) and score the words against its text: "
            "the word error rate. With --reference (the original data dir, same utterance ids), also rho_F0: "
            "the mean correlation of each utterance's F0 contour with the original's. docs/utility.md."
        ),
    )
    parser.add_argument("--data", required=True, metavar="DIR", help="Kaldi data dir with wav.scp and text")
    parser.add_argument(
        "--reference", metavar="DIR", help="the original data dir (same utterance ids): rho_F0 against it"
    )
    add_wav_paths_argument(parser)
    parser.add_argument(
        "--reference-wer",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --reference: recognise the plain reference too, so that the warning on voices the recogniser "
        "cannot read (WER above 50 %%) is about the plain speech (default; --no-reference-wer halves the "
        "recognition)",
    )
    parser.add_argument(
        "--recogniser",
        default="pocketsphinx",
        metavar="SPEC",
        help="recogniser spec NAME[?key=value&...] (default pocketsphinx; lidframe plugins --kind recogniser)",
    )
    parser.add_argument("--per-utterance", metavar="OUT.csv", help="write one row per utterance (CSV)")
    parser.add_argument("--json", metavar="OUT.json", help="write the result as JSON")
    from lidframe.runtime.workers import default_jobs

    parser.add_argument(
        "--jobs",
        type=int,
        action=CheckedFlag,
        check=positive_int,
        default=None,
        metavar="J",
        help=f"worker processes recognising at once (default: the CPU count, {default_jobs()} here; the numbers do "
        "not depend on it)",
    )
    add_bootstrap_arguments(parser)
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar over the utterances on stderr (default: shown when stderr is a terminal)",
    )
    parser.set_defaults(run=run)


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _interval(interval, scale: float, digits: int, unit: str) -> str:
    """`` [low, high]`` of *interval* scaled (empty without one)."""
    if interval is None:
        return ""
    return f" [{_number(scale * interval.low, digits)}, {_number(scale * interval.high, digits)}]{unit}"


def _print_result(result) -> None:
    """The console lines of a :class:`~lidframe.utility.Utility`; a warning naming the voices the recogniser cannot read."""
    import warnings

    from lidframe.utility.voices import lost_voices_line, unreadable_warning

    intervals = result.intervals or {}
    print(
        f"WER {_number(100 * result.wer, 1)} %{_interval(intervals.get('wer'), 100, 1, ' %')} on "
        f"{result.utterances} utterances of {result.speakers} speakers ({result.reference_words} reference "
        f"words: {result.substitutions} substituted, {result.deletions} deleted, {result.insertions} inserted); "
        f"recogniser {result.recogniser}"
    )
    if result.reference is not None:
        print(
            f"rho_F0 {_number(result.rho_f0, 3)}{_interval(intervals.get('rho_f0'), 1, 3, '')} (mean over {result.rho_f0_utterances} of {result.utterances} "
            f"utterances with frames voiced in both)"
        )
    if result.resampled:
        print(f"resampled {result.resampled} utterances to the recogniser's rate")
    print(f"transcripts normalised: {result.normalisation}")
    lost = lost_voices_line(result)
    if lost is not None:
        print(lost)
    unreadable = unreadable_warning(result)
    if unreadable is not None:  # one line on stderr, "lidframe: warning: ..."
        warnings.warn(unreadable, stacklevel=1)
    if result.bootstrap is not None:
        b = result.bootstrap
        print(
            f"intervals: {b['level']:.0%} {b['method']} bootstrap, {b['n_boot']} resamples of {b['unit']}s "
            f"(seed {b['seed']})"
        )


def run(args: argparse.Namespace) -> int:
    import sys

    from lidframe.cli.options import check_output_paths, spec_files
    from lidframe.data.fileio import atomic_path, staged_outputs, write_json
    from lidframe.runtime.workers import default_jobs
    from lidframe.utility import utility

    per_utterance, json_path = check_output_paths(
        {"--per-utterance": args.per_utterance, "--json": args.json},
        inputs=[args.data, args.reference, *spec_files("recogniser", args.recogniser)],
    )
    bar = None
    if sys.stderr.isatty() if args.progress is None else args.progress:
        from tqdm import tqdm

        bar = tqdm(desc="recognising", unit="utt")

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    try:
        result = utility(
            args.data,
            args.reference,
            recogniser=args.recogniser,
            bootstrap=bootstrap_from_args(args) if args.bootstrap else None,
            jobs=default_jobs() if args.jobs is None else args.jobs,
            progress=progress,
            wav_paths=args.wav_paths,
            plain_wer=args.reference_wer,
        )
    finally:
        if bar is not None:
            bar.close()
    _print_result(result)
    with staged_outputs():
        if json_path is not None:
            write_json(json_path, result.to_dict())
        if per_utterance is not None:
            with atomic_path(per_utterance) as tmp:
                result.to_frame().to_csv(tmp, index=False, na_rep="nan")
    return 0
