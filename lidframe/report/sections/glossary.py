"""The page's section "Glossary": every metric the page shows, in the metric catalogue's words.

One source: each entry is the catalogue's row of a metric (:mod:`lidframe.metrics.catalogue`:
its label, plain-text name, unit, description and, where one sentence does not say enough,
its :attr:`~lidframe.metrics.catalogue.Metric.note`: why ALID can be negative, why an
open-set LIDmax can exceed log2 N, what ZEBRA's tags A to F mean).  Nothing of a
description is written here; the page adds only what belongs to the run: where minDCF and
actDCF were measured (the binary view's operating point, P_target, C_miss and C_fa of the
summary, :func:`~lidframe.report.sections.comparison.operating_point_text`).

Which metrics the page shows is read off the page itself: every table column, card entry
and ladder cell of a metric carries its catalogue key in ``data-metric-key``, and
:mod:`lidframe.report.render` lays the page out once to collect them
(:func:`metric_keys_of`) before it fills this section (:attr:`Page.metric_keys
<lidframe.report.sections.Page.metric_keys>`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

from lidframe.metrics import catalogue
from lidframe.report.sections.comparison import operating_point_text

if TYPE_CHECKING:
    from lidframe.report.model import ReportSystem
    from lidframe.report.sections import Page

__all__ = ["METRIC_KEY_ATTRIBUTE", "GlossaryEntry", "metric_keys_of", "glossary_entries", "GlossarySection", "show"]

#: The attribute that marks a metric on the page with its catalogue key.
METRIC_KEY_ATTRIBUTE = "data-metric-key"
_MARKED = re.compile(METRIC_KEY_ATTRIBUTE + r'="([^"]*)"')
#: The metrics measured at the binary view's operating point.
_AT_OPERATING_POINT = ("min_dcf", "act_dcf")
_UNITS = {"bits": "bits", "fraction": "a share, shown as a percentage", "count": "a count", "number": "no unit"}


def metric_keys_of(html: str) -> tuple[str, ...]:
    """The catalogue keys marked on a laid-out page (``data-metric-key``), each once, in catalogue order.

    Raises
    ------
    KeyError
        A marked key that is not the catalogue's (a page that names a metric the glossary
        could not explain).
    """
    marked = {key for key in _MARKED.findall(html) if key}
    for key in marked:
        catalogue.metric(key)  # a KeyError names a key outside the catalogue
    return tuple(m.key for m in catalogue.METRICS if m.key in marked)


@attrs.frozen
class GlossaryEntry:
    """One metric of the glossary: the catalogue's row, and what the run adds to it.

    Attributes
    ----------
    metric : Metric
        The catalogue's row (label, short name, unit, description, note).
    unit : str
        Its unit in words.
    run : str
        What belongs to this run (``"measured at P_target = 0.01, C_miss = 1, C_fa = 1"``);
        ``""`` where nothing does.
    """

    metric: catalogue.Metric
    unit: str
    run: str = ""

    @property
    def anchor(self) -> str:
        """Its id on the page, ``glossary-<key>``."""
        return f"glossary-{self.metric.key}"


def glossary_entries(keys: Iterable[str], systems: Sequence[ReportSystem]) -> tuple[GlossaryEntry, ...]:
    """An entry per catalogue key of *keys*, in catalogue order; minDCF's and actDCF's with *systems*' operating point."""
    wanted = set(keys)
    point = operating_point_text(systems)
    entries = []
    for m in catalogue.METRICS:
        if m.key not in wanted:
            continue
        run = f"measured at {point}" if m.key in _AT_OPERATING_POINT and point else ""
        entries.append(GlossaryEntry(m, _UNITS[m.unit], run))
    return tuple(entries)


@attrs.frozen
class GlossarySection:
    """What the section shows: its entries."""

    entries: tuple[GlossaryEntry, ...]


def show(page: Page) -> GlossarySection:
    """The section of *page*: an entry per metric it shows (:attr:`Page.metric_keys`)."""
    return GlossarySection(glossary_entries(page.metric_keys, page.report.systems))
