"""``lidframe sensitivity``: how LID moves across calibrators, one row per calibrator."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from lidframe.cli.options import add_output_arguments, add_scoreset_arguments, check_output_paths, write_outputs
from lidframe.cli.table import format_value, text_table
from lidframe.errors import InputError

if TYPE_CHECKING:
    from lidframe.analyses.sensitivity import SensitivityResult

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
    parser = subparsers.add_parser("sensitivity", help="how LID moves across calibrators (one row per calibrator)")
    add_scoreset_arguments(parser, calibrator=False)
    parser.add_argument(
        "--calibrators",
        action="append",
        metavar="SPECS",
        help="comma-separated calibrator specs, repeatable (default logistic,isotonic,beta,gaussian,temperature)",
    )
    add_output_arguments(
        parser,
        json="write rows, spread and worst case as JSON",
        plot="write the LID CCDF per calibrator (needs matplotlib)",
    )
    parser.set_defaults(run=run)


def format_sensitivity_table(result: SensitivityResult) -> str:
    """Text table: one row per calibrator, then the spread and the attacker's worst case.

    In the open set (rows with the open-set metrics) four more columns: ALID of the enrolled
    (``enrALID``) and of the outsider trials (``outALID``), the enrolled trials' membership
    disclosure (``member``) and the misattribution rate (``misattr``).
    """
    from lidframe.analyses.sensitivity import OPEN_SET_SENSITIVITY_METRICS, SENSITIVITY_METRICS

    directions_of = {**SENSITIVITY_METRICS, **OPEN_SET_SENSITIVITY_METRICS}
    columns = _COLUMNS + (_OPEN_SET_COLUMNS if "alid_enrolled" in result.spread else [])
    body = [[r.calibrator] + [format_value(getattr(r, k)) for k, _ in columns] for r in result.rows]
    body.append(["spread (max-min)"] + [format_value(result.spread[k]) for k, _ in columns])
    body.append(["worst case"] + [format_value(result.worst_case[k]["value"]) for k, _ in columns])
    body.append(["  reached by"] + [result.worst_case[k]["calibrator"] or "-" for k, _ in columns])
    table = text_table(["calibrator"] + [title for _, title in columns], body, rules=[len(result.rows) - 1])
    directions = ", ".join(f"{t} {'max' if directions_of[k] == 'max' else 'min'}" for k, t in columns)
    return table + f"\n(worst case = attacker's best calibrator per metric: {directions})"


def run(args: argparse.Namespace) -> int:
    from lidframe.analyses.sensitivity import DEFAULT_CALIBRATORS, sensitivity
    from lidframe.registry import describe_component, resolve_prior
    from lidframe.report.analysis_figures import plot_lid_ccdf

    json_out, plot_out = check_output_paths({"--json": args.json, "--plot": args.plot}, inputs=(args.dev, args.eval))
    specs = [s.strip() for value in args.calibrators or [] for s in value.split(",") if s.strip()]
    if args.calibrators and not specs:
        raise InputError("--calibrators: give at least one calibrator spec")
    prior = resolve_prior(args.prior)
    result = sensitivity(
        args.dev, args.eval, specs or list(DEFAULT_CALIBRATORS), prior=prior, znorm_ddof=args.znorm_ddof
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
    print(f"dev:  {args.dev}   prior: {describe_component(prior)}")
    print()
    print(format_sensitivity_table(result))
    write_outputs(result, json_out, plot_out, plot_lid_ccdf, "LID CCDF plot")
    return 0
