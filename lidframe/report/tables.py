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
- :func:`utility_table`, :func:`utility_intervals_note`: what each system's anonymisation
  costs the speech (WER, ρ_F0), and what its brackets are;
- :func:`settings_table`, :func:`calibrator_tables`, :func:`fit_notes`,
  :func:`environment_table`, :func:`attacker_tables`: the settings, the fitted
  calibrators, the software and the attackers behind every number.

An interval of LIDmax is marked biased low (:data:`BIASED_LOW_NOTE`) wherever it shows: a
percentile bootstrap interval of a maximum, whose resamples never exceed the observed one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.data.fileio import json_clean
from lidframe.report.model import (
    WORST_CASE_METRICS,
    AttackerSettings,
    Environment,
    Headline,
    Interval,
    Ladder,
    LadderCell,
    LadderRung,
    Report,
    ReportSystem,
    SystemUtility,
    WorstCase,
)

if TYPE_CHECKING:
    from lidframe.privacy.audit import DPAuditResult
    from lidframe.utility import Utility

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
    "utility_table",
    "utility_interval",
    "utility_intervals_note",
    "settings_table",
    "key_values",
    "fit_notes",
    "BIASED_LOW_NOTE",
    "WorstItem",
    "FitRow",
    "CalibratorTable",
    "calibrator_tables",
    "fit_name",
    "fit_text",
    "environment_table",
    "AttackerTable",
    "attacker_tables",
    "interval_note",
]

#: What a cell shows for a value that was not computed (NaN or None).
NOT_COMPUTED = "—"
#: Why an interval of LIDmax is marked (†) wherever the page shows one.
BIASED_LOW_NOTE = (
    "† The interval of LIDmax is a percentile bootstrap interval of a maximum, and it is biased low: no resample "
    "can disclose more than the largest observed trial. For the tail, read LID q99 and its interval."
)
#: The metrics whose interval is biased low (a maximum).
_BIASED_LOW = ("lid_max",)


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


def decimal3(value: Any) -> str:
    """A number without unit with 3 decimals, as the command line prints it (``'0.412'``), or :data:`NOT_COMPUTED`."""
    return NOT_COMPUTED if _missing(value) else f"{float(value):.3f}"


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
    """One table cell: what it shows, what it sorts by, its interval (*note*), and whether that is biased low."""

    text: str
    sort: str
    note: str = ""
    biased_low: bool = False


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


def _number_cell(
    value: Any, fmt: Callable[[Any], str], interval: Interval | None = None, *, biased_low: bool = False
) -> Cell:
    ci = _interval(interval, fmt)
    return Cell(fmt(value), _sort_key(value), ci, biased_low=biased_low and bool(ci))


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
    ("min_cllr", "minCllr", bits, "Cllr after PAV: the discrimination part of Cllr (bits)"),
    ("dsys", "D_sys", decimal3, "linkability D_sys of the pairs, 0 (none) to 1 (full)"),
    ("min_dcf", "minDCF", decimal3, "normalised detection cost at its best threshold"),
    ("act_dcf", "actDCF", decimal3, "normalised detection cost at the LLRs' Bayes threshold"),
    ("rank1_rate", "rank-1", percent, "share of trials whose true speaker scores highest"),
)


@attrs.frozen
class HeadlineItem:
    """One number of a headline card: its interval, and whether that is biased low (LIDmax)."""

    title: str
    text: str
    interval: str
    sort: str
    biased_low: bool = False


@attrs.frozen
class WorstItem:
    """One number of a card's worst case: the value and the calibrator and prior that reach it."""

    metric: str
    title: str
    text: str
    sort: str
    calibrator: str
    prior: str


@attrs.frozen
class Card:
    """The headline card of one system (cell).

    Attributes
    ----------
    interval_level : str
        What its brackets are (``"95 % speaker-bootstrap intervals in brackets"``), or why
        there are none.
    worst_case : tuple of WorstItem
        The attacker's worst case over the calibrators and priors of its sensitivity
        analysis; empty without one.
    worst_case_over : str
        What the worst case ranges over (``"3 calibrators × 2 priors"``).
    """

    anchor: str
    label: str
    name: str
    calibrator: str
    prior: str
    items: tuple[HeadlineItem, ...]
    reading: str
    interval_level: str
    worst_case: tuple[WorstItem, ...] = ()
    worst_case_over: str = ""

    @property
    def biased_low(self) -> bool:
        """Whether it shows an interval of LIDmax (and so the note that it is biased low)."""
        return any(item.biased_low for item in self.items)


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


def interval_note(system: ReportSystem) -> str:
    """What a card's brackets are: ``"95 % speaker-bootstrap intervals in brackets"``, or why there are none.

    The resampling unit is named when the source records it (an ``evaluate`` summary's
    bootstrap settings); without intervals, the reason the run gave
    (:attr:`ReportSystem.no_intervals`), else ``"no intervals computed"``.
    """
    h: Headline = system.headline
    if not h.intervals:
        return f"no intervals: {system.no_intervals}" if system.no_intervals else "no intervals computed"
    unit = "" if h.interval_unit is None else f"{h.interval_unit}-bootstrap "
    level = "" if h.interval_level is None else f"{100 * h.interval_level:g} % "
    return f"{level}{unit}intervals in brackets"


