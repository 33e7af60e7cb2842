"""The page's section "Singling out, linkability, inference": the law's three criteria side by side.

The Article 29 Working Party tests an anonymisation against three criteria: can a person
be singled out, can records be linked, can anything be inferred (docs/legal.md).  Each
system with a :attr:`~lidframe.report.model.ReportSystem.legal` record
(:class:`~lidframe.analyses.legal_criteria.LegalCriteria`) gets three cards
(:func:`criteria_cards`): singling out pi_sing(N), linkability pi_link(N') at N' = 2 and
N, and inference -- ALID and LID q99 of its headline -- each with its chance level, its
interval and one sentence an auditor can quote: the summary shows the cards of each
system's headline row -- of one or two systems (:data:`CARDS_AT_MOST`); of more, one
compact table (:func:`criteria_table`: a row per system, pi_link(2), pi_link(N) and pi_sing
with their intervals, chance levels and readings), the cards following in the appendix, so
that the summary keeps to two A4 pages.  The cards of its other rows (a grid's cells), the table of every
linkability point (:func:`linkability_table`) and the curve pi_link(N') against chance
1/N' (:func:`linkability_figure`) are the appendix "Legal criteria in full"
(:func:`show_curve`).  Every number is the JSON's: the cards and the table
carry each full-precision value in ``data-sort``.

A sentence compares a number with its chance level only through its interval
(:func:`chance_reading`, which the card's sentence and the compact table both read): above
chance when the interval lies above it, consistent with chance when it holds it.  A
pi_sing under e^-1 is never read as "below chance": a random predicate calibrated on few
recordings per speaker sits a little under e^-1 (docs/legal.md), and the sentence says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lidframe.metrics import catalogue
from lidframe.report.plotting import plain_text, pyplot
from lidframe.report.tables import (
    Column,
    Table,
    bits,
    interval_text,
    is_missing,
    number_cell,
    percent,
    sort_key,
    text_cell,
)
from lidframe.stats.interval import Interval

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lidframe.analyses.legal import LinkabilityCurve, LinkabilityPoint, SinglingOut
    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.report.figures import FigureMaker, InlineFigure
    from lidframe.report.model import Report, ReportSystem
    from lidframe.report.sections import Page

__all__ = [
    "CARDS_AT_MOST",
    "chance_reading",
    "CriterionItem",
    "CriterionCard",
    "SystemCriteria",
    "criteria_cards",
    "TABLE_KEYS",
    "CriteriaRow",
    "criteria_table",
    "linkability_table",
    "linkability_figure",
    "LegalSection",
    "LegalAppendix",
    "show",
    "show_curve",
    "absent",
    "absent_curve",
]


#: The most systems whose cards the summary shows; of more, the compact table (:func:`criteria_table`).
CARDS_AT_MOST = 2


def chance_reading(interval: Interval | None, chance: float) -> str:
    """How a number stands against *chance*, judged by its *interval* only.

    Returns
    -------
    str
        ``"above"`` (the interval lies above chance), ``"under"`` (it lies under it),
        ``"holds"`` (it holds chance) or ``"none"`` (no interval: not told apart).
    """
    if interval is None:
        return "none"
    if interval.low > chance:
        return "above"
    if interval.high < chance:
        return "under"
    return "holds"


#: The compact table's words for each :func:`chance_reading` (pi_sing's "under": :data:`_SING_UNDER`).
_READING_WORDS = {"above": "above", "holds": "consistent", "under": "below", "none": "no interval"}
#: pi_sing under e^-1 is never read as below chance: where a random predicate calibrated on few recordings sits.
_SING_UNDER = "not above"


@attrs.frozen
class CriterionItem:
    """One number of a criterion's card, with its interval and chance level.

    Attributes
    ----------
    key : str
        What it is, for the page's ``data-metric`` (``pi_sing``, ``pi_link_2``,
        ``pi_link_n``, ``alid``, ``lid_q99``).
    title : str
    text, interval : str
        The value and its interval as printed (``""``: no interval).
    sort : str
        The value at full precision (``data-sort``).
    chance_text, chance_sort : str
        Its chance level as printed and at full precision (``data-chance``).
    reading : str
        How it stands against chance by its interval, in the compact table's words
        (:func:`chance_reading`: ``above``, ``consistent``, ``below`` -- ``not above`` for
        pi_sing --, ``no interval``); ``""`` for inference.
    """

    key: str
    title: str
    text: str
    interval: str
    sort: str
    chance_text: str
    chance_sort: str
    reading: str = ""

    @property
    def metric(self) -> str:
        """Its key in the metric catalogue (``pi_link`` for both points of the curve): the page's ``data-key``."""
        return "pi_link" if self.key.startswith("pi_link") else self.key


