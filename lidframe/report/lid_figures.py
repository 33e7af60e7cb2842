"""The LID figures: CCDF, histogram and EER against LID, alone or as small multiples.

Each ``*_figure`` function returns a matplotlib Figure (save it with
:func:`lidframe.report.plotting.save_figure`, or inline it with
:func:`lidframe.report.plotting.figure_svg`); each ``draw_*`` draws into a given Axes.
Styles come from :func:`lidframe.report.plotting.curve_styles`: a system keeps its
colour and marker, its variants (calibrators) differ by line style.

- :func:`draw_lid_ccdf`, :func:`lid_ccdf_figure`, :func:`save_lid_ccdf`,
  :func:`lid_ccdf_panels_figure`: P(LID > x) per curve (log-scale y), with labelled
  lines at 0 bit, 1 bit and log2 N, over the x range :func:`lid_x_range` fits to the
  data, the legend outside the axes.
- :func:`lid_histogram_figure`: LID per trial, with its 99th percentile.
- :func:`draw_eer_alid`, :func:`eer_alid_figure`, :func:`eer_alid_panels_figure`: each
  system's ALID and LIDmax against its EER.

The figures only one section of the page draws are that section's own: the open set's
(:func:`lidframe.report.sections.open_set.open_set_figure`), the privacy-utility chart
(:func:`lidframe.report.sections.utility_chart.privacy_utility_figure`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.fileio import StrPath
from lidframe.errors import InputError
from lidframe.report.plotting import (
    SYSTEM_COLOURS,
    curve_styles,
    horizontal_references,
    legend_below,
    panels_figure,
    plain_text,
    pyplot,
    save_figure,
    set_title,
    vertical_references,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "lid_x_range",
    "draw_lid_ccdf",
    "lid_ccdf_figure",
    "save_lid_ccdf",
    "lid_ccdf_panels_figure",
    "lid_histogram_figure",
    "draw_eer_alid",
    "eer_alid_figure",
    "eer_alid_panels_figure",
]


#: The x range of a LID CCDF (:func:`lid_x_range`): the margin beyond the data, as a share of its span
#: and at least a number of bits, and the room either side of a curve of one value (bits).
_X_MARGIN_SHARE, _X_MARGIN_MIN, _FLAT_ROOM = 0.05, 0.05, 0.5


def lid_x_range(curves: Iterable[ArrayLike]) -> tuple[float, float]:
    """The x range (bits) of a LID CCDF that draws *curves*: fitted to the data, 0 always in it.

    The rule: from min(0, the smallest LID) to max(0, the largest LID) over every curve
    drawn -- widened to v - 0.5 and v + 0.5 bit around the value v of a curve whose trials
    all have one LID, so that its drop shows -- then 5 % of that span (at least 0.05 bit)
    more on each side.  Nothing else widens it: log2 N is marked where it falls inside
    (otherwise the axis label says that it lies to the right), and no value is cut off.

    Parameters
    ----------
    curves : iterable of array_like
        The LID values (bits) of each curve; NaN and infinite values are left out.

    Returns
    -------
    (float, float)
        The axis' (low, high) limits, bits.
    """
    low = high = 0.0
    for curve in curves:
        values = np.asarray(curve, dtype=np.float64).ravel()
        values = values[np.isfinite(values)]
        if values.size == 0:
            continue
        smallest, largest = float(values.min()), float(values.max())
        if smallest == largest:  # one value: its drop needs room on both sides
            smallest, largest = smallest - _FLAT_ROOM, largest + _FLAT_ROOM
        low, high = min(low, smallest), max(high, largest)
    margin = max(_X_MARGIN_SHARE * (high - low), _X_MARGIN_MIN)
    return low - margin, high + margin


def _lid_references(log2_n: float | None, guides: bool) -> list[tuple[float, str, Any]]:
    lines: list[tuple[float, str, Any]] = []
    if guides:
        lines += [(0.0, "0 bit", "-"), (1.0, "1 bit", "--")]
    if log2_n is not None:
        lines.append((log2_n, f"log2 N = {log2_n:.2f}", ":"))
    return lines


def draw_lid_ccdf(
    ax: Axes,
    lids: Mapping[str, ArrayLike],
    *,
    styles: Mapping[str, Mapping[str, Any]] | None = None,
    log2_n: float | None = None,
    guides: bool = True,
    legend: bool = True,
    title: str | None = None,
) -> None:
    """Draw P(LID > x) per curve into *ax* (log-scale y), with labelled reference lines.

    Parameters
    ----------
    ax : matplotlib Axes
    lids : mapping of str to array_like
        label -> 1-D array of LID values (bits, no NaN), one step curve each.
    styles : mapping, optional
        label -> style (:func:`curve_styles`); by default one group per label.
    log2_n : float, optional
        Draw and label the log2 N ceiling.
    guides : bool
        Draw and label the 0 bit and 1 bit lines.
    legend : bool
        Add a legend of the curves beside the axes, right of them (outside: it covers no
        curve; ``tight_layout`` makes room for it).
    title : str, optional
        Set above the reference labels.

    Notes
    -----
    The x range is :func:`lid_x_range`'s of *lids*.
    """
    chosen = styles or curve_styles(list(lids))
    flat = _ccdf_curves(ax, lids, chosen)
    _ccdf_finish(ax, log2_n=log2_n, guides=guides, title=title, x_range=lid_x_range(lids.values()))
    _draw_flat_curves(ax, flat, chosen)
    if legend and lids:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


def _ccdf_curves(
    ax: Axes, lids: Mapping[str, ArrayLike], styles: Mapping[str, Mapping[str, Any]]
) -> list[tuple[str, float]]:
    """The step curves P(LID > x) of :func:`draw_lid_ccdf`, without axes decoration.

    Returns
    -------
    list of (str, float)
        (label, value) of each *flat* curve: every trial of it has the same LID, so its
        share is 1 below that value and 0 from it on -- nothing a log-scale step can show.
        Only its legend entry is drawn here; :func:`_draw_flat_curves` draws the curve once
        the axes' limits are final.
    """
    flat: list[tuple[str, float]] = []
    for label, lid in lids.items():
        x = np.sort(np.asarray(lid, dtype=np.float64).ravel())
        values = np.unique(x)
        if values.size == 0:
            continue
        if values.size == 1:  # every trial discloses the same: share 1 below it, 0 from it on
            flat.append((label, float(values[0])))
            ax.plot([], [], label=plain_text(label), lw=1.4, ms=4, **styles[label])  # its legend entry
            continue
        # from each distinct value to the next, the share of trials strictly above it (ties
        # counted once); the last step runs on to the largest LID, where the share drops to 0
        above = 1.0 - np.searchsorted(x, values, side="right") / x.size
        steps_x, steps_y = values, np.r_[above[:-1], above[-2]]
        ax.step(steps_x, steps_y, where="post", label=plain_text(label), lw=1.4, markevery=0.12, ms=4, **styles[label])
    ax.set_yscale("log")
    return flat


#: The lowest share a CCDF panel shows when it holds only flat curves (log scale: 0 itself is not on it).
_FLAT_FLOOR = 1e-2


def _draw_flat_curves(ax: Axes, flat: Sequence[tuple[str, float]], styles: Mapping[str, Mapping[str, Any]]) -> None:
    """Draw each flat curve of :func:`_ccdf_curves` in its style; the x limits must be final.

    A flat curve at value v is a line at share 1 from the left edge to v, a drop at v, and a
    line along the bottom edge of the axes -- the share 0, which a log scale cannot place --
    from v to the right edge, with the curve's marker at (v, bottom) and a label ``share 0
    from v`` beside it (stacked when there are several): the curve is drawn, not only named in
    the legend.  The bottom edge
    is lowered to at most :data:`_FLAT_FLOOR` (the same in every panel that shares the axis).
    """
    if not flat:
        return
    low_y, high_y = ax.get_ylim()
    ax.set_ylim(min(low_y, _FLAT_FLOOR), max(high_y, 1.5))
    low_x, high_x = ax.get_xlim()
    floor = ax.get_ylim()[0]
    for row, (label, value) in enumerate(sorted(flat, key=lambda item: item[1])):
        style = styles.get(label) or {}
        colour = style.get("color", "0.2")
        ax.plot(
            [low_x, value, value, high_x], [1.0, 1.0, floor, floor], color=colour,
            linestyle=style.get("linestyle", "-"), lw=2.0, clip_on=False, zorder=4,
        )  # fmt: skip
        ax.plot(
            [value], [floor], ls="none", marker=style.get("marker", "o"), ms=6, color=colour, clip_on=False, zorder=5
        )
        ax.annotate(
            plain_text(f"{label}: share 0 from {value:.2f} bit"), xy=(value, floor), xytext=(5, 4 + 10 * row),
            textcoords="offset points", ha="left", va="bottom", fontsize=7, color=colour,
        )  # fmt: skip
    ax.set_xlim(low_x, high_x)


def _ccdf_finish(
    ax: Axes, *, log2_n: float | None, guides: bool, title: str | None, x_range: tuple[float, float]
) -> None:
    """The x range (:func:`lid_x_range`), labels, the labelled reference lines in it and the title.

    A log2 N right of the range is said in the axis label instead of drawn.  The flat
    curves themselves are drawn after (:func:`_draw_flat_curves`), once every panel that
    shares the axes has its limits.
    """
    low, high = x_range
    ax.set_xlim(low, high)
    xlabel = "LID x (bits)"
    if log2_n is not None and log2_n > high:
        xlabel += f"; log2 N = {log2_n:.2f} lies right of the axis"
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of trials with LID > x")
    ax.grid(alpha=0.3, which="both")
    references = [line for line in _lid_references(log2_n, guides) if low <= line[0] <= high]
    rows = vertical_references(ax, references)
    set_title(ax, title, rows)


def lid_ccdf_figure(
    lids: Mapping[str, ArrayLike],
    *,
    title: str,
    log2_n: float | None = None,
    guides: bool = True,
    groups: Mapping[str, str] | None = None,
    variants: Mapping[str, str] | None = None,
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> Figure:
    """One LID CCDF panel: P(LID > x) per curve, styled by :func:`curve_styles`, the legend below the axes.

    The x range is :func:`lid_x_range`'s: the data and 0, with a small margin.

    Parameters
    ----------
    lids : mapping of str to array_like
        label -> 1-D array of LID values (bits).
    title : str
    log2_n : float, optional
        Draw and label the log2 N ceiling.
    guides : bool
        Draw and label the 0 bit and 1 bit lines.
    groups, variants : mapping of str to str, optional
        label -> system and label -> variant (calibrator), see :func:`curve_styles`.
    styles : mapping, optional
        label -> style, overriding *groups* and *variants*.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    chosen = dict(styles) if styles else curve_styles(list(lids), groups=groups, variants=variants)
    draw_lid_ccdf(ax, lids, styles=chosen, log2_n=log2_n, guides=guides, title=title, legend=False)
    shown = {label: chosen[label] for label, lid in lids.items() if np.size(lid)}
    if shown:  # below the axes, the figure taller by the legend's height
        legend_inches = legend_below(fig, shown, kind="line") * fig.get_figheight()
        fig.set_figheight(fig.get_figheight() + legend_inches)
        fig.tight_layout(rect=(0, legend_inches / fig.get_figheight(), 1, 1))
    else:
        fig.tight_layout()
    return fig


