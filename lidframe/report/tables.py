"""The tables and headline cards of a report page, their numbers formatted.

Numbers are printed with :func:`bits` (2 decimals), :func:`percent` (1 decimal) and
:func:`count`; a value that was not computed shows as :data:`NOT_COMPUTED` (an em dash).
Every table cell also carries the full-precision value in ``data-sort``, which the
page's sorting script reads.  :mod:`lidframe.report.render` puts them on the page:

- :func:`headline_card`: the headline numbers of one system, with their intervals;
- :func:`comparison_table`: every system with its headline metrics;
- :func:`sensitivity_table`, :func:`per_speaker_table`, :func:`dp_audit_table`: the
  analyses' records;
- :func:`open_set_table`, :func:`misattribution_table`: the open set's groups of trials
  and its harm by misattribution, of the systems evaluated with an open-set prior;
- :func:`ladder_table`: the threat-model ladder, anonymised systems by rung, the plain
  speech as the reference, and the rungs' sides and models;
- :func:`settings_table`, :func:`fit_notes`: the settings behind every number.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.report.model import Headline, Interval, Ladder, LadderCell, LadderRung, Report, ReportSystem

if TYPE_CHECKING:
    from lidframe.privacy.audit import DPAuditResult

__all__ = [
    "NOT_COMPUTED",
    "bits",
    "percent",
    "count",
    "Cell",
    "Column",
    "Table",
    "HeadlineItem",
    "Card",
    "FitNote",
    "METRIC_COLUMNS",
    "CARD_ITEMS",
    "headline_card",
    "comparison_table",
    "sensitivity_table",
    "per_speaker_table",
    "dp_audit_table",
    "open_set_table",
    "misattribution_table",
    "LadderMetric",
    "LadderShown",
    "LadderRow",
    "LadderColumn",
    "LadderTable",
    "ladder_table",
    "settings_table",
    "key_values",
    "fit_notes",
]

#: What a cell shows for a value that was not computed (NaN or None).
NOT_COMPUTED = "—"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def bits(value: Any) -> str:
    """A value in bits with 2 decimals (``'2.25'``), or :data:`NOT_COMPUTED`."""
    return NOT_COMPUTED if _missing(value) else f"{float(value):.2f}"


def percent(value: Any) -> str:
    """A fraction as a percentage with 1 decimal (``'14.9 %'``), or :data:`NOT_COMPUTED`."""
    return NOT_COMPUTED if _missing(value) else f"{100.0 * float(value):.1f} %"


def count(value: Any) -> str:
    """An integer with thousands separators (``'1,580'``), or :data:`NOT_COMPUTED`."""
    return NOT_COMPUTED if _missing(value) else f"{int(value):,}"


def _interval(interval: Interval | None, fmt: Callable[[Any], str]) -> str:
    """``'[1.99, 2.54]'`` (``'[13.3, 17.0] %'`` for percentages), or ``''`` without an interval."""
    if interval is None or (_missing(interval.low) and _missing(interval.high)):
        return ""
    low, high = fmt(interval.low), fmt(interval.high)
    if low.endswith(" %") and high.endswith(" %"):
        return f"[{low[:-2]}, {high[:-2]}] %"
    return f"[{low}, {high}]"


def _float_or_nan(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _sort_key(value: Any) -> str:
    """The ``data-sort`` text: a float's repr (Infinity spelled as JavaScript reads it), text as is, '' for missing."""
    if _missing(value):
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        number = float(value)
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        return repr(number) if isinstance(value, float) else str(value)
    return str(value)


@attrs.frozen
class Cell:
    """One table cell: what it shows, what it sorts by."""

    text: str
    sort: str
    note: str = ""


@attrs.frozen
class Column:
    """One table column: its header and whether it sorts as numbers."""

    title: str
    numeric: bool
    tooltip: str = ""


@attrs.frozen
class Table:
    """A sortable table of the page."""

    table_id: str
    caption: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]


def _text_cell(value: Any) -> Cell:
    text = NOT_COMPUTED if _missing(value) else str(value)
    return Cell(text, _sort_key(value))


def _number_cell(value: Any, fmt: Callable[[Any], str], interval: Interval | None = None) -> Cell:
    ci = _interval(interval, fmt)
    return Cell(fmt(value), _sort_key(value), ci)


