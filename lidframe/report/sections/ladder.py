"""The page's section "Threat-model ladder": each anonymised system's disclosure rung by rung.

Its record is the report's :class:`~lidframe.report.sections.ladder_model.Ladder`: the
table (:func:`ladder_table`: anonymised systems by attacker and rung, the plain speech as
the reference, and the rungs' sides and models), the figure (:func:`ladder_figure`,
drawn on the page by :func:`ladder_figures`), and why the section does not apply to a
page without a ladder (:func:`absent`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs
import numpy as np

from lidframe.data.scenario import SCENARIOS
from lidframe.report.plotting import curve_styles, horizontal_references, plain_text, pyplot, set_title
from lidframe.report.sections.ladder_model import Ladder, LadderCell, LadderRung
from lidframe.report.tables import bits, interval_text, percent, sort_key

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from lidframe.report.figures import FigureMaker, InlineFigure
    from lidframe.report.model import Report
    from lidframe.report.sections import Page

__all__ = [
    "LadderMetric",
    "LadderShown",
    "LadderRow",
    "LadderColumn",
    "LadderTable",
    "ladder_table",
    "ladder_figure",
    "ladder_figures",
    "LadderSection",
    "show",
    "absent",
]


@attrs.frozen
class LadderMetric:
    """One number of a ladder cell: its key, title, text, interval and full-precision value."""

    key: str
    title: str
    text: str
    interval: str
    sort: str
    biased_low: bool = False


@attrs.frozen
class LadderShown:
    """One cell of the ladder table: an entry's numbers over *span* columns; no label and no metrics: not evaluated."""

    label: str
    span: int
    metrics: tuple[LadderMetric, ...]


@attrs.frozen
class LadderRow:
    """One row of the ladder table: its header (a system), a note under it, its cells."""

    header: str
    note: str
    cells: tuple[LadderShown, ...]


@attrs.frozen
class LadderColumn:
    """One column of the ladder table: an attacker at a rung (with the rung's code)."""

    attacker: str
    rung: str
    code: str


@attrs.frozen
class LadderTable:
    """The ladder section's tables: the numbers by system and rung, and the rungs' sides and models.

    Attributes
    ----------
    table_id, caption : str
    groups : tuple of (str, int)
        (attacker, how many columns it has), the first header row.
    columns : tuple of LadderColumn
        The second header row.
    rows : tuple of LadderRow
        One per anonymised system.
    references : tuple of LadderRow
        The plain speech (nothing anonymised): per system its entries, each under its
        attacker's columns; an entry of an attacker without columns in a row of its own.
    rungs : tuple of LadderRung
        The rung table's rows (:meth:`lidframe.report.sections.ladder_model.Ladder.rungs`).
    interval_level : str
        ``"95 % bootstrap intervals in brackets"``, or ``"no intervals computed"``.
    biased_low : bool
        Whether a LIDmax interval is shown (and so the note that it is biased low).
    log2_n : tuple of float
        The distinct ceilings log2 N of the entries (bits).
    ceiling : str
        They as the page prints them (``"4.86"``, ``"4.86 or 5.00"``).
    """

    table_id: str
    caption: str
    groups: tuple[tuple[str, int], ...]
    columns: tuple[LadderColumn, ...]
    rows: tuple[LadderRow, ...]
    references: tuple[LadderRow, ...]
    rungs: tuple[LadderRung, ...]
    interval_level: str
    biased_low: bool
    log2_n: tuple[float, ...]
    ceiling: str


def _ladder_shown(cell: LadderCell | None, span: int = 1) -> LadderShown:
    """The numbers of *cell* (ALID, LIDmax, EER, with the intervals) as a table cell; an empty cell for None."""
    if cell is None:
        return LadderShown("", span, ())
    metrics = (
        LadderMetric("alid", "ALID", bits(cell.alid), interval_text(cell.alid_interval, bits), sort_key(cell.alid)),
        LadderMetric(
            "lid_max",
            "LIDmax",
            bits(cell.lid_max),
            interval_text(cell.lid_max_interval, bits),
            sort_key(cell.lid_max),
            biased_low=bool(interval_text(cell.lid_max_interval, bits)),
        ),
        LadderMetric("eer", "EER", percent(cell.eer), "", sort_key(cell.eer)),
    )
    return LadderShown(cell.label, span, metrics)


