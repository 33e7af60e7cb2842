"""The figures of identification against chance and of membership at low false-positive rates.

- :func:`cmc_figure`, :func:`save_cmc`: the CMC curve (:func:`lidframe.core.cmc.cmc_curve`),
  top-k rate against k with its intervals, beside the chance line k/N.
- :func:`cmc_curves_figure`: the CMC curves of several systems on one axes, each in its
  page style, with the chance line k/N of each N (the report page's figure).
- :func:`membership_roc_figure`, :func:`save_membership_roc`: the ROC of telling enrolled
  voices from outsiders (:func:`lidframe.core.membership.membership_detection`) on a log FPR
  axis, the TPR at each FPR budget marked with its Clopper-Pearson interval, and the
  diagonal of a guessing attacker.

Each ``save_*`` writes its file atomically (format from the suffix).  Matplotlib is imported
only when one is called (``pip install 'lidframe[plot]'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lidframe.data.fileio import StrPath
from lidframe.report.plotting import plain_text, pyplot, save_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from lidframe.core.cmc import CMCCurve
    from lidframe.core.membership import MembershipDetection

__all__ = ["cmc_figure", "save_cmc", "cmc_curves_figure", "membership_roc_figure", "save_membership_roc"]


def _axes(ax: Axes | None) -> tuple[Figure, Axes, bool]:
    """(figure, axes, whether the figure is new) for a 5.6 x 4 inch figure or the given *ax*."""
    if ax is None:
        fig, ax = pyplot().subplots(figsize=(5.6, 4.0), dpi=120)
        return fig, ax, True
    return ax.figure, ax, False  # type: ignore[return-value]


def _draw_cmc(ax: Axes, curve: CMCCurve, *, label: str, style: Mapping[str, Any], band_label: bool) -> None:
    """The top-k rate of *curve* against k on *ax*, in *style*, with its interval band where it has one."""
    k = np.array([p.k for p in curve.points], dtype=np.float64)
    ax.plot(k, [p.top_k_rate for p in curve.points], label=label, **{"marker": "o", "ms": 3, **style})
    if curve.bootstrap is not None and all(p.interval is not None for p in curve.points):
        low = np.array([p.interval.low for p in curve.points if p.interval is not None])
        high = np.array([p.interval.high for p in curve.points if p.interval is not None])
        band = f"{curve.bootstrap.level:.0%} interval ({curve.bootstrap.unit}s)" if band_label else None
        ax.fill_between(k, low, high, color=style.get("color"), alpha=0.2, linewidth=0, label=band)


def _cmc_axes(ax: Axes, log_k: bool) -> None:
    """The axes, grid and legend of a CMC figure (k on a log axis where *log_k*)."""
    if log_k:
        from matplotlib.ticker import StrMethodFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))  # k = 1, 10, 100 rather than powers of ten
    ax.set_xlabel("k (the true speaker among the attacker's top k)")
    ax.set_ylabel("share of trials")
    ax.set_ylim(0.0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")


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
    _draw_cmc(ax, curve, label="top-k rate (attacker)", style={"color": "C0"}, band_label=True)
    ax.plot([p.k for p in curve.points], [p.chance for p in curve.points], color="0.3", ls=":", label="chance k/N")
    _cmc_axes(ax, curve.n_enrolled >= 10)
    first = curve.rank1
    default = f"CMC over T = {curve.n_trials} trials, N = {curve.n_enrolled}"
    if first is not None:
        default += f"\nrank-1 {first.top_k_rate:.1%} (chance {first.chance:.1%}, p = {first.p_chance:.2g})"
    ax.set_title(title or default, fontsize=10)
    if own:
        fig.tight_layout()
    return fig


def cmc_curves_figure(
    curves: Mapping[str, CMCCurve], styles: Mapping[str, Mapping[str, Any]], *, title: str | None = None
) -> Figure:
    """The CMC curves of several systems against k, each in its style with its interval band, and chance k/N.

    The chance line k/N is drawn once per N among the curves, over k = 1..N: grey, dotted
    for one N; where they differ each is labelled with its N, in its own grey and dash.
    k is on a log axis where some N >= 10.

    Parameters
    ----------
    curves : mapping of str to CMCCurve
        label -> its curve (at least one).
    styles : mapping of str to dict
        label -> matplotlib style (colour, marker, line style) of the page.
    title : str, optional
        Default ``"Identification against chance: the CMC curve"``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax, _ = _axes(None)
    fig.set_size_inches(6.4, 4.2)
    for label, curve in curves.items():
        _draw_cmc(ax, curve, label=plain_text(label), style=dict(styles.get(label, {})), band_label=False)
    sizes = sorted({curve.n_enrolled for curve in curves.values()})
    dashes = (":", "--", "-.", (0, (1, 4)), (0, (5, 2, 1, 2, 1, 2)))
    for i, n in enumerate(sizes):
        k = np.unique(np.geomspace(1, n, 64).round())
        name = "chance k/N" if len(sizes) == 1 else f"chance k/N (N = {n:,})"
        grey = f"{0.15 + 0.45 * i / max(len(sizes) - 1, 1):.2f}"
        ax.plot(k, k / n, color=grey, ls=dashes[i % len(dashes)], lw=1.0, label=name)
    _cmc_axes(ax, max(sizes) >= 10)
    ax.set_title(title or "Identification against chance: the CMC curve", fontsize=9)
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
