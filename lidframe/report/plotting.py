"""Matplotlib access for lidframe's plots: imported only when a plot is asked for."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.fileio import StrPath, atomic_path
from lidframe.data.records import TableRecord
from lidframe.errors import InputError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "pyplot",
    "save_figure",
    "save_lid_ccdf",
    "per_speaker_figure",
    "save_per_speaker",
    "SYSTEM_COLOURS",
    "curve_styles",
    "draw_lid_ccdf",
    "lid_ccdf_figure",
    "lid_ccdf_panels_figure",
    "lid_histogram_figure",
    "draw_eer_alid",
    "eer_alid_figure",
    "eer_alid_panels_figure",
    "figure_svg",
    "inline_svg",
]


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or a clear error without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plotting needs matplotlib: pip install 'lidframe[plot]'") from None
    return plt


def save_figure(fig: Figure, path: StrPath) -> None:
    """Save *fig* to *path* (format from the suffix: png, pdf, svg, ...) atomically, then close it."""
    target = Path(path)
    with atomic_path(target, suffix=target.suffix) as tmp:
        fig.savefig(tmp, format=target.suffix.lstrip(".") or "png")
    pyplot().close(fig)


#: Okabe-Ito colours (distinguishable with the common colour-vision deficiencies), in the
#: order systems get them; yellow comes last, as it is faint on white.
SYSTEM_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
#: Line styles: one per system when each system has one curve, else one per variant (calibrator).
LINE_STYLES: tuple[str | tuple[float, tuple[float, ...]], ...] = (
    "-",
    "--",
    ":",
    "-.",
    (0, (5, 1, 1, 1, 1, 1)),
    (0, (1, 3)),
    (0, (8, 2)),
    (0, (3, 1, 1, 1, 1, 1, 1, 1)),
)
#: Markers, one per system (with its colour), so curves stay apart in greyscale print too.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: Font size (points) of the reference-line labels.
_REF_FONT = 7.0


def curve_styles(
    labels: Sequence[str],
    *,
    groups: Mapping[str, str] | None = None,
    variants: Mapping[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Matplotlib style (``color``, ``linestyle``, ``marker``) of each curve label.

    A *group* (a system) gets one colour and one marker; within a group the curves
    (variants, e.g. calibrators) differ by line style.  When every group has a single
    curve and no variants are given, the line style also changes from group to group,
    so that two systems differ in colour *and* line style.

    Parameters
    ----------
    labels : sequence of str
        Curve labels, in drawing order.
    groups : mapping of str to str, optional
        label -> group (system) name; a label not in it is its own group.
    variants : mapping of str to str, optional
        label -> variant name (e.g. the calibrator): the line style follows the variant's
        order of first appearance, so a calibrator has the same line style in every
        system.  By default a curve's rank within its group.

    Returns
    -------
    dict
        label -> keyword arguments for ``Axes.plot`` / ``Axes.step``.
    """
    group_of = {label: (groups or {}).get(label, label) for label in labels}
    group_order = list(dict.fromkeys(group_of.values()))
    one_each = variants is None and len(group_order) == len(group_of)
    variant_order: list[str] = []
    rank_in_group: dict[str, int] = {}
    styles = {}
    for label in labels:
        group = group_of[label]
        g = group_order.index(group)
        if variants is not None and label in variants:
            if variants[label] not in variant_order:
                variant_order.append(variants[label])
            v = variant_order.index(variants[label])
        else:
            v = rank_in_group.get(group, 0)
        rank_in_group[group] = rank_in_group.get(group, 0) + 1
        styles[label] = {
            "color": SYSTEM_COLOURS[g % len(SYSTEM_COLOURS)],
            # after len(SYSTEM_COLOURS) groups the colours repeat, with other markers
            "marker": MARKERS[(g + g // len(SYSTEM_COLOURS)) % len(MARKERS)],
            "linestyle": LINE_STYLES[(g if one_each else v) % len(LINE_STYLES)],
        }
    return styles


def _vertical_references(ax: Axes, lines: Sequence[tuple[float, str, Any]]) -> int:
    """Draw vertical reference lines, each labelled just above the axes, stacking labels that would overlap.

    Parameters
    ----------
    ax : matplotlib Axes
        Its x limits should be final (the data drawn).
    lines : sequence of (x, text, linestyle)

    Returns
    -------
    int
        Rows of labels used above the axes (for the title's padding, :func:`_set_title`).
    """
    low, high = ax.get_xlim()
    width_pt = cast("Figure", ax.figure).get_figwidth() * ax.get_position().width * 72.0
    row_ends: list[float] = []  # right end (points from the axes' left) of the last label in each row
    for x, text, linestyle in sorted(lines, key=lambda line: line[0]):
        ax.axvline(x, color="0.45", lw=0.9, ls=linestyle, zorder=1)
        if not low <= x <= high:
            continue
        centre = (x - low) / (high - low) * width_pt
        half = 0.32 * _REF_FONT * len(text)  # DejaVu Sans averages ~0.6 em per character
        row = next((r for r, end in enumerate(row_ends) if centre - half > end + 3.0), len(row_ends))
        if row == len(row_ends):
            row_ends.append(centre + half)
        else:
            row_ends[row] = centre + half
        ax.annotate(
            text, xy=(x, 1.0), xycoords=("data", "axes fraction"), xytext=(0, 2 + row * (_REF_FONT + 2)),
            textcoords="offset points", ha="center", va="bottom", fontsize=_REF_FONT, color="0.25",
            annotation_clip=False,
        )  # fmt: skip
    return len(row_ends)


def _horizontal_references(ax: Axes, lines: Sequence[tuple[float, str, Any]]) -> None:
    """Draw horizontal reference lines, each labelled just right of the axes."""
    for y, text, linestyle in lines:
        ax.axhline(y, color="0.45", lw=0.9, ls=linestyle, zorder=1)
        ax.annotate(
            text, xy=(1.0, y), xycoords=("axes fraction", "data"), xytext=(3, 0), textcoords="offset points",
            ha="left", va="center", fontsize=_REF_FONT, color="0.25", annotation_clip=False,
        )  # fmt: skip


def plain_text(text: str) -> str:
    """*text* as matplotlib should print it: a ``$`` stays a dollar sign, never starts mathtext."""
    return text.replace("$", r"\$")


def _set_title(ax: Axes, title: str | None, label_rows: int, *, fontsize: float = 9.0) -> None:
    """The axes title, raised above *label_rows* rows of reference labels."""
    if title:
        ax.set_title(plain_text(title), fontsize=fontsize, pad=4.0 + label_rows * (_REF_FONT + 2))


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
    _ccdf_curves(ax, lids, styles or curve_styles(list(lids)))
    _ccdf_finish(ax, log2_n=log2_n, guides=guides, title=title)
    if legend and lids:
        ax.legend(fontsize=7, loc="lower left")


def _ccdf_curves(ax: Axes, lids: Mapping[str, ArrayLike], styles: Mapping[str, Mapping[str, Any]]) -> None:
    """The step curves P(LID > x) of :func:`draw_lid_ccdf`, without axes decoration."""
    for label, lid in lids.items():
        x = np.sort(np.asarray(lid, dtype=np.float64).ravel())
        values = np.unique(x)
        if values.size == 0:
            continue
        if values.size == 1:  # every trial discloses the same: all of them lie above anything less (a mark at 1)
            steps_x, steps_y = np.r_[values, values], np.ones(2)
        else:
            # from each distinct value to the next, the share of trials strictly above it (ties
            # counted once); the last step runs on to the largest LID, where the share drops to 0
            above = 1.0 - np.searchsorted(x, values, side="right") / x.size
            steps_x, steps_y = values, np.r_[above[:-1], above[-2]]
        ax.step(steps_x, steps_y, where="post", label=plain_text(label), lw=1.4, markevery=0.12, ms=4, **styles[label])
    ax.set_yscale("log")


def _ccdf_finish(ax: Axes, *, log2_n: float | None, guides: bool, title: str | None) -> None:
    """Labels, the log2 N ceiling kept in view, the labelled reference lines and the title of a CCDF panel."""
    ax.set_xlabel("LID x (bits)")
    ax.set_ylabel("share of trials with LID > x")
    ax.grid(alpha=0.3, which="both")
    if log2_n is not None:
        low, high = ax.get_xlim()
        ax.set_xlim(low, max(high, log2_n + 0.04 * (high - low)))
    rows = _vertical_references(ax, _lid_references(log2_n, guides))
    _set_title(ax, title, rows)


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
    rows = list(dict.fromkeys(c for c, _ in panels))
    cols = list(dict.fromkeys(p for _, p in panels))
    labels = list(dict.fromkeys(label for curves in panels.values() for label in curves))
    chosen = _merged_styles(labels, groups, styles)
    fig, axes = _panel_grid(rows, cols)
    for i, calibrator in enumerate(rows):
        for j, prior in enumerate(cols):
            ax = axes[i, j]
            curves = panels.get((calibrator, prior), {})
            _ccdf_curves(ax, curves, chosen)
            if not curves:
                ax.text(0.5, 0.5, "not in the grid", transform=ax.transAxes, ha="center", color="0.4")
    # references and titles once every panel is drawn: the shared limits are final
    for i, calibrator in enumerate(rows):
        for j, prior in enumerate(cols):
            ax = axes[i, j]
            _ccdf_finish(ax, log2_n=log2_n, guides=True, title=_panel_title(calibrator, prior))
            ax.title.set_fontsize(8)
            if i < len(rows) - 1:
                ax.set_xlabel("")
            if j > 0:
                ax.set_ylabel("")
    bottom = _legend_below(fig, chosen, kind="line")
    fig.suptitle(plain_text(title), fontsize=10)
    fig.tight_layout(rect=(0, bottom, 1, 1))
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
        raise InputError("the LID histogram needs at least one LID value and no NaN (drop impostor trials first)")
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
    rows = _vertical_references(ax, [*_lid_references(log2_n, True), (q99, f"q99 = {q99:.2f}", "-.")])
    ax.set_xlabel("LID (bits)")
    ax.set_ylabel("trials")
    _set_title(ax, title, rows)
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
    _horizontal_references(ax, horizontal)
    rows = _vertical_references(ax, [(50.0, "EER 50 % (chance)", "--")])
    ax.set_xlabel("EER (%, ROC convex hull)")
    ax.set_ylabel("bits: ALID (filled), LIDmax (hollow)")
    ax.grid(alpha=0.3)
    _set_title(ax, title, rows)


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
    rows = list(dict.fromkeys(c for c, _ in panels))
    cols = list(dict.fromkeys(p for _, p in panels))
    labels = list(dict.fromkeys(label for points in panels.values() for label in points))
    chosen = _merged_styles(labels, groups, styles)
    fig, axes = _panel_grid(rows, cols)
    for i, calibrator in enumerate(rows):
        for j, prior in enumerate(cols):
            _eer_points(axes[i, j], panels.get((calibrator, prior), {}), chosen)
    # decoration once every panel is drawn: the shared limits are final
    for i, calibrator in enumerate(rows):
        for j, prior in enumerate(cols):
            ax = axes[i, j]
            _eer_finish(ax, log2_n=log2_n, title=_panel_title(calibrator, prior))
            ax.title.set_fontsize(8)
            if i < len(rows) - 1:
                ax.set_xlabel("")
            if j > 0:
                ax.set_ylabel("")
    bottom = _legend_below(fig, chosen, kind="scatter")
    fig.suptitle(plain_text(title), fontsize=10)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def figure_svg(fig: Figure, *, id_prefix: str, description: str | None = None) -> str:
    """*fig* as an inline ``<svg>`` element (then closed): text as paths, no external reference.

    The text is drawn as glyph paths (``svg.fonttype = "path"``), so the SVG needs no
    font, and the output is deterministic (no date, a fixed hash salt); then
    :func:`inline_svg` makes it fit for an HTML page.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    id_prefix : str
        Letters, digits, ``-`` or ``_``, starting with a letter; unique per figure within a page.
    description : str, optional
        Accessible name (``aria-label``) of the image.

    Returns
    -------
    str
        Markup starting with ``<svg``.
    """
    import io

    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": id_prefix}):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    pyplot().close(fig)
    return inline_svg(buffer.getvalue(), id_prefix=id_prefix, description=description)


def inline_svg(text: str, *, id_prefix: str, description: str | None = None) -> str:
    """The text of an SVG file as an inline ``<svg>`` element of an HTML page.

    The XML prolog, DOCTYPE, metadata and comments (matplotlib writes each label's
    text in a comment) are stripped, as are the SVG and XLink namespace declarations
    (implied for ``<svg>`` inside HTML; ``xlink:href`` becomes SVG 2's ``href``), so the
    markup holds no URL; every ``id`` -- and each reference to it, ``href="#id"`` and
    ``url(#id)`` -- gets *id_prefix*, so that several figures can live in one page
    without clashing ids.

    Parameters
    ----------
    text : str
        An SVG document (matplotlib's).
    id_prefix : str
        Letters, digits, ``-`` or ``_``, starting with a letter.
    description : str, optional
        Accessible name (``aria-label``, with ``role="img"``).

    Returns
    -------
    str
        Markup starting with ``<svg``.
    """
    from html import escape

    if not re.fullmatch(r"[A-Za-z][\w-]*", id_prefix):
        raise InputError(f"id_prefix must be letters, digits, '-' or '_' starting with a letter, got {id_prefix!r}")
    if "<svg" not in text:
        raise InputError("not an SVG document: no <svg> element")
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    # in HTML an inline <svg> is in the SVG namespace without declaring it, and SVG 2 reads
    # plain href: the page then holds no URL at all, not even a namespace name
    text = re.sub(r'\s+xmlns(:xlink)?="http://www\.w3\.org/(2000/svg|1999/xlink)"', "", text)
    text = text.replace("xlink:href=", "href=")
    ids = set(re.findall(r'\bid="([^"]+)"', text))

    def prefixed(match: re.Match[str]) -> str:
        head, name, tail = match.group(1), match.group(2), match.group(3)
        return f"{head}{id_prefix}-{name}{tail}" if name in ids else match.group(0)

    text = re.sub(r'(\bid=")([^"]+)(")', prefixed, text)
    text = re.sub(r'(href="#)([^"]+)(")', prefixed, text)
    text = re.sub(r"(url\(#)([^)]+)(\))", prefixed, text)
    if description is not None:
        text = text.replace("<svg ", f'<svg role="img" aria-label="{escape(description, quote=True)}" ', 1)
    return text.strip()


#: Up to this many speakers (and room for them), the per-speaker dot plot names every one.
PER_SPEAKER_ALL_LABELS = 40
_LABEL_HEIGHT_IN = 0.16  # vertical room of one 8-point label, inches


def per_speaker_figure(
    per_speaker: TableRecord,
    *,
    ax: Axes | None = None,
    n_labelled: int = 5,
    title: str | None = None,
) -> Figure:
    """Dot plot of ALID per speaker, sorted, with CI whiskers and the top and bottom speakers named.

    One row per speaker with trials (most disclosed at the top); a dot at its ALID, a
    whisker from ``alid_low`` to ``alid_high`` when the rows have them; vertical guides
    at 0 bit, at the overall ALID (the trial-weighted mean of the rows) and at the
    ceiling log2 N.  With at most :data:`PER_SPEAKER_ALL_LABELS` speakers (and room for
    a label per row) every row is named with its trial count on the y axis; with more,
    only the *n_labelled* highest (red) and lowest (blue) are named, in the left margin
    with a leader line to their row, and the others are unnamed grey dots.

    Parameters
    ----------
    per_speaker : TableRecord
        A :class:`lidframe.analyses.per_speaker.PerSpeaker` (or any record whose rows have
        ``speaker``, ``n_trials``, ``alid`` and optionally ``alid_low``/``alid_high``);
        its ``log2_n``, ``ci_settings`` and ``n_speakers_without_trials`` are used when
        present.  Rows without trials (NaN ALID) are left out and counted in the title.
    ax : matplotlib Axes, optional
        Draw into this Axes; by default a new figure is sized to the number of speakers
        (7 inches wide, 3.2 to 10 inches high).
    n_labelled : int, default 5
        Speakers named at each end when not all are.
    title : str, optional
        Replaces the default title (which names the interval settings).

    Returns
    -------
    matplotlib.figure.Figure
        The figure of *ax* (or the new one); save it as SVG, PNG, ... (:func:`save_figure`).
    """
    if isinstance(n_labelled, bool) or not isinstance(n_labelled, int) or n_labelled < 1:
        raise InputError(f"n_labelled must be a positive integer, got {n_labelled!r}")
    rows = [r for r in per_speaker.rows if r.get("n_trials", 0) > 0 and np.isfinite(r.get("alid", np.nan))]
    if not rows:
        raise InputError("the per-speaker table has no speaker with trials: nothing to plot")
    rows.sort(key=lambda r: (-r["alid"], r["speaker"]))
    n = len(rows)
    alid = np.array([r["alid"] for r in rows], dtype=np.float64)
    counts = np.array([r["n_trials"] for r in rows], dtype=np.float64)
    y = np.arange(n)[::-1].astype(np.float64)  # the most disclosed speaker at the top
    own_figure = ax is None
    if ax is None:
        fig, ax = pyplot().subplots(figsize=(7.0, min(max(1.6 + 0.24 * n, 3.2), 10.0)), dpi=120)
    else:
        fig = cast("Figure", ax.figure)
    axes_height_in = ax.get_position().height * fig.get_figheight()
    rows_per_label = max(1.0, _LABEL_HEIGHT_IN * n / max(axes_height_in, 1e-3))
    named_all = n <= PER_SPEAKER_ALL_LABELS and rows_per_label <= 1.0
    k = 0 if named_all else min(n_labelled, n // 2)
    colour = np.full(n, "C0" if named_all else "0.5", dtype=object)
    colour[:k], colour[n - k :] = "C3", "C0"
    dot, whisker = (5.0, 1.2) if n <= 60 else (3.0, 0.6)
    has_ci = all("alid_low" in r and "alid_high" in r for r in rows)
    if has_ci:
        low = np.array([r["alid_low"] for r in rows], dtype=np.float64)
        high = np.array([r["alid_high"] for r in rows], dtype=np.float64)
        finite = np.isfinite(low) & np.isfinite(high)
        ax.hlines(y[finite], low[finite], high[finite], colors=list(colour[finite]), lw=whisker)
    ax.scatter(alid, y, s=dot**2, c=list(colour), zorder=3, edgecolors="none")
    ax.axvline(0.0, color="0.6", lw=0.8)
    overall = float(np.sum(alid * counts) / counts.sum())
    ax.axvline(overall, color="C1", lw=1.0, ls="--", label=f"overall ALID {overall:.2f} bit")
    log2_n = getattr(per_speaker, "log2_n", None)
    if log2_n is not None:
        ax.axvline(log2_n, color="0.3", lw=0.8, ls=":", label=f"log2 N = {log2_n:.2f} bit")
    ax.set_ylim(-1, n)
    names = [f"{r['speaker']} ({r['n_trials']})" for r in rows]
    if named_all:
        ax.set_yticks(y)
        ax.set_yticklabels(names, fontsize=8)
        ax.set_ylabel("speaker (trials)")
    else:
        ax.set_yticks([])
        ax.set_ylabel(f"{n} speakers by ALID; the top and bottom {k} named (trials)", labelpad=4)
        # labels fan out from each end of the axis, one label height apart, with leader lines
        for i in range(k):
            for row, label_y in ((i, (n - 1) - i * rows_per_label), (n - 1 - i, i * rows_per_label)):
                ax.annotate(
                    names[row],
                    xy=(0.0, y[row]),
                    xycoords=("axes fraction", "data"),
                    xytext=(-0.015, label_y),
                    textcoords=("axes fraction", "data"),
                    ha="right",
                    va="center",
                    fontsize=8,
                    color=colour[row],
                    arrowprops={"arrowstyle": "-", "lw": 0.5, "color": colour[row], "shrinkA": 0, "shrinkB": 0},
                    annotation_clip=False,
                )
    ax.set_xlabel("ALID (bits) of the speaker's trials")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    settings = getattr(per_speaker, "ci_settings", None)
    note = []
    if has_ci and settings:
        note.append(f"whiskers: {settings['level']:.0%} {settings['method']} CI, trials resampled within speaker")
    missing = getattr(per_speaker, "n_speakers_without_trials", 0)
    if missing:
        note.append(f"{missing} enrolled speakers without trials not shown")
    default_title = "Disclosure per speaker" + (f"\n({'; '.join(note)})" if note else "")
    ax.set_title(title or default_title, fontsize=10)
    if own_figure:
        fig.tight_layout()
    return fig


def save_per_speaker(per_speaker: TableRecord, path: StrPath, *, n_labelled: int = 5, title: str | None = None) -> None:
    """:func:`per_speaker_figure` saved to *path* (format from the suffix: svg, png, ...) atomically.

    Parameters
    ----------
    per_speaker : TableRecord
        As for :func:`per_speaker_figure`.
    path : str or os.PathLike
    n_labelled, title
        As for :func:`per_speaker_figure`.
    """
    save_figure(per_speaker_figure(per_speaker, n_labelled=n_labelled, title=title), path)
