"""The LID figures: CCDF, histogram and EER against LID, alone or as small multiples.

Each ``*_figure`` function returns a matplotlib Figure (save it with
:func:`lidframe.report.plotting.save_figure`, or inline it with
:func:`lidframe.report.plotting.figure_svg`); each ``draw_*`` draws into a given Axes.
Styles come from :func:`lidframe.report.plotting.curve_styles`: a system keeps its
colour and marker, its variants (calibrators) differ by line style.

- :func:`draw_lid_ccdf`, :func:`lid_ccdf_figure`, :func:`save_lid_ccdf`,
  :func:`lid_ccdf_panels_figure`: P(LID > x) per curve (log-scale y), with labelled
  lines at 0 bit, 1 bit and log2 N.
- :func:`lid_histogram_figure`: LID per trial, with its 99th percentile.
- :func:`draw_eer_alid`, :func:`eer_alid_figure`, :func:`eer_alid_panels_figure`: each
  system's ALID and LIDmax against its EER.
- :func:`open_set_figure`: the open set of one system: the LID CCDF of its enrolled and
  its outsider trials, and the histogram of the outsiders' top enrolled posterior with
  the misattribution thresholds.
- :func:`privacy_utility_figure`: privacy against utility: each row's ALID and LIDmax
  against its system's word error rate (:class:`UtilityPoint` each), with the intervals of
  both as error bars.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.fileio import StrPath
from lidframe.errors import InputError
from lidframe.report.plotting import (
    MARKERS,
    SYSTEM_COLOURS,
    curve_styles,
    horizontal_references,
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
    "draw_lid_ccdf",
    "lid_ccdf_figure",
    "save_lid_ccdf",
    "lid_ccdf_panels_figure",
    "lid_histogram_figure",
    "draw_eer_alid",
    "eer_alid_figure",
    "eer_alid_panels_figure",
    "open_set_figure",
    "UtilityPoint",
    "privacy_utility_figure",
]


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
        Add a legend of the curves.
    title : str, optional
        Set above the reference labels.
    """
    chosen = styles or curve_styles(list(lids))
    flat = _ccdf_curves(ax, lids, chosen)
    _ccdf_finish(ax, log2_n=log2_n, guides=guides, title=title, flat=flat)
    _draw_flat_curves(ax, flat, chosen)
    if legend and lids:
        ax.legend(fontsize=7, loc="lower left")


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
    ax: Axes, *, log2_n: float | None, guides: bool, title: str | None, flat: Sequence[tuple[str, float]] = ()
) -> None:
    """Labels, the log2 N ceiling and the flat curves' values kept in view, the labelled reference lines and the title.

    The flat curves themselves are drawn after (:func:`_draw_flat_curves`), once every
    panel that shares the axes has its limits.
    """
    ax.set_xlabel("LID x (bits)")
    ax.set_ylabel("share of trials with LID > x")
    ax.grid(alpha=0.3, which="both")
    low, high = ax.get_xlim()
    if log2_n is not None:
        high = max(high, log2_n + 0.04 * (high - low))
    if flat:  # room on both sides of a flat curve's drop
        values = [v for _, v in flat]
        low, high = min(low, min(values) - 0.5), max(high, max(values) + 0.5)
    ax.set_xlim(low, high)
    rows = vertical_references(ax, _lid_references(log2_n, guides))
    set_title(ax, title, rows)


