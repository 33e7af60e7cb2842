"""The page's section "Open set": each open-set system's groups of trials, its misattribution, its figure.

Its records are :mod:`lidframe.report.sections.open_set_model`'s (a system's
:attr:`~lidframe.report.model.ReportSystem.open_set` and ``open_trials``): the tables
(:func:`open_set_table`, :func:`misattribution_table`, :func:`membership_table`), the
figure of each system (:func:`open_set_figure`, drawn on the page by
:func:`open_set_figures`), the ROC of its membership attack on a log FPR axis
(:func:`membership_figures`, drawn by
:func:`lidframe.report.identification_figures.membership_roc_figure`), and why the
section does not apply to a page without an open-set system (:func:`absent`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError
from lidframe.metrics import catalogue
from lidframe.report.identification_figures import membership_roc_figure
from lidframe.report.lid_figures import draw_lid_ccdf
from lidframe.report.plotting import SYSTEM_COLOURS, plain_text, pyplot, set_title, vertical_references
from lidframe.report.tables import (
    NOT_COMPUTED,
    Cell,
    Column,
    Table,
    count,
    is_missing,
    number_cell,
    page_format,
    percent,
    sort_key,
    text_cell,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lidframe.core.membership import MembershipDetection
    from lidframe.report.figures import FigureMaker, InlineFigure
    from lidframe.report.model import Report, ReportSystem
    from lidframe.report.sections import Page

__all__ = [
    "OPEN_SET_GROUP_COLUMNS",
    "open_set_table",
    "misattribution_table",
    "membership_table",
    "membership_figures",
    "open_set_figure",
    "open_set_figures",
    "OpenSetSection",
    "show",
    "absent",
]


#: (attribute of :class:`~lidframe.report.sections.open_set_model.LIDGroup`, title, formatter, tooltip) of the open-set table.
OPEN_SET_GROUP_COLUMNS: tuple[tuple[str, str, Callable[[Any], str], str], ...] = tuple(
    (key, catalogue.metric(key).label, page_format(catalogue.metric(key)), tip)
    for key, tip in (
        ("n_trials", "trials in the group"),
        ("alid", "average LID of the group (bits)"),
        ("pdr", "share of the group's trials with LID > 0"),
        ("lid_pos", "mean LID of the group's trials with LID > 0 (bits)"),
        ("lid_neg", "mean LID of the group's trials with LID ≤ 0 (bits)"),
        ("lid_max", "largest LID of the group (bits)"),
    )
)


def _open_systems(report: Report) -> list[ReportSystem]:
    return [s for s in report.systems if s.open_set is not None]


def open_set_table(report: Report) -> Table | None:
    """One row per (open-set system, group of trials): trials, ALID, PDR, LID+, LID−, LIDmax.

    The groups are all trials, the enrolled trials (identification disclosure), the
    outsider trials (membership disclosure) and the membership disclosure of the enrolled
    trials (:class:`~lidframe.report.sections.open_set_model.OpenSetHeadline`); ALID with its interval where
    computed.  None when no system of *report* is open-set.
    """
    systems = _open_systems(report)
    if not systems:
        return None
    columns = [Column("system", False), Column("group", False)]
    columns += [Column(title, True, tip, key=key) for key, title, _, tip in OPEN_SET_GROUP_COLUMNS]
    rows = []
    for s in systems:
        assert s.open_set is not None
        for group in s.open_set.groups:
            cells = [text_cell(s.label), text_cell(group.name)]
            cells += [
                number_cell(getattr(group, key), fmt, group.interval if key == "alid" else None)
                for key, _, fmt, _ in OPEN_SET_GROUP_COLUMNS
            ]
            rows.append(tuple(cells))
    caption = "Open set: disclosure per group of trials (an outsider trial's LID is its membership disclosure)"
    return Table("open-set-table", caption, tuple(columns), tuple(rows))


def _probability(value: Any) -> str:
    return NOT_COMPUTED if is_missing(value) else f"{float(value):.3g}"


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
        Column("outsider trials", True, catalogue.metric("n_outsider_trials").description, key="n_outsider_trials"),
        Column(
            "misattributed > 0.5",
            True,
            catalogue.metric("misattribution_rate").description,
            key="misattribution_rate",
        ),
        Column("threshold", True, "the chosen posterior threshold"),
        Column(
            "misattributed > threshold",
            True,
            "share of outsider trials whose top posterior exceeds it",
            key="misattribution_rate_at_threshold",
        ),
    )
    rows = []
    for s in systems:
        o = s.open_set
        assert o is not None
        source = "auto (dev share of outsider trials)" if o.outside_source == "auto" else o.outside_source
        rows.append(
            (
                text_cell(s.label),
                number_cell(o.outside, _probability),
                text_cell(source),
                number_cell(o.n_outsider_trials, count),
                number_cell(o.misattribution_rate, percent, o.intervals.get("misattribution_rate")),
                number_cell(o.misattribution_threshold, _probability),
                number_cell(
                    o.misattribution_rate_at_threshold, percent, o.intervals.get("misattribution_rate_at_threshold")
                ),
            )
        )
    caption = "Open set: the prior mass of 'nobody enrolled' and the outsider trials linked to an enrolled speaker"
    return Table("misattribution-table", caption, columns, tuple(rows))


def _flagged(flagged: int, of: int) -> Cell:
    """``'12 of 160'``, sorted by the count flagged."""
    return Cell(f"{flagged:,} of {of:,}", sort_key(flagged))


def membership_table(report: Report) -> tuple[Table | None, tuple[str, ...]]:
    """One row per (open-set system with outsider trials, FPR budget): the membership attack's TPR and FPR there.

    Each row: the budget, the TPR with its Clopper-Pearson interval and the enrolled
    trials flagged, the FPR reached with its interval and the outsider trials flagged,
    the threshold as the membership posterior p(enrolled | s), and whether the sample
    resolves the budget (:class:`~lidframe.core.membership.MembershipPoint`).

    Returns
    -------
    table : Table or None
        None when no open-set system has a membership record.
    left_out : tuple of str
        The open-set systems without one (no outsider trial, or a summary written before it).
    """
    systems = _open_systems(report)
    found = [
        (s, s.open_set.membership) for s in systems if s.open_set is not None and s.open_set.membership is not None
    ]
    left_out = tuple(s.label for s in systems if s.open_set is not None and s.open_set.membership is None)
    if not found:
        return None, left_out
    budget, tpr, fpr = (catalogue.metric(k) for k in ("max_fpr", "membership_tpr", "membership_fpr"))
    columns = (
        Column("system", False),
        Column(budget.label, True, budget.description, key=budget.key),
        Column(tpr.label, True, tpr.description, key=tpr.key),
        Column("enrolled flagged", True, "enrolled trials flagged as enrolled, of the enrolled trials"),
        Column(fpr.label, True, fpr.description, key=fpr.key),
        Column("outsiders flagged", True, "outsider trials flagged as enrolled, of the outsider trials"),
        Column("threshold", True, "flag a trial when its membership posterior p(enrolled | s) reaches this"),
        Column("resolved", False, "whether the outsider trials can show an FPR within the budget above 0"),
    )
    rows = []
    for s, detection in found:
        for p in detection.points:
            resolved = "yes" if p.resolved else f"no: under 1/budget = {1 / p.max_fpr:,.0f} outsider trials"
            rows.append(
                (
                    text_cell(s.label),
                    number_cell(p.max_fpr, _budget),
                    number_cell(p.tpr.estimate, percent, p.tpr),
                    _flagged(p.true_positives, detection.n_members),
                    number_cell(p.fpr.estimate, percent, p.fpr),
                    _flagged(p.false_positives, detection.n_outsiders),
                    number_cell(p.threshold_posterior, _probability),
                    text_cell(resolved),
                )
            )
    caption = (
        "Open set: membership at low false-positive rates, the share of enrolled trials flagged as enrolled by the "
        "membership posterior at each FPR budget, with Clopper-Pearson intervals (trials taken as independent"
        f"{_membership_covers([d for _, d in found])}); a guessing attacker's TPR equals its FPR"
    )
    return Table("membership-table", caption, columns, tuple(rows)), left_out


def _membership_covers(detections: list[MembershipDetection]) -> str:
    """What the membership intervals of *detections* cover as to the calibrator, for a caption: ``", ..."``."""
    refitted = {d.resample == "dev+eval" for d in detections}
    if refitted == {True}:
        return ", their tails averaged over the calibrator refitted on each resample of the dev speakers"
    if refitted == {False}:
        return ", the calibrator held fixed"
    return ", averaged over the calibrator refitted on resampled dev speakers where the system's intervals were"


def _prior(cell: ReportSystem) -> str:
    """The prior of *cell*'s open-set numbers: that of the evaluation beside its closed-set one, or its own."""
    beside = None if cell.open_set is None else cell.open_set.beside
    return cell.prior if beside is None else beside


