"""The page's section "Identification against chance": each system's rank-1 and CMC curve beside chance k/N.

A rank-1 rate of 10 % means nothing until it is set beside what an attacker without
information about the voice reaches: 1/N, and k/N for the top-k rate (docs/metrics.md,
"Chance beside every identification number").  Its record is each system's CMC curve
(:attr:`~lidframe.report.model.ReportSystem.cmc`, :func:`page_cmc` of a Result: the
ranks every evaluation holds, under the Result's own bootstrap): the table
(:func:`identification_table`: one row per system and k of :data:`TABLE_KS`, the top-k
rate with its interval, its hits of T trials, chance k/N and the binomial tail p of an
attacker at chance) and the figure of every curve with its chance line
(:func:`~lidframe.report.identification_figures.cmc_curves_figure`).

The words of chance on the page's tables are here, once, from the metric catalogue
(:mod:`lidframe.metrics.catalogue`: ``chance``, ``p_chance``, ``top_k_rate``):
:func:`chance_column` is the column of a chance level, and :func:`rank1_chance_cell` the
1/N beside a rank-1 rate, which the comparison table and the per-speaker table show too.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lidframe.core.cmc import result_cmc
from lidframe.metrics import catalogue
from lidframe.metrics.identification import cmc_ks
from lidframe.report.identification_figures import cmc_curves_figure
from lidframe.report.tables import NOT_COMPUTED, Cell, Column, Table, count, is_missing, number_cell, percent, text_cell

if TYPE_CHECKING:
    from lidframe.core.cmc import CMCCurve
    from lidframe.core.result import Result
    from lidframe.report.figures import FigureMaker, InlineFigure
    from lidframe.report.model import Report
    from lidframe.report.sections import Page

__all__ = [
    "TABLE_KS",
    "chance_column",
    "rank1_chance_cell",
    "p_value_text",
    "page_cmc",
    "identification_table",
    "identification_figures",
    "IdentificationSection",
    "show",
    "absent",
]

#: The k of each system's rows in the table (those below its N; k = 1 always): rank-1, top-5, top-10.
TABLE_KS = (1, 5, 10)

_CHANCE = catalogue.metric("chance")
_P_CHANCE = catalogue.metric("p_chance")
_TOP_K = catalogue.metric("top_k_rate")


def chance_column(level: str) -> Column:
    """The column of a chance level: titled ``chance <level>`` (``"1/N"``, ``"k/N"``), its tooltip the catalogue's."""
    return Column(f"{_CHANCE.label} {level}", True, _CHANCE.description, key=_CHANCE.key)


def rank1_chance_cell(rank1_rate: Any, n_enrolled: Any) -> Cell:
    """The cell of 1/N beside a rank-1 rate; not computed where the rate is not (an outsider's row, a DP audit)."""
    missing = is_missing(rank1_rate) or is_missing(n_enrolled) or float(n_enrolled) < 1
    return number_cell(math.nan if missing else 1.0 / float(n_enrolled), percent)


def p_value_text(value: Any) -> str:
    """A p-value with two significant digits (``'0.0045'``, ``'3.1e-12'``), or :data:`NOT_COMPUTED`."""
    return NOT_COMPUTED if is_missing(value) else f"{float(value):.2g}"


def page_cmc(result: Result) -> CMCCurve | None:
    """The CMC curve of *result* the page shows: the default k grid and :data:`TABLE_KS`, under its bootstrap.

    Parameters
    ----------
    result : Result
        An evaluation; its enrolled trials' ranks (:func:`lidframe.core.cmc.result_cmc`).

    Returns
    -------
    CMCCurve or None
        With intervals from the same bootstrap settings as the headline's
        (``result.summary.bootstrap``), none without them; None when no trial's speaker
        is enrolled (nothing to rank).
    """
    n_enrolled = int(np.asarray(result.enrolled).size)
    if bool(np.all(result.is_outsider)) or n_enrolled < 1:
        return None
    ks = np.union1d(cmc_ks(n_enrolled, None), [k for k in TABLE_KS if k <= n_enrolled])
    return result_cmc(result, ks=ks, bootstrap=result.summary.bootstrap)


def _curves(report: Report) -> dict[str, CMCCurve]:
    """label -> CMC curve of each system that has one, in page order."""
    return {s.label: s.cmc for s in report.systems if s.cmc is not None}