@attrs.frozen
class CriterionCard:
    """One criterion of one system: its numbers and its sentence, or why it was not computed.

    Attributes
    ----------
    key : str
        ``singling-out``, ``linkability`` or ``inference``.
    title : str
    items : tuple of CriterionItem
    sentence : str
        One sentence an auditor can quote; empty when :attr:`absent`.
    absent : str or None
        Why the eval set did not allow it (the JSON's ``absent``); None when computed.
    """

    key: str
    title: str
    items: tuple[CriterionItem, ...]
    sentence: str
    absent: str | None = None


@attrs.frozen
class SystemCriteria:
    """The three cards of one system (its label), in the order singling out, linkability, inference."""

    label: str
    cards: tuple[CriterionCard, ...]


def _item(
    key: str,
    title: str,
    value: float,
    interval: Interval | None,
    chance: float,
    fmt: Callable[[Any], str],
    *,
    under: str = "",
) -> CriterionItem:
    """An item of a card; with *under* (the words for an interval under chance), read against chance."""
    reading = ""
    if under:
        found = chance_reading(interval, chance)
        reading = under if found == "under" else _READING_WORDS[found]
    return CriterionItem(
        key, title, fmt(value), interval_text(interval, fmt), sort_key(value), fmt(chance), sort_key(chance), reading
    )


def _interval(low: float, high: float) -> Interval | None:
    return None if is_missing(low) or is_missing(high) else Interval(math.nan, low, high)


def _versus_chance(value: float, interval: Interval | None, chance: float, *, under: str) -> str:
    """How *value* stands against *chance*, judged by its interval (:func:`chance_reading`): a clause."""
    return {
        "none": "without an interval, not told apart from chance",
        "above": "above chance (its interval lies above it)",
        "under": under,
        "holds": "consistent with chance (its interval holds it)",
    }[chance_reading(interval, chance)]


def _singling_out_card(single: SinglingOut | None, why: str | None) -> CriterionCard:
    title = "Singling out"
    if single is None:
        return CriterionCard("singling-out", title, (), "", why or "not computed")
    ci = _interval(single.low, single.high)
    items = (
        _item("pi_sing", f"π_sing (N = {single.n:,})", single.pi_sing, ci, single.chance, percent, under=_SING_UNDER),
    )
    verdict = _versus_chance(
        single.pi_sing,
        ci,
        single.chance,
        under="not above chance (under e^−1, where a random predicate calibrated on few recordings per speaker sits)",
    )
    sentence = (
        f"A predicate calibrated on one enrolled speaker's scores fired on exactly one of {single.n:,} people's "
        f"recordings in {percent(single.pi_sing)} of its attempts{_bracketed(ci, percent)}, over {single.draws} seeded "
        f"draws per speaker, against {percent(single.chance)} (e^−1) for a predicate that fires at random: {verdict}."
    )
    return CriterionCard("singling-out", title, items, sentence)


def _bracketed(interval: Interval | None, fmt: Callable[[Any], str]) -> str:
    text = interval_text(interval, fmt)
    return f" (interval {text})" if text else ""