def _budget(value: Any) -> str:
    """An FPR budget as a percentage with as many decimals as it needs (``'1 %'``, ``'0.1 %'``)."""
    return NOT_COMPUTED if is_missing(value) else f"{100.0 * float(value):g} %"


def membership_figures(maker: FigureMaker) -> list[InlineFigure]:
    """The membership ROC of each system name's first open-set cell with a membership record."""
    out = []
    for name in maker.report.system_names():
        cell = next(
            (
                s
                for s in maker.report.systems
                if s.name == name and s.open_set is not None and s.open_set.membership is not None
            ),
            None,
        )
        if cell is None or cell.open_set is None or cell.open_set.membership is None:
            continue
        detection = cell.open_set.membership
        fig = membership_roc_figure(
            detection,
            title=f"{plain_text(cell.label)}: membership, {detection.n_members:,} enrolled and "
            f"{detection.n_outsiders:,} outsider trials",
        )
        budgets = " and ".join(_budget(p.max_fpr) for p in detection.points)
        caption = (
            f"Membership attack of {cell.label} (calibrator {cell.calibrator}, prior {_prior(cell)}): the ROC of "
            "flagging trials as enrolled by their membership posterior, on a log FPR axis, its TPR at FPR "
            f"{budgets} marked with its {detection.level:.0%} Clopper-Pearson interval"
            f"{_membership_covers([detection])} (hollow: the outsider trials "
            "cannot resolve the budget), and guessing's diagonal TPR = FPR (dotted)."
        )
        out.append(maker.inline(fig, caption))
    return out


