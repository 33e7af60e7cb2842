"""``lidframe score``: score trial audio against enrolled speakers with an attacker (a T x N score set)."""

from __future__ import annotations

import argparse
from pathlib import Path

from lidframe.cli.options import check_output_paths
from lidframe.errors import InputError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("score", help="score trial audio against enrolled speakers with an attacker (T x N)")
    parser.add_argument(
        "--attacker", required=True, help="attacker spec: ecapa, xvector, precomputed, random, NAME?k=v"
    )
    parser.add_argument("--enrol", required=True, metavar="DIR", help="enrolment data dir (wav.scp, utt2spk)")
    parser.add_argument("--trials", required=True, action="append", metavar="DIR", help="trial data dir(s), repeatable")
    parser.add_argument("--out", required=True, metavar="SCORES.npz", help="output score set (.npz or long .csv)")
    parser.add_argument("--checkpoint", help="model checkpoint (SpeechBrain embedding_model.ckpt)")
    parser.add_argument("--embeddings", help="embedding file(s) for --attacker precomputed")
    parser.add_argument("--device", help="auto (default), cpu, cuda, ...")
    parser.add_argument("--precision", choices=("fp32", "bf16"))
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--cache-dir", help="embedding cache folder")
    parser.add_argument("--enrolment", choices=("mean_of_normalised", "mean"), help="enrolment aggregation")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker
    from lidframe.registry import create

    if Path(args.out).suffix.lower() not in (".npz", ".csv"):
        raise InputError(f"--out {args.out}: expected a .npz or .csv score-set file")
    inputs = [args.enrol, *args.trials, *([args.embeddings] if args.embeddings else [])]
    (out,) = check_output_paths({"--out": args.out}, inputs=inputs)
    assert out is not None  # --out is required
    extra = {}
    if args.checkpoint:
        extra["checkpoint"] = args.checkpoint
    if args.embeddings:
        extra["path"] = args.embeddings
    for flag in ("device", "batch_size", "cache_dir", "enrolment", "precision"):
        value = getattr(args, flag)
        if value is not None:
            extra[flag] = value
    attacker = create("attacker", args.attacker, **extra)
    enrol = read_data_dir(args.enrol)
    found_in = dict.fromkeys((u.utt_id for u in enrol), f"--enrol {args.enrol}")
    trials = []
    for folder in args.trials:
        for utt in read_data_dir(folder):
            if (
                utt.utt_id in found_in
            ):  # a trial scored against its own enrolment would leak, a repeat would count twice
                raise InputError(f"--trials {folder}: utterance {utt.utt_id!r} is also in {found_in[utt.utt_id]}")
            found_in[utt.utt_id] = f"--trials {folder}"
            trials.append(utt)
    scores = attacker.score(trials, group_by_speaker(enrol))
    scores.save(out)
    print(
        f"scored {scores.n_trials} trials against N = {scores.n_enrolled} enrolled speakers "
        f"({scores.n_impostor_trials} impostor trials) with {args.attacker}; wrote {out}"
    )
    return 0
