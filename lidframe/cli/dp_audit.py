"""``lidframe dp-audit``: the Gaussian speaker mechanism's measured EER and ALID against its GDP bounds."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lidframe.cli.options import (
    add_bootstrap_arguments,
    add_output_arguments,
    add_threads_argument,
    bootstrap_from_args,
    check_output_paths,
    float_list,
    spec_files,
)
from lidframe.errors import InputError
from lidframe.report.text import text_table

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
    parser.add_argument(
        "--sensitivity",
        choices=("diameter", "radius"),
        default="diameter",
        help="sensitivity of the clipped embedding: diameter 2U (mu-GDP for any embeddings) or radius U (the "
        "DP-Voxlet convention: mu-GDP only if no two clipped embeddings lie more than U apart); sigma = "
        "sensitivity / mu (default diameter; docs/dp.md)",
    )
    parser.add_argument("--anonymise-enrolment", action="store_true", help="release enrolment embeddings too")
    parser.add_argument("--calibrator", default="logistic", help="calibrator of the cosine attacker")
    parser.add_argument("--embeddings", help="embedding file (as for the precomputed attacker); default: simulated")
    for flag, what in (
        ("--dev-enrol", "the dev split's enrolment utterances"),
        ("--dev-trials", "the dev split's trial utterances (they calibrate the cosine attacker)"),
        ("--enrol", "the eval split's enrolment utterances"),
        ("--trials", "the eval split's trial utterances (audited)"),
    ):
        parser.add_argument(flag, metavar="DIR", help=f"Kaldi data dir of {what}; with --embeddings")
    add_bootstrap_arguments(parser, _defaults(), switch=False, unit=False, method=False)
    add_threads_argument(parser)
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


#: The console table's header.
_CONSOLE_HEADER = ("mu", "sigma", "EERbound", "bayesEER", "cosEER", "MIbound", "bayesALID", "cosALID", "bayesMax",
                   "cosMax", "check")  # fmt: skip
#: What the console says under its table: which bound bounds what.
BOUNDS_NOTE = (
    "EERbound = Phi(-mu/2), the lowest EER of any attacker; MIbound = mu^2/(2 ln 2) bits, the mutual-information "
    "bound, which bounds ALID (the average disclosure), not LIDmax"
)


def _interval(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def _print_audit(result: DPAuditResult, args: argparse.Namespace, source: str, bootstrap: Bootstrap) -> None:
    """The audit's settings, one table line per mu, the intervals it announces, and whether the bounds were checked."""
    rows = result.rows
    print(f"Gaussian speaker mechanism audit on {source}")
    print(
        f"clip U = {args.clip:g}, sensitivity {args.sensitivity}, enrolment "
        f"{'released through the mechanism' if args.anonymise_enrolment else 'clean (clipped)'}; "
        f"N = {rows[0].n_enrolled} (log2 N = {rows[0].log2_n:.2f})"
    )
    header = list(_CONSOLE_HEADER)
    body = [
        [f"{r.mu:.2f}", f"{r.sigma:.3f}", f"{r.eer_bound:.3f}", f"{r.bayes.eer:.3f}",
         f"{r.cosine.eer:.3f}", f"{r.mi_bound_bits:.3f}", f"{r.bayes.alid:.3f}", f"{r.cosine.alid:.3f}",
         f"{r.bayes.lid_max:.3f}", f"{r.cosine.lid_max:.3f}", _check_cell(r)]
        for r in rows
    ]  # fmt: skip
    print(text_table(header, body))
    print(BOUNDS_NOTE + ".")
    print(
        f"\n{bootstrap.level:.0%} bootstrap intervals ({bootstrap.method}, {bootstrap.n_boot} resamples of "
        f"{bootstrap.unit}s, seed {bootstrap.seed}):"
    )
    intervals = [
        [f"{r.mu:.2f}", _interval(r.bayes.eer_low, r.bayes.eer_high), _interval(r.cosine.eer_low, r.cosine.eer_high),
         _interval(r.bayes.alid_low, r.bayes.alid_high), _interval(r.cosine.alid_low, r.cosine.alid_high)]
        for r in rows
    ]  # fmt: skip
    print(text_table(["mu", "bayesEER", "cosEER", "bayesALID", "cosALID"], intervals))
    print(f"bounds {'checked' if rows[0].alid_bound_applies else 'NOT checked'}: {rows[0].bounds_reason}")


