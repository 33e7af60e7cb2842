"""``lidframe evaluate``: LID of an eval set, calibrated on a dev set, as a table, JSON, per-trial CSV and report.html."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.cli.options import (
    add_bootstrap_arguments,
    add_engine_arguments,
    add_output_arguments,
    add_scoreset_arguments,
    bootstrap_from_args,
    check_output_paths,
)
from lidframe.cli.table import format_table, format_value, text_table

if TYPE_CHECKING:
    from lidframe.core.evaluation import Result
    from lidframe.data.embedset import EmbeddingSet
    from lidframe.data.scoreset import ScoreSet
    from lidframe.report import Report
    from lidframe.stats.bootstrap import Bootstrap

__all__ = ["register", "run", "format_interval_table"]

# an eval embedding set with at least this many pairs shows progress on a terminal
_PROGRESS_PAIRS = 1 << 30

_INTERVAL_NAMES = {
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
        help="skip the binary view (EER/Cllr/minCllr/ZEBRA/linkability over all T x N pairs; exact up to "
        "2^27 pairs, binned in the streaming pass above, with its error bounds in the JSON)",
    )
    add_engine_arguments(parser)
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="embedding-set eval: share the trials out in blocks over a dask.distributed cluster at ADDRESS "
        "(e.g. tcp://10.0.0.5:8786; same numbers as one process; binary metrics binned)",
    )
    add_output_arguments(parser, json="write the summary as JSON")
    parser.add_argument("--per-trial", metavar="OUT.csv", help="write per-trial LID as CSV")
    parser.add_argument(
        "--per-speaker",
        metavar="OUT.csv",
        help="write per-speaker disclosure as CSV, most disclosed first (n_trials, ALID, LIDmax, PDR, "
        "rank-1 rate; with --bootstrap, intervals from resampling each speaker's trials)",
    )
    parser.add_argument(
        "--report",
        metavar="DIR",
        help="write DIR/report.html, the audit report: headline, per-speaker table, figures, settings and "
        "input digests (DIR is made if missing; needs jinja2 and matplotlib)",
    )
    add_bootstrap_arguments(parser)
    parser.set_defaults(run=run)


def format_interval_table(summary: Mapping[str, Any]) -> str:
    """The bootstrap intervals of an evaluate summary as text."""
    settings = summary["bootstrap"]
    title = (
        f"{settings['level']:.0%} bootstrap intervals ({settings['method']}, {settings['n_boot']} resamples of "
        f"{settings['unit']}s, seed {settings['seed']}; LIDmax: percentile, biased low -- prefer LIDq99)"
    )
    rows = [
        [_INTERVAL_NAMES.get(key, key), format_value(summary[key]), format_value(low), format_value(high)]
        for key, (low, high) in summary["intervals"].items()
    ]
    return title + "\n" + text_table(["metric", "estimate", "low", "high"], rows)


@attrs.frozen
class _Outputs:
    """The files ``lidframe evaluate`` writes (each checked before any work; None: not asked for)."""

    json: Path | None
    per_trial: Path | None
    per_speaker: Path | None
    report: Path | None

    @classmethod
    def check(cls, args: argparse.Namespace) -> _Outputs:
        """The output paths of *args*, refused (before any work) where one would clash or overwrite an input."""
        named = {"--json": args.json, "--per-trial": args.per_trial, "--per-speaker": args.per_speaker}
        json_out, per_trial_out, per_speaker_out = check_output_paths(named, inputs=(args.dev, args.eval))
        report_out = None
        if args.report is not None:
            from lidframe.report import check_report_dir

            report_out = check_report_dir(args.report, "--report", outputs=named, inputs=(args.dev, args.eval))
        return cls(json_out, per_trial_out, per_speaker_out, report_out)


def run(args: argparse.Namespace) -> int:
    from lidframe.analyses.per_speaker import per_speaker
    from lidframe.data.embedset import load_set

    outputs = _Outputs.check(args)
    eval_set = load_set(args.eval)
    bootstrap = bootstrap_from_args(args) if args.bootstrap else None
    result = _evaluate(args, eval_set, bootstrap)
    _print_result(args, result.summary)
    speakers = None
    if outputs.per_speaker is not None or outputs.report is not None:
        speakers = per_speaker(result, bootstrap=bootstrap)
    report = None if outputs.report is None else _report(args, result, speakers, bootstrap)
    _write_outputs(outputs, result, speakers, report)
    if outputs.report is not None:
        print(f"\nwrote the audit report to {outputs.report}")
    return 0


def _evaluate(args: argparse.Namespace, eval_set: ScoreSet | EmbeddingSet, bootstrap: Bootstrap | None) -> Result:
    """``lidframe.evaluate`` of *eval_set* on the dev set, with the flags' calibrator, prior, engine and scheduler."""
    from lidframe.core.engine import Engine
    from lidframe.core.evaluation import evaluate
    from lidframe.data.embedset import EmbeddingSet

    n_pairs = eval_set.n_trials * eval_set.n_enrolled
    engine = Engine(
        device=args.device,
        precision=args.precision,
        kernel=args.kernel,
        progress=isinstance(eval_set, EmbeddingSet) and n_pairs >= _PROGRESS_PAIRS and sys.stderr.isatty(),
    )
    return evaluate(
        args.dev,
        eval_set,
        calibrator=args.calibrator,
        prior=args.prior,
        znorm_ddof=args.znorm_ddof,
        binary_metrics=False if args.no_binary_metrics else "auto",
        bootstrap=bootstrap,
        engine=engine,
        scheduler=args.scheduler,
    )


