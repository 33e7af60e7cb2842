"""The privacy-utility chart of the section "Privacy and utility": each row's disclosure against its WER.

:func:`utility_points` places each row of a system with a utility at its system's word
error rate (:class:`UtilityPoint` each), :func:`privacy_utility_figure` draws them (ALID
left, LIDmax right, the intervals of both as error bars), and :func:`utility_figure`
gives the page's chart its colours and caption.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs
import numpy as np

from lidframe.errors import InputError
from lidframe.report.plotting import (
    MARKERS,
    curve_styles,
    horizontal_references,
    plain_text,
    pyplot,
    set_title,
    spread_labels,
    vertical_references,
)
from lidframe.report.tables import is_missing
from lidframe.stats.interval import Interval

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from lidframe.report.figures import FigureMaker, InlineFigure
    from lidframe.report.model import Report, ReportSystem
    from lidframe.utility import Utility

__all__ = [
    "utility_interval",
    "utility_points",
    "UtilityPoint",
    "privacy_utility_figure",
    "utility_figure",
    "utility_figures",
]


def utility_interval(utility: Utility, key: str) -> Interval | None:
    """The bootstrap interval of ``"wer"`` or ``"rho_f0"`` of a Utility record, as the page shows it.

    None where the record has none (measured without a bootstrap, or without a reference
    for ρ_F0) or its ends are both NaN.
    """
    found = (utility.intervals or {}).get(key)
    if found is None or (is_missing(found.low) and is_missing(found.high)):
        return None
    return found


#: The settings that may tell a system's rows apart outside a ladder: (ReportSystem attribute, its name).
_ROW_SETTINGS = (("attacker", "attacker"), ("calibrator", "calibrator"), ("prior", "prior"), ("seed", "seed"))


def _rung_text(scenario: str | None, code: str) -> str:
    return f"plain speech ({code})" if scenario is None else f"{scenario} ({code})"


def utility_points(report: Report) -> tuple[list[UtilityPoint], str]:
    """The points of the privacy-utility chart: each row of a system with a utility, at its system's WER.

    A row's variant (its marker) is, on the threat-model ladder, its attacker and rung
    (``"ge2e · semi-informed (a-a)"``, ``"ge2e · plain speech (o-o)"``); otherwise the
    settings that differ between the charted rows (attacker, calibrator, prior, seed), by
    name and value; ``""`` when none does.  Where that leaves two rows of one system alike,
    their labels tell them apart.

    Parameters
    ----------
    report : Report

    Returns
    -------
    points : list of UtilityPoint
        In the order of :attr:`Report.utility` and its labels; empty without a utility.
    variant_title : str
        What the variants are (the title of the markers' legend).
    """
    by_label = {s.label: s for s in report.systems}
    ladder = {c.label: c for c in report.ladder.cells} if report.ladder is not None else {}
    charted = [(entry, by_label[label]) for entry in report.utility for label in entry.labels]
    others = [row for _, row in charted if row.label not in ladder]
    varying = [(key, name) for key, name in _ROW_SETTINGS if len({getattr(row, key) for row in others}) > 1]
    variant_of: dict[str, str] = {}
    for _, row in charted:
        cell = ladder.get(row.label)
        if cell is not None:
            variant_of[row.label] = f"{cell.entry.attacker} · {_rung_text(cell.entry.scenario, cell.entry.code)}"
        else:
            variant_of[row.label] = " · ".join(f"{name} {getattr(row, key)}" for key, name in varying)
    for entry in report.utility:  # rows of one system that nothing above tells apart
        seen = [variant_of[label] for label in entry.labels]
        if len(set(seen)) < len(seen):
            for label in entry.labels:
                variant_of[label] = label
    titles = []
    if any(row.label in ladder for _, row in charted):
        titles.append("attacker · rung")
    if others and varying:
        titles.append(" · ".join(name for _, name in varying))
    points = []
    for entry, row in charted:
        wer = utility_interval(entry.utility, "wer")
        alid, lid_max = row.headline.intervals.get("alid"), row.headline.intervals.get("lid_max")
        points.append(
            UtilityPoint(
                label=row.label,
                system=entry.system,
                variant=variant_of[row.label],
                wer=float(entry.utility.wer),
                wer_interval=wer,
                alid=row.headline.alid,
                alid_interval=alid,
                lid_max=row.headline.lid_max,
                lid_max_interval=lid_max,
                log2_n=row.headline.log2_n,
            )
        )
    return points, " / ".join(titles) or "row"


def _names(items) -> str:
    return ", ".join(items)


def utility_figure(maker: FigureMaker) -> tuple[Figure, str] | None:
    """The privacy-utility chart (:func:`privacy_utility_figure`) of a page and its caption.

    None without a utility.  A system keeps its colour of the page's other figures
    (that of its first row); the caption says what is up, down, left and right, which
    error bars are drawn and which are missing for want of an interval, and the
    caller's note on the speech measured.
    """
    report = maker.report
    points, variant_title = utility_points(report)
    if not points:
        return None
    by_label = {s.label: s for s in report.systems}
    rows = [by_label[p.label] for p in points]
    colours = {entry.system: maker.system_styles[by_label[entry.labels[0]].name]["color"] for entry in report.utility}
    fig = privacy_utility_figure(
        points,
        colours=colours,
        variant_title=variant_title,
        title=f"Privacy against utility ({maker.setting(rows)})",
    )
    marks = "colour: the system" + ("" if len({p.variant for p in points}) == 1 else f"; marker: the {variant_title}")
    parts = [
        f"Privacy against utility ({maker.setting(rows)}): each row of a system with a utility is a point at "
        "the word error rate (WER, %) of the system's speech, against its ALID (above) and its LIDmax (below, "
        f"bits); {marks}. Up and left: leaks identity and keeps the words; down and right: hides identity and "
        "loses the words; down and left, where an anonymiser should be: hides identity and keeps the words.",
        _wer_bars_text(report, points),
        _lid_bars_text(points, rows),
    ]
    ceilings = sorted({round(p.log2_n, 12) for p in points})
    parts.append(
        f"Dotted line: the ceiling log2 N = {' or '.join(f'{c:.2f}' for c in ceilings)}; dashed: WER 100 %, as "
        "many errors as reference words."
    )
    if report.utility_note:
        parts.append(report.utility_note.rstrip(".") + ".")
    return fig, " ".join(parts)


def _wer_bars_text(report: Report, points: Sequence[UtilityPoint]) -> str:
    """What the chart's horizontal error bars are, and the systems without them."""
    without_wer = [
        e.system for e in report.utility if all(p.wer_interval is None for p in points if p.system == e.system)
    ]
    if len(without_wer) == len(report.utility):
        return "No horizontal error bars: no WER interval was computed (lidframe utility --bootstrap)."
    text = "Horizontal error bars: the bootstrap intervals of WER (the table above)"
    if without_wer:
        text += f"; none for {_names(without_wer)}, measured without a bootstrap"
    return text + "."


def _lid_bars_text(points: Sequence[UtilityPoint], rows: Sequence[ReportSystem]) -> str:
    """What the chart's vertical error bars are, and the rows without them."""
    without_lid = [p.label for p in points if p.alid_interval is None]
    levels = sorted({f"{100 * r.headline.interval_level:g} %" for r in rows if r.headline.interval_level})
    units = sorted({f"{r.headline.interval_unit}-" for r in rows if r.headline.interval_unit})
    if len(without_lid) == len(points):
        return "No vertical error bars: no interval of ALID or LIDmax was computed."
    text = (
        f"Vertical error bars: the {', '.join(levels)} {''.join(units) if len(units) == 1 else ''}bootstrap "
        "intervals of ALID and LIDmax († LIDmax's is biased low: a percentile interval of a maximum)"
    )
    text = " ".join(text.split())
    if without_lid:
        text += f"; none for {_names(without_lid)}, whose intervals were not computed"
    return text + "."


def utility_figures(maker: FigureMaker) -> list[InlineFigure]:
    """The privacy-utility chart (:func:`utility_figure`) as inline SVG; none without a utility."""
    made = utility_figure(maker)
    return [] if made is None else [maker.inline(*made)]


def _finite(interval: Interval | None) -> Interval | None:
    """*interval*, or None for none or one whose ends are not both finite (no bar to draw)."""
    if interval is None or not (math.isfinite(interval.low) and math.isfinite(interval.high)):
        return None
    return interval


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
    wer_interval : Interval or None
        Its bootstrap interval (fractions); None without one (or without finite ends).
    alid, lid_max : float
        The row's ALID and LIDmax (bits).
    alid_interval, lid_max_interval : Interval or None
        Their bootstrap intervals (bits); None without one (or without finite ends).
    log2_n : float
        The row's ceiling log2 N (bits).
    """

    label: str
    system: str
    variant: str
    wer: float
    wer_interval: Interval | None = attrs.field(converter=_finite)
    alid: float
    alid_interval: Interval | None = attrs.field(converter=_finite)
    lid_max: float
    lid_max_interval: Interval | None = attrs.field(converter=_finite)
    log2_n: float


def _ends(interval: Interval | None) -> tuple[float, float] | None:
    return None if interval is None else interval.bounds


def _error(value: float, interval: tuple[float, float] | None) -> np.ndarray | None:
    """The (2, 1) error of a bar that spans *interval*'s ``(low, high)`` (and *value*, should it miss it); None without one."""
    if interval is None:
        return None
    low, high = interval
    return np.array([[max(0.0, value - low)], [max(0.0, high - value)]])


#: The chart is drawn for a phone: 4.2 in wide (403 CSS px), so in the page's narrow layout -- a window
#: 420 CSS px wide, 378 px inside its margins -- the inline SVG shrinks by 0.94 only; no text is under
#: :data:`_FONT` points, 10 CSS px there.  A wider window shows it at its own size.
_CHART_WIDTH = 4.2
#: The height (inches) of each of the two panels' boxes, title and labels included.
_PANEL_HEIGHT = 2.6
#: The chart's smallest type (points): tick labels, reference labels, legends.
_FONT = 8.0


def _wrapped(text: str, width_in: float, fontsize: float) -> str:
    """*text* wrapped into lines that fit *width_in* inches at *fontsize* points (about 0.6 em a character)."""
    import textwrap

    chars = max(12, int(width_in * 72.0 / (0.6 * fontsize)))
    return "\n".join(textwrap.wrap(text, chars, break_on_hyphens=False)) or text


def _legend_rows(fig: Figure, groups: Sequence[tuple[list[Any], list[str], str]]) -> float:
    """Legends stacked under the axes, the first at the bottom: (handles, labels, title) each.

    Each takes as many columns as fit the figure's width (measured), a label too long for
    one column is wrapped.

    Returns
    -------
    float
        Their height (inches) with the margins; the figure is made that much taller.
    """
    renderer = cast(Any, fig.canvas).get_renderer()  # Agg's canvas (pyplot())
    width = fig.get_figwidth()
    bottom = 0.05
    for handles, labels, title in groups:
        texts = [_wrapped(plain_text(label), width - 0.6, _FONT) for label in labels]
        for ncol in range(min(len(handles), 5), 0, -1):
            legend = fig.legend(
                handles, texts, loc="lower center", bbox_to_anchor=(width / 2, bottom),
                bbox_transform=fig.dpi_scale_trans, ncol=ncol, fontsize=_FONT, title=plain_text(title),
                title_fontsize=_FONT, frameon=False, columnspacing=1.0, handletextpad=0.4,
            )  # fmt: skip
            if ncol == 1 or legend.get_window_extent(renderer).width <= (width - 0.1) * fig.dpi:
                break
            legend.remove()
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
    """Privacy against utility: each row's ALID (above) and LIDmax (below) against its system's word error rate.

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

    It is drawn for the page's narrow layout: 4.2 in wide, the ALID panel above the LIDmax
    panel, no text under 8 pt (10 CSS px in a window 420 px wide, where the page's SVG
    shrinks to 378 px), titles and legend labels wrapped to the width, the legends as
    many columns as fit, and labels of close ceilings moved apart.

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
    fig, axes = plt.subplots(2, 1, figsize=(_CHART_WIDTH, 2 * _PANEL_HEIGHT), dpi=120, sharex=True, sharey=True)
    for ax, (metric, _) in zip(axes, _UTILITY_PANELS):
        _draw_utility_points(ax, points, metric, colour_of, marker_of)
    labels = _finish_utility_panels(axes, points)
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
        fig.suptitle(_wrapped(plain_text(title), _CHART_WIDTH - 0.2, 9.0), fontsize=9.0)
    fig.tight_layout(rect=(0, bottom / fig.get_figheight(), 1, 1), h_pad=1.2)
    for ax_labels in labels:  # the layout is final: labels of close ceilings apart
        spread_labels(ax_labels)
    return fig


#: (metric, title) of the privacy-utility chart's two panels, left to right.
_UTILITY_PANELS = (("alid", "ALID: the average disclosure"), ("lid_max", "LIDmax: the largest disclosure"))


def _draw_utility_points(
    ax: Axes, points: Sequence[UtilityPoint], metric: str, colour_of: Mapping[str, str], marker_of: Mapping[str, str]
) -> None:
    """One error-bar container per point with a finite WER and *metric* (its label the point's), into *ax*."""
    for p in points:
        x, y = 100.0 * p.wer, float(getattr(p, metric))
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        wer_interval = None if p.wer_interval is None else (100.0 * p.wer_interval.low, 100.0 * p.wer_interval.high)
        colour = colour_of[p.system]
        ax.errorbar(
            [x], [y], xerr=_error(x, wer_interval), yerr=_error(y, _ends(getattr(p, f"{metric}_interval"))),
            fmt=marker_of[p.variant], ls="none", ms=7, color=colour, mec=colour, mfc=colour, ecolor=colour,
            elinewidth=1.0, capsize=3, alpha=0.9, label=plain_text(p.label), zorder=3,
        )  # fmt: skip


def _finish_utility_panels(axes: Sequence[Axes], points: Sequence[UtilityPoint]) -> list[list[Any]]:
    """The shared limits, the labelled lines (0 bit, each log2 N, WER 100 %), the labels and titles of both panels.

    Returns
    -------
    list of list of matplotlib Annotation
        Each panel's labels right of it (0 bit, log2 N), to move apart once the layout is final.
    """
    biased = any(p.lid_max_interval is not None for p in points)
    ceilings = sorted({round(p.log2_n, 12) for p in points if math.isfinite(p.log2_n)})
    highest = max([100.0] + [100.0 * p.wer for p in points if math.isfinite(p.wer)])
    highest = max([highest] + [100.0 * p.wer_interval.high for p in points if p.wer_interval is not None])
    low_y, high_y = axes[0].get_ylim()
    top = max(ceilings) if ceilings else high_y
    labels = []
    for ax, (metric, panel_title) in zip(axes, _UTILITY_PANELS):
        ax.set_xlim(-3.0, 1.04 * highest + 1.0)
        ax.set_ylim(min(low_y, -0.05 * top), max(high_y, 1.08 * top))
        references = [(0.0, "0 bit", "-"), *((c, f"log2 N = {c:.2f}", ":") for c in ceilings)]
        labels.append(horizontal_references(ax, references, fontsize=_FONT))
        rows = vertical_references(ax, [(100.0, "WER 100 %", "--")], fontsize=_FONT)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=_FONT)
        ax.set_ylabel(f"{panel_title.split(':')[0]} disclosed (bits)", fontsize=_FONT + 0.5)
        if metric == "lid_max" and biased:
            panel_title += "\n(interval † biased low)"
        set_title(ax, panel_title, rows, fontsize=_FONT + 0.5, label_fontsize=_FONT)
    axes[-1].set_xlabel("WER (%) of the recogniser on the system's speech", fontsize=_FONT + 0.5)
    return labels