# ------------------------------------------------------------------ headline
#: (key, title, formatter, tooltip) of the comparison table's metric columns, in order.
METRIC_COLUMNS: tuple[tuple[str, str, Callable[[Any], str], str], ...] = (
    ("n_enrolled", "N", count, "enrolled speakers the attacker searches"),
    ("log2_n", "log2 N", bits, "the most a trial can disclose under a uniform prior (bits)"),
    ("n_enrolled_trials", "trials", count, "eval trials whose speaker is enrolled (with a LID)"),
    ("alid", "ALID", bits, "average LID (bits)"),
    ("pdr", "PDR", percent, "share of trials with LID > 0"),
    ("lid_pos", "LID+", bits, "mean LID of the trials with LID > 0 (bits)"),
    ("lid_neg", "LID−", bits, "mean LID of the trials with LID ≤ 0 (bits)"),
    ("lid_q99", "LID q99", bits, "99th percentile of LID (bits)"),
    ("lid_max", "LIDmax", bits, "largest LID of any trial (bits)"),
    ("eer", "EER", percent, "pairwise equal error rate, ROC convex hull"),
    ("cllr", "Cllr", bits, "binary log-likelihood-ratio cost (bits)"),
    ("rank1_rate", "rank-1", percent, "share of trials whose true speaker scores highest"),
)


@attrs.frozen
class HeadlineItem:
    """One number of a headline card."""

    title: str
    text: str
    interval: str
    sort: str


@attrs.frozen
class Card:
    """The headline card of one system (cell)."""

    anchor: str
    label: str
    name: str
    calibrator: str
    prior: str
    items: tuple[HeadlineItem, ...]
    reading: str
    interval_level: str


#: (key, title, formatter) of a headline card.
CARD_ITEMS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("n_enrolled", "N", count),
    ("log2_n", "log2 N (bits)", bits),
    ("alid", "ALID (bits)", bits),
    ("lid_max", "LIDmax (bits)", bits),
    ("lid_q99", "LID q99 (bits)", bits),
    ("eer", "EER", percent),
    ("pdr", "PDR", percent),
)


def headline_card(system: ReportSystem, index: int) -> Card:
    """The headline card of *system*: its numbers (:data:`CARD_ITEMS`) with their intervals.

    Parameters
    ----------
    system : ReportSystem
    index : int
        1-based position of the system in the report (the card's anchor ``card-<index>``).

    Returns
    -------
    Card
    """
    h: Headline = system.headline
    items = tuple(
        HeadlineItem(title, fmt(getattr(h, key)), _interval(h.intervals.get(key), fmt), _sort_key(getattr(h, key)))
        for key, title, fmt in CARD_ITEMS
    )
    if not h.intervals:
        level = "no intervals computed"
    elif h.interval_level is None:
        level = "intervals in brackets"
    else:
        level = f"{h.interval_level:.0%} intervals in brackets"
    return Card(
        f"card-{index}", system.label, system.name, system.calibrator, system.prior, items, system.reading, level
    )


def comparison_table(report: Report) -> Table:
    """Every cell with its headline metrics; a metric not computed for any cell is named in the caption instead."""
    grid = report.kind == "grid"
    seeds = grid and len({s.seed for s in report.systems}) > 1
    columns = [Column("system", False)]
    if grid:
        columns += [Column("attacker", False)]
    columns += [Column("calibrator", False), Column("prior", False)]
    if seeds:
        columns.append(Column("seed", True))
    metrics = [m for m in METRIC_COLUMNS if any(not _missing(getattr(s.headline, m[0])) for s in report.systems)]
    columns += [Column(title, True, tip) for _, title, _, tip in metrics]
    rows = []
    for s in report.systems:
        cells = [_text_cell(s.name if grid else s.label)]
        if grid:
            cells.append(_text_cell(s.attacker))
        cells += [_text_cell(s.calibrator), _text_cell(s.prior)]
        if seeds:
            cells.append(_text_cell(s.seed))
        cells += [
            _number_cell(getattr(s.headline, key), fmt, s.headline.intervals.get(key)) for key, _, fmt, _ in metrics
        ]
        rows.append(tuple(cells))
    caption = "Every system, with its confidence intervals where computed"
    left_out = [title for key, title, _, _ in METRIC_COLUMNS if all(m[0] != key for m in metrics)]
    if left_out:
        caption += f"; not computed for any, so not shown: {', '.join(left_out)}"
    return Table("comparison-table", caption, tuple(columns), tuple(rows))


