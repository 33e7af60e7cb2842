"""Matplotlib access and the drawing primitives of lidframe's figures.

Matplotlib is imported only when a figure is asked for (:func:`pyplot`), so importing
this module, or :mod:`lidframe`, loads none of it.  The figures themselves use these
pieces: :mod:`lidframe.report.lid_figures` (LID CCDF, histogram, EER against LID) and
:mod:`lidframe.report.analysis_figures` (per-speaker dot plot, the analyses' plots).

- :func:`pyplot`, :func:`save_figure`: matplotlib on the Agg backend; an atomic save.
- :data:`SYSTEM_COLOURS`, :data:`LINE_STYLES`, :data:`MARKERS`, :func:`curve_styles`:
  one colour and marker per system, one line style per variant (calibrator).
- :func:`vertical_references`, :func:`horizontal_references`, :func:`set_title`:
  labelled reference lines (0 bit, log2 N, ...) whose labels never overlap the title;
  :func:`spread_labels` moves labels of close lines apart once the layout is final.
- :func:`plain_text`: a label printed as is (no mathtext).
- :func:`figure_svg`, :func:`inline_svg`: a figure as inline SVG of an HTML page.
- :func:`panels_figure` (with :func:`panel_grid`, :func:`panel_title`,
  :func:`merged_styles`, :func:`legend_below`): small multiples, one panel per
  (calibrator, prior), sharing axes, styles and one legend below.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from lidframe.data.fileio import StrPath, atomic_path
from lidframe.errors import InputError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation

__all__ = [
    "pyplot",
    "save_figure",
    "SYSTEM_COLOURS",
    "LINE_STYLES",
    "MARKERS",
    "curve_styles",
    "vertical_references",
    "horizontal_references",
    "spread_labels",
    "plain_text",
    "set_title",
    "figure_svg",
    "inline_svg",
    "panels_figure",
    "panel_grid",
    "panel_title",
    "merged_styles",
    "legend_below",
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


def vertical_references(ax: Axes, lines: Sequence[tuple[float, str, Any]], *, fontsize: float = _REF_FONT) -> int:
    """Draw vertical reference lines, each labelled just above the axes, stacking labels that would overlap.

    Parameters
    ----------
    ax : matplotlib Axes
        Its x limits should be final (the data drawn).
    lines : sequence of (float, str, linestyle)
        (x in data units, label, matplotlib line style) of each line; a line outside the
        x limits is drawn without its label.
    fontsize : float
        Of the labels (points); give :func:`set_title` the same.

    Returns
    -------
    int
        Rows of labels used above the axes (for the title's padding, :func:`set_title`).
    """
    low, high = ax.get_xlim()
    width_pt = cast("Figure", ax.figure).get_figwidth() * ax.get_position().width * 72.0
    row_ends: list[float] = []  # right end (points from the axes' left) of the last label in each row
    for x, text, linestyle in sorted(lines, key=lambda line: line[0]):
        ax.axvline(x, color="0.45", lw=0.9, ls=linestyle, zorder=1)
        if not low <= x <= high:
            continue
        centre = (x - low) / (high - low) * width_pt
        half = 0.32 * fontsize * len(text)  # DejaVu Sans averages ~0.6 em per character
        row = next((r for r, end in enumerate(row_ends) if centre - half > end + 3.0), len(row_ends))
        if row == len(row_ends):
            row_ends.append(centre + half)
        else:
            row_ends[row] = centre + half
        ax.annotate(
            text, xy=(x, 1.0), xycoords=("data", "axes fraction"), xytext=(0, 2 + row * (fontsize + 2)),
            textcoords="offset points", ha="center", va="bottom", fontsize=fontsize, color="0.25",
            annotation_clip=False,
        )  # fmt: skip
    return len(row_ends)


def horizontal_references(
    ax: Axes, lines: Sequence[tuple[float, str, Any]], *, fontsize: float = _REF_FONT
) -> list[Annotation]:
    """Draw horizontal reference lines, each labelled just right of the axes.

    Parameters
    ----------
    ax : matplotlib Axes
    lines : sequence of (float, str, linestyle)
        (y in data units, label, matplotlib line style) of each line.
    fontsize : float
        Of the labels (points).

    Returns
    -------
    list of matplotlib Annotation
        The labels, in the order of *lines* (to move apart once the layout is final:
        :func:`spread_labels`).
    """
    labels = []
    for y, text, linestyle in lines:
        ax.axhline(y, color="0.45", lw=0.9, ls=linestyle, zorder=1)
        label = ax.annotate(
            text, xy=(1.0, y), xycoords=("axes fraction", "data"), xytext=(3, 0), textcoords="offset points",
            ha="left", va="center", fontsize=fontsize, color="0.25", annotation_clip=False,
        )  # fmt: skip
        labels.append(label)
    return labels


def spread_labels(labels: Sequence[Annotation], *, gap: float = 1.0) -> None:
    """Move labels stacked in one column apart, upwards, so that none overlaps the one below it.

    Call it once the figure's layout is final (after ``tight_layout``): it measures the
    labels with the figure's renderer.  Their order from the bottom up is kept, so each
    still reads beside its line; a label that overlaps none stays where it is.

    Parameters
    ----------
    labels : sequence of matplotlib Annotation
        Labels placed with an offset in points (``textcoords="offset points"``), as
        :func:`horizontal_references` places them.
    gap : float
        Points left between two labels.
    """
    if not labels:
        return
    fig = cast("Figure", labels[0].figure)
    renderer = cast(Any, fig.canvas).get_renderer()
    placed = sorted(labels, key=lambda label: label.get_window_extent(renderer).y0)
    top = -math.inf  # display px: the top of the label below
    for label in placed:
        box = label.get_window_extent(renderer)
        shift = max(0.0, top + gap * fig.dpi / 72.0 - box.y0)
        if shift > 0.0:
            x, y = label.xyann
            label.xyann = (x, y + shift * 72.0 / fig.dpi)
        top = box.y1 + shift


def plain_text(text: str) -> str:
    """*text* as matplotlib should print it: a ``$`` stays a dollar sign, never starts mathtext."""
    return text.replace("$", r"\$")


def set_title(
    ax: Axes, title: str | None, label_rows: int, *, fontsize: float = 9.0, label_fontsize: float = _REF_FONT
) -> None:
    """Set the axes title (printed as is), raised above *label_rows* rows of reference labels.

    Parameters
    ----------
    ax : matplotlib Axes
    title : str or None
        Nothing is set when empty or None.
    label_rows : int
        What :func:`vertical_references` returned.
    fontsize : float
        Points.
    label_fontsize : float
        The reference labels' (points), as given to :func:`vertical_references`.
    """
    if title:
        ax.set_title(plain_text(title), fontsize=fontsize, pad=4.0 + label_rows * (label_fontsize + 2))


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


# ------------------------------------------------------------------ small multiples
def panel_title(calibrator: str, prior: str, width: int = 44) -> str:
    """'calibrator X' and 'prior Y' on their own lines, long specs wrapped at *width* characters."""
    lines = []
    for text in (f"calibrator {calibrator}", f"prior {prior}"):
        lines += textwrap.wrap(text, width, break_on_hyphens=False) or [text]
    return plain_text("\n".join(lines))


def panel_grid(
    rows: Sequence[str], cols: Sequence[str], *, width: float = 3.6, height: float = 3.0
) -> tuple[Figure, Any]:
    """A figure of len(rows) x len(cols) panels sharing both axes, and its 2-D array of Axes."""
    plt = pyplot()
    return plt.subplots(
        len(rows), len(cols), figsize=(0.6 + width * len(cols), 1.0 + height * len(rows)), dpi=120,
        sharex=True, sharey=True, squeeze=False,
    )  # fmt: skip


def legend_below(fig: Figure, styles: Mapping[str, Mapping[str, Any]], *, kind: str) -> float:
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


def merged_styles(
    labels: Sequence[str], groups: Mapping[str, str] | None, styles: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    """label -> style: the one *styles* gives, else :func:`curve_styles`'s of the *labels* by their *groups*."""
    derived = curve_styles(labels, groups=groups)
    return {label: dict((styles or {}).get(label) or derived[label]) for label in labels}


def panels_figure(
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
    the legend's (``"line"`` or ``"scatter"``, :func:`legend_below`).
    """
    rows = list(dict.fromkeys(c for c, _ in panels))
    cols = list(dict.fromkeys(p for _, p in panels))
    labels = list(dict.fromkeys(label for data in panels.values() for label in data))
    chosen = merged_styles(labels, groups, styles)
    fig, axes = panel_grid(rows, cols)
    for i, calibrator in enumerate(rows):
        for j, prior in enumerate(cols):
            draw(axes[i, j], panels.get((calibrator, prior), {}), chosen)
    for i, calibrator in enumerate(rows):
        for j, prior in enumerate(cols):
            ax = axes[i, j]
            finish(ax, panel_title(calibrator, prior))
            ax.title.set_fontsize(8)
            if i < len(rows) - 1:
                ax.set_xlabel("")
            if j > 0:
                ax.set_ylabel("")
    bottom = legend_below(fig, chosen, kind=kind)
    fig.suptitle(plain_text(title), fontsize=10)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig
