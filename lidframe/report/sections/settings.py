"""The settings behind each row of a report, as the section "Settings and provenance" shows them.

:func:`settings_table` (calibrator, prior, z-norm and the sizes of every row),
:func:`calibrator_tables` (each fitted calibrator as a table: its class, parameters and
fitted values, named in words by :func:`fit_name` and shown by :func:`fit_text`) and
:func:`fit_notes` (the interval settings), from the rows'
:class:`~lidframe.report.sections.provenance_model.SystemSettings`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.data.fileio import json_clean
from lidframe.report.tables import NOT_COMPUTED, Cell, Column, Table, count, sort_key, text_cell

if TYPE_CHECKING:
    from lidframe.report.model import Report

__all__ = [
    "settings_table",
    "key_values",
    "FitNote",
    "fit_notes",
    "fit_name",
    "fit_text",
    "FitRow",
    "CalibratorTable",
    "calibrator_tables",
]


def settings_table(report: Report) -> Table:
    """Calibrator, prior, z-norm and the dev/eval sizes of every system of *report*.

    Parameters
    ----------
    report : Report

    Returns
    -------
    Table
    """
    keys = (
        ("calibrator", "calibrator"),
        ("prior", "prior"),
        ("znorm_ddof", "z-norm ddof"),
        ("n_dev_enrolled_trials", "dev trials"),
        ("n_dev_enrolled", "dev N"),
        ("n_dev_outsider_trials", "dev outsider trials"),
        ("n_eval_enrolled_trials", "eval trials"),
        ("n_eval_enrolled", "eval N"),
        ("n_eval_outsider_trials", "eval outsider trials"),
        ("binary_metrics", "binary metrics"),
    )
    columns = [Column("system", False)] + [Column(title, key.startswith("n_")) for key, title in keys]
    rows = []
    for settings in report.provenance.systems:
        cells = [text_cell(settings.label)]
        for key, _ in keys:
            value = getattr(settings, key)
            if key == "znorm_ddof" and value is None:  # scores used raw (the DP audit's Bayes attacker)
                cells.append(text_cell("none (raw scores)"))
                continue
            cells.append(text_cell(value) if not key.startswith("n_") else Cell(count(value), sort_key(value)))
        rows.append(tuple(cells))
    return Table(
        "settings-table",
        "Calibrator and prior with parameters, z-norm and sizes, per system",
        tuple(columns),
        tuple(rows),
    )


def _short(value: Any) -> str:
    """A setting's value as text: floats to 6 significant digits, lists in brackets, JSON spellings."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return NOT_COMPUTED if math.isnan(value) else f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} = {_short(v)}" for k, v in value.items())
    return str(value)


def key_values(record: Mapping[str, Any]) -> str:
    """A settings record as one line: ``"calibrator = Logistic; params: C = 1, weighting = balanced; fitted: slope_ = 2.23"``."""
    parts = []
    for key, value in record.items():
        parts.append(f"{key}: {_short(value)}" if isinstance(value, Mapping) else f"{key} = {_short(value)}")
    return "; ".join(parts)


@attrs.frozen
class FitNote:
    """The fitted calibrator and the interval settings of one system, as lines of text."""

    label: str
    calibrator: str
    intervals: str


def fit_notes(report: Report) -> list[FitNote]:
    """The fitted calibrator and the interval settings of every system of *report*, as lines of text.

    Parameters
    ----------
    report : Report

    Returns
    -------
    list of FitNote
    """
    return [
        FitNote(
            s.label,
            key_values(s.calibrator_fit) if s.calibrator_fit else f"{s.calibrator} (no fitted record)",
            key_values(s.bootstrap) if s.bootstrap else "none computed",
        )
        for s in report.provenance.systems
    ]


#: Readable names of the calibrators' parameters and fitted values, by key without its trailing ``_``.
_FIT_NAMES = {
    "C": "C (inverse regularisation)",
    "n_mated": "mated pairs",
    "n_non_mated": "non-mated pairs",
    "n_fit": "pairs fitted",
    "pav_upper": "PAV block upper ends (z)",
    "pav_posterior": "PAV block posteriors",
    "knot_z": "knots (z)",
    "knot_llr": "knots (LLR)",
    "mean_mated": "mated mean",
    "mean_non_mated": "non-mated mean",
    "var_mated": "mated variance",
    "var_non_mated": "non-mated variance",
    "quad": "quadratic coefficient",
    "lin": "linear coefficient",
    "const": "constant",
    "dev_mean_log_posterior": "dev mean log posterior",
    "max_pairs": "pairs fitted exactly, at most (pooled in bins above)",
    "bins": "bins of a pooled fit",
    "fit_bins": "bins pooled into (none: every pair fitted)",
}
#: Abbreviations spelled out in a key's words.
_FIT_WORDS = {"se": "standard error", "ci": "interval", "llr": "LLR", "pav": "PAV", "n": "number of"}
#: A list longer than this is summarised (its length, smallest and largest value); the JSON keeps it whole.
_FIT_LIST_SHOWN = 4


def fit_name(key: str) -> str:
    """A calibrator parameter's or fitted value's name in words: ``slope_se_`` -> ``"slope standard error"``.

    Known keys have their own names (``n_mated_`` -> ``"mated pairs"``); others lose the
    trailing underscore, have their underscores read as spaces and their abbreviations
    spelled out; no word is repeated next to itself.
    """
    base = key.rstrip("_") or key
    if base in _FIT_NAMES:
        return _FIT_NAMES[base]
    words: list[str] = []
    for word in (w for w in base.split("_") if w):
        spelled = _FIT_WORDS.get(word, word)
        if not words or words[-1] != spelled:
            words.append(spelled)
    return " ".join(words)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def fit_text(value: Any) -> str:
    """A calibrator setting as the page shows it: 6 significant digits, counts with separators, yes/no, none.

    A list of up to four values is printed in brackets (``"[1.61, 2.64]"``, an
    interval); a longer list of numbers as its length and range (``"11 values, from
    -0.34 to 2.58"``); the cell's ``data-value`` keeps it whole.
    """
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return NOT_COMPUTED if math.isnan(value) else f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        if len(value) <= _FIT_LIST_SHOWN:
            return "[" + ", ".join(fit_text(v) for v in value) + "]"
        numbers = [float(v) for v in value if _is_number(v) and not math.isnan(float(v))]
        if len(numbers) == len(value):
            return f"{len(value):,} values, from {fit_text(min(numbers))} to {fit_text(max(numbers))}"
        return f"{len(value):,} values: " + ", ".join(fit_text(v) for v in value[:3]) + ", …"
    if isinstance(value, Mapping):
        return ", ".join(f"{fit_name(str(k))} {fit_text(v)}" for k, v in value.items())
    return str(value)


@attrs.frozen
class FitRow:
    """One row of a fitted calibrator's table.

    Attributes
    ----------
    group : {"parameter", "fitted"}
        A parameter it was built with, or a value its fit found.
    key : str
        The key in the calibrator's record (``calibrator_fit`` of the JSON: ``slope_``).
    name : str
        The key in words (:func:`fit_name`).
    text : str
        The value as shown (:func:`fit_text`).
    value : str
        The value as JSON, whole (the cell's ``data-value``; NaN as null).
    """

    group: str
    key: str
    name: str
    text: str
    value: str


@attrs.frozen
class CalibratorTable:
    """The fitted calibrator of one system, as a table: its class, its parameters and its fitted values."""

    table_id: str
    label: str
    spec: str
    calibrator: str
    module: str
    rows: tuple[FitRow, ...]


def _fit_rows(group: str, values: Mapping[str, Any]) -> list[FitRow]:
    return [
        FitRow(group, str(key), fit_name(str(key)), fit_text(value), json.dumps(json_clean(value)))
        for key, value in values.items()
    ]


def calibrator_tables(report: Report) -> tuple[list[CalibratorTable], list[str]]:
    """The fitted calibrator of every system that records one, as a table, and the labels of those that do not.

    Parameters
    ----------
    report : Report

    Returns
    -------
    tables : list of CalibratorTable
        One per system with a fitted record (``SystemSettings.calibrator_fit``): its
        class and module, then a row per parameter and per fitted value.
    without : list of str
        The labels of the systems without one (a DP audit's: its record keeps no fit).
    """
    tables, without = [], []
    for k, settings in enumerate(report.provenance.systems, start=1):
        fit: Mapping[str, Any] | None = settings.calibrator_fit
        if not fit:
            without.append(settings.label)
            continue
        target = str(fit.get("calibrator", settings.calibrator))
        module, _, name = target.rpartition(":")
        rows = _fit_rows("parameter", fit.get("params") or {}) + _fit_rows("fitted", fit.get("fitted") or {})
        tables.append(
            CalibratorTable(f"calibrator-{k}", settings.label, settings.calibrator, name, module, tuple(rows))
        )
    return tables, without