def open_set_figure(
    lid: ArrayLike,
    outsider: ArrayLike,
    top_posterior: ArrayLike | None,
    *,
    threshold: float,
    title: str,
    log2_n: float | None = None,
    color: str = SYSTEM_COLOURS[0],
) -> Figure:
    """The open set of one system: LID CCDF of enrolled and outsider trials, and the outsiders' top posterior.

    Left: P(LID > x) of the enrolled trials (identification disclosure, solid) and of the
    outsider trials (membership disclosure, dashed), with the 0 bit, 1 bit and log2 N
    lines.  Right: the histogram of the outsider trials' top enrolled posterior
    max_j p(j | s) on [0, 1], with lines at 0.5 (above it an outsider is linked to an
    enrolled speaker more likely than not: misattributed) and at *threshold*.

    Parameters
    ----------
    lid : array_like, shape (T,)
        LID of every trial (bits, no NaN: the open set gives each trial one).
    outsider : array_like of bool, shape (T,)
        The outsider trials.
    top_posterior : array_like, shape (T,), or None
        max_j p(j | s) per trial; None: the right panel says it was not kept.
    threshold : float
        The chosen misattribution threshold (in [0.5, 1)).
    title : str
    log2_n : float, optional
        Draw and label the log2 N line on the left.
    color : str
        The system's colour.

    Returns
    -------
    matplotlib.figure.Figure
    """
    values = np.asarray(lid, dtype=np.float64).ravel()
    flags = np.asarray(outsider, dtype=bool).ravel()
    if values.size == 0 or np.isnan(values).any() or flags.shape != values.shape:
        raise InputError("the open-set figure needs every trial's LID (no NaN) and an outsider flag per trial")
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 4.0), dpi=120)
    curves = {"enrolled trials": values[~flags], "outsider trials": values[flags]}
    curves = {label: lid_values for label, lid_values in curves.items() if lid_values.size}
    styles = {
        "enrolled trials": {"color": color, "marker": "o", "linestyle": "-"},
        "outsider trials": {"color": "0.35", "marker": "s", "linestyle": "--"},
    }
    draw_lid_ccdf(
        left, curves, styles=styles, log2_n=log2_n, title="LID: identification (enrolled), membership (outsider)"
    )
    right.set_xlim(0.0, 1.0)
    top = None if top_posterior is None else np.asarray(top_posterior, dtype=np.float64).ravel()[flags]
    if top is None or top.size == 0:
        why = "no outsider trial" if not flags.any() else "top posteriors not kept"
        right.text(0.5, 0.5, why, transform=right.transAxes, ha="center", color="0.4")
    else:
        right.hist(top, bins=np.linspace(0.0, 1.0, 21), color="0.55", alpha=0.9, edgecolor="white", linewidth=0.4)
        from matplotlib.ticker import MaxNLocator

        right.yaxis.set_major_locator(MaxNLocator(integer=True))
    rows = vertical_references(right, [(0.5, "0.5", "--"), (float(threshold), f"threshold {threshold:g}", ":")])
    right.set_xlabel("top enrolled posterior max_j p(j | s) of an outsider trial")
    right.set_ylabel("outsider trials")
    right.grid(alpha=0.3, axis="y")
    set_title(right, "Misattribution: outsiders above a line", rows)
    fig.suptitle(plain_text(title), fontsize=10)
    fig.tight_layout()
    return fig


