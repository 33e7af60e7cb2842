"""The page's section "Comparison": every system (cell) with its headline metrics, and the overview figures.

Its record is each system's :class:`~lidframe.report.headline.Headline`: the table
(:func:`comparison_table`, one column per metric of :data:`METRIC_COLUMNS` computed for
any system, and rank-1's chance 1/N beside it) and the overview figures (:func:`overview_figures`: the LID CCDFs of every
system, and EER against ALID and LIDmax), which a grid's report also writes as PNG files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.metrics import catalogue
from lidframe.report.lid_figures import eer_alid_figure, eer_alid_panels_figure, lid_ccdf_figure, lid_ccdf_panels_figure
from lidframe.report.sections.identification import chance_column, rank1_chance_cell
from lidframe.report.tables import (
    _BIASED_LOW,
    Cell,
    Column,
    Table,
    is_missing,
    number_cell,
    page_format,
    text_cell,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lidframe.report.figures import FigureMaker, InlineFigure
    from lidframe.report.model import Report, ReportSystem
    from lidframe.report.sections import Page

__all__ = [
    "METRIC_COLUMNS",
    "comparison_table",
    "operating_point_text",
    "overview_figures",
    "ComparisonSection",
    "show",
]


#: (key, title, formatter, tooltip) of the comparison table's metric columns, in order.
METRIC_COLUMNS: tuple[tuple[str, str, Callable[[Any], str], str], ...] = tuple(
    (m.key, m.label, page_format(m), m.description) for m in catalogue.table("comparison")
)


def comparison_table(report: Report) -> Table:
    """Every cell with its headline metrics; a metric not computed for any cell is named in the caption instead.

    Beside rank-1 its chance level 1/N (:func:`~lidframe.report.sections.identification.rank1_chance_cell`).
    """
    grid = report.kind == "grid"
    seeds = grid and len({s.seed for s in report.systems}) > 1
    columns = [Column("system", False)]
    if grid:
        columns += [Column("attacker", False)]
    columns += [Column("calibrator", False), Column("prior", False)]
    if seeds:
        columns.append(Column("seed", True))
    metrics = [m for m in METRIC_COLUMNS if any(not is_missing(getattr(s.headline, m[0])) for s in report.systems)]
    columns += _metric_columns(metrics)
    rows = []
    for s in report.systems:
        cells = [text_cell(s.name if grid else s.label)]
        if grid:
            cells.append(text_cell(s.attacker))
        cells += [text_cell(s.calibrator), text_cell(s.prior)]
        if seeds:
            cells.append(text_cell(s.seed))
        cells += _metric_cells(s, metrics)
        rows.append(tuple(cells))
    caption = "Every system, with its confidence intervals where computed"
    point = operating_point_text(report.systems) if any(m[0] in _DCF_KEYS for m in metrics) else ""
    if point:
        caption += f"; minDCF and actDCF at {point}"
    left_out = [title for key, title, _, _ in METRIC_COLUMNS if all(m[0] != key for m in metrics)]
    if left_out:
        caption += f"; not computed for any, so not shown: {', '.join(left_out)}"
    return Table("comparison-table", caption, tuple(columns), tuple(rows))


def _metric_columns(metrics: Sequence[tuple[str, str, Callable[[Any], str], str]]) -> list[Column]:
    """The columns of *metrics* (of :data:`METRIC_COLUMNS`), rank-1's followed by its chance 1/N."""
    columns = []
    for key, title, _, tip in metrics:
        columns.append(Column(title, True, tip, key=key))
        if key == "rank1_rate":
            columns.append(chance_column("1/N"))
    return columns


def _metric_cells(system: ReportSystem, metrics: Sequence[tuple[str, str, Callable[[Any], str], str]]) -> list[Cell]:
    """*system*'s cells of *metrics*, as :func:`_metric_columns` heads them."""
    h = system.headline
    cells = []
    for key, _, fmt, _ in metrics:
        value = getattr(h, key)
        cell = number_cell(value, fmt, h.intervals.get(key), biased_low=key in _BIASED_LOW)
        if key == "max_abs_llr_log10" and h.zebra_tag:
            cell = attrs.evolve(cell, text=f"{cell.text} ({h.zebra_tag})")  # ZEBRA's tag beside its value
        cells.append(cell)
        if key == "rank1_rate":
            cells.append(rank1_chance_cell(value, h.n_enrolled))
    return cells


#: The detection costs, measured at the binary view's operating point (:func:`operating_point_text`).
_DCF_KEYS = ("min_dcf", "act_dcf")