def identification_table(report: Report) -> Table | None:
    """One row per (system, k of :data:`TABLE_KS` below its N, and k = 1): top-k, hits, T, chance k/N, p.

    None when no system has a CMC curve.
    """
    curves = _curves(report)
    if not curves:
        return None
    columns = (
        Column("system", False),
        Column("N", True, catalogue.metric("n_enrolled").description, key="n_enrolled"),
        Column("k", True, "the true speaker among the attacker's k best-scored enrolled speakers"),
        Column(_TOP_K.label, True, _TOP_K.description, key=_TOP_K.key),
        Column("hits", True, "trials whose true speaker is among the top k"),
        Column("trials", True, "enrolled trials ranked (T)", key="n_enrolled_trials"),
        chance_column("k/N"),
        Column(_P_CHANCE.label, True, _P_CHANCE.description, key=_P_CHANCE.key),
    )
    rows = []
    for label, curve in curves.items():
        for p in curve.points:
            if p.k not in TABLE_KS or (p.k > 1 and p.k >= curve.n_enrolled):
                continue
            rows.append(
                (
                    text_cell(label),
                    number_cell(curve.n_enrolled, count),
                    number_cell(p.k, count),
                    number_cell(p.top_k_rate, percent, p.interval),
                    number_cell(p.hits, count),
                    number_cell(curve.n_trials, count),
                    number_cell(p.chance, percent),
                    number_cell(p.p_chance, p_value_text),
                )
            )
    caption = (
        "Identification against chance: the top-k rate (k = 1: rank-1) beside chance k/N, and how often an attacker "
        "at chance would do as well (p)"
    )
    return Table("identification-table", caption, columns, tuple(rows))


def identification_figures(maker: FigureMaker) -> tuple[InlineFigure, ...]:
    """The CMC curves of every system with one, and their chance lines, as one figure; none without a curve."""
    curves = _curves(maker.report)
    if not curves:
        return ()
    fig = cmc_curves_figure(curves, {label: maker.styles[label] for label in curves})
    caption = (
        f"The CMC curve of each system: its {_TOP_K.label} rate, the {_TOP_K.description}, against k "
        f"(shaded: its interval, where computed); dotted: chance k/N, {_CHANCE.description}. At k = 1 it is the "
        "rank-1 rate, at k = N 100 %."
    )
    return (maker.inline(fig, caption),)


@attrs.frozen
class IdentificationSection:
    """What the section shows: the table, the CMC figure, and the systems without a curve."""

    table: Table
    figures: tuple[InlineFigure, ...]
    left_out: tuple[str, ...]
    explain: str


def _explain() -> str:
    """The section's opening paragraph, in the catalogue's words of chance and p."""
    return (
        f"Every identification number stands beside its chance level, {_CHANCE.description}: an attacker whose "
        "scores carry nothing about the voice puts the true speaker at each of the N places alike. "
        f"{_P_CHANCE.label} is {_P_CHANCE.description}, over the T trials (exact for such an attacker, whose trials "
        "are independent). Ties count for the attacker, as rank-1 counts them; intervals in brackets are the run's "
        "bootstrap."
    )


def show(page: Page) -> IdentificationSection:
    """The section of *page* (some system has a CMC curve: :func:`absent` says None)."""
    report = page.report
    table = identification_table(report)
    assert table is not None
    left_out = tuple(s.label for s in report.systems if s.cmc is None)
    return IdentificationSection(table, identification_figures(page.maker), left_out, _explain())


def absent(report: Report) -> str | None:
    """Why the section does not apply to *report* (no system has a CMC curve); None when it does."""
    if any(s.cmc is not None for s in report.systems):
        return None
    if report.kind == "dp-audit":
        return (
            "Not applicable: a DP audit keeps each attacker's aggregates, not the ranks of the true speakers that a "
            "CMC curve counts."
        )
    if report.kind == "grid":
        return (
            "Not computed: a grid cell's per-trial file keeps LID, not the ranks of the true speakers that a CMC curve "
            "counts. The comparison table gives each cell's rank-1 beside its chance 1/N; lidframe evaluate on a "
            "cell's dev and eval sets draws its CMC curve."
        )
    return (
        "Not computed: no system here has the ranks of its true speakers (report_from_results computes the CMC curve "
        "of every Result with an enrolled trial)."
    )