def save_lid_ccdf(
    lids: Mapping[str, ArrayLike],
    path: StrPath,
    *,
    title: str,
    log2_n: float | None = None,
    guides: bool = True,
    groups: Mapping[str, str] | None = None,
    variants: Mapping[str, str] | None = None,
) -> None:
    """Plot P(LID > x) per curve (log-scale y) and save it to *path* atomically.

    Parameters
    ----------
    lids : mapping of str to array_like
        label -> 1-D array of LID values (bits), one step curve each.
    path : str or os.PathLike
        Output file; the format follows the suffix.
    title : str
    log2_n : float, optional
        Draw and label the log2 N ceiling.
    guides : bool, default True
        Also draw labelled guides at 0 and 1 bit.
    groups, variants : mapping of str to str, optional
        label -> system and label -> variant (calibrator): a system's curves share its
        colour and marker and differ by line style (:func:`curve_styles`).  By default
        every curve is its own system, with its own colour, marker and line style.
    """
    save_figure(
        lid_ccdf_figure(lids, title=title, log2_n=log2_n, guides=guides, groups=groups, variants=variants), path
    )


def lid_ccdf_panels_figure(
    panels: Mapping[tuple[str, str], Mapping[str, ArrayLike]],
    *,
    title: str,
    log2_n: float | None = None,
    groups: Mapping[str, str] | None = None,
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> Figure:
    """Small multiples of LID CCDFs: one panel per (calibrator, prior), rows calibrators, columns priors.

    Every panel shares the axes and the curve styles (a system keeps its colour, marker
    and line style across panels), so panels compare at a glance; one legend below.  The
    x range is :func:`lid_x_range`'s over every panel's curves.

    Parameters
    ----------
    panels : mapping of (str, str) to mapping of str to array_like
        (calibrator, prior) -> {curve label -> LID values (bits)}.  A combination
        missing from the grid is drawn as an empty panel saying so.
    title : str
    log2_n : float, optional
        The log2 N line in every panel.
    groups : mapping of str to str, optional
        label -> system, as for :func:`curve_styles`.
    styles : mapping, optional
        label -> style, overriding *groups* (to keep the colours of other figures).

    Returns
    -------
    matplotlib.figure.Figure
    """

    flat_of: dict[Axes, list[tuple[str, float]]] = {}
    styles_of: dict[Axes, Mapping[str, Mapping[str, Any]]] = {}

    def draw(ax: Axes, curves: Mapping[str, ArrayLike], chosen: Mapping[str, Mapping[str, Any]]) -> None:
        flat_of[ax], styles_of[ax] = _ccdf_curves(ax, curves, chosen), chosen
        if not curves:
            ax.text(0.5, 0.5, "not in the grid", transform=ax.transAxes, ha="center", color="0.4")

    x_range = lid_x_range(curve for curves in panels.values() for curve in curves.values())

    def finish(ax: Axes, panel_title: str) -> None:
        _ccdf_finish(ax, log2_n=log2_n, guides=True, title=panel_title, x_range=x_range)

    fig = panels_figure(panels, title=title, groups=groups, styles=styles, draw=draw, finish=finish, kind="line")
    for ax, flat in flat_of.items():  # every panel's limits are final now
        _draw_flat_curves(ax, flat, styles_of[ax])
    return fig


def lid_histogram_figure(
    lid: ArrayLike,
    *,
    title: str,
    log2_n: float | None = None,
    color: str = SYSTEM_COLOURS[0],
) -> Figure:
    """Histogram of per-trial LID (bits), with labelled lines at 0 bit, 1 bit, the 99th percentile and log2 N.

    Parameters
    ----------
    lid : array_like, shape (T,)
        LID of the closed-set trials (bits, no NaN).
    title : str
    log2_n : float, optional
        Draw and label the log2 N ceiling.
    color : str
        Colour of the bars (the system's colour).

    Returns
    -------
    matplotlib.figure.Figure
    """
    values = np.asarray(lid, dtype=np.float64).ravel()
    if values.size == 0 or np.isnan(values).any():
        raise InputError("the LID histogram needs at least one LID value and no NaN (drop outsider trials first)")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=120)
    edges = np.histogram_bin_edges(values, bins="auto")
    if edges.size > 61:  # "auto" can ask for thousands of bins on a large, spread-out sample
        edges = np.histogram_bin_edges(values, bins=60)
    ax.hist(values, bins=edges, color=color, alpha=0.85, edgecolor="white", linewidth=0.4)
    if log2_n is not None:
        low, high = ax.get_xlim()
        ax.set_xlim(low, max(high, log2_n + 0.04 * (high - low)))
    q99 = float(np.quantile(values, 0.99))
    rows = vertical_references(ax, [*_lid_references(log2_n, True), (q99, f"q99 = {q99:.2f}", "-.")])
    ax.set_xlabel("LID (bits)")
    ax.set_ylabel("trials")
    set_title(ax, title, rows)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def draw_eer_alid(
    ax: Axes,
    points: Mapping[str, tuple[float, float, float]],
    *,
    styles: Mapping[str, Mapping[str, Any]],
    log2_n: float | None = None,
    title: str | None = None,
) -> None:
    """Draw each system's ALID (filled) and LIDmax (hollow, joined by a thin line) against its EER.

    The points carry no text (a legend names them, so no label can hide another);
    the 0 bit and log2 N lines are labelled right of the axes, the 50 % EER line
    (chance) above it.

    Parameters
    ----------
    ax : matplotlib Axes
    points : mapping of str to (float, float, float)
        label -> (EER as a fraction, ALID bits, LIDmax bits); a point with a NaN EER or ALID is left out.
    styles : mapping
        label -> style (:func:`curve_styles`): each system's colour and marker.
    log2_n : float, optional
        Draw and label the log2 N ceiling (a horizontal line).
    title : str, optional
    """
    _eer_points(ax, points, styles)
    _eer_finish(ax, log2_n=log2_n, title=title)