def _linkability_card(curve: LinkabilityCurve | None, why: str | None) -> CriterionCard:
    title = "Linkability"
    if curve is None:
        return CriterionCard("linkability", title, (), "", why or "not computed")
    points = {p.n_prime: p for p in curve.points}
    shown: list[tuple[str, LinkabilityPoint]] = [("pi_link_2", points[2])] if 2 in points else []
    if curve.n_enrolled in points and curve.n_enrolled != 2:
        shown.append(("pi_link_n", points[curve.n_enrolled]))
    items = tuple(
        _item(
            key,
            f"π_link (N′ = {p.n_prime:,})",
            p.pi_link,
            _interval(p.low, p.high),
            p.chance,
            percent,
            under=_READING_WORDS["under"],
        )
        for key, p in shown
    )
    clauses = []
    for key, p in shown:
        ci = _interval(p.low, p.high)
        among = (
            "2 candidates, one of them the speaker," if key == "pi_link_2" else f"all {p.n_prime:,} enrolled speakers"
        )
        verdict = _versus_chance(p.pi_link, ci, p.chance, under="below chance (its interval lies under it)")
        clauses.append(
            f"among {among} in {percent(p.pi_link)} of trials{_bracketed(ci, percent)} against {percent(p.chance)} "
            f"by chance, {verdict}"
        )
    sentence = "Given one recording, the attacker picks out its speaker " + "; ".join(clauses) + "."
    return CriterionCard("linkability", title, items, sentence)


def _inference_card(system: ReportSystem) -> CriterionCard:
    h = system.headline
    alid_ci, q99_ci = h.intervals.get("alid"), h.intervals.get("lid_q99")
    items = (
        _item("alid", "ALID (bits)", h.alid, alid_ci, 0.0, bits),
        _item("lid_q99", "LID q99 (bits)", h.lid_q99, q99_ci, 0.0, bits),
    )
    if alid_ci is None:
        verdict = "without an interval, not told apart from 0 bits"
    elif alid_ci.low > 0:
        verdict = "more than nothing (its interval lies above 0 bits)"
    elif alid_ci.high < 0:
        verdict = "less than nothing: the attacker is misled on average (its interval lies under 0 bits)"
    else:
        verdict = "consistent with nothing learnt (its interval holds 0 bits)"
    sentence = (
        f"On average a recording tells the attacker {bits(h.alid)} bits{_bracketed(alid_ci, bits)} about who is "
        f"speaking (ALID), of at most {bits(h.log2_n)} bits (log2 N), and 1 % of recordings tell more than "
        f"{bits(h.lid_q99)} bits (LID q99); an attacker who learns nothing gets 0 bits: {verdict}."
    )
    return CriterionCard("inference", "Inference", items, sentence)


def criteria_cards(system: ReportSystem) -> SystemCriteria | None:
    """The three cards of *system*: singling out, linkability (its legal record) and inference (its headline).

    None when *system* has no legal record.
    """
    legal: LegalCriteria | None = system.legal
    if legal is None:
        return None
    cards = (
        _singling_out_card(legal.singling_out, legal.absent.get("singling_out")),
        _linkability_card(legal.linkability, legal.absent.get("linkability")),
        _inference_card(system),
    )
    return SystemCriteria(system.label, cards)


#: The items of the compact table, in its column order: pi_link(2), pi_link(N) (the rank-1 rate), pi_sing(N).
TABLE_KEYS = ("pi_link_2", "pi_link_n", "pi_sing")
#: The card of each item of the compact table (where it is not computed, its card says why).
_TABLE_CARDS = {"pi_link_2": "linkability", "pi_link_n": "linkability", "pi_sing": "singling-out"}


@attrs.frozen
class CriteriaRow:
    """One system's row of the compact table: the items of its cards (:func:`criteria_cards`) it shows.

    Attributes
    ----------
    label : str
        The system's headline row.
    system : str
        Its system (what the table shows; the label is the row's ``data-system`` and title).
    items : tuple of (CriterionItem or None)
        Its items of :data:`TABLE_KEYS`, in that order; None where not computed.
    absent : tuple of str
        Why each item is not computed (its card's :attr:`~CriterionCard.absent`), ``""`` where it is.
    """

    label: str
    system: str
    items: tuple[CriterionItem | None, ...]
    absent: tuple[str, ...]

    @property
    def cells(self) -> list[tuple[str, CriterionItem | None, str]]:
        """(key of :data:`TABLE_KEYS`, its item or None, why not computed) of each column, in order."""
        return list(zip(TABLE_KEYS, self.items, self.absent, strict=True))