def operating_point_text(systems: Sequence[ReportSystem]) -> str:
    """Where minDCF and actDCF were measured, in words: ``"P_target = 0.01, C_miss = 1, C_fa = 1"``.

    The systems' binary operating points (:attr:`Headline.operating_point
    <lidframe.report.headline.Headline.operating_point>`); where they differ, each system's
    after its label (``"anon: P_target = 0.05, ...; plain: ..."``); ``""`` where none has one.
    """
    names = {"p_target": "P_target", "c_miss": "C_miss", "c_fa": "C_fa"}
    points = {s.label: s.headline.operating_point for s in systems if s.headline.operating_point is not None}

    def text(point: tuple[tuple[str, float], ...]) -> str:
        return ", ".join(f"{names.get(k, k)} = {v:g}" for k, v in point)

    if len(set(points.values())) == 1:
        return text(next(iter(points.values())))
    return "; ".join(f"{label}: {text(point)}" for label, point in points.items())


def _combos(systems) -> list[tuple[str, str]]:
    return list(dict.fromkeys((s.calibrator, s.prior) for s in systems))


def overview_figures(maker: FigureMaker) -> list[tuple[str, Figure, str]]:
    """The comparison figures as matplotlib Figures: ``(name, figure, caption)`` each.

    ``"lid_ccdf"``: LID CCDFs of every system; ``"eer_vs_lid"``: EER against ALID and
    LIDmax, the systems named in a legend.  In a grid with several calibrator x prior
    combinations both are small multiples, one panel per combination (titled with
    it); otherwise one panel whose title names the calibrator and the prior.  The
    grid's report writes them as ``lid_ccdf.png`` and ``eer_vs_lid.png``, the page
    inlines them (:func:`show`).
    """
    systems = [s for s in maker.report.systems if s.lid_bits is not None]
    figures: list[tuple[str, Figure, str]] = []
    combos = _combos(maker.report.systems)
    grid = maker.report.kind == "grid" and len(combos) > 1
    if systems:
        if grid:
            panels: dict[tuple[str, str], dict[str, Any]] = {c: {} for c in _combos(systems)}
            for s in systems:
                # several seeds of a cell differ in their intervals only: the first one's curve
                panels[(s.calibrator, s.prior)].setdefault(s.name, s.lid_bits)
            fig = lid_ccdf_panels_figure(
                panels,
                title="Share of trials with LID > x, per calibrator (rows) and prior (columns)",
                log2_n=maker.log2_n(systems),
                styles=maker.system_styles,
            )
            caption = (
                "LID CCDF per system, one panel per calibrator × prior "
                f"({len(combos)} combinations: {'; '.join(f'calibrator {c}, prior {p}' for c, p in combos)})."
            )
        else:
            curves, styles = _one_panel(maker, systems, lambda s: s.lid_bits)
            fig = lid_ccdf_figure(
                curves,
                title=f"Share of trials with LID > x ({maker.setting(systems)})",
                log2_n=maker.log2_n(systems),
                styles=styles,
            )
            caption = f"LID CCDF per system ({maker.setting(systems)}); log-scale share of trials."
        figures.append(("lid_ccdf", fig, caption))
    scatter = [s for s in maker.report.systems if s.headline.eer == s.headline.eer]
    if scatter and maker.report.kind != "dp-audit":
        if grid:
            points: dict[tuple[str, str], dict[str, tuple[float, float, float]]] = {c: {} for c in combos}
            for s in scatter:
                points[(s.calibrator, s.prior)].setdefault(
                    s.name, (s.headline.eer, s.headline.alid, s.headline.lid_max)
                )
            fig = eer_alid_panels_figure(
                points,
                title="EER against ALID (filled) and LIDmax (hollow), per calibrator and prior",
                log2_n=maker.log2_n(scatter),
                styles=maker.system_styles,
            )
            caption = "EER against ALID and LIDmax per system, one panel per calibrator × prior."
        else:
            points_of, styles = _one_panel(
                maker, scatter, lambda s: (s.headline.eer, s.headline.alid, s.headline.lid_max)
            )
            fig = eer_alid_figure(
                points_of,
                title=f"EER against LID ({maker.setting(scatter)})",
                log2_n=maker.log2_n(scatter),
                styles=styles,
            )
            caption = f"EER against ALID (filled) and LIDmax (hollow) per system ({maker.setting(scatter)})."
        figures.append(("eer_vs_lid", fig, caption))
    return figures


def _one_panel(maker: FigureMaker, systems, value) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """label -> value and label -> style of a single-panel overview figure.

    A grid's cells are named by their system (the title names their one calibrator and
    prior; several seeds of a cell differ in their intervals only: the first one is
    drawn); other reports' systems by their labels.
    """
    by_name = maker.report.kind == "grid"
    values: dict[str, Any] = {}
    styles: dict[str, dict[str, Any]] = {}
    for s in systems:
        key = s.name if by_name else s.label
        values.setdefault(key, value(s))
        styles.setdefault(key, maker.system_styles[s.name] if by_name else maker.styles[s.label])
    return values, styles


@attrs.frozen
class ComparisonSection:
    """What the section shows: the table and the overview figures."""

    table: Table
    figures: tuple[InlineFigure, ...]


def show(page: Page) -> ComparisonSection:
    """The section of *page*."""
    figures = tuple(page.maker.inline(fig, caption) for _, fig, caption in overview_figures(page.maker))
    return ComparisonSection(comparison_table(page.report), figures)