def _eer_points(
    ax: Axes, points: Mapping[str, tuple[float, float, float]], styles: Mapping[str, Mapping[str, Any]]
) -> None:
    """The marks of :func:`draw_eer_alid`, without axes decoration."""
    for label, (eer, alid, lid_max) in points.items():
        if not (np.isfinite(eer) and np.isfinite(alid)):
            continue
        style = styles[label]
        x = 100.0 * eer
        if np.isfinite(lid_max):
            ax.plot([x, x], [alid, lid_max], color=style["color"], lw=0.8, alpha=0.7, zorder=2)
            ax.plot(x, lid_max, marker=style["marker"], ms=6, mfc="white", mec=style["color"], ls="none", zorder=3)
        ax.plot(x, alid, marker=style["marker"], ms=7, color=style["color"], ls="none", zorder=4)


def _eer_finish(ax: Axes, *, log2_n: float | None, title: str | None) -> None:
    """Limits, the labelled reference lines (0 bit, log2 N, EER 50 %) and labels of an EER-vs-LID panel."""
    ax.set_xlim(-2.0, 55.0)
    horizontal = [(0.0, "0 bit", "-")]
    if log2_n is not None:
        horizontal.append((log2_n, f"log2 N = {log2_n:.2f}", ":"))
        low, high = ax.get_ylim()
        ax.set_ylim(min(low, -0.05 * log2_n), max(high, 1.05 * log2_n))
    horizontal_references(ax, horizontal)
    rows = vertical_references(ax, [(50.0, "EER 50 % (chance)", "--")])
    ax.set_xlabel("EER (%, ROC convex hull)")
    ax.set_ylabel("bits: ALID (filled), LIDmax (hollow)")
    ax.grid(alpha=0.3)
    set_title(ax, title, rows)


