"""The building blocks of the page's tables: cells, columns, and the formats of their numbers.

Numbers are printed with :func:`bits` (2 decimals), :func:`percent` (1 decimal),
:func:`count` and :func:`decimal3`; a value that was not computed shows as
:data:`NOT_COMPUTED` (an em dash).  Every table cell also carries the full-precision
value in ``data-sort`` (:func:`sort_key`), which the page's sorting script reads.  Each
section of the page (:mod:`lidframe.report.sections`) builds its own tables from these;
:func:`record_table` is the table of an analysis's record rows (the calibrator
sensitivity, the per-speaker table).

An interval of LIDmax is marked biased low (:data:`BIASED_LOW_NOTE`) wherever it shows: a
percentile bootstrap interval of a maximum, whose resamples never exceed the observed one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from lidframe.metrics.catalogue import METRICS, Metric
from lidframe.stats.interval import Interval

__all__ = [
    "NOT_COMPUTED",
    "BIASED_LOW_NOTE",
    "bits",
    "percent",
    "count",
    "decimal3",
    "is_missing",
    "interval_text",
    "sort_key",
    "Cell",
    "Column",
    "Table",
    "text_cell",
    "number_cell",
    "record_table",
    "PAGE_FORMATS",
    "page_format",
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


def is_missing(value: Any) -> bool:
    """Whether *value* was not computed: None or NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def bits(value: Any) -> str:
    """A value in bits with 2 decimals (``'2.25'``), or :data:`NOT_COMPUTED`."""
    return NOT_COMPUTED if is_missing(value) else f"{float(value):.2f}"


def percent(value: Any) -> str:
    """A fraction as a percentage with 1 decimal (``'14.9 %'``), or :data:`NOT_COMPUTED`."""
    return NOT_COMPUTED if is_missing(value) else f"{100.0 * float(value):.1f} %"


def count(value: Any) -> str:
    """An integer with thousands separators (``'1,580'``), or :data:`NOT_COMPUTED`."""
    return NOT_COMPUTED if is_missing(value) else f"{int(value):,}"


def decimal3(value: Any) -> str:
    """A number without unit with 3 decimals, as the command line prints it (``'0.412'``), or :data:`NOT_COMPUTED`."""
    return NOT_COMPUTED if is_missing(value) else f"{float(value):.3f}"


def interval_text(interval: Interval | None, fmt: Callable[[Any], str]) -> str:
    """``'[1.99, 2.54]'`` (``'[13.3, 17.0] %'`` for percentages), or ``''`` without an interval."""
    if interval is None or (is_missing(interval.low) and is_missing(interval.high)):
        return ""
    low, high = fmt(interval.low), fmt(interval.high)
    if low.endswith(" %") and high.endswith(" %"):
        return f"[{low[:-2]}, {high[:-2]}] %"
    return f"[{low}, {high}]"


def sort_key(value: Any) -> str:
    """The ``data-sort`` text: a float's repr (Infinity spelled as JavaScript reads it), text as is, '' for missing."""
    if is_missing(value):
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
    """One table column: its header, whether it sorts as numbers, and the catalogue metric it shows.

    *key* is the key of the metric catalogue's row whose values the column holds
    (:mod:`lidframe.metrics.catalogue`; ``data-key`` on the page, where the glossary finds
    it), ``""`` for a column of names or settings.
    """

    title: str
    numeric: bool
    tooltip: str = ""
    key: str = ""


@attrs.frozen
class Table:
    """A sortable table of the page."""

    table_id: str
    caption: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]


def text_cell(value: Any) -> Cell:
    """A cell of text (:data:`NOT_COMPUTED` for a missing value), sorted as text."""
    text = NOT_COMPUTED if is_missing(value) else str(value)
    return Cell(text, sort_key(value))


def number_cell(
    value: Any, fmt: Callable[[Any], str], interval: Interval | None = None, *, biased_low: bool = False
) -> Cell:
    """A cell of a number formatted by *fmt*, with its interval (biased low when *biased_low* and shown)."""
    ci = interval_text(interval, fmt)
    return Cell(fmt(value), sort_key(value), ci, biased_low=biased_low and bool(ci))


#: The page's formatter of each unit of the metric catalogue (:mod:`lidframe.metrics.catalogue`).
PAGE_FORMATS: dict[str, Callable[[Any], str]] = {"bits": bits, "fraction": percent, "count": count, "number": decimal3}


def page_format(metric: Metric) -> Callable[[Any], str]:
    """The page's formatter of *metric*'s values, by its unit (:data:`PAGE_FORMATS`)."""
    return PAGE_FORMATS[metric.unit]


#: Every catalogue metric's title and formatter in a record table, and its bounds' (``<key>_low``, ``<key>_high``).
_RECORD_FORMATS: dict[str, tuple[str, Callable[[Any], str]]] = {
    **{m.key: (m.label, page_format(m)) for m in METRICS},
    **{f"{m.key}_{end}": (f"{m.label} {end}", page_format(m)) for m in METRICS for end in ("low", "high")},
}


_METRIC_KEYS = frozenset(m.key for m in METRICS)


def record_table(table_id: str, caption: str, rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> Table:
    """A table of record rows: known metric keys formatted (:data:`_RECORD_FORMATS`), others as text.

    A pair of ``<key>_low`` / ``<key>_high`` columns next to a metric ``key`` becomes that
    metric's interval, printed in its cell.
    """
    folded = {k for k in keys for end in ("_low", "_high") if k.endswith(end) and k[: -len(end)] in keys}
    keys = [k for k in keys if k not in folded]
    columns = []
    for key in keys:
        if key in _RECORD_FORMATS:
            columns.append(Column(_RECORD_FORMATS[key][0], True, key=key if key in _METRIC_KEYS else ""))
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
                    interval = Interval.from_columns(row, key)
                cells.append(number_cell(value, _RECORD_FORMATS[key][1], interval, biased_low=key in _BIASED_LOW))
            else:
                cells.append(text_cell(value))
        body.append(tuple(cells))
    return Table(table_id, caption, tuple(columns), tuple(body))
