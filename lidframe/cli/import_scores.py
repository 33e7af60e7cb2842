"""``lidframe import-scores kaldi``: a Kaldi score file (``enroll trial score``) as a score set lidframe reads.

What :func:`lidframe.data.kaldi.scoreset_from_kaldi` does from Python, from the command
line: the scores of every trial against every enrolled speaker, with each trial's
speaker from the key (``enroll trial target|nontarget``: a trial without a mated
enrolment is an outsider trial) or from a ``utt2spk``.  The score set is written as
``.npz`` or long ``.csv``, the files ``lidframe evaluate`` and a grid read.  As for every
command, the output is checked before anything is read (writable, not one of the
inputs), a bad file is one line naming it and the line (exit 2), and the output is
written whole or not at all.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lidframe.cli.options import check_output_paths
from lidframe.errors import InputError

__all__ = ["FORMATS", "register", "run"]

#: The score-file formats read: format -> what its file holds.
FORMATS = {"kaldi": "Kaldi score lines 'enroll trial score', every trial against every enrolled speaker"}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import-scores",
        help="read a Kaldi score file (enroll trial score) into a score set (.npz or long .csv)",
        description="Read another tool's score file into a score set that lidframe evaluate and a grid read. "
        "kaldi: lines 'enroll trial score' (every trial scored against every enrolled speaker); the trials' "
        "speakers from --key (enroll trial target|nontarget; a trial with no target line is an outsider) or "
        "--utt2spk. docs/attackers.md.",
    )
    parser.add_argument("format", choices=tuple(FORMATS), help="the score file's format: kaldi")
    parser.add_argument("scores", metavar="SCORES", help="the score file")
    speakers = parser.add_mutually_exclusive_group()  # neither: the reader says what is missing, after --out is checked
    speakers.add_argument("--key", metavar="TRIALS", help="Kaldi trial key: enroll trial target|nontarget")
    speakers.add_argument("--utt2spk", metavar="FILE", help="Kaldi utt2spk of the trials (trial speaker)")
    parser.add_argument("--out", required=True, metavar="SCORES.npz", help="output score set (.npz or long .csv)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.data.kaldi import scoreset_from_kaldi

    if Path(args.out).suffix.lower() not in (".npz", ".csv"):
        raise InputError(f"--out {args.out}: expected a .npz or .csv score-set file")
    (out,) = check_output_paths({"--out": args.out}, inputs=[args.scores, args.key, args.utt2spk])
    assert out is not None  # --out is required
    scores = scoreset_from_kaldi(args.scores, key_path=args.key, utt2spk_path=args.utt2spk)
    scores.save(out)  # atomic: the whole file or none
    print(
        f"read {scores.n_trials} trials against N = {scores.n_enrolled} enrolled speakers "
        f"({scores.n_outsider_trials} outsider trials) from {args.scores}; wrote {out}"
    )
    return 0
