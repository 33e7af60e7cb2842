"""``lidframe anonymise``: anonymise a Kaldi data dir with a signal-processing anonymiser."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from lidframe.cli.options import CheckedFlag, add_wav_paths_argument, float_list, non_negative_int
from lidframe.data.runpaths import check_outputs, no_empty_folders_left
from lidframe.errors import InputError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("anonymise", help="anonymise a Kaldi data dir (mcadams, pitch, resample)")
    parser.add_argument(
        "--method",
        required=True,
        choices=("mcadams", "pitch", "resample"),
        help="McAdams coefficient (--alpha), pitch shift or resampling (--ratio)",
    )
    parser.add_argument("--alpha", type=float, default=0.8, help="McAdams coefficient (default 0.8)")
    parser.add_argument("--alpha-range", metavar="LOW,HIGH", help="McAdams: one alpha per speaker drawn in this range")
    parser.add_argument("--ratio", type=float, default=1.2, help="pitch / resampling ratio (default 1.2)")
    parser.add_argument(
        "--ratio-range", metavar="LOW,HIGH", help="pitch / resample: ratio drawn per speaker in this range"
    )
    parser.add_argument(
        "--per-utterance", action="store_true", help="draw alpha / ratio per utterance, not per speaker"
    )
    parser.add_argument(
        "--seed",
        type=int,
        action=CheckedFlag,
        check=non_negative_int,
        default=0,
        help="seed of the per-speaker draws of the ranges (default 0)",
    )
    parser.add_argument("in_dir", metavar="IN_DIR", help="the Kaldi data dir to anonymise (wav.scp, utt2spk)")
    parser.add_argument("out_dir", metavar="OUT_DIR", help="output data dir (its wav/ and tables)")
    add_wav_paths_argument(parser, writes="OUT_DIR's wav.scp")
    parser.set_defaults(run=run)


def _check_values(flag: str, values: Sequence[float], check: Callable[[float], object]) -> None:
    """Run the anonymiser's own check of its parameter (*check*) on each of *values*, naming *flag* if one fails."""
    for value in values:
        try:
            check(value)
        except InputError as exc:
            raise InputError(f"{flag} {','.join(f'{v:g}' for v in values)}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from lidframe.audio.anonymise import anonymise_data_dir, mcadams, pitch_shift, resample_shift

    check_outputs(folders={"OUT_DIR": args.out_dir}, inputs=[args.in_dir])
    alpha_range = tuple(float_list(args.alpha_range, "--alpha-range", count=2)) if args.alpha_range else None
    ratio_range = tuple(float_list(args.ratio_range, "--ratio-range", count=2)) if args.ratio_range else None
    # the method's parameter is checked before any audio is read (the anonymiser checks it
    # per utterance, deep in the run): on a one-sample signal, with the anonymiser's own check
    silence = np.zeros(1)
    checks: dict[str, Callable[[float], object]] = {
        "mcadams": lambda alpha: mcadams(silence, alpha),
        "pitch": lambda ratio: pitch_shift(silence, ratio),
        "resample": lambda ratio: resample_shift(silence, ratio),
    }
    name = "alpha" if args.method == "mcadams" else "ratio"
    given_range = alpha_range if args.method == "mcadams" else ratio_range
    if given_range is not None:
        _check_values(f"--{name}-range", given_range, checks[args.method])
    else:  # the message names the flag as every check of a flag's value does (options.PARAMETER_FLAGS)
        checks[args.method](args.alpha if name == "alpha" else args.ratio)
    with no_empty_folders_left(args.out_dir):  # a full disk on the first write leaves no empty OUT_DIR/wav
        report = anonymise_data_dir(
            args.in_dir,
            args.out_dir,
            method=args.method,
            alpha=args.alpha,
            alpha_range=alpha_range,
            ratio=args.ratio,
            ratio_range=ratio_range,
            per_utterance=args.per_utterance,
            seed=args.seed,
            wav_paths=args.wav_paths,
        )
    print(f"anonymised {report['utterances']} utterances with {args.method} into {args.out_dir}")
    return 0