def criteria_table(systems: Sequence[SystemCriteria], names: Mapping[str, str]) -> tuple[CriteriaRow, ...]:
    """The compact table of *systems*' cards: a row each, its items of :data:`TABLE_KEYS` (the summary of many systems).

    The numbers, chance levels and readings are the cards' items themselves: one record,
    shown twice.  *names* maps each label to its system (:attr:`ReportSystem.name`).
    """
    rows = []
    for system in systems:
        cards = {card.key: card for card in system.cards}
        items = {item.key: item for card in system.cards for item in card.items}
        found = tuple(items.get(key) for key in TABLE_KEYS)
        # an item not computed: its card's reason (pi_link(N) at N = 2 is pi_link(2), shown once)
        why = tuple(
            "" if item is not None else cards[_TABLE_CARDS[key]].absent or "N = 2: it is π_link(2)"
            for key, item in zip(TABLE_KEYS, found)
        )
        rows.append(CriteriaRow(system.label, names.get(system.label, system.label), found, why))
    return tuple(rows)


def _curves(report: Report) -> dict[str, LinkabilityCurve]:
    """label -> linkability curve of each system that has one, in page order."""
    out = {}
    for s in report.systems:
        if s.legal is not None and s.legal.linkability is not None:
            out[s.label] = s.legal.linkability
    return out


_PI_LINK = catalogue.metric("pi_link")


def linkability_table(report: Report) -> Table | None:
    """One row per (system, N'): pi_link(N') with its interval, and chance 1/N'; None without any curve."""
    curves = _curves(report)
    if not curves:
        return None
    columns = (
        Column("system", False),
        Column("N′", True, "candidates the attacker searches, the true speaker among them"),
        Column(_PI_LINK.label, True, _PI_LINK.description, key="pi_link"),
        Column("chance 1/N′", True, "a blind guess among N′", key="chance"),
    )
    rows = []
    for label, curve in curves.items():
        for p in curve.points:
            rows.append(
                (
                    text_cell(label),
                    number_cell(p.n_prime, lambda v: f"{int(v):,}"),
                    number_cell(p.pi_link, percent, _interval(p.low, p.high)),
                    number_cell(p.chance, percent),
                )
            )
    caption = "Linkability π_link(N′) at each candidate-set size N′ (π_link(N) is the rank-1 rate)"
    return Table("linkability-table", caption, columns, tuple(rows))


def linkability_figure(curves: Mapping[str, LinkabilityCurve], styles: Mapping[str, Mapping[str, Any]]) -> Figure:
    """pi_link(N') of each system against N' (log scale), with its interval band and chance 1/N' dashed.

    Parameters
    ----------
    curves : mapping of str to LinkabilityCurve
        label -> its curve (at least one).
    styles : mapping of str to dict
        label -> matplotlib style (colour, marker, line style) of the page.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    largest = 2
    for label, curve in curves.items():
        x = np.array([p.n_prime for p in curve.points], dtype=np.float64)
        y = np.array([p.pi_link for p in curve.points])
        style = dict(styles.get(label, {}))
        ax.plot(x, y, label=plain_text(label), **style)
        low = np.array([p.low for p in curve.points], dtype=np.float64)
        high = np.array([p.high for p in curve.points], dtype=np.float64)
        if not (np.isnan(low).all() or np.isnan(high).all()):
            ax.fill_between(x, low, high, color=style.get("color"), alpha=0.18, linewidth=0)
        largest = max(largest, int(x.max()))
    grid = np.geomspace(2.0, max(largest, 3), 64)
    ax.plot(grid, 1.0 / grid, color="0.3", ls="--", lw=1.0, label="chance 1/N′")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("N′, candidates searched (the true speaker among them)")
    ax.set_ylabel("π_link(N′), share of trials linked")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Linkability against the candidates searched", fontsize=9)
    fig.tight_layout()
    return fig


def _figures(maker: FigureMaker) -> tuple[InlineFigure, ...]:
    curves = _curves(maker.report)
    if not curves:
        return ()
    fig = linkability_figure(curves, {label: maker.styles[label] for label in curves})
    caption = (
        "Linkability π_link(N′): the share of trials whose speaker the attacker ranks first among N′ candidates, "
        "the true one and N′ − 1 others drawn at random (the exact expectation over the draws; shaded: its "
        "interval), against chance 1/N′ (dashed). At N′ = N it is the rank-1 rate."
    )
    return (maker.inline(fig, caption),)


@attrs.frozen
class LegalSection:
    """What the section shows: each system's headline row's cards or the compact table, who has none, and others.

    Attributes
    ----------
    systems : tuple of SystemCriteria
        The cards of each system's headline row with a legal record
        (:func:`~lidframe.report.sections.headlines.headline_cells`), where at most
        :data:`CARDS_AT_MOST` have one; else empty, and :attr:`table` shows them.
    left_out : tuple of str
        The headline rows without a legal record.
    others : bool
        Whether other rows have cards (the appendix "Legal criteria in full" shows them).
    table : tuple of CriteriaRow
        The compact table of the headline rows (:func:`criteria_table`) where more than
        :data:`CARDS_AT_MOST` have a legal record (their cards: the appendix); else empty.
    """

    systems: tuple[SystemCriteria, ...]
    left_out: tuple[str, ...]
    others: bool = False
    table: tuple[CriteriaRow, ...] = ()


def _headline_criteria(report: Report) -> tuple[list[ReportSystem], list[SystemCriteria | None], bool]:
    """Each system's headline row, its cards (None without a legal record), and whether the summary shows the table."""
    from lidframe.report.sections.headlines import headline_cells

    heads = headline_cells(report)
    found = [criteria_cards(s) for s in heads]
    return heads, found, sum(c is not None for c in found) > CARDS_AT_MOST