def _worst_items(worst: WorstCase | None) -> tuple[WorstItem, ...]:
    if worst is None:
        return ()
    items = []
    for key, title, unit in WORST_CASE_METRICS:
        entry = worst.entry(key)
        if entry is None or entry.calibrator is None:
            continue
        fmt = percent if unit == "share" else bits
        shown_title = f"{title} (bits)" if unit == "bits" else title
        items.append(
            WorstItem(key, shown_title, fmt(entry.value), _sort_key(entry.value), entry.calibrator, entry.prior or "")
        )
    return tuple(items)


def _worst_over(worst: WorstCase | None) -> str:
    if worst is None:
        return ""
    n_cal, n_prior = len(worst.calibrators), len(worst.priors)
    calibrators = f"{n_cal} calibrator{'s' if n_cal != 1 else ''}"
    if n_prior <= 1:
        return f"{calibrators}, prior {worst.priors[0]}" if worst.priors else calibrators
    return f"{calibrators} × {n_prior} priors"


def headline_card(system: ReportSystem, index: int) -> Card:
    """The headline card of *system*: its numbers (:data:`CARD_ITEMS`) with their intervals, and its worst case.

    Parameters
    ----------
    system : ReportSystem
    index : int
        1-based position of the system in the report (the card's anchor ``card-<index>``).

    Returns
    -------
    Card
        LIDmax's interval marked biased low; with a sensitivity record, the attacker's
        worst case over its calibrators and priors (:attr:`ReportSystem.worst_case`).
    """
    h: Headline = system.headline
    items = []
    for key, title, fmt in CARD_ITEMS:
        interval = _interval(h.intervals.get(key), fmt)
        value = getattr(h, key)
        items.append(HeadlineItem(title, fmt(value), interval, _sort_key(value), key in _BIASED_LOW and bool(interval)))
    worst = system.worst_case
    return Card(
        f"card-{index}",
        system.label,
        system.name,
        system.calibrator,
        system.prior,
        tuple(items),
        system.reading,
        interval_note(system),
        _worst_items(worst),
        _worst_over(worst),
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
            _number_cell(getattr(s.headline, key), fmt, s.headline.intervals.get(key), biased_low=key in _BIASED_LOW)
            for key, _, fmt, _ in metrics
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
                cells.append(_number_cell(value, _RECORD_FORMATS[key][1], interval, biased_low=key in _BIASED_LOW))
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
    priors = list(dict.fromkeys(str(r["prior"]) for r in record.rows if r.get("prior") is not None))
    keys = [k for k in _SENSITIVITY_KEYS if any(k in r for r in record.rows)]
    if len(priors) > 1:
        keys.insert(1, "prior")
        caption = f"Calibrator sensitivity of {system.label}: each calibrator under each of {len(priors)} priors"
    else:
        caption = f"Calibrator sensitivity of {system.label} (prior {priors[0] if priors else system.prior})"
    table = _record_table(table_id, caption, record.rows, keys)
    over = "calibrators and priors" if len(priors) > 1 else "calibrators"
    worst = []
    for metric in ("alid", "lid_q99", "lid_max"):
        entry = record.worst_case.get(metric) or {}
        if entry.get("calibrator") is not None:
            spread = record.spread.get(metric)
            where = entry["calibrator"] + (f" under prior {entry['prior']}" if len(priors) > 1 else "")
            worst.append(
                f"{_RECORD_FORMATS[metric][0]}: {bits(entry['value'])} bits with {where} "
                f"(spread over {over} {bits(spread)} bits)"
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
        Column(
            "EER bound",
            True,
            "Phi(-mu_held/2): no attacker's EER lies below it (mu_held: the mu the audit checked holds)",
        ),
        Column("bayes EER", True),
        Column("cosine EER", True),
        Column(
            "MI bound on ALID (bits)",
            True,
            "mu_held^2 / (2 ln 2): the mutual-information bound, which bounds ALID (an average), not LIDmax",
        ),
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


# ------------------------------------------------------------------ utility beside privacy
def utility_interval(utility: Utility, key: str) -> Interval | None:
    """The bootstrap interval of ``"wer"`` or ``"rho_f0"`` of a Utility record as the page's :class:`Interval`.

    None where the record has none (measured without a bootstrap, or without a
    reference for ρ_F0) or its ends are both NaN.
    """
    found = (utility.intervals or {}).get(key)
    if found is None or (_missing(found.low) and _missing(found.high)):
        return None
    return Interval(float(found.low), float(found.high))


def _utility_bootstrap_text(utility: Utility) -> str:
    settings = utility.bootstrap or {}
    if not utility.intervals or not settings:
        return "no intervals (measured without a bootstrap; lidframe utility --bootstrap adds them)"
    level = settings.get("level")
    words = [f"{100 * float(level):g} % bootstrap intervals" if level is not None else "bootstrap intervals"]
    detail = []
    if settings.get("n_boot") is not None:
        unit = {"speaker": "speakers", "trial": "utterances"}.get(str(settings.get("unit")))
        detail.append(f"{count(settings['n_boot'])} resamples" + (f" of {unit}" if unit else ""))
    for key, name in (("method", ""), ("seed", "seed ")):
        if settings.get(key) is not None:
            detail.append(f"{name}{settings[key]}")
    return words[0] + (f" ({', '.join(detail)})" if detail else "")


def utility_intervals_note(entries: Sequence[SystemUtility]) -> str:
    """What the brackets of the utility table are: one sentence when every system's are alike, else per system.

    ``"In brackets: 95 % bootstrap intervals (1,000 resamples of speakers, bca, seed 0)."``,
    or ``"In brackets: plain: ...; mcadams: no intervals (...)."``.
    """
    texts = {entry.system: _utility_bootstrap_text(entry.utility) for entry in entries}
    if len(set(texts.values())) == 1:
        return f"In brackets: {next(iter(texts.values()))}."
    return "In brackets: " + "; ".join(f"{system}: {text}" for system, text in texts.items()) + "."


def utility_table(report: Report) -> Table | None:
    """One row per system with a utility: WER and ρ_F0 with their intervals, the sizes, the recogniser, the speech.

    Parameters
    ----------
    report : Report

    Returns
    -------
    Table or None
        None when no system of *report* has a utility.  WER as a percentage, ρ_F0 with
        three decimals (:data:`NOT_COMPUTED` without the original speech, or where no
        utterance had frames voiced in both), each with its interval in brackets.
    """
    if not report.utility:
        return None
    columns = (
        Column("system", False),
        Column(
            "WER",
            True,
            "word error rate of the recogniser on the system's speech: substitutions + deletions + insertions over "
            "the reference words, summed over the utterances",
        ),
        Column(
            "ρ_F0",
            True,
            "mean over the utterances of the correlation of each one's F0 contour with the original's (— without "
            "the original speech)",
        ),
        Column("utterances", True, "utterances recognised"),
        Column("speakers", True, "speakers of the speech (its utt2spk): the bootstrap's units"),
        Column("reference words", True, "words of the reference transcripts, the WER's denominator"),
        Column("recogniser", False, "the recogniser with its settings"),
        Column("speech", False, "the data dir measured (its wav.scp and text)"),
    )
    rows = []
    for entry in report.utility:
        u = entry.utility
        rows.append(
            (
                _text_cell(entry.system),
                _number_cell(u.wer, percent, utility_interval(u, "wer")),
                _number_cell(u.rho_f0, decimal3, utility_interval(u, "rho_f0")),
                _number_cell(u.utterances, count),
                _number_cell(u.speakers, count),
                _number_cell(u.reference_words, count),
                _text_cell(u.recogniser),
                _text_cell(u.data),
            )
        )
    caption = "Utility: what each system's anonymisation costs the speech (word error rate and ρ_F0)"
    return Table("utility-table", caption, columns, tuple(rows))


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
            if key == "znorm_ddof" and value is None:  # scores used raw (the DP audit's Bayes attacker)
                cells.append(_text_cell("none (raw scores)"))
                continue
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


# ------------------------------------------------------------------ the fitted calibrator, as a table
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


# ------------------------------------------------------------------ the software and the attackers
def environment_table(environment: Environment | None) -> list[tuple[str, str, str]]:
    """The software behind the numbers, one row each: (key, what, value).

    Keys: ``lidframe``, ``source digest``, ``git commit`` (only in a git checkout),
    ``python``, then each package of :data:`lidframe.report.model.ENVIRONMENT_PACKAGES`
    by its distribution name.
    """
    if environment is None:
        return []
    rows = [
        ("lidframe", "lidframe", environment.lidframe_version),
        ("source digest", "lidframe source (SHA-256 of its code files)", environment.source_digest),
    ]
    if environment.git_commit is not None:
        state = " with uncommitted changes (the source digest names the code)" if environment.git_modified else ""
        rows.append(("git commit", "git commit of the checkout", environment.git_commit + state))
    rows.append(("python", "Python", environment.python))
    rows += [(name, name, version) for name, version in environment.packages]
    return rows


@attrs.frozen
class AttackerTable:
    """One attacker of the provenance: its name, and a row per setting (setting, value, SHA-256 of a file it names)."""

    table_id: str
    name: str
    rows: tuple[tuple[str, str, str], ...]


def attacker_tables(attackers: Sequence[AttackerSettings]) -> list[AttackerTable]:
    """The attackers of a report, a small table each: their settings, and the digest of each file one names."""
    tables = []
    for k, attacker in enumerate(attackers, start=1):
        digests = {f.role: f.sha256 for f in attacker.files}
        rows = [(key, value, digests.get(key, "")) for key, value in attacker.settings]
        keys = {key for key, _ in attacker.settings}
        rows += [(f.role, f.path, f.sha256) for f in attacker.files if f.role not in keys]
        tables.append(AttackerTable(f"attacker-{k}", attacker.name, tuple(rows)))
    return tables