def _print_result(args: argparse.Namespace, s: Any) -> None:
    """Print the inputs and settings behind the summary *s*, its table, the other metrics and (``--bootstrap``) intervals."""
    print(f"dev:  {args.dev}  ({s['n_dev_enrolled_trials']} trials x {s['n_dev_enrolled']} enrolled)")
    print(
        f"eval: {args.eval}  ({s['n_enrolled_trials']} trials x N = {s['n_enrolled']} enrolled; "
        f"{s['n_outsider_trials']} outsider trials excluded)"
    )
    znorm = "none (raw scores)" if s["znorm_ddof"] is None else s["znorm_ddof"]
    print(f"calibrator: {s['calibrator']}   prior: {s['prior']}   z-norm ddof: {znorm}")
    if "engine" in s:
        _print_engine(s)
    print(f"LID <= -log2 prior(true speaker); uniform prior: LID <= log2 N = {s['log2_n']:.3f} bit")
    print()
    print(format_table([(Path(args.eval).stem, s)]))
    print(
        f"\nrank-1 rate {s['rank1_rate']:.3f}   rank disclosure {s['rank_disclosure_bits']:.3f} bit   "
        f"multiclass Cllr {s['cllr_mc']:.3f} bit   EER(threshold) {s['eer_threshold']:.3f}   "
        f"ZEBRA D_ECE {s['dece_bits']:.3f} bit, max|LLR| {s['max_abs_llr_log10']:.2f} ({s['zebra_tag']})   "
        f"D_sys {s['dsys']:.3f}"
    )
    if args.bootstrap:
        print()
        print(format_interval_table(s))


def _print_engine(s: Any) -> None:
    """Print which engine ran (dense, or streaming with its kernel, device and precision) and, if any, the cluster."""
    e = s["engine"]
    if e["kernel"] == "dense":
        print(
            "engine: cosine matrix materialised, float64 (exact binary metrics hold every pair; "
            "--no-binary-metrics streams)"
        )
    else:
        print(f"streaming engine: {e['kernel']} on {e['device']} in {e['precision']} (T x N scores never materialised)")
        if s.get("binary_method") == "binned":
            print(
                f"binary metrics: binned in the streaming pass ({s['binary_bins']} bins per class; bounds in the JSON)"
            )
    if "scheduler" in s:
        print(f"cluster: {s['n_blocks']} blocks of trials on the dask scheduler {s['scheduler']}")


def _write_outputs(outputs: _Outputs, result: Result, speakers: Any, report: Report | None) -> None:
    """Write the files asked for: every one or, on an error, none."""
    from lidframe.data.fileio import atomic_path, staged_outputs, write_json

    with staged_outputs():  # every file or, on an error, none
        if outputs.json is not None:
            write_json(outputs.json, result.to_dict())
        if outputs.per_trial is not None:
            with atomic_path(outputs.per_trial) as tmp:
                result.to_frame().to_csv(tmp, index=False, float_format="%.12g", na_rep="nan")
        if outputs.per_speaker is not None and speakers is not None:
            with atomic_path(outputs.per_speaker) as tmp:
                speakers.to_frame().to_csv(tmp, index=False, float_format="%.12g", na_rep="nan")
        if outputs.report is not None and report is not None:
            from lidframe.report import write_report

            write_report(outputs.report, report, make_folder=True)


def _report(args: argparse.Namespace, result, speakers, bootstrap):
    """The report of this run: the Result and its per-speaker table, the input files and the flags behind them."""
    from lidframe.registry import spec_inputs
    from lidframe.report import report_from_results

    label = Path(args.eval).stem
    inputs: dict[str, str | Path] = {"dev": args.dev, "eval": args.eval}
    for kind, spec in (("calibrator", args.calibrator), ("prior", args.prior)):
        files = spec_inputs(kind, spec).files
        for k, path in enumerate(files, start=1):
            inputs[f"{kind} file" + (f" {k}" if len(files) > 1 else "")] = path
    s = result.summary
    settings = {
        "command": "lidframe evaluate",
        "--calibrator": args.calibrator,
        "--prior": args.prior,
        "--znorm-ddof": args.znorm_ddof,
        "binary metrics": s.get("binary_metrics", "computed"),
        "intervals": "none (no --bootstrap)" if bootstrap is None else f"--bootstrap: {_bootstrap_text(bootstrap)}",
    }
    if bootstrap is not None:
        settings["per-speaker intervals"] = "resampling each speaker's own trials (unit trial), same n_boot and seed"
    if "engine" in s:
        settings["engine"] = ", ".join(f"{k} {v}" for k, v in s["engine"].items())
    return report_from_results(
        {label: result},
        per_speaker={label: speakers},
        inputs=inputs,
        settings=settings,
        notes=[f"lidframe evaluate of {args.eval}, calibrated on {args.dev}."],
    )


def _bootstrap_text(bootstrap) -> str:
    """``'level 0.95, bca, 1000 resamples of speakers, seed 0'``."""
    return (
        f"level {bootstrap.level:g}, {bootstrap.method}, {bootstrap.n_boot} resamples of {bootstrap.unit}s, "
        f"seed {bootstrap.seed}"
    )
