"""The figures of identification against chance and of membership at low false-positive rates.

- :func:`cmc_figure`, :func:`save_cmc`: the CMC curve (:func:`lidframe.core.cmc.cmc_curve`),
  top-k rate against k with its intervals, beside the chance line k/N.
- :func:`membership_roc_figure`, :func:`save_membership_roc`: the ROC of telling enrolled
  voices from outsiders (:func:`lidframe.core.membership.membership_detection`) on a log FPR
  axis, the TPR at each FPR budget marked with its Clopper-Pearson interval, and the
  diagonal of a guessing attacker.

Each ``save_*`` writes its file atomically (format from the suffix).  Matplotlib is imported
only when one is called (``pip install 'lidframe[plot]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lidframe.data.fileio import StrPath
from lidframe.report.plotting import pyplot, save_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from lidframe.core.cmc import CMCCurve
    from lidframe.core.membership import MembershipDetection

__all__ = ["cmc_figure", "save_cmc", "membership_roc_figure", "save_membership_roc"]


def _axes(ax: Axes | None) -> tuple[Figure, Axes, bool]:
    """(figure, axes, whether the figure is new) for a 5.6 x 4 inch figure or the given *ax*."""
    if ax is None:
        fig, ax = pyplot().subplots(figsize=(5.6, 4.0), dpi=120)
        return fig, ax, True
    return ax.figure, ax, False  # type: ignore[return-value]


def cmc_figure(curve: CMCCurve, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """The CMC curve: top-k rate against k (log axis from 10 speakers), its intervals, and chance k/N.

    Parameters
    ----------
    curve : CMCCurve
        :func:`lidframe.core.cmc.cmc_curve` or :func:`~lidframe.core.cmc.result_cmc`.
    ax : matplotlib Axes, optional
        Draw into it; by default a new figure.
    title : str, optional
        Default names T, N and the rank-1 rate against its chance level.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax, own = _axes(ax)
    k = np.array([p.k for p in curve.points], dtype=np.float64)
    rate = np.array([p.top_k_rate for p in curve.points])
    ax.plot(k, rate, marker="o", ms=3, color="C0", label="top-k rate (attacker)")
    if curve.bootstrap is not None and all(p.interval is not None for p in curve.points):
        low = np.array([p.interval.low for p in curve.points if p.interval is not None])
        high = np.array([p.interval.high for p in curve.points if p.interval is not None])
        ax.fill_between(
            k, low, high, color="C0", alpha=0.2, label=f"{curve.bootstrap.level:.0%} interval ({curve.bootstrap.unit}s)"
        )
    ax.plot(k, [p.chance for p in curve.points], color="0.3", ls=":", label="chance k/N")
    if curve.n_enrolled >= 10:
        ax.set_xscale("log")
    ax.set_xlabel("k (the true speaker among the attacker's top k)")
    ax.set_ylabel("share of trials")
    ax.set_ylim(0.0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    first = curve.rank1
    default = f"CMC over T = {curve.n_trials} trials, N = {curve.n_enrolled}"
    if first is not None:
        default += f"\nrank-1 {first.top_k_rate:.1%} (chance {first.chance:.1%}, p = {first.p_chance:.2g})"
    ax.set_title(title or default, fontsize=10)
    if own:
        fig.tight_layout()
    return fig


def save_cmc(curve: CMCCurve, path: StrPath, *, title: str | None = None) -> None:
    """:func:`cmc_figure` saved to *path* (svg, png, pdf, ...) atomically."""
    save_figure(cmc_figure(curve, title=title), path)


def membership_roc_figure(
    detection: MembershipDetection, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """The membership attack's ROC on a log FPR axis, its TPR at each FPR budget marked, and guessing's diagonal.

    The FPR axis starts at half the smallest non-zero FPR the sample can show (1/#outsiders),
    or half the smallest budget if lower; the ROC's point at FPR 0 is drawn there.  Each budget is a dotted vertical line, the
    TPR at it a dot with its Clopper-Pearson interval (hollow where the sample cannot
    resolve the budget: too few outsider trials).

    Parameters
    ----------
    detection : MembershipDetection
        :func:`lidframe.core.membership.membership_detection`, or a summary's
        ``open_set.membership_detection``.
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax, own = _axes(ax)
    budgets = [p.max_fpr for p in detection.points if p.max_fpr > 0]
    floor = min([0.5 / max(detection.n_outsiders, 1)] + [0.5 * b for b in budgets])
    fpr = np.maximum(np.asarray(detection.roc_fpr, dtype=np.float64), floor)
    ax.step(fpr, detection.roc_tpr, where="post", color="C1", label="attacker (enrolled or not)")
    guess = np.geomspace(floor, 1.0, 50)
    ax.plot(guess, guess, color="0.3", ls=":", label="guessing (TPR = FPR)")
    for i, point in enumerate(detection.points):
        x = max(point.fpr.estimate, floor)
        ax.axvline(point.max_fpr, color="0.6", lw=0.8, ls="--")
        ax.errorbar(
            [x],
            [point.tpr.estimate],
            yerr=[[point.tpr.estimate - point.tpr.low], [point.tpr.high - point.tpr.estimate]],
            fmt="o",
            color=f"C{i + 2}",
            mfc=f"C{i + 2}" if point.resolved else "white",
            capsize=3,
            clip_on=False,
            label=f"TPR at FPR ≤ {point.max_fpr:g}: {point.tpr.estimate:.1%}"
            + ("" if point.resolved else " (unresolved)"),
        )
    ax.set_xscale("log")
    ax.set_xlim(floor, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("false-positive rate (outsiders flagged as enrolled)")
    ax.set_ylabel("true-positive rate (enrolled flagged)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    default = f"Membership: {detection.n_members} enrolled, {detection.n_outsiders} outsider trials"
    ax.set_title(title or default, fontsize=10)
    if own:
        fig.tight_layout()
    return fig


def save_membership_roc(detection: MembershipDetection, path: StrPath, *, title: str | None = None) -> None:
    """:func:`membership_roc_figure` saved to *path* (svg, png, pdf, ...) atomically."""
    save_figure(membership_roc_figure(detection, title=title), path)