def show(page: Page) -> LegalSection:
    """The section of *page* (whose report has a legal record: :func:`absent` says None): its headline rows' cards.

    Of more than :data:`CARDS_AT_MOST` systems, their compact table instead (:func:`criteria_table`).
    """
    heads, found, compact = _headline_criteria(page.report)
    systems = tuple(c for c in found if c is not None)
    left_out = tuple(s.label for s, c in zip(heads, found) if c is None)
    labels = {s.label for s in heads}
    others = any(s.legal is not None and s.label not in labels for s in page.report.systems)
    if compact:
        return LegalSection((), left_out, others, criteria_table(systems, {s.label: s.name for s in heads}))
    return LegalSection(systems, left_out, others)


@attrs.frozen
class LegalAppendix:
    """What the appendix "Legal criteria in full" shows: the cards the summary does not, the curve's table and figure.

    Attributes
    ----------
    systems : tuple of SystemCriteria
        The cards of every row the summary shows none of: the rows other than the headline
        rows, and these too where the summary shows the compact table (:attr:`headlines`).
    table : Table or None
        Every point of the linkability curves (:func:`linkability_table`).
    figures : tuple of InlineFigure
    headlines : bool
        Whether :attr:`systems` holds the headline rows' cards (the summary shows their compact table).
    """

    systems: tuple[SystemCriteria, ...]
    table: Table | None
    figures: tuple[InlineFigure, ...]
    headlines: bool = False


def show_curve(page: Page) -> LegalAppendix:
    """The appendix of *page* (whose report has a legal record: :func:`absent_curve` says None)."""
    heads, _, compact = _headline_criteria(page.report)
    labels = set() if compact else {s.label for s in heads}
    found = [criteria_cards(s) for s in page.report.systems if s.label not in labels]
    systems = tuple(c for c in found if c is not None)
    return LegalAppendix(systems, linkability_table(page.report), _figures(page.maker), compact)


def absent_curve(report: Report) -> str | None:
    """Why the appendix "Legal criteria in full" does not apply: :func:`absent`'s reason."""
    return absent(report)


def absent(report: Report) -> str | None:
    """Why the section does not apply to *report* (no system has a legal record); None when it does."""
    if any(s.legal is not None for s in report.systems):
        return None
    if report.kind == "dp-audit":
        return (
            "Not applicable: a DP audit keeps each attacker's aggregates, not the ranks and scores that linkability "
            "and singling out are computed from; inference is its LID."
        )
    if report.kind == "grid":
        return (
            "Not computed: the grid ran with [grid] legal = false, or its cells were stored by a lidframe before "
            "0.3.0; rerun lidframe grid with legal on (the default). Inference is the LID above."
        )
    return (
        "Not computed (lidframe evaluate computes singling out and linkability; from Python, report_from_results(..., "
        "legal=...) with lidframe.analyses.legal_criteria). Inference is the LID of the headlines."
    )
