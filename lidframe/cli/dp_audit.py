"""``lidframe dp-audit``: the Gaussian speaker mechanism's measured EER and ALID against its GDP bounds."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lidframe.cli.options import (
    add_bootstrap_arguments,
    add_output_arguments,
    bootstrap_from_args,
    check_output_paths,
    float_list,
)
from lidframe.cli.table import text_table
from lidframe.errors import InputError

if TYPE_CHECKING:
    from lidframe.privacy.audit import DPAuditResult, DPAuditRow, EmbeddingSplit
    from lidframe.report import Report
    from lidframe.stats.bootstrap import Bootstrap

__all__ = ["register", "run"]


def _defaults():
    from lidframe.privacy.audit import AUDIT_BOOTSTRAP

    return AUDIT_BOOTSTRAP


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("dp-audit", help="Gaussian speaker mechanism: measured EER/ALID vs the GDP bounds")
    parser.add_argument("--mu", required=True, help="mu value(s), comma-separated for a sweep")
    parser.add_argument("--clip", type=float, default=1.0, help="clipping norm U (default 1)")
    parser.add_argument("--sensitivity", choices=("diameter", "radius"), default="diameter")
    parser.add_argument("--anonymise-enrolment", action="store_true", help="release enrolment embeddings too")
    parser.add_argument("--calibrator", default="logistic", help="calibrator of the cosine attacker")
    parser.add_argument("--embeddings", help="embedding file (as for the precomputed attacker); default: simulated")
    parser.add_argument("--dev-enrol", metavar="DIR")
    parser.add_argument("--dev-trials", metavar="DIR")
    parser.add_argument("--enrol", metavar="DIR")
    parser.add_argument("--trials", metavar="DIR")
    add_bootstrap_arguments(parser, _defaults(), switch=False, unit=False, method=False)
    add_output_arguments(parser, json="write the audit rows as JSON", plot="write the audit plot")
    parser.add_argument(
        "--report",
        metavar="DIR",
        help="write DIR/report.html, the audit report: measured values against the bounds per mu, figures, "
        "settings and input digests (DIR is made if missing; needs jinja2 and matplotlib)",
    )
    parser.set_defaults(run=run)


def _embedding_split(table, enrol_dir, trials_dir):
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker
    from lidframe.errors import preview
    from lidframe.privacy.audit import EmbeddingSplit

    enrol = group_by_speaker(read_data_dir(enrol_dir))
    trials = read_data_dir(trials_dir)
    missing = [u.utt_id for utts in enrol.values() for u in utts if u.utt_id not in table]
    missing += [u.utt_id for u in trials if u.utt_id not in table]
    if missing:
        raise InputError(f"no embedding for utterance id(s) {preview(missing)}")
    return EmbeddingSplit(
        {s: np.stack([table[u.utt_id] for u in utts]) for s, utts in enrol.items()},
        np.stack([table[u.utt_id] for u in trials]),
        np.array([u.speaker for u in trials]),
        np.array([u.utt_id for u in trials]),
    )


def _check_cell(row: DPAuditRow) -> str:
    """The table's ``check`` column: violations, "ok", or why the bounds were not checked."""
    if row.violations:
        return "VIOLATION: " + "; ".join(row.violations)
    if not (row.eer_bound_applies and row.alid_bound_applies):
        return "not checked (unbalanced trials)"
    return "ok"


def _data_dir_files(flags: dict[str, str | None]) -> dict[str, Path]:
    """role -> file of each data dir given: its ``wav.scp``, ``utt2spk`` and, where present, ``spk2utt``."""
    files = {}
    for flag, folder in flags.items():
        if folder is None:
            continue
        for name in ("wav.scp", "utt2spk", "spk2utt"):
            path = Path(folder) / name
            if path.is_file():
                files[f"{flag} {name}"] = path
    return files


#: What the audit runs on without --embeddings.
_SIMULATED = "simulated embeddings (lidframe.privacy.audit.simulated_splits: N = 40, d = 64, 10 trials per speaker)"


def _splits(args: argparse.Namespace) -> tuple[EmbeddingSplit, EmbeddingSplit, str, dict[str, str | Path]]:
    """(dev split, eval split, what they are, input files by role) of ``--embeddings`` or the simulation."""
    from lidframe.privacy.audit import simulated_splits

    split_flags = {
        "--dev-enrol": args.dev_enrol,
        "--dev-trials": args.dev_trials,
        "--enrol": args.enrol,
        "--trials": args.trials,
    }
    if not args.embeddings:
        if any(split_flags.values()):
            raise InputError("data dirs need --embeddings; without it the audit runs on simulated embeddings")
        dev, ev = simulated_splits(seed=args.seed)
        return dev, ev, _SIMULATED, {}
    if not all(split_flags.values()):
        raise InputError("--embeddings needs --dev-enrol, --dev-trials, --enrol and --trials data dirs")
    from lidframe.attackers.precomputed import PrecomputedEmbeddings, read_embeddings

    table = read_embeddings(args.embeddings)
    dev = _embedding_split(table, args.dev_enrol, args.dev_trials)
    ev = _embedding_split(table, args.enrol, args.trials)
    # the embeddings file and what it brings along (the .ids beside a .npy, the archives of a .scp)
    input_files: dict[str, str | Path] = {"embeddings": args.embeddings}
    for k, path in enumerate(PrecomputedEmbeddings.input_files({"path": args.embeddings}), start=2):
        input_files[f"embeddings ({k})"] = path
    input_files.update(_data_dir_files(split_flags))
    return dev, ev, str(args.embeddings), input_files