def _reference_rows(ladder: Ladder, groups: Sequence[tuple[str, int]], n_columns: int) -> list[LadderRow]:
    """The reference rows: per system its plain-speech entries under their attackers' columns, then the others."""
    references = ladder.references()
    grouped = {attacker for attacker, _ in groups}
    rows = []
    for system in dict.fromkeys(c.entry.system for c in references):
        mine = [c for c in references if c.entry.system == system]
        if any(c.entry.attacker in grouped for c in mine):
            cells = [_ladder_shown(ladder.cell(system, attacker, None), span) for attacker, span in groups]
            rows.append(LadderRow(system, "nothing anonymised (o-o)", tuple(cells)))
        for cell in mine:
            if cell.entry.attacker not in grouped:
                note = f"nothing anonymised (o-o), attacker {cell.entry.attacker}"
                rows.append(LadderRow(system, note, (_ladder_shown(cell, n_columns),)))
    return rows


def ladder_table(ladder: Ladder) -> LadderTable:
    """The threat-model ladder as the page shows it: anonymised systems (rows) by attacker and rung (columns).

    Each cell holds the entry's ALID and LIDmax (bits) with their intervals, and its EER;
    the rows of the plain speech follow as the reference; the rung table states each
    rung's enrolment and trial sides and each attacker's model.

    Parameters
    ----------
    ladder : Ladder

    Returns
    -------
    LadderTable
    """

    columns = tuple(LadderColumn(attacker, rung, SCENARIOS[rung].code) for attacker, rung in ladder.columns())
    groups = tuple((attacker, sum(c.attacker == attacker for c in columns)) for attacker in ladder.attackers())
    rows = tuple(
        LadderRow(system, "", tuple(_ladder_shown(ladder.cell(system, c.attacker, c.rung)) for c in columns))
        for system in ladder.systems()
    )
    levels = sorted({c.interval_level for c in ladder.cells if c.interval_level is not None})
    has_intervals = any(c.alid_interval is not None or c.lid_max_interval is not None for c in ladder.cells)
    if not has_intervals:
        level = "no intervals computed"
    elif levels:
        level = f"{', '.join(f'{v:.0%}' for v in levels)} bootstrap intervals in brackets"
    else:
        level = "bootstrap intervals in brackets"
    references = tuple(_reference_rows(ladder, groups, len(columns)))
    shown = [c for row in (*rows, *references) for c in row.cells]
    caption = "ALID and LIDmax (bits) and EER of each anonymised system (rows) by attacker and rung (columns)"
    if references:
        caption += "; under them the plain speech, the reference"
    return LadderTable(
        table_id="ladder-table",
        caption=caption,
        groups=groups,
        columns=columns,
        rows=rows,
        references=references,
        rungs=tuple(ladder.rungs()),
        interval_level=level,
        biased_low=any(m.biased_low for c in shown for m in c.metrics),
        log2_n=tuple(ladder.log2_n_values()),
        ceiling=" or ".join(bits(v) for v in ladder.log2_n_values()),
    )


#: Line styles of the ladder figure's reference lines (plain speech), in order.
_REFERENCE_STYLES = ("--", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 2)))


