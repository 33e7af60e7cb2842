"""``lidframe sensitivity``: how LID moves across calibrators (and priors), one row per calibrator and prior.

``--prior`` may be given several times: each calibrator is then evaluated under each
prior, and the worst case is over both.  ``--report DIR`` writes ``DIR/report.html``:
the system (``--name``, default from the dev and eval file names) under the first calibrator and
prior, with the worst case across calibrators and priors as its headline, the table
and LID tails of every calibrator, its per-speaker table and the provenance.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from lidframe.cli.options import (
    add_output_arguments,
    add_scoreset_arguments,
    add_threads_argument,
    attacker_spec,
    check_output_paths,
    spec_files,
    system_name,
)
from lidframe.errors import InputError
from lidframe.report.text import format_value, text_table

if TYPE_CHECKING:
    from lidframe.analyses.sensitivity import SensitivityResult
    from lidframe.report import Report

__all__ = ["register", "run", "format_sensitivity_table"]

_COLUMNS = [
    ("alid", "ALID"),
    ("pdr", "PDR"),
    ("lid_pos", "LID+"),
    ("lid_neg", "LID-"),
    ("lid_q99", "LIDq99"),
    ("lid_max", "LIDmax"),
    ("cllr", "Cllr"),
    ("dev_logloss_bits", "devLogLoss"),
]
#: The open-set columns, after those (rows of an open-set prior only).
_OPEN_SET_COLUMNS = [
    ("alid_enrolled", "enrALID"),
    ("alid_outsider", "outALID"),
    ("membership_enrolled", "member"),
    ("misattribution_rate", "misattr"),
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sensitivity", help="how LID moves across calibrators and priors (one row per calibrator and prior)"
    )
    add_scoreset_arguments(parser, calibrator=False, prior=False)
    parser.add_argument(
        "--calibrators",
        action="append",
        metavar="SPECS",
        help="comma-separated calibrator specs, repeatable (default logistic,isotonic,beta,gaussian,temperature)",
    )
    parser.add_argument(
        "--prior",
        action="append",
        metavar="SPEC",
        help="prior spec (as lidframe evaluate's --prior; default uniform); repeat it for the worst case across "
        "priors: each calibrator is evaluated under each (all closed-set, or all open-set with outside > 0)",
    )
    add_threads_argument(parser)
    add_output_arguments(
        parser,
        json="write rows, spread and worst case as JSON",
        plot="write the LID CCDF per calibrator (needs matplotlib)",
    )
    parser.add_argument(
        "--report",
        metavar="DIR",
        help="write DIR/report.html: the system with its worst case across calibrators and priors as headline, "
        "the table and LID tails per calibrator, per speaker, provenance (DIR is made if missing; needs jinja2 "
        "and matplotlib)",
    )
    parser.add_argument(
        "--name", metavar="NAME", help="the system's name in the report (default: from the --dev and --eval file names)"
    )
    parser.add_argument(
        "--attacker",
        metavar="SPEC",
        help="the attacker that made the scores, for the report: a name, or a spec NAME?key=value&... whose "
        "settings the report shows, a file one names (checkpoint=...) with its SHA-256",
    )
    parser.set_defaults(run=run)


def format_sensitivity_table(result: SensitivityResult) -> str:
    """Text table: one row per calibrator (and prior), then the spread and the attacker's worst case.

    With several priors a ``prior`` column follows the calibrator's, and the worst case
    names the prior that reaches it too.  In the open set (rows with the open-set
    metrics) four more columns: ALID of the enrolled (``enrALID``) and of the outsider
    trials (``outALID``), the enrolled trials' membership disclosure (``member``) and the
    misattribution rate (``misattr``).
    """
    from lidframe.analyses.sensitivity import OPEN_SET_SENSITIVITY_METRICS, SENSITIVITY_METRICS

    directions_of = {**SENSITIVITY_METRICS, **OPEN_SET_SENSITIVITY_METRICS}
    columns = _COLUMNS + (_OPEN_SET_COLUMNS if "alid_enrolled" in result.spread else [])
    priors = result.priors()
    several = len(priors) > 1
    short = {prior: f"P{k}" for k, prior in enumerate(priors, start=1)}  # the table's prior column, named below
    names = ["calibrator", "prior"] if several else ["calibrator"]
    blank = [""] * (len(names) - 1)
    body = [
        [r.calibrator, *([short[r.prior]] if several else [])] + [format_value(getattr(r, k)) for k, _ in columns]
        for r in result.rows
    ]
    body.append(["spread (max-min)", *blank] + [format_value(result.spread[k]) for k, _ in columns])
    body.append(["worst case", *blank] + [format_value(result.worst_case[k]["value"]) for k, _ in columns])
    body.append(["  reached by", *blank] + [result.worst_case[k]["calibrator"] or "-" for k, _ in columns])
    if several:
        body.append(["  under prior", *blank] + [short.get(result.worst_case[k].get("prior"), "-") for k, _ in columns])
    align = "l" * len(names) + "r" * len(columns)
    table = text_table(names + [title for _, title in columns], body, align=align, rules=[len(result.rows) - 1])
    directions = ", ".join(f"{t} {'max' if directions_of[k] == 'max' else 'min'}" for k, t in columns)
    over = "calibrator and prior" if several else "calibrator"
    legend = "".join(f"\n{name} = prior {prior}" for prior, name in short.items()) if several else ""
    return table + f"\n(worst case = attacker's best {over} per metric: {directions})" + legend


def run(args: argparse.Namespace) -> int:
    from lidframe.analyses.sensitivity import DEFAULT_CALIBRATORS, sensitivity
    from lidframe.core.engine import Engine
    from lidframe.registry import describe_component, resolve_prior

    outputs = {"--json": args.json, "--plot": args.plot}
    calibrator_specs = [s for value in args.calibrators or [] for s in value.split(",")]
    inputs = [
        args.dev,
        args.eval,
        *spec_files("calibrator", *calibrator_specs),
        *spec_files("prior", *args.prior or []),
    ]
    json_out, plot_out = check_output_paths(outputs, inputs=inputs)
    report_out = None
    if args.report is not None:
        from lidframe.report import check_report_dir

        report_out = check_report_dir(args.report, "--report", outputs=outputs, inputs=inputs)
    label = system_name(args)
    attacker = attacker_spec(args)
    specs = [s.strip() for value in args.calibrators or [] for s in value.split(",") if s.strip()]
    if args.calibrators and not specs:
        raise InputError("--calibrators: give at least one calibrator spec")
    prior_specs = args.prior or ["uniform"]
    priors = [resolve_prior(spec) for spec in prior_specs]  # a bad spec: one line, before any work
    result = sensitivity(
        args.dev,
        args.eval,
        specs or list(DEFAULT_CALIBRATORS),
        prior=prior_specs if len(prior_specs) > 1 else prior_specs[0],
        znorm_ddof=args.znorm_ddof,
        engine=Engine(threads=args.threads),
    )
    first = result.rows[0]
    print(
        f"eval: {args.eval}  (T = {first.n_enrolled_trials} trials, N = {first.n_enrolled} enrolled; "
        f"LID <= log2 N = {first.log2_n:.3f} bit under a uniform prior)"
    )
    if first.alid_enrolled is not None:
        print(
            "open set (the prior's outside > 0): every trial has a LID, the LID columns are over all of them "
            "(an outsider trial's is its membership disclosure); enrALID/outALID: ALID of the enrolled/outsider "
            "trials, member: membership disclosure of the enrolled trials, misattr: share of outsider trials "
            "whose top enrolled posterior exceeds 0.5"
        )
    shown = ", ".join(describe_component(p) for p in priors)
    print(f"dev:  {args.dev}   prior{'s' if len(priors) > 1 else ''}: {shown}")
    print()
    print(format_sensitivity_table(result))
    report = None if report_out is None else _report(args, result, label, attacker)
    _write(result, json_out, plot_out, report_out, report)
    if plot_out is not None:
        print(f"\nwrote LID CCDF plot to {plot_out}")
    if report_out is not None:
        print(f"\nwrote the audit report to {report_out}")
    return 0


def _write(
    result: SensitivityResult,
    json_out: Path | None,
    plot_out: Path | None,
    report_out: Path | None,
    report: Report | None,
) -> None:
    """Write the JSON, the plot and the report asked for: all of them or, on an error, none."""
    from lidframe.data.fileio import staged_outputs, write_json

    with staged_outputs():
        if json_out is not None:
            write_json(json_out, result.to_dict())
        if plot_out is not None:
            from lidframe.report.analysis_figures import plot_lid_ccdf

            plot_lid_ccdf(result, plot_out)
        if report_out is not None and report is not None:
            from lidframe.report import write_report

            write_report(report_out, report, make_folder=True)


def _report(args: argparse.Namespace, result: SensitivityResult, label: str, attacker: str | None) -> Report:
    """The report of this run: the system under its first calibrator and prior, with the worst case over all."""
    from lidframe.analyses.per_speaker import per_speaker
    from lidframe.registry import spec_inputs
    from lidframe.report import AttackerSettings, command_line, report_from_results

    reference = next(iter(result.results.values()))
    inputs: dict[str, str | Path] = {"dev": args.dev, "eval": args.eval}
    kinds = [("prior", spec) for spec in args.prior or []]
    kinds += [("calibrator", r.calibrator) for r in result.rows if r.prior == result.rows[0].prior]
    for kind, spec in kinds:
        files = spec_inputs(kind, spec).files
        for k, path in enumerate(files, start=1):
            inputs[f"{kind} {spec} file" + (f" {k}" if len(files) > 1 else "")] = path
    first = result.rows[0]
    priors = result.priors()
    return report_from_results(
        {label: reference},
        title="lidframe sensitivity report",
        kind="sensitivity",
        sensitivity={label: result},
        per_speaker={label: per_speaker(reference)},
        inputs=inputs,
        settings={
            "--calibrators": ", ".join(dict.fromkeys(r.calibrator for r in result.rows)),
            "--prior": ", ".join(priors),
            "--znorm-ddof": args.znorm_ddof,
        },
        notes=[
            f"lidframe sensitivity of {args.eval}, calibrated on {args.dev}: {label} under calibrator "
            f"{first.calibrator} and prior {first.prior} (its headline), with the attacker's worst case across "
            f"{len(result.rows) // len(priors)} calibrators and {len(priors)} prior{'s' if len(priors) > 1 else ''}."
        ],
        command=command_line(getattr(args, "argv", None)),
        attackers=[] if attacker is None else [AttackerSettings.from_spec(attacker)],
        no_intervals={
            label: "the sensitivity analysis compares calibrators and priors; lidframe evaluate --report gives "
            "the headline's speaker-bootstrap intervals"
        },
    )
