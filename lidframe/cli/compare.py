"""``lidframe compare``: paired comparison of systems from their per-trial LID tables, or their legal criteria.

Given per-trial CSVs (``lidframe evaluate --per-trial``) it compares the systems' LID
metrics trial by trial (:func:`lidframe.analyses.compare.compare_systems`); given summary
JSONs (``lidframe evaluate --json``) it sets their linkability and singling out side by
side (:func:`lidframe.analyses.compare_legal.compare_legal`).  Which one, the files'
suffix says (``.json``: summaries); a mix is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lidframe.cli.options import (
    CheckedFlag,
    add_bootstrap_arguments,
    add_output_arguments,
    bootstrap_from_args,
    check_output_paths,
    positive_int,
)
from lidframe.data.fileio import StrPath, open_text
from lidframe.errors import InputError, shorten
from lidframe.report.text import format_value, text_table

if TYPE_CHECKING:
    from lidframe.analyses.compare_legal import LegalComparisonRow

__all__ = ["register", "run", "read_per_trial"]

#: Columns that flag an outsider trial (speaker not enrolled), in the order looked for:
#: ``outsider``, and ``impostor``, its name in per-trial tables written before this release.
_OUTSIDER_COLUMNS = ("outsider", "impostor")


def _defaults():
    from lidframe.analyses.compare import PAIRED_BOOTSTRAP

    return PAIRED_BOOTSTRAP


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="paired comparison of systems from their per-trial LID tables, or their legal criteria from summaries",
    )
    parser.add_argument(
        "tables",
        nargs="+",
        metavar="PER_TRIAL.csv|SUMMARY.json",
        help="lidframe evaluate --per-trial outputs, 2 or more (a paired comparison of LID); or lidframe evaluate "
        "--json outputs, 2 or more, named *.json (their linkability and singling out side by side; the bootstrap "
        "and permutation options do not apply)",
    )
    parser.add_argument("--names", help="comma-separated system names (default: file stems)")
    add_bootstrap_arguments(parser, _defaults(), switch=False, method=False)
    parser.add_argument(
        "--permutations",
        type=int,
        action=CheckedFlag,
        check=positive_int,
        default=5000,
        help="permutations (default 5000)",
    )
    add_output_arguments(parser, json="write the comparison rows as JSON")
    parser.set_defaults(run=run)


def read_per_trial(path: StrPath) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(trial ids, trial speakers, LID bits) of the trials with a LID of an ``evaluate --per-trial`` CSV.

    Rows flagged 1 in the ``outsider`` column (``impostor`` in a table written before this
    release) are outsider trials: left out of a closed-set table (their LID is NaN), kept
    in an open-set one (their LID is their membership disclosure, a number); without
    either column every row counts.
    """
    ids, speakers, lid, _ = _read_per_trial(path)
    return ids, speakers, lid