# ------------------------------------------------------------------ analyses
_RECORD_FORMATS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "n_trials": ("trials", count),
    "n_enrolled_trials": ("trials", count),
    "n_enrolled": ("N", count),
    "alid": ("ALID", bits),
    "alid_low": ("ALID low", bits),
    "alid_high": ("ALID high", bits),
    "lid_max": ("LIDmax", bits),
    "lid_q99": ("LID q99", bits),
    "lid_pos": ("LID+", bits),
    "lid_neg": ("LID−", bits),
    "log2_n": ("log2 N", bits),
    "pdr": ("PDR", percent),
    "rank1_rate": ("rank-1", percent),
    "eer": ("EER", percent),
    "cllr": ("Cllr", bits),
    "dev_logloss_bits": ("dev log-loss (bits)", bits),
    "lid_ceiling": ("ceiling", bits),
    "membership_bits": ("membership", bits),
    "alid_enrolled": ("ALID enrolled", bits),
    "alid_outsider": ("ALID outsider", bits),
    "membership_enrolled": ("membership enrolled", bits),
    "misattribution_rate": ("misattributed", percent),
}


def _record_table(table_id: str, caption: str, rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> Table:
    """A table of record rows: known metric keys formatted (:data:`_RECORD_FORMATS`), others as text.

    A pair of ``<key>_low`` / ``<key>_high`` columns next to a metric ``key`` becomes that
    metric's interval, printed in its cell.
    """
    folded = {k for k in keys for end in ("_low", "_high") if k.endswith(end) and k[: -len(end)] in keys}
    keys = [k for k in keys if k not in folded]
    columns = []
    for key in keys:
        if key in _RECORD_FORMATS:
            columns.append(Column(_RECORD_FORMATS[key][0], True))
        else:
            columns.append(Column(key.replace("_", " "), False))
    body = []
    for row in rows:
        cells = []
        for key in keys:
            value = row.get(key)
            if key in _RECORD_FORMATS:
                interval = None
                if f"{key}_low" in folded and f"{key}_high" in folded:
                    interval = Interval(_float_or_nan(row.get(f"{key}_low")), _float_or_nan(row.get(f"{key}_high")))
                cells.append(_number_cell(value, _RECORD_FORMATS[key][1], interval))
            else:
                cells.append(_text_cell(value))
        body.append(tuple(cells))
    return Table(table_id, caption, tuple(columns), tuple(body))


_SENSITIVITY_KEYS = (
    "calibrator",
    "describe",
    "alid",
    "pdr",
    "lid_q99",
    "lid_max",
    "eer",
    "cllr",
    "dev_logloss_bits",
    # open set only (:data:`lidframe.analyses.sensitivity.OPEN_SET_SENSITIVITY_METRICS`)
    "alid_enrolled",
    "alid_outsider",
    "membership_enrolled",
    "misattribution_rate",
)


def sensitivity_table(system: ReportSystem, table_id: str) -> tuple[Table, list[str]]:
    """The calibrator-sensitivity table of *system* and its worst cases, one sentence per LID metric.

    Parameters
    ----------
    system : ReportSystem
        With a ``sensitivity`` record.
    table_id : str
        Unique in the page.

    Returns
    -------
    table : Table
        One row per calibrator.
    worst : list of str
        ``"ALID: 2.31 bits with isotonic (spread over calibrators 0.12 bits)"`` per metric
        (ALID, LID q99, LIDmax) that has a worst case.
    """
    record = system.sensitivity
    table = _record_table(
        table_id,
        f"Calibrator sensitivity of {system.label} (prior {system.prior})",
        record.rows,
        [k for k in _SENSITIVITY_KEYS if any(k in r for r in record.rows)],
    )
    worst = []
    for metric in ("alid", "lid_q99", "lid_max"):
        entry = record.worst_case.get(metric) or {}
        if entry.get("calibrator") is not None:
            spread = record.spread.get(metric)
            worst.append(
                f"{_RECORD_FORMATS[metric][0]}: {bits(entry['value'])} bits with {entry['calibrator']} "
                f"(spread over calibrators {bits(spread)} bits)"
            )
    return table, worst


def per_speaker_table(system: ReportSystem, table_id: str) -> Table:
    """The per-speaker table of *system* (a ``per_speaker`` record): one row per speaker, intervals folded in.

    Parameters
    ----------
    system : ReportSystem
        With a ``per_speaker`` record.
    table_id : str
        Unique in the page.

    Returns
    -------
    Table
    """
    frame = system.per_speaker.to_frame()
    keys = [str(c) for c in frame.columns]
    return _record_table(table_id, f"Disclosure per speaker of {system.label}", frame.to_dict("records"), keys)


def dp_audit_table(record: DPAuditResult) -> Table:
    """Measured EER and ALID of a DP audit against the GDP bounds, one row per mu.

    Parameters
    ----------
    record : DPAuditResult
        What :func:`lidframe.privacy.audit.dp_audit` returned.

    Returns
    -------
    Table
    """
    columns = [
        Column("mu", True),
        Column("sigma", True),
        Column("EER bound", True, "Phi(-mu/2): no attacker's EER lies below it"),
        Column("bayes EER", True),
        Column("cosine EER", True),
        Column("MI bound (bits)", True, "mu^2 / (2 ln 2): no ALID lies above it (trials drawn from the prior)"),
        Column("bayes ALID", True),
        Column("cosine ALID", True),
        Column("bayes LIDmax", True),
        Column("cosine LIDmax", True),
        Column("bounds checked", False),
        Column("violations", False),
    ]
    rows = []
    for row in record.rows:

        def interval(key: str) -> Interval | None:
            bounds = row.get(key)
            return None if bounds is None else Interval(float(bounds[0]), float(bounds[1]))

        rows.append(
            (
                _number_cell(row["mu"], lambda v: f"{float(v):g}"),
                _number_cell(row["sigma"], lambda v: f"{float(v):.3g}"),
                _number_cell(row["eer_bound"], percent),
                _number_cell(row["bayes_eer"], percent, interval("bayes_eer_ci")),
                _number_cell(row["cosine_eer"], percent, interval("cosine_eer_ci")),
                _number_cell(row["mi_bound_bits"], bits),
                _number_cell(row["bayes_alid"], bits, interval("bayes_alid_ci")),
                _number_cell(row["cosine_alid"], bits, interval("cosine_alid_ci")),
                _number_cell(row["bayes_lid_max"], bits),
                _number_cell(row["cosine_lid_max"], bits),
                _text_cell("yes" if row["eer_bound_applies"] and row["alid_bound_applies"] else "no"),
                _text_cell("; ".join(row["violations"]) if row["violations"] else "none"),
            )
        )
    return Table("dp-table", "Measured disclosure against the GDP bounds, per mu", tuple(columns), tuple(rows))


# ------------------------------------------------------------------ open set
#: (attribute of :class:`~lidframe.report.model.LIDGroup`, title, formatter, tooltip) of the open-set table.
OPEN_SET_GROUP_COLUMNS: tuple[tuple[str, str, Callable[[Any], str], str], ...] = (
    ("n_trials", "trials", count, "trials in the group"),
    ("alid", "ALID", bits, "average LID of the group (bits)"),
    ("pdr", "PDR", percent, "share of the group's trials with LID > 0"),
    ("lid_pos", "LID+", bits, "mean LID of the group's trials with LID > 0 (bits)"),
    ("lid_neg", "LID−", bits, "mean LID of the group's trials with LID ≤ 0 (bits)"),
    ("lid_max", "LIDmax", bits, "largest LID of the group (bits)"),
)


def _open_systems(report: Report) -> list[ReportSystem]:
    return [s for s in report.systems if s.open_set is not None]


def open_set_table(report: Report) -> Table | None:
    """One row per (open-set system, group of trials): trials, ALID, PDR, LID+, LID−, LIDmax.

    The groups are all trials, the enrolled trials (identification disclosure), the
    outsider trials (membership disclosure) and the membership disclosure of the enrolled
    trials (:class:`~lidframe.report.model.OpenSetHeadline`); ALID with its interval where
    computed.  None when no system of *report* is open-set.
    """
    systems = _open_systems(report)
    if not systems:
        return None
    columns = [Column("system", False), Column("group", False)]
    columns += [Column(title, True, tip) for _, title, _, tip in OPEN_SET_GROUP_COLUMNS]
    rows = []
    for s in systems:
        assert s.open_set is not None
        for group in s.open_set.groups:
            cells = [_text_cell(s.label), _text_cell(group.name)]
            cells += [
                _number_cell(getattr(group, key), fmt, group.interval if key == "alid" else None)
                for key, _, fmt, _ in OPEN_SET_GROUP_COLUMNS
            ]
            rows.append(tuple(cells))
    caption = "Open set: disclosure per group of trials (an outsider trial's LID is its membership disclosure)"
    return Table("open-set-table", caption, tuple(columns), tuple(rows))


def _probability(value: Any) -> str:
    return NOT_COMPUTED if _missing(value) else f"{float(value):.3g}"


def misattribution_table(report: Report) -> Table | None:
    """One row per open-set system: π_∅ and its source, outsider trials, misattribution rates at 0.5 and the threshold.

    None when no system of *report* is open-set.
    """
    systems = _open_systems(report)
    if not systems:
        return None
    columns = (
        Column("system", False),
        Column("π_∅", True, "the attacker's prior mass of 'nobody enrolled' (outside)"),
        Column("π_∅ from", False, "given, or auto: the dev set's share of outsider trials (the attacker's belief)"),
        Column("outsider trials", True, "eval trials whose speaker is not enrolled"),
        Column("misattributed > 0.5", True, "share of outsider trials whose top enrolled posterior exceeds 0.5"),
        Column("threshold", True, "the chosen posterior threshold"),
        Column("misattributed > threshold", True, "share of outsider trials whose top posterior exceeds it"),
    )
    rows = []
    for s in systems:
        o = s.open_set
        assert o is not None
        source = "auto (dev share of outsider trials)" if o.outside_source == "auto" else o.outside_source
        rows.append(
            (
                _text_cell(s.label),
                _number_cell(o.outside, _probability),
                _text_cell(source),
                _number_cell(o.n_outsider_trials, count),
                _number_cell(o.misattribution_rate, percent, o.intervals.get("misattribution_rate")),
                _number_cell(o.misattribution_threshold, _probability),
                _number_cell(
                    o.misattribution_rate_at_threshold, percent, o.intervals.get("misattribution_rate_at_threshold")
                ),
            )
        )
    caption = "Open set: the prior mass of 'nobody enrolled' and the outsider trials linked to an enrolled speaker"
    return Table("misattribution-table", caption, columns, tuple(rows))


# ------------------------------------------------------------------ threat-model ladder
@attrs.frozen
class LadderMetric:
    """One number of a ladder cell: its key, title, text, interval and full-precision value."""

    key: str
    title: str
    text: str
    interval: str
    sort: str
    biased_low: bool = False


@attrs.frozen
class LadderShown:
    """One cell of the ladder table: an entry's numbers over *span* columns; no label and no metrics: not evaluated."""

    label: str
    span: int
    metrics: tuple[LadderMetric, ...]


@attrs.frozen
class LadderRow:
    """One row of the ladder table: its header (a system), a note under it, its cells."""

    header: str
    note: str
    cells: tuple[LadderShown, ...]


@attrs.frozen
class LadderColumn:
    """One column of the ladder table: an attacker at a rung (with the rung's code)."""

    attacker: str
    rung: str
    code: str


@attrs.frozen
class LadderTable:
    """The ladder section's tables: the numbers by system and rung, and the rungs' sides and models.

    Attributes
    ----------
    table_id, caption : str
    groups : tuple of (str, int)
        (attacker, how many columns it has), the first header row.
    columns : tuple of LadderColumn
        The second header row.
    rows : tuple of LadderRow
        One per anonymised system.
    references : tuple of LadderRow
        The plain speech (nothing anonymised): per system its entries, each under its
        attacker's columns; an entry of an attacker without columns in a row of its own.
    rungs : tuple of LadderRung
        The rung table's rows (:meth:`lidframe.report.model.Ladder.rungs`).
    interval_level : str
        ``"95 % bootstrap intervals in brackets"``, or ``"no intervals computed"``.
    biased_low : bool
        Whether a LIDmax interval is shown (and so the note that it is biased low).
    log2_n : tuple of float
        The distinct ceilings log2 N of the entries (bits).
    ceiling : str
        They as the page prints them (``"4.86"``, ``"4.86 or 5.00"``).
    """

    table_id: str
    caption: str
    groups: tuple[tuple[str, int], ...]
    columns: tuple[LadderColumn, ...]
    rows: tuple[LadderRow, ...]
    references: tuple[LadderRow, ...]
    rungs: tuple[LadderRung, ...]
    interval_level: str
    biased_low: bool
    log2_n: tuple[float, ...]
    ceiling: str


def _ladder_shown(cell: LadderCell | None, span: int = 1) -> LadderShown:
    """The numbers of *cell* (ALID, LIDmax, EER, with the intervals) as a table cell; an empty cell for None."""
    if cell is None:
        return LadderShown("", span, ())
    metrics = (
        LadderMetric("alid", "ALID", bits(cell.alid), _interval(cell.alid_interval, bits), _sort_key(cell.alid)),
        LadderMetric(
            "lid_max",
            "LIDmax",
            bits(cell.lid_max),
            _interval(cell.lid_max_interval, bits),
            _sort_key(cell.lid_max),
            biased_low=bool(_interval(cell.lid_max_interval, bits)),
        ),
        LadderMetric("eer", "EER", percent(cell.eer), "", _sort_key(cell.eer)),
    )
    return LadderShown(cell.label, span, metrics)


def _reference_rows(ladder: Ladder, groups: Sequence[tuple[str, int]], n_columns: int) -> list[LadderRow]:
    """The reference rows: per system its plain-speech entries under their attackers' columns, then the others."""
    references = ladder.references()
    grouped = {attacker for attacker, _ in groups}
    rows = []
    for system in dict.fromkeys(c.entry.system for c in references):
        mine = [c for c in references if c.entry.system == system]
        if any(c.entry.attacker in grouped for c in mine):
            cells = [_ladder_shown(ladder.cell(system, attacker, None), span) for attacker, span in groups]
            rows.append(LadderRow(system, "nothing anonymised (o-o)", tuple(cells)))
        for cell in mine:
            if cell.entry.attacker not in grouped:
                note = f"nothing anonymised (o-o), attacker {cell.entry.attacker}"
                rows.append(LadderRow(system, note, (_ladder_shown(cell, n_columns),)))
    return rows


def ladder_table(ladder: Ladder) -> LadderTable:
    """The threat-model ladder as the page shows it: anonymised systems (rows) by attacker and rung (columns).

    Each cell holds the entry's ALID and LIDmax (bits) with their intervals, and its EER;
    the rows of the plain speech follow as the reference; the rung table states each
    rung's enrolment and trial sides and each attacker's model.

    Parameters
    ----------
    ladder : Ladder

    Returns
    -------
    LadderTable
    """
    from lidframe.data.scenario import SCENARIOS

    columns = tuple(LadderColumn(attacker, rung, SCENARIOS[rung].code) for attacker, rung in ladder.columns())
    groups = tuple((attacker, sum(c.attacker == attacker for c in columns)) for attacker in ladder.attackers())
    rows = tuple(
        LadderRow(system, "", tuple(_ladder_shown(ladder.cell(system, c.attacker, c.rung)) for c in columns))
        for system in ladder.systems()
    )
    levels = sorted({c.interval_level for c in ladder.cells if c.interval_level is not None})
    has_intervals = any(c.alid_interval is not None or c.lid_max_interval is not None for c in ladder.cells)
    if not has_intervals:
        level = "no intervals computed"
    elif levels:
        level = f"{', '.join(f'{v:.0%}' for v in levels)} bootstrap intervals in brackets"
    else:
        level = "bootstrap intervals in brackets"
    references = tuple(_reference_rows(ladder, groups, len(columns)))
    shown = [c for row in (*rows, *references) for c in row.cells]
    caption = "ALID and LIDmax (bits) and EER of each anonymised system (rows) by attacker and rung (columns)"
    if references:
        caption += "; under them the plain speech, the reference"
    return LadderTable(
        table_id="ladder-table",
        caption=caption,
        groups=groups,
        columns=columns,
        rows=rows,
        references=references,
        rungs=tuple(ladder.rungs()),
        interval_level=level,
        biased_low=any(m.biased_low for c in shown for m in c.metrics),
        log2_n=tuple(ladder.log2_n_values()),
        ceiling=" or ".join(bits(v) for v in ladder.log2_n_values()),
    )


# ------------------------------------------------------------------ provenance
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
        cells = [_text_cell(settings.label)]
        for key, _ in keys:
            value = getattr(settings, key)
            cells.append(_text_cell(value) if not key.startswith("n_") else Cell(count(value), _sort_key(value)))
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