def eer_alid_figure(
    points: Mapping[str, tuple[float, float, float]],
    *,
    title: str,
    log2_n: float | None = None,
    groups: Mapping[str, str] | None = None,
    variants: Mapping[str, str] | None = None,
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> Figure:
    """EER against ALID and LIDmax per system, named in a legend below (no labels to collide).

    Parameters
    ----------
    points : mapping of str to (float, float, float)
        label -> (EER as a fraction, ALID bits, LIDmax bits).
    title : str
        Should name the calibrator and prior (the caption of the figure).
    log2_n : float, optional
    groups, variants : mapping of str to str, optional
        As for :func:`curve_styles`.
    styles : mapping, optional
        label -> style, overriding *groups* and *variants*.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = pyplot()
    labels = list(points)
    chosen = dict(styles) if styles else curve_styles(labels, groups=groups, variants=variants)
    chosen = {label: chosen[label] for label in labels}
    fig, ax = plt.subplots(figsize=(6.4, 4.4 + 0.16 * -(-len(labels) // 3)), dpi=120)
    draw_eer_alid(ax, points, styles=chosen, log2_n=log2_n, title=title)
    bottom = legend_below(fig, chosen, kind="scatter")
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def eer_alid_panels_figure(
    panels: Mapping[tuple[str, str], Mapping[str, tuple[float, float, float]]],
    *,
    title: str,
    log2_n: float | None = None,
    groups: Mapping[str, str] | None = None,
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> Figure:
    """Small multiples of :func:`draw_eer_alid`: one panel per (calibrator, prior), named in its title.

    Parameters
    ----------
    panels : mapping of (str, str) to mapping of str to (float, float, float)
        (calibrator, prior) -> {label -> (EER, ALID, LIDmax)}.
    title : str
    log2_n : float, optional
    groups : mapping of str to str, optional
        label -> system, as for :func:`curve_styles`.
    styles : mapping, optional
        label -> style, overriding *groups* (to keep the colours of other figures).

    Returns
    -------
    matplotlib.figure.Figure
    """

    def finish(ax: Axes, panel_title: str) -> None:
        _eer_finish(ax, log2_n=log2_n, title=panel_title)

    return panels_figure(
        panels, title=title, groups=groups, styles=styles, draw=_eer_points, finish=finish, kind="scatter"
    )