def _read_per_trial(path: StrPath) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`read_per_trial`, and how many outsider trials with a LID it kept (> 0: an open-set table)."""
    import pandas as pd

    try:
        with open_text(path, "a per-trial LID table (CSV from lidframe evaluate --per-trial)") as handle:
            frame = pd.read_csv(handle, dtype={"trial_id": str, "trial_spk": str}, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: cannot read per-trial LID table ({shorten(str(exc).splitlines()[0])})") from None
    missing = [c for c in ("trial_id", "trial_spk", "lid_bits") if c not in frame.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)}; expected the output of lidframe evaluate --per-trial"
        )
    lid = pd.to_numeric(frame["lid_bits"], errors="coerce").to_numpy()
    flag = next((c for c in _OUTSIDER_COLUMNS if c in frame.columns), None)
    outsider = frame[flag].astype(str).eq("1").to_numpy() if flag is not None else np.zeros(len(frame), bool)
    bad = np.isnan(lid) & ~outsider
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputError(f"{path}: line {r + 2} has lid_bits {frame['lid_bits'].iat[r]!r}; expected a number")
    keep = ~np.isnan(lid)  # an outsider trial has a LID in the open set only
    n_open = int((outsider & keep).sum())
    return frame["trial_id"].to_numpy()[keep], frame["trial_spk"].to_numpy()[keep], lid[keep], n_open


def _check_alike(tables: dict[str, tuple[StrPath, int]]) -> None:
    """Refuse a mix of open-set tables (outsider trials with a LID) and closed-set ones: their trials differ."""
    open_tables = [(name, path) for name, (path, n_open) in tables.items() if n_open]
    closed = [(name, path) for name, (path, n_open) in tables.items() if not n_open]
    if open_tables and closed:
        (open_name, open_path), (closed_name, closed_path) = open_tables[0], closed[0]
        raise InputError(
            f"{open_path} ({open_name}) is an open-set table (its outsider trials have a LID: their membership "
            f"disclosure) but {closed_path} ({closed_name}) is not; compare tables evaluated alike, all with a "
            "prior whose outside > 0 or all without"
        )


def _is_summary(path: StrPath) -> bool:
    return Path(path).suffix.lower() == ".json"


def run(args: argparse.Namespace) -> int:
    from lidframe.analyses.compare import compare_systems
    from lidframe.data.fileio import write_json

    (json_out,) = check_output_paths({"--json": args.json}, inputs=args.tables)
    names = args.names.split(",") if args.names else [Path(p).stem for p in args.tables]
    if len(names) != len(args.tables):
        raise InputError(f"--names gives {len(names)} names for {len(args.tables)} tables")
    if len(set(names)) != len(names):
        raise InputError(f"system names must be unique, got {names}")
    summaries = [p for p in args.tables if _is_summary(p)]
    if summaries and len(summaries) < len(args.tables):
        other = next(p for p in args.tables if not _is_summary(p))
        raise InputError(
            f"{summaries[0]} is a summary (.json) but {other} is not; compare per-trial tables (a paired comparison "
            "of LID) or summaries (their legal criteria), not both"
        )
    if summaries:
        return _run_summaries(args, names, json_out)
    read = {name: _read_per_trial(path) for name, path in zip(names, args.tables)}
    _check_alike({name: (path, read[name][3]) for name, path in zip(names, args.tables)})
    systems = {name: found[:3] for name, found in read.items()}
    result = compare_systems(systems, bootstrap=bootstrap_from_args(args, _defaults()), n_perm=args.permutations)
    print(
        f"paired comparison on {len(next(iter(systems.values()))[0])} trials: {args.bootstrap_level:.0%} paired bootstrap "
        f"intervals and permutation p-values over {args.bootstrap_unit}s ({args.n_boot} resamples, {args.permutations} "
        f"permutations, seed {args.seed}); p_holm: Holm-adjusted within each metric"
    )
    header = ["A", "B", "metric", "A", "B", "A-B", "low", "high", "p", "p_holm"]
    body = [
        [r.a, r.b, r.metric, format_value(r.value_a), format_value(r.value_b), format_value(r.diff, "+.3f"),
         format_value(r.low, "+.3f"), format_value(r.high, "+.3f"), format_value(r.p_value, ".4f"),
         format_value(r.p_holm, ".4f")]
        for r in result.rows
    ]  # fmt: skip
    print(text_table(header, body))
    if json_out is not None:
        settings = {k: v for k, v in vars(args).items() if k != "run"}
        write_json(json_out, {"settings": settings, **result.to_dict()})
    return 0


def _at(row: LegalComparisonRow) -> str:
    """Where a row of the legal comparison is, for the console: its point, each side's N' (or N) where they differ."""
    if row.at_a is not None and row.at_b is not None and row.at_a != row.at_b:
        return f"{row.at} ({row.at_a} vs {row.at_b})"
    known = row.at_a if row.at_a is not None else row.at_b
    if row.criterion == "pi_sing":
        return "N" if known is None else f"N={known}"
    return row.at if row.at != "N'=N" or known is None else f"N'=N={known}"


def _run_summaries(args: argparse.Namespace, names: list[str], json_out: Path | None) -> int:
    """``lidframe compare A.json B.json ...``: the summaries' legal criteria side by side."""
    from lidframe.analyses.compare_legal import compare_legal, read_summary_criteria
    from lidframe.data.fileio import write_json

    result = compare_legal({name: read_summary_criteria(path) for name, path in zip(names, args.tables)})
    print(
        f"legal criteria of {len(names)} summaries side by side (docs/legal.md): each side's estimate, its own "
        "interval and its chance level; A-B only where both are at the same N' (or N); no paired test (a summary "
        "holds no per-trial values: compare the --per-trial tables for that)"
    )
    header = ["A", "B", "criterion", "at", "A", "low", "high", "chance", "B", "low", "high", "chance", "A-B"]
    body = [
        [r.a, r.b, r.criterion, _at(r)] + [format_value(v) for v in (r.value_a, r.low_a, r.high_a, r.chance_a,
         r.value_b, r.low_b, r.high_b, r.chance_b)] + [format_value(r.diff, "+.3f")]
        for r in result.rows
    ]  # fmt: skip
    print(text_table(header, body, align="llll" + "r" * 9))
    said: dict[tuple[str, str], list[str]] = {}  # (name, why) -> the criteria it is said of
    for r in result.rows:
        for name, why in ((r.a, r.absent_a), (r.b, r.absent_b)):
            if why and r.criterion not in said.setdefault((name, why), []):
                said[(name, why)].append(r.criterion)
    for (name, why), criteria in said.items():
        print(f"{name}: {' and '.join(criteria)} not computed: {why}")
    if json_out is not None:
        write_json(json_out, {"settings": {"summaries": [str(p) for p in args.tables], "names": names},
                              **result.to_dict()})  # fmt: skip
    return 0
