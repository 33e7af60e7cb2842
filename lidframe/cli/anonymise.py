"""``lidframe anonymise``: anonymise a Kaldi data dir with a signal-processing anonymiser."""

from __future__ import annotations

import argparse

from lidframe.cli.options import check_output_dir, float_list

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("anonymise", help="anonymise a Kaldi data dir (mcadams, pitch, resample)")
    parser.add_argument("--method", required=True, choices=("mcadams", "pitch", "resample"))
    parser.add_argument("--alpha", type=float, default=0.8, help="McAdams coefficient (default 0.8)")
    parser.add_argument("--alpha-range", metavar="LOW,HIGH", help="McAdams: one alpha per speaker drawn in this range")
    parser.add_argument("--ratio", type=float, default=1.2, help="pitch / resampling ratio (default 1.2)")
    parser.add_argument(
        "--ratio-range", metavar="LOW,HIGH", help="pitch / resample: ratio drawn per speaker in this range"
    )
    parser.add_argument(
        "--per-utterance", action="store_true", help="draw alpha / ratio per utterance, not per speaker"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("in_dir", metavar="IN_DIR")
    parser.add_argument("out_dir", metavar="OUT_DIR")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.audio.anonymise import anonymise_data_dir

    check_output_dir(args.out_dir, "OUT_DIR")
    alpha_range = tuple(float_list(args.alpha_range, "--alpha-range", count=2)) if args.alpha_range else None
    ratio_range = tuple(float_list(args.ratio_range, "--ratio-range", count=2)) if args.ratio_range else None
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
    )
    print(f"anonymised {report['utterances']} utterances with {args.method} into {args.out_dir}")
    return 0