#: The binary-metrics setting of every cell of the audit's page.
_BINARY_METRICS = "skipped: the audit measures the pairwise EER and LID only (no Cllr)"


def _bayes_fit() -> dict:
    """The calibrator record of the Bayes attacker: identity, no parameter, nothing fitted.

    Its scores are the mechanism's exact log-likelihoods and are used as they are; the
    record has the layout of a fitted calibrator's ``to_dict()`` (class, params, fitted).
    """
    from lidframe.registry import entries

    return {"calibrator": entries("calibrator")["identity"].target, "params": {}, "fitted": {}}


def _audit_report(
    result: DPAuditResult,
    args: argparse.Namespace,
    mus: list[float],
    source: str,
    bootstrap: Bootstrap,
    input_files: dict[str, str | Path],
    splits: tuple[EmbeddingSplit, EmbeddingSplit],
) -> Report:
    """The ``--report`` of the audit, with the command's settings and every cell's settings filled in.

    ``report_from_dp_audit`` knows the audit's rows only; the splits' sizes, the z-norm
    of each attacker, the binary metrics left out and the interval settings come from here
    (:func:`_filled_settings`), so that the page has no empty setting.
    """
    from lidframe.report import report_from_dp_audit

    report = report_from_dp_audit(
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
            "--seed": f"{args.seed} (the mechanism's noise: mu number i uses seed + i; the intervals"
            + ("; the simulated embeddings)" if not args.embeddings else ")"),
            "bounds": BOUNDS_NOTE,
        },
    )
    return _filled_settings(report, *splits, bootstrap)


def _filled_settings(report: Report, dev: EmbeddingSplit, ev: EmbeddingSplit, bootstrap: Bootstrap) -> Report:
    """*report* with each cell's settings filled from the audit's splits and interval settings.

    The cosine attacker fits its calibrator on the dev split's trials (z-norm ddof 1, the
    default of :func:`lidframe.evaluate`, which the audit calls); the Bayes attacker reads
    its exact log-likelihoods with the identity calibrator, so it fits nothing (no dev
    trials, raw scores).  Every trial's speaker is enrolled (the audit refuses others).
    """
    import attrs

    attacker_of = {s.label: s.attacker for s in report.systems}
    filled = []
    for settings in report.provenance.systems:
        bayes = attacker_of.get(settings.label) == "bayes"
        filled.append(
            attrs.evolve(
                settings,
                znorm_ddof=None if bayes else 1,
                calibrator_fit=_bayes_fit() if bayes else settings.calibrator_fit,
                n_dev_enrolled_trials=0 if bayes else len(dev.trial_ids),
                n_dev_enrolled=0 if bayes else len(dev.enrol),
                n_dev_outsider_trials=0,
                n_eval_enrolled_trials=len(ev.trial_ids),
                n_eval_enrolled=len(ev.enrol),
                n_eval_outsider_trials=0,
                binary_metrics=_BINARY_METRICS,
                bootstrap=bootstrap.to_dict(),
            )
        )
    return attrs.evolve(report, provenance=attrs.evolve(report.provenance, systems=filled))


def run(args: argparse.Namespace) -> int:
    from lidframe.core.engine import Engine
    from lidframe.data.fileio import staged_outputs, write_json
    from lidframe.privacy.audit import dp_audit
    from lidframe.report.analysis_figures import plot_dp_audit

    data_dirs = [args.dev_enrol, args.dev_trials, args.enrol, args.trials]
    inputs = [args.embeddings, *data_dirs, *spec_files("calibrator", args.calibrator)]
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
        engine=Engine(threads=args.threads),
    )
    _print_audit(result, args, source, bootstrap)
    report = None if report_out is None else _audit_report(result, args, mus, source, bootstrap, input_files, (dev, ev))
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
