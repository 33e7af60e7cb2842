"""The page's section "Singling out, linkability, inference": the law's three criteria side by side.

The Article 29 Working Party tests an anonymisation against three criteria: can a person
be singled out, can records be linked, can anything be inferred (docs/legal.md).  Each
system with a :attr:`~lidframe.report.model.ReportSystem.legal` record
(:class:`~lidframe.analyses.legal_criteria.LegalCriteria`) gets three cards
(:func:`criteria_cards`): singling out pi_sing(N), linkability pi_link(N') at N' = 2 and
N, and inference -- ALID and LID q99 of its headline -- each with its chance level, its
interval and one sentence an auditor can quote: the summary shows the cards of each
system's headline row.  The cards of its other rows (a grid's cells), the table of every
linkability point (:func:`linkability_table`) and the curve pi_link(N') against chance
1/N' (:func:`linkability_figure`) are the appendix "Legal criteria in full"
(:func:`show_curve`).  Every number is the JSON's: the cards and the table
carry each full-precision value in ``data-sort``.

A sentence compares a number with its chance level only through its interval: above
chance when the interval lies above it, consistent with chance when it holds it.  A
pi_sing under e^-1 is never read as "below chance": a random predicate calibrated on few
recordings per speaker sits a little under e^-1 (docs/legal.md), and the sentence says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
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
    "CriterionItem",
    "CriterionCard",
    "SystemCriteria",
    "criteria_cards",
    "linkability_table",
    "linkability_figure",
    "LegalSection",
    "LegalAppendix",
    "show",
    "show_curve",
    "absent",
    "absent_curve",
]


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
    """

    key: str
    title: str
    text: str
    interval: str
    sort: str
    chance_text: str
    chance_sort: str

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
    key: str, title: str, value: float, interval: Interval | None, chance: float, fmt: Callable[[Any], str]
) -> CriterionItem:
    return CriterionItem(
        key, title, fmt(value), interval_text(interval, fmt), sort_key(value), fmt(chance), sort_key(chance)
    )


def _interval(low: float, high: float) -> Interval | None:
    return None if is_missing(low) or is_missing(high) else Interval(math.nan, low, high)


def _versus_chance(value: float, interval: Interval | None, chance: float, *, under: str) -> str:
    """How *value* stands against *chance*, judged by its interval: a clause, or ``""`` without an interval."""
    if interval is None:
        return "without an interval, not told apart from chance"
    if interval.low > chance:
        return "above chance (its interval lies above it)"
    if interval.high < chance:
        return under
    return "consistent with chance (its interval holds it)"


def _singling_out_card(single: SinglingOut | None, why: str | None) -> CriterionCard:
    title = "Singling out"
    if single is None:
        return CriterionCard("singling-out", title, (), "", why or "not computed")
    ci = _interval(single.low, single.high)
    items = (_item("pi_sing", f"π_sing (N = {single.n:,})", single.pi_sing, ci, single.chance, percent),)
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
        _item(key, f"π_link (N′ = {p.n_prime:,})", p.pi_link, _interval(p.low, p.high), p.chance, percent)
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
    """What the section shows: the three cards of each system's headline row, who has none, and whether others do.

    Attributes
    ----------
    systems : tuple of SystemCriteria
        The cards of each system's headline row with a legal record
        (:func:`~lidframe.report.sections.headlines.headline_cells`).
    left_out : tuple of str
        The headline rows without a legal record.
    others : bool
        Whether other rows have cards (the appendix "Legal criteria in full" shows them).
    """

    systems: tuple[SystemCriteria, ...]
    left_out: tuple[str, ...]
    others: bool = False


def show(page: Page) -> LegalSection:
    """The section of *page* (whose report has a legal record: :func:`absent` says None): its headline rows' cards."""
    from lidframe.report.sections.headlines import headline_cells

    heads = headline_cells(page.report)
    found = [criteria_cards(s) for s in heads]
    systems = tuple(c for c in found if c is not None)
    left_out = tuple(s.label for s, c in zip(heads, found) if c is None)
    labels = {s.label for s in heads}
    others = any(s.legal is not None and s.label not in labels for s in page.report.systems)
    return LegalSection(systems, left_out, others)


@attrs.frozen
class LegalAppendix:
    """What the appendix "Legal criteria in full" shows: every other row's cards, the curve's table and figure."""

    systems: tuple[SystemCriteria, ...]
    table: Table | None
    figures: tuple[InlineFigure, ...]


def show_curve(page: Page) -> LegalAppendix:
    """The appendix of *page* (whose report has a legal record: :func:`absent_curve` says None)."""
    from lidframe.report.sections.headlines import headline_cells

    labels = {s.label for s in headline_cells(page.report)}
    found = [criteria_cards(s) for s in page.report.systems if s.label not in labels]
    systems = tuple(c for c in found if c is not None)
    return LegalAppendix(systems, linkability_table(page.report), _figures(page.maker))


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
