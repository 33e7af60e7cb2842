"""``lidframe evaluate``: LID of an eval set, calibrated on a dev set, as a table, JSON and per-trial CSV."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lidframe.cli.options import (
    add_bootstrap_arguments,
    add_engine_arguments,
    add_output_arguments,
    add_scoreset_arguments,
    bootstrap_from_args,
    check_output_paths,
)
from lidframe.cli.table import format_table, format_value, text_table

__all__ = ["register", "run", "format_ci_table"]

# an eval embedding set with at least this many pairs shows progress on a terminal
_PROGRESS_PAIRS = 1 << 30

_CI_NAMES = {
    "alid": "ALID",
    "pdr": "PDR",
    "lid_pos": "LID+",
    "lid_neg": "LID-",
    "lid_q99": "LIDq99",
    "lid_max": "LIDmax",
    "eer": "EER",
    "cllr": "Cllr",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("evaluate", help="LID of an eval score set, calibrated on a dev score set")
    add_scoreset_arguments(parser)
    parser.add_argument(
        "--no-binary-metrics",
        action="store_true",
        help="skip EER/Cllr/minCllr over all T x N pairs (they hold every pair's LLR in memory; "
        "skipped by default for embedding sets over 2^27 pairs)",
    )
    add_engine_arguments(parser)
    add_output_arguments(parser, json="write the summary as JSON")
    parser.add_argument("--per-trial", metavar="OUT.csv", help="write per-trial LID as CSV")
    parser.add_argument(
        "--per-speaker",
        metavar="OUT.csv",
        help="write per-speaker disclosure as CSV, most disclosed first (n_trials, ALID, LIDmax, PDR, "
        "rank-1 rate; with --ci, intervals from resampling each speaker's trials)",
    )
    add_bootstrap_arguments(parser)
    parser.set_defaults(run=run)


def format_ci_table(summary: dict) -> str:
    """The bootstrap intervals of an evaluate summary as text."""
    settings = summary["ci_settings"]
    title = (
        f"{settings['level']:.0%} bootstrap intervals ({settings['method']}, {settings['n_boot']} resamples of "
        f"{settings['unit']}s, seed {settings['seed']}; LIDmax: percentile, biased low -- prefer LIDq99)"
    )
    rows = [
        [_CI_NAMES.get(key, key), format_value(summary[key]), format_value(low), format_value(high)]
        for key, (low, high) in summary["ci"].items()
    ]
    return title + "\n" + text_table(["metric", "estimate", "low", "high"], rows)


def run(args: argparse.Namespace) -> int:
    from lidframe.analyses.per_speaker import per_speaker
    from lidframe.core.engine import Engine
    from lidframe.core.evaluation import evaluate
    from lidframe.data.embedset import EmbeddingSet, load_set
    from lidframe.data.fileio import atomic_path, staged_outputs, write_json

    json_out, per_trial_out, per_speaker_out = check_output_paths(
        {"--json": args.json, "--per-trial": args.per_trial, "--per-speaker": args.per_speaker},
        inputs=(args.dev, args.eval),
    )
    eval_set = load_set(args.eval)
    n_pairs = eval_set.n_trials * eval_set.n_enrolled
    bootstrap = bootstrap_from_args(args) if args.ci else None
    engine = Engine(
        device=args.device,
        precision=args.precision,
        kernel=args.kernel,
        progress=isinstance(eval_set, EmbeddingSet) and n_pairs >= _PROGRESS_PAIRS and sys.stderr.isatty(),
    )
    result = evaluate(
        args.dev,
        eval_set,
        calibrator=args.calibrator,
        prior=args.prior,
        znorm_ddof=args.znorm_ddof,
        binary_metrics=False if args.no_binary_metrics else "auto",
        bootstrap=bootstrap,
        engine=engine,
    )
    s = result.summary
    print(f"dev:  {args.dev}  ({s['n_dev_trials']} trials x {s['n_dev_enrolled']} enrolled)")
    print(
        f"eval: {args.eval}  ({s['n_trials']} trials x N = {s['n_enrolled']} enrolled; "
        f"{s['n_impostor_trials']} impostor trials excluded)"
    )
    znorm = "none (raw scores)" if s["znorm_ddof"] is None else s["znorm_ddof"]
    print(f"calibrator: {s['calibrator']}   prior: {s['prior']}   z-norm ddof: {znorm}")
    if "engine" in s:
        e = s["engine"]
        if e["kernel"] == "dense":
            print(
                "engine: cosine matrix materialised, float64 (binary metrics need every pair; --no-binary-metrics streams)"
            )
        else:
            print(
                f"streaming engine: {e['kernel']} on {e['device']} in {e['precision']} (T x N scores never materialised)"
            )
    print(f"LID <= -log2 prior(true speaker); uniform prior: LID <= log2 N = {s['log2_n']:.3f} bit")
    print()
    print(format_table([(Path(args.eval).stem, s)]))
    print(
        f"\nrank-1 rate {s['rank1_rate']:.3f}   rank disclosure {s['rank_disclosure_bits']:.3f} bit   "
        f"multiclass Cllr {s['cllr_mc']:.3f} bit   EER(threshold) {s['eer_threshold']:.3f}   "
        f"ZEBRA D_ECE {s['dece_bits']:.3f} bit, max|LLR| {s['max_abs_llr_log10']:.2f} ({s['zebra_tag']})   "
        f"D_sys {s['dsys']:.3f}"
    )
    if args.ci:
        print()
        print(format_ci_table(s))
    speakers = None if per_speaker_out is None else per_speaker(result, bootstrap=bootstrap)
    with staged_outputs():  # every file or, on an error, none
        if json_out is not None:
            write_json(json_out, result.to_dict())
        if per_trial_out is not None:
            with atomic_path(per_trial_out) as tmp:
                result.to_frame().to_csv(tmp, index=False, float_format="%.12g", na_rep="nan")
        if per_speaker_out is not None and speakers is not None:
            with atomic_path(per_speaker_out) as tmp:
                speakers.to_frame().to_csv(tmp, index=False, float_format="%.12g", na_rep="nan")
    return 0
