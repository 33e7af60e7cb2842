"""``lidframe fuse``: K attackers' score sets of the same trials fused into one (linear logistic fusion).

``lidframe fuse --dev A_dev.npz B_dev.npz --eval A_eval.npz B_eval.npz --out DIR`` fits
the fusion weights on the dev sets' pairs (:mod:`lidframe.core.fusion`: the inputs' row
z-scores, a class-balanced logistic regression, as FoCal and BOSARIS fuse) and writes
``DIR/dev.npz`` and ``DIR/eval.npz``, which ``lidframe evaluate`` (and a grid) read like
any score set.  The k-th ``--eval`` file is the k-th ``--dev`` file's attacker.  Within a
split the inputs must hold the same trials (ids, and each trial's speaker) and the same
enrolled speakers, in any order (the first file's order is kept); the first mismatch is
one line naming the file and the id.  Each output holds the provenance of the fusion
(:func:`lidframe.report.score_files.fusion_provenance`): every input with its digest and
its own provenance, and the fitted weights.

As for every command, the outputs are checked before anything is read (``--out`` a
folder that can be made or filled, neither output one of the inputs), a bad input is one
line (exit 2), and the two files are written both or neither (``DIR`` is removed again
where this run made it and a write failed).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lidframe.cli.options import CheckedFlag, positive_number
from lidframe.errors import InputError

__all__ = ["OUTPUT_NAMES", "register", "run"]

#: The files ``--out DIR`` receives, by split.
OUTPUT_NAMES = {"dev": "dev.npz", "eval": "eval.npz"}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fuse",
        help="fuse K attackers' score sets of the same trials into one (linear logistic fusion, fitted on dev)",
        description="Fit fusion weights on the dev score sets' pairs (row z-scores, class-balanced logistic "
        "regression, as FoCal/BOSARIS) and write OUT/dev.npz and OUT/eval.npz, score sets lidframe evaluate reads. "
        "The k-th --eval file is scored by the k-th --dev file's attacker; within a split the files hold the same "
        "trials and enrolled speakers. docs/fusion.md.",
    )
    parser.add_argument(
        "--dev", required=True, nargs="+", metavar="DEV", help="the K attackers' dev score sets (.npz or .csv), K >= 2"
    )
    parser.add_argument(
        "--eval", required=True, nargs="+", metavar="EVAL", help="their eval score sets, in the same order"
    )
    parser.add_argument("--out", required=True, metavar="OUT_DIR", help="output folder: dev.npz and eval.npz")
    parser.add_argument(
        "--C",
        dest="C",
        type=float,
        action=CheckedFlag,
        check=positive_number,
        default=1.0,
        help="inverse L2 penalty on the weights, as the logistic calibrator's (default 1.0)",
    )
    parser.add_argument("--no-penalty", action="store_true", help="fit the weights without a penalty (overrides --C)")
    parser.add_argument("--znorm-ddof", type=int, choices=(0, 1), default=1, help="ddof of the row z-norm (default 1)")
    parser.set_defaults(run=run)


def _check_outputs(args: argparse.Namespace) -> dict[str, Path]:
    """The output files by split, checked before anything is read: a folder for them, neither an input."""
    from lidframe.data import fileio, runpaths

    inputs = [*args.dev, *args.eval]
    folder = runpaths.check_outputs(folders={"--out": args.out})["--out"]
    assert folder is not None  # --out is required
    targets = {split: folder / name for split, name in OUTPUT_NAMES.items()}
    for target in targets.values():
        if folder.is_dir():
            fileio.check_output_path(target, "--out")
        runpaths.refuse_outputs_on_inputs({"--out": target}, inputs=inputs)
    return targets


def _check_counts(args: argparse.Namespace) -> None:
    if len(args.dev) < 2:
        raise InputError(f"--dev: fusion needs at least two score sets (one per attacker), got {len(args.dev)}")
    if len(args.eval) != len(args.dev):
        raise InputError(
            f"--eval gives {len(args.eval)} score sets but --dev {len(args.dev)}; give each attacker's eval set, in "
            "the order of --dev"
        )
    for flag, paths in (("--dev", args.dev), ("--eval", args.eval)):
        seen: set[str] = set()
        for path in paths:
            real = str(Path(path).resolve())
            if real in seen:
                raise InputError(f"{flag} {path}: given twice; fuse each attacker once")
            seen.add(real)


def run(args: argparse.Namespace) -> int:
    from lidframe.data.fileio import staged_outputs
    from lidframe.data.runpaths import no_empty_folders_left
    from lidframe.report.score_files import fuse_score_files
    from lidframe.report.sections.provenance_model import command_line

    targets = _check_outputs(args)
    _check_counts(args)
    fusion, fused, provenance = fuse_score_files(
        args.dev,
        args.eval,
        C=None if args.no_penalty else args.C,
        znorm_ddof=args.znorm_ddof,
        command=command_line(getattr(args, "argv", None)),
    )
    with no_empty_folders_left(targets["dev"].parent), staged_outputs():  # both files or, on an error, neither
        targets["dev"].parent.mkdir(exist_ok=True)
        for split, target in targets.items():
            fused[split].save(target, provenance=provenance)
    weights = ", ".join(f"{Path(p).name} {w:.4g}" for p, w in zip(args.dev, fusion.weights, strict=True))
    print(
        f"fused {len(args.dev)} attackers (weights on row z-scores: {weights}; offset {fusion.offset:.4g}) on "
        f"{fusion.n_mated} mated and {fusion.n_non_mated} non-mated dev pairs; wrote {targets['dev']} "
        f"({fused['dev'].n_trials} trials) and {targets['eval']} ({fused['eval'].n_trials} trials)"
    )
    return 0