def _panel_title(calibrator: str, prior: str, width: int = 44) -> str:
    """'calibrator X' and 'prior Y' on their own lines, long specs wrapped at *width* characters."""
    import textwrap

    lines = []
    for text in (f"calibrator {calibrator}", f"prior {prior}"):
        lines += textwrap.wrap(text, width, break_on_hyphens=False) or [text]
    return plain_text("\n".join(lines))


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
    """One LID CCDF panel: P(LID > x) per curve, styled by :func:`curve_styles`.

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
    draw_lid_ccdf(ax, lids, styles=chosen, log2_n=log2_n, guides=guides, title=title)
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


def _panel_grid(rows: Sequence[str], cols: Sequence[str], *, width: float = 3.6, height: float = 3.0):
    plt = pyplot()
    return plt.subplots(
        len(rows), len(cols), figsize=(0.6 + width * len(cols), 1.0 + height * len(rows)), dpi=120,
        sharex=True, sharey=True, squeeze=False,
    )  # fmt: skip


def _legend_below(fig: Figure, styles: Mapping[str, Mapping[str, Any]], *, kind: str) -> float:
    """One legend of every label under the axes (line samples, or markers for a scatter).

    Returns
    -------
    float
        The share of the figure's height the legend takes (for ``tight_layout(rect=...)``).
    """
    from matplotlib.lines import Line2D

    handles = []
    for style in styles.values():
        if kind == "scatter":
            handles.append(Line2D([], [], ls="none", ms=6, color=style["color"], marker=style["marker"]))
        else:
            handles.append(Line2D([], [], lw=1.4, ms=4, **style))
    longest = max((len(label) for label in styles), default=0)
    ncol = max(1, min(len(handles), 4 if longest <= 18 else 2 if longest <= 40 else 1))
    fig.legend(
        handles, [plain_text(label) for label in styles], loc="lower center", ncol=ncol, fontsize=7, frameon=False
    )
    rows = -(-len(handles) // ncol)
    return min(0.45, (0.2 + rows * 0.16) / fig.get_figheight())


def _merged_styles(
    labels: Sequence[str], groups: Mapping[str, str] | None, styles: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    derived = curve_styles(labels, groups=groups)
    return {label: dict((styles or {}).get(label) or derived[label]) for label in labels}


def _panels_figure(
    panels: Mapping[tuple[str, str], Mapping[str, Any]],
    *,
    title: str,
    groups: Mapping[str, str] | None,
    styles: Mapping[str, Mapping[str, Any]] | None,
    draw: Callable[[Axes, Mapping[str, Any], Mapping[str, Mapping[str, Any]]], None],
    finish: Callable[[Axes, str], None],
    kind: str,
) -> Figure:
    """Small multiples, rows calibrators and columns priors, sharing axes, styles and one legend below.

    *draw* (axes, the panel's {label: data}, styles) draws each panel; *finish* (axes, panel
    title) decorates it once every panel is drawn, so the shared limits are final; *kind* is
    the legend's (``"line"`` or ``"scatter"``, :func:`_legend_below`).
    """
    rows = list(dict.fromkeys(c for c, _ in panels))
    cols = list(dict.fromkeys(p for _, p in panels))
    labels = list(dict.fromkeys(label for data in panels.values() for label in data))
    chosen = _merged_styles(labels, groups, styles)
    fig, axes = _panel_grid(rows, cols)
    for i, calibrator in enumerate(rows):
        for j, prior in enumerate(cols):
            draw(axes[i, j], panels.get((calibrator, prior), {}), chosen)
    for i, calibrator in enumerate(rows):
        for j, prior in enumerate(cols):
            ax = axes[i, j]
            finish(ax, _panel_title(calibrator, prior))
            ax.title.set_fontsize(8)
            if i < len(rows) - 1:
                ax.set_xlabel("")
            if j > 0:
                ax.set_ylabel("")
    bottom = _legend_below(fig, chosen, kind=kind)
    fig.suptitle(plain_text(title), fontsize=10)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


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
    and line style across panels), so panels compare at a glance; one legend below.

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

    def finish(ax: Axes, panel_title: str) -> None:
        _ccdf_finish(ax, log2_n=log2_n, guides=True, title=panel_title, flat=flat_of.get(ax, []))

    fig = _panels_figure(panels, title=title, groups=groups, styles=styles, draw=draw, finish=finish, kind="line")
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
    bottom = _legend_below(fig, chosen, kind="scatter")
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

    return _panels_figure(
        panels, title=title, groups=groups, styles=styles, draw=_eer_points, finish=finish, kind="scatter"
    )


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


def _bounds(value: Any) -> tuple[float, float] | None:
    """An interval as (low, high) floats; None for none, or one whose ends are not both finite."""
    if value is None:
        return None
    low, high = (float(v) for v in value)
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


@attrs.frozen
class UtilityPoint:
    """One point of the privacy-utility chart: a row of the report at its system's word error rate.

    Attributes
    ----------
    label : str
        The row (its label on the page); each of its error-bar containers carries it as its label.
    system : str
        Its system, whose speech the WER was measured on: the point's colour.
    variant : str
        What sets the row apart from its system's other rows (its attacker and rung, or its
        calibrator and prior): the point's marker; ``""`` when there is nothing to tell apart.
    wer : float
        Word error rate of the system's speech (a fraction; may exceed 1).
    wer_interval : (float, float) or None
        Its bootstrap interval (fractions); None without one.
    alid, lid_max : float
        The row's ALID and LIDmax (bits).
    alid_interval, lid_max_interval : (float, float) or None
        Their bootstrap intervals (bits); None without one.
    log2_n : float
        The row's ceiling log2 N (bits).
    """

    label: str
    system: str
    variant: str
    wer: float
    wer_interval: tuple[float, float] | None = attrs.field(converter=_bounds)
    alid: float
    alid_interval: tuple[float, float] | None = attrs.field(converter=_bounds)
    lid_max: float
    lid_max_interval: tuple[float, float] | None = attrs.field(converter=_bounds)
    log2_n: float


def _error(value: float, interval: tuple[float, float] | None) -> np.ndarray | None:
    """The (2, 1) error of a bar that spans *interval* (and *value*, should the interval miss it); None without one."""
    if interval is None:
        return None
    low, high = interval
    return np.array([[max(0.0, value - low)], [max(0.0, high - value)]])


def _legend_rows(fig: Figure, groups: Sequence[tuple[list[Any], list[str], str]]) -> float:
    """Legends stacked under the axes, the first at the bottom: (handles, labels, title) each.

    Returns
    -------
    float
        Their height (inches) with the margins; the figure is made that much taller.
    """
    renderer = cast(Any, fig.canvas).get_renderer()  # Agg's canvas (pyplot())
    width = fig.get_figwidth()
    bottom = 0.05
    for handles, labels, title in groups:
        longest = max((len(label) for label in labels), default=0)
        ncol = max(1, min(len(handles), 5 if longest <= 18 else 3 if longest <= 32 else 2 if longest <= 56 else 1))
        legend = fig.legend(
            handles, [plain_text(label) for label in labels], loc="lower center", bbox_to_anchor=(width / 2, bottom),
            bbox_transform=fig.dpi_scale_trans, ncol=ncol, fontsize=7, title=plain_text(title), title_fontsize=7,
            frameon=False,
        )  # fmt: skip
        bottom += legend.get_window_extent(renderer).height / fig.dpi + 0.05
    fig.set_figheight(fig.get_figheight() + bottom)
    return bottom


def privacy_utility_figure(
    points: Sequence[UtilityPoint],
    *,
    colours: Mapping[str, str] | None = None,
    variant_title: str = "row",
    title: str | None = None,
) -> Figure:
    """Privacy against utility: each row's ALID (left) and LIDmax (right) against its system's word error rate.

    Every point is one row of a report (a system under one attacker, rung, calibrator and
    prior) at x = the WER (%) of its system's speech, so a system's rows stand one above
    the other at one x; y is the row's disclosure (bits).  A point's colour is its system,
    its marker its variant (the same marker for the same variant in every system).
    Horizontal error bars are the WER's interval, vertical ones the row's ALID or LIDmax
    interval; a point without an interval has no bar on that axis.  Both panels share
    their axes, with the 0 bit line and the ceiling log2 N labelled right of each and the
    WER of 100 % (as many errors as reference words) above.  Up and left: leaks identity
    and keeps the words; down and right: hides identity and loses the words.  Legends
    below: the systems' colours, and (when there are several) the variants' markers.

    Parameters
    ----------
    points : sequence of UtilityPoint
        At least one; a point with a NaN WER or value is left out of its panel.
    colours : mapping of str to str, optional
        system -> colour, to keep the colours of the page's other figures; by default one
        per system (:func:`lidframe.report.plotting.curve_styles`).
    variant_title : str
        The title of the variants' legend (``"attacker · rung"``).
    title : str, optional
        Above both panels.

    Returns
    -------
    matplotlib.figure.Figure
        ``fig.axes[0]`` ALID, ``fig.axes[1]`` LIDmax; in each, one
        :class:`~matplotlib.container.ErrorbarContainer` per point drawn, labelled with
        its :attr:`UtilityPoint.label`, WER in percent.

    Raises
    ------
    InputError
        No points.
    """
    points = list(points)
    if not points:
        raise InputError("the privacy-utility chart needs at least one point (a row of a system with a utility)")
    plt = pyplot()
    systems = list(dict.fromkeys(p.system for p in points))
    derived = curve_styles(systems)
    colour_of = {s: (colours or {}).get(s) or derived[s]["color"] for s in systems}
    variants = list(dict.fromkeys(p.variant for p in points))
    marker_of = {v: MARKERS[k % len(MARKERS)] for k, v in enumerate(variants)}
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 4.4), dpi=120, sharex=True, sharey=True)
    biased = any(p.lid_max_interval is not None for p in points)
    panels = (("alid", "ALID: the average disclosure"), ("lid_max", "LIDmax: the largest disclosure"))
    for ax, (metric, _) in zip(axes, panels):
        for p in points:
            x, y = 100.0 * p.wer, float(getattr(p, metric))
            if not (math.isfinite(x) and math.isfinite(y)):
                continue
            wer_interval = None if p.wer_interval is None else (100.0 * p.wer_interval[0], 100.0 * p.wer_interval[1])
            colour = colour_of[p.system]
            ax.errorbar(
                [x], [y], xerr=_error(x, wer_interval), yerr=_error(y, getattr(p, f"{metric}_interval")),
                fmt=marker_of[p.variant], ls="none", ms=7, color=colour, mec=colour, mfc=colour, ecolor=colour,
                elinewidth=1.0, capsize=3, alpha=0.9, label=plain_text(p.label), zorder=3,
            )  # fmt: skip
    ceilings = sorted({round(p.log2_n, 12) for p in points if math.isfinite(p.log2_n)})
    highest = max([100.0] + [100.0 * p.wer for p in points if math.isfinite(p.wer)])
    highest = max([highest] + [100.0 * p.wer_interval[1] for p in points if p.wer_interval is not None])
    low_y, high_y = axes[0].get_ylim()
    top = max(ceilings) if ceilings else high_y
    for ax, (metric, panel_title) in zip(axes, panels):
        ax.set_xlim(-3.0, 1.04 * highest + 1.0)
        ax.set_ylim(min(low_y, -0.05 * top), max(high_y, 1.08 * top))
        horizontal_references(ax, [(0.0, "0 bit", "-"), *((c, f"log2 N = {c:.2f}", ":") for c in ceilings)])
        rows = vertical_references(ax, [(100.0, "WER 100 %", "--")])
        ax.set_xlabel("WER (%) of the recogniser on the system's speech")
        ax.grid(alpha=0.3)
        if metric == "lid_max" and biased:
            panel_title += " (interval † biased low)"
        set_title(ax, panel_title, rows)
    axes[0].set_ylabel("bits disclosed (up: leaks identity)")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    groups: list[tuple[list[Any], list[str], str]] = [
        ([Patch(facecolor=colour_of[s], edgecolor=colour_of[s]) for s in systems], systems, "system (colour)")
    ]
    if len(variants) > 1 or variants[0]:
        handles: list[Any] = [Line2D([], [], ls="none", marker=marker_of[v], ms=6, color="0.3") for v in variants]
        groups.append((handles, [v or "(other)" for v in variants], f"{variant_title} (marker)"))
    bottom = _legend_rows(fig, groups)
    if title:
        fig.suptitle(plain_text(title), fontsize=10)
    fig.tight_layout(rect=(0, bottom / fig.get_figheight(), 1, 1))
    return fig