def _print_audit(result: DPAuditResult, args: argparse.Namespace, source: str) -> None:
    """The audit's settings, one table line per mu, and whether the bounds were checked."""
    rows = result.rows
    print(f"Gaussian speaker mechanism audit on {source}")
    print(
        f"clip U = {args.clip:g}, sensitivity {args.sensitivity}, enrolment "
        f"{'released through the mechanism' if args.anonymise_enrolment else 'clean (clipped)'}; "
        f"N = {rows[0].n_enrolled} (log2 N = {rows[0].log2_n:.2f}); {args.bootstrap_level:.0%} bootstrap intervals"
    )
    header = ["mu", "sigma", "EERbound", "bayesEER", "cosEER", "MIbound", "bayesALID", "cosALID", "bayesMax", "cosMax",
              "check"]  # fmt: skip
    body = [
        [f"{r.mu:.2f}", f"{r.sigma:.3f}", f"{r.eer_bound:.3f}", f"{r.bayes.eer:.3f}",
         f"{r.cosine.eer:.3f}", f"{r.mi_bound_bits:.3f}", f"{r.bayes.alid:.3f}", f"{r.cosine.alid:.3f}",
         f"{r.bayes.lid_max:.3f}", f"{r.cosine.lid_max:.3f}", _check_cell(r)]
        for r in rows
    ]  # fmt: skip
    print(text_table(header, body))
    print(f"bounds {'checked' if rows[0].alid_bound_applies else 'NOT checked'}: {rows[0].bounds_reason}")


def _audit_report(
    result: DPAuditResult,
    args: argparse.Namespace,
    mus: list[float],
    source: str,
    bootstrap: Bootstrap,
    input_files: dict[str, str | Path],
) -> Report:
    """The ``--report`` of the audit, with the command's settings."""
    from lidframe.report import report_from_dp_audit

    return report_from_dp_audit(
        result,
        calibrator=args.calibrator,
        ci_level=bootstrap.level,
        inputs=input_files,
        settings={
            "command": "lidframe dp-audit",
            "embeddings": source,
            "--mu": ", ".join(f"{m:g}" for m in mus),
            "--clip": f"{args.clip:g}",
            "--sensitivity": args.sensitivity,
            "enrolment": "released through the mechanism (--anonymise-enrolment)"
            if args.anonymise_enrolment
            else "clean (clipped)",
            "--calibrator (cosine attacker)": args.calibrator,
            "intervals": f"level {bootstrap.level:g}, {bootstrap.method}, {bootstrap.n_boot} resamples of "
            f"{bootstrap.unit}s, seed {bootstrap.seed}",
        },
    )


def run(args: argparse.Namespace) -> int:
    from lidframe.data.fileio import staged_outputs, write_json
    from lidframe.privacy.audit import dp_audit
    from lidframe.report.analysis_figures import plot_dp_audit

    inputs = [args.embeddings] if args.embeddings else []
    outputs = {"--json": args.json, "--plot": args.plot}
    json_out, plot_out = check_output_paths(outputs, inputs=inputs)
    report_out = None
    if args.report is not None:
        from lidframe.report import check_report_dir

        report_out = check_report_dir(args.report, "--report", outputs=outputs, inputs=inputs)
    mus = float_list(args.mu, "--mu")
    dev, ev, source, input_files = _splits(args)
    bootstrap = bootstrap_from_args(args, _defaults())
    result = dp_audit(
        dev,
        ev,
        mus,
        clip_norm=args.clip,
        sensitivity=args.sensitivity,
        anonymise_enrolment=args.anonymise_enrolment,
        calibrator=args.calibrator,
        bootstrap=bootstrap,
        seed=args.seed,
    )
    _print_audit(result, args, source)
    report = None if report_out is None else _audit_report(result, args, mus, source, bootstrap, input_files)
    with staged_outputs():  # every file or, on an error, none
        if json_out is not None:
            write_json(json_out, result.to_dict())
        if plot_out is not None:
            plot_dp_audit(result, plot_out)
        if report_out is not None and report is not None:
            from lidframe.report import write_report

            write_report(report_out, report, make_folder=True)
    if plot_out is not None:
        print(f"\nwrote the audit plot to {plot_out}")
    if report_out is not None:
        print(f"\nwrote the audit report to {report_out}")
    return 1 if result.violated else 0