def open_set_figures(maker: FigureMaker) -> list[InlineFigure]:
    """The open-set figure (:func:`open_set_figure`) of each system.

    One per system name: its first cell with an open-set prior and the per-trial arrays
    to draw (in a grid, as for the histogram of
    :func:`lidframe.report.sections.systems.system_figures`).
    """
    out = []
    for name in maker.report.system_names():
        cell = next(
            (
                s
                for s in maker.report.systems
                if s.name == name
                and s.open_set is not None
                and s.open_trials is not None
                and s.open_trials.lid_bits(s.lid_bits) is not None
            ),
            None,
        )
        if cell is None:
            continue
        assert cell.open_set is not None and cell.open_trials is not None
        lid = cell.open_trials.lid_bits(cell.lid_bits)
        assert lid is not None
        threshold = cell.open_set.misattribution_threshold
        fig = open_set_figure(
            lid,
            cell.open_trials.outsider,
            cell.open_trials.top_posterior,
            threshold=threshold,
            title=f"{cell.label}: open set (π_∅ = {cell.open_set.outside:.3g}, prior {_prior(cell)})",
            log2_n=cell.headline.log2_n,
            color=maker.styles[cell.label]["color"],
        )
        n_outsider = int(cell.open_trials.outsider.sum())
        caption = (
            f"Open set of {cell.label} (calibrator {cell.calibrator}, prior {_prior(cell)}): left, the share of "
            f"the {lid.size - n_outsider} enrolled and the {n_outsider} outsider trials whose LID "
            "exceeds x; right, the outsider trials' top enrolled posterior, with lines at 0.5 and at the "
            f"threshold {threshold:g}."
        )
        out.append(maker.inline(fig, caption))
    return out


@attrs.frozen
class OpenSetSection:
    """What the section shows: its tables, each system's figures, and whether a π_∅ was estimated (auto).

    ``membership`` is the membership table (None when no system has outsider trials),
    ``membership_left_out`` the open-set systems without it; ``beside`` the priors of the
    open-set evaluations made beside closed-set headlines, and ``own`` whether a system's
    own evaluation is open-set (its headline then over every trial).
    """

    table: Table
    misattribution: Table
    figures: tuple[InlineFigure, ...]
    auto: bool
    membership: Table | None = None
    membership_left_out: tuple[str, ...] = ()
    beside: tuple[str, ...] = ()
    own: bool = True


def show(page: Page) -> OpenSetSection:
    """The section of *page* (which has an open-set system: :func:`absent` says None)."""
    report = page.report
    table, misattribution = open_set_table(report), misattribution_table(report)
    assert table is not None and misattribution is not None
    auto = any(s.open_set is not None and s.open_set.outside_source == "auto" for s in report.systems)
    membership, left_out = membership_table(report)
    figures = (*open_set_figures(page.maker), *membership_figures(page.maker))
    opened = [s.open_set for s in report.systems if s.open_set is not None]
    beside = tuple(dict.fromkeys(o.beside for o in opened if o.beside is not None))
    own = any(o.beside is None for o in opened)
    return OpenSetSection(table, misattribution, figures, auto, membership, left_out, beside, own)


def absent(report: Report) -> str | None:
    """Why the section does not apply to *report* (no system evaluated in the open set); None when it does."""
    if any(s.open_set is not None for s in report.systems):
        return None
    if report.kind == "dp-audit":
        return (
            "Not applicable: a DP audit's trials are all of enrolled speakers (the closed set), and its "
            "attackers weigh no 'nobody enrolled'."
        )
    return (
        "Not evaluated: every system here was evaluated in the closed set (a prior without outside), so "
        "every trial's speaker is taken to be enrolled and outsider trials are left out. A prior such as "
        "'uniform?outside=0.2' (--prior) adds the open set: the outsiders' membership disclosure and "
        "misattribution."
    )