def ladder_figure(
    ladder: Ladder, *, styles: Mapping[str, Mapping[str, Any]] | None = None, title: str | None = None
) -> Figure:
    """ALID against the rung of the threat-model ladder: one line per system and attacker, interval error bars.

    The x axis holds the rungs with an entry, in ladder order (ignorant, lazy-informed,
    semi-informed), each with its code; every anonymised system and attacker is one line
    through its rungs, a point at its ALID with its bootstrap interval as an error bar
    (points of one rung are set a little apart, so no bar hides another).  The first
    attacker's lines are solid with filled marks, other attackers' dashed with hollow
    marks, in their system's colour.  The reference entries (plain speech, no rung) are
    grey horizontal lines at their ALID; the ceiling log2 N and 0 bit are labelled right
    of the axes.  A legend below names every line.

    Parameters
    ----------
    ladder : Ladder
        The report's ladder (:func:`lidframe.report.sections.ladder_model.ladder_from_results`).
    styles : mapping of str to mapping, optional
        system -> style (``color``, ``marker``), to keep the colours of the page's other
        figures; by default one per system (:func:`lidframe.report.plotting.curve_styles`).
    title : str, optional
        Default ``"ALID up the threat-model ladder"``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = pyplot()
    rungs = ladder.rung_names()
    x_of = {rung: float(i) for i, rung in enumerate(rungs)}
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    _draw_ladder_lines(ax, ladder, x_of, styles)
    ceilings = ladder.log2_n_values()
    ax.set_xlim(-0.6, len(rungs) - 0.4)
    low_y, high_y = ax.get_ylim()
    top = max(ceilings) if ceilings else high_y
    ax.set_ylim(min(low_y, -0.05 * top), max(high_y, 1.08 * top))
    horizontal_references(ax, [(0.0, "0 bit", "-"), *((c, f"log2 N = {c:.2f}", ":") for c in ceilings)])
    ax.set_xticks([x_of[rung] for rung in rungs])
    ax.set_xticklabels([f"{rung}\n({SCENARIOS[rung].code})" for rung in rungs])
    ax.set_xlabel(
        "rung of the ladder (the attacker knows more to the right)\n"
        "code: enrolment, then trial speech (o original, a anonymised; a-a: both anonymised)",
        fontsize=8,
    )
    ax.set_ylabel("ALID (bits), bootstrap interval as error bar")
    ax.grid(alpha=0.3, axis="y")
    set_title(ax, title or "ALID up the threat-model ladder", 0)
    _legend_below_ladder(fig, ax)
    return fig


def _draw_ladder_lines(
    ax: Axes, ladder: Ladder, x_of: Mapping[str, float], styles: Mapping[str, Mapping[str, Any]] | None
) -> None:
    """The lines of :func:`ladder_figure`: each system and attacker through its rungs, then the reference lines."""
    systems = ladder.systems()
    derived = curve_styles(systems)
    style_of = {system: {**derived[system], **dict((styles or {}).get(system) or {})} for system in systems}
    attackers = ladder.attackers()
    series = [
        (system, attacker, [c for rung in x_of if (c := ladder.cell(system, attacker, rung)) is not None])
        for attacker in attackers
        for system in systems
    ]
    series = [(system, attacker, cells) for system, attacker, cells in series if cells]
    spread = 0.3 if len(series) > 1 else 0.0
    offsets = np.linspace(-spread / 2, spread / 2, len(series)) if series else np.array([])
    for (system, attacker, cells), offset in zip(series, offsets, strict=True):
        style = style_of[system]
        first = attacker == attackers[0]
        x = np.array([x_of[str(c.entry.scenario)] for c in cells]) + offset
        y = np.array([c.alid for c in cells], dtype=np.float64)
        low = np.array([np.nan if c.alid_interval is None else c.alid_interval.low for c in cells])
        high = np.array([np.nan if c.alid_interval is None else c.alid_interval.high for c in cells])
        yerr = np.nan_to_num(np.abs(np.vstack([y - low, high - y])), nan=0.0)
        ax.errorbar(
            x, y, yerr=yerr, color=style["color"], marker=style["marker"], ms=6, lw=1.4, capsize=3,
            ls="-" if first else "--", mfc=style["color"] if first else "white", mec=style["color"],
            label=plain_text(f"{system}, {attacker}"), zorder=3,
        )  # fmt: skip
    for k, cell in enumerate(ladder.references()):
        ax.axhline(
            cell.alid, color="0.5", lw=1.0, ls=_REFERENCE_STYLES[k % len(_REFERENCE_STYLES)], zorder=2,
            label=plain_text(f"{cell.entry.system}, {cell.entry.attacker}: nothing anonymised"),
        )  # fmt: skip


def _legend_below_ladder(fig: Figure, ax: Axes) -> None:
    """A legend of every line of *ax* under it, the error-bar lines first; the figure made taller to hold it."""
    handles, labels = ax.get_legend_handles_labels()  # matplotlib lists the lines before the error bars
    order = sorted(range(len(handles)), key=lambda i: not hasattr(handles[i], "has_yerr"))
    handles, labels = [handles[i] for i in order], [labels[i] for i in order]
    ncol = 2 if max((len(label) for label in labels), default=0) <= 44 else 1
    legend = fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    renderer = cast(Any, fig.canvas).get_renderer()  # Agg's canvas (pyplot())
    height = legend.get_window_extent(renderer).height / fig.dpi  # inches, whatever the figure's
    fig.set_figheight(fig.get_figheight() + height)
    bottom = (height + 0.05) / fig.get_figheight()
    fig.tight_layout(rect=(0, bottom, 1, 1))


def ladder_figures(maker: FigureMaker) -> list[InlineFigure]:
    """ALID per rung of the report's ladder (:func:`ladder_figure`).

    A ladder system keeps the colour and marker of its first row's system on the page
    (in a grid, the rung's: ``b3 (ignorant)``); none without a ladder.
    """
    ladder = maker.report.ladder
    if ladder is None:
        return []
    labels = set(ladder.labels())
    cells = [s for s in maker.report.systems if s.label in labels]
    setting = maker.setting(cells)
    # a ladder system keeps the page colour of its first row's name (a grid's names add the rung)
    name_of = {s.label: s.name for s in cells}
    first_name: dict[str, str] = {}
    for cell in ladder.cells:
        first_name.setdefault(cell.entry.system, name_of[cell.label])
    styles = {system: maker.system_styles[name] for system, name in first_name.items() if name in maker.system_styles}
    fig = ladder_figure(ladder, styles=styles, title=f"ALID up the threat-model ladder ({setting})")
    levels = sorted({c.interval_level for c in ladder.cells if c.interval_level is not None})
    bars = (
        f"error bars: {', '.join(f'{level:.0%}' for level in levels)} bootstrap intervals"
        if levels
        else "no intervals computed"
    )
    attackers = ladder.attackers()
    lines = f"solid lines: attacker {attackers[0]}"
    if len(attackers) > 1:
        lines += f"; dashed, hollow marks: attacker{'s' if len(attackers) > 2 else ''} {', '.join(attackers[1:])}"
    caption = (
        f"ALID (bits) of each anonymised system at each rung of the threat-model ladder ({setting}); {bars}; {lines}"
    )
    if ladder.references():
        caption += "; grey horizontal lines: the plain speech (nothing anonymised) of the reference rows"
    caption += "; dotted line: the ceiling log2 N."
    return [maker.inline(fig, caption)]


@attrs.frozen
class LadderSection:
    """What the section shows: its tables and its figure."""

    table: LadderTable
    figures: tuple[InlineFigure, ...]


def show(page: Page) -> LadderSection:
    """The section of *page* (which has a ladder: :func:`absent` says None).

    The table's caption names the calibrator and prior of its cells, and on a grid's page
    with more of them, that the others are in the comparison.
    """
    ladder = page.report.ladder
    assert ladder is not None
    labels = set(ladder.labels())
    table = ladder_table(ladder)
    caption = f"{table.caption} ({page.maker.setting([s for s in page.report.systems if s.label in labels])}"
    if page.report.kind == "grid" and len({(s.calibrator, s.prior, s.seed) for s in page.report.systems}) > 1:
        caption += "; the grid's other calibrators, priors and seeds are in the comparison"
    return LadderSection(attrs.evolve(table, caption=caption + ")"), tuple(ladder_figures(page.maker)))


def absent(report: Report) -> str | None:
    """Why the section does not apply to *report* (it has no ladder); None when it does."""
    if report.ladder is not None:
        return None
    if report.kind == "dp-audit":
        return (
            "Not applicable: a DP audit releases embeddings through the Gaussian mechanism; no anonymiser is "
            "attacked up the VoicePrivacy threat-model ladder."
        )
    if report.kind == "grid":
        return (
            'Not evaluated: the grid has no scenarios axis. With [grid] scenarios = ["ignorant", '
            '"lazy-informed", "semi-informed"] (docs/scenarios.md) its data-dir systems are scored on each '
            "rung, and this section shows each anonymised system rung by rung."
        )
    return (
        "Not evaluated: no system was attacked up the VoicePrivacy threat-model ladder (ignorant o-a: "
        "original enrolment, anonymised trials; lazy-informed and semi-informed a-a: anonymised enrolment, "
        "anonymised trials). The real-voice demo (lidframe demo) does; from Python, "
        "report_from_results(..., ladder=...)."
    )
