"""The page's section "Headlines": one card per system (cell) with its numbers, reading and worst case.

Its record is each system's :class:`~lidframe.report.headline.Headline` (and, with a
sensitivity record, its :class:`~lidframe.report.sections.sensitivity.WorstCase`): the
card (:func:`headline_card`: the numbers of :data:`CARD_ITEMS` with their intervals,
the reading sentence, what the brackets are).  The cards are made once per page
(:class:`~lidframe.report.sections.Page`): each system's section links to its own.  The
summary shows the card of each system's headline row (:func:`headline_cells`: its only
row, or of several the one whose ALID is highest); the appendix "Every row's headline"
(:func:`show_rows`) the cards of the others.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.metrics import catalogue
from lidframe.report.sections.sensitivity import WORST_CASE_METRICS
from lidframe.report.tables import _BIASED_LOW, bits, interval_text, page_format, percent, sort_key

if TYPE_CHECKING:
    from collections.abc import Callable

    from lidframe.report.headline import Headline
    from lidframe.report.model import Report, ReportSystem
    from lidframe.report.sections import Page
    from lidframe.report.sections.sensitivity import WorstCase

__all__ = [
    "HeadlineItem",
    "WorstItem",
    "Card",
    "CARD_ITEMS",
    "interval_note",
    "headline_card",
    "HeadlinesSection",
    "headline_cells",
    "show",
    "show_rows",
    "absent_rows",
]


@attrs.frozen
class HeadlineItem:
    """One number of a headline card: its interval, whether that is biased low (LIDmax), its catalogue key."""

    title: str
    text: str
    interval: str
    sort: str
    biased_low: bool = False
    key: str = ""


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
        What the worst case ranges over (``"3 calibrators × 2 priors"``, or ``"5 calibrators,
        prior uniform"``).
    worst_case_one_prior : bool
        Whether it ranges over one prior, which :attr:`worst_case_over` names: each item
        then shows its calibrator alone (a shorter card in the printed summary).
    dev_warning : str
        The warning for a dev set too small to calibrate on
        (:func:`~lidframe.core.devsize.small_dev_warning`); empty where there is none.
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
    dev_warning: str = ""
    worst_case_one_prior: bool = False

    @property
    def biased_low(self) -> bool:
        """Whether it shows an interval of LIDmax (and so the note that it is biased low)."""
        return any(item.biased_low for item in self.items)


#: (key, title, formatter) of a headline card.
CARD_ITEMS: tuple[tuple[str, str, Callable[[Any], str]], ...] = tuple(
    (m.key, m.titled, page_format(m)) for m in catalogue.table("card")
)


def interval_note(system: ReportSystem) -> str:
    """What a card's brackets are: ``"95 % speaker-bootstrap intervals in brackets; ..."``, or why there are none.

    The resampling unit and what the intervals cover (the calibrator refitted on resampled
    dev speakers, or held fixed: :meth:`~lidframe.stats.bootstrap.Bootstrap.covers`) are
    named when the source records them (an ``evaluate`` summary's bootstrap settings);
    without intervals, the reason the run gave (:attr:`ReportSystem.no_intervals`), else
    ``"no intervals computed"``.
    """
    h: Headline = system.headline
    if not h.intervals:
        return f"no intervals: {system.no_intervals}" if system.no_intervals else "no intervals computed"
    unit = "" if h.interval_unit is None else f"{h.interval_unit}-bootstrap "
    level = "" if h.interval_level is None else f"{100 * h.interval_level:g} % "
    covers = "" if h.interval_covers is None else f" ({h.interval_covers})"
    return f"{level}{unit}intervals in brackets{covers}"


def _worst_items(worst: WorstCase | None) -> tuple[WorstItem, ...]:
    if worst is None:
        return ()
    items = []
    for key, title, unit in WORST_CASE_METRICS:
        entry = worst.entry(key)
        if entry is None or entry.calibrator is None:
            continue
        fmt = percent if unit == "fraction" else bits
        shown_title = f"{title} (bits)" if unit == "bits" else title
        items.append(
            WorstItem(key, shown_title, fmt(entry.value), sort_key(entry.value), entry.calibrator, entry.prior or "")
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
        interval = interval_text(h.intervals.get(key), fmt)
        value = getattr(h, key)
        items.append(
            HeadlineItem(title, fmt(value), interval, sort_key(value), key in _BIASED_LOW and bool(interval), key)
        )
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
        h.dev_warning or "",
        worst is not None and len(worst.priors) <= 1,
    )


def headline_cells(report: Report) -> list[ReportSystem]:
    """The headline row of each system, in page order: its only row, or of several the one with the highest ALID.

    A system evaluated under several attackers, rungs, calibrators or priors (a grid's
    cells, the real-voice demo's rows) is headed by the row that discloses most on average:
    the attacker's best choice.  A row whose ALID was not computed comes last.
    """
    best: dict[str, ReportSystem] = {}
    for system in report.systems:
        held = best.get(system.name)
        if held is None or _alid(system) > _alid(held):
            best[system.name] = system
    return list(best.values())


def _alid(system: ReportSystem) -> float:
    value = system.headline.alid
    return -math.inf if math.isnan(value) else value


@attrs.frozen
class HeadlinesSection:
    """What the section shows: the headline card of each system, and what the page's other cards are.

    Attributes
    ----------
    cards : tuple of Card
        The card of each system's headline row (:func:`headline_cells`), in page order.
    worst_case : bool
        Whether one of them has a worst case (the note on it).
    several : bool
        Whether a system has several rows: the others' cards are an appendix
        (:func:`show_rows`).
    dev_warnings : tuple of (str, tuple of str)
        Each small-dev warning of the cards once, with the labels of the cards it is for
        (above the cards: one line per dev set, not one per card, so that the summary prints short).
    shared_interval_level : str
        What every card's brackets are, where two or more cards say the same
        (:attr:`Card.interval_level`), else ``""``.  The printed summary says it once above
        the cards and leaves it out of each card (a page of six systems keeps its summary on
        two A4 pages, issue 41); on screen each card keeps its own line.
    """

    cards: tuple[Card, ...]
    worst_case: bool
    several: bool = False
    dev_warnings: tuple[tuple[str, tuple[str, ...]], ...] = ()
    shared_interval_level: str = ""


def _shared_interval_level(cards: tuple[Card, ...]) -> str:
    """The interval level every one of two or more *cards* states, else ``""``."""
    levels = {card.interval_level for card in cards}
    return levels.pop() if len(cards) >= 2 and len(levels) == 1 else ""


def _dev_warnings(cards: tuple[Card, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each distinct small-dev warning of *cards*, with the labels of the cards that carry it, in page order."""
    grouped: dict[str, list[str]] = {}
    for card in cards:
        if card.dev_warning:
            grouped.setdefault(card.dev_warning, []).append(card.label)
    return tuple((text, tuple(labels)) for text, labels in grouped.items())


def show(page: Page) -> HeadlinesSection:
    """The section of *page*: the card of each system's headline row."""
    heads = {s.label for s in headline_cells(page.report)}
    cards = tuple(card for card in page.cards if card.label in heads)
    several = len(cards) < len(page.cards)
    return HeadlinesSection(
        cards, any(card.worst_case for card in cards), several, _dev_warnings(cards), _shared_interval_level(cards)
    )


def show_rows(page: Page) -> HeadlinesSection:
    """The appendix "Every row's headline" of *page*: the cards of the rows that head no system."""
    heads = {s.label for s in headline_cells(page.report)}
    cards = tuple(card for card in page.cards if card.label not in heads)
    return HeadlinesSection(
        cards,
        any(card.worst_case for card in cards),
        dev_warnings=_dev_warnings(cards),
        shared_interval_level=_shared_interval_level(cards),
    )


def absent_rows(report: Report) -> str | None:
    """Why the appendix "Every row's headline" does not apply: every system has one row, its card in the summary."""
    if len(headline_cells(report)) < len(report.systems):
        return None
    return "Every system has a single row here: its headline card is the summary's, under Headlines."
