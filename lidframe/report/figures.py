"""The figures of a report page: one style per system across the page, numbered in page order, inlined as SVG.

Styles are fixed once per report (:func:`report_styles`): a system keeps its colour and
marker in every figure, and its calibrators differ by line style, so a reader who has
learnt the legend of one figure can read the others.  :class:`FigureMaker` holds them for
one page; each section draws its own figures with it (:mod:`lidframe.report.sections`),
from the drawing functions of :mod:`lidframe.report.lid_figures`,
:mod:`lidframe.report.analysis_figures` and the sections' own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.report.analysis_figures import dp_audit_figure
from lidframe.report.plotting import curve_styles, figure_svg
from lidframe.report.sections.comparison import overview_figures
from lidframe.report.sections.utility_chart import utility_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lidframe.report.model import Report, ReportSystem

__all__ = ["InlineFigure", "FigureMaker", "report_styles"]


@attrs.frozen
class InlineFigure:
    """A figure of the page: its inline ``<svg>`` and its caption.

    Attributes
    ----------
    figure_id : str
        Unique in the page (the prefix of the SVG's ids, and the anchor of the figure).
    svg : str
        Inline SVG markup (:func:`lidframe.report.plotting.figure_svg`).
    caption : str
        Says what is drawn, with the calibrator and prior.
    """

    figure_id: str
    svg: str
    caption: str


def report_styles(report: Report) -> dict[str, dict[str, Any]]:
    """label -> matplotlib style: colour and marker per system, line style per calibrator."""
    labels = [s.label for s in report.systems]
    return curve_styles(
        labels,
        groups={s.label: s.name for s in report.systems},
        variants={s.label: s.calibrator for s in report.systems},
    )


def _system_styles(report: Report) -> dict[str, dict[str, Any]]:
    """system name -> style of its first cell (the figures that draw one mark per system)."""
    styles = report_styles(report)
    out: dict[str, dict[str, Any]] = {}
    for system in report.systems:
        out.setdefault(system.name, {**styles[system.label], "linestyle": "-"})
    return out


class FigureMaker:
    """Draws the figures of one report, numbering them so their SVG ids stay unique in the page.

    Parameters
    ----------
    report : Report

    Attributes
    ----------
    report : Report
    styles : dict
        label -> style of each row (:func:`report_styles`).
    system_styles : dict
        system name -> the style of its first row, solid (the figures with one mark per system).
    count : int
        The figures inlined so far (the next one is ``fig<count + 1>``).
    """

    def __init__(self, report: Report):
        self.report = report
        self.styles = report_styles(report)
        self.system_styles = _system_styles(report)
        self.count = 0

    def inline(self, fig: Figure, caption: str) -> InlineFigure:
        """*fig* as the page's next figure (inline SVG, its ids prefixed ``fig<n>``), with its caption."""
        self.count += 1
        figure_id = f"fig{self.count}"
        return InlineFigure(figure_id, figure_svg(fig, id_prefix=figure_id, description=caption), caption)

    def log2_n(self, systems: Sequence[ReportSystem]) -> float | None:
        """The log2 N the *systems* share (bits); None when they differ."""
        values = {round(s.headline.log2_n, 12) for s in systems}
        return values.pop() if len(values) == 1 else None

    def setting(self, systems: Sequence[ReportSystem]) -> str:
        """'calibrator logistic, prior uniform' of a caption, or the lists when the *systems* differ."""
        calibrators = list(dict.fromkeys(s.calibrator for s in systems))
        priors = list(dict.fromkeys(s.prior for s in systems))
        cal = f"calibrator {calibrators[0]}" if len(calibrators) == 1 else f"calibrators {', '.join(calibrators)}"
        pri = f"prior {priors[0]}" if len(priors) == 1 else f"priors {', '.join(priors)}"
        return f"{cal}, {pri}"

    def overview_figures(self) -> list[tuple[str, Figure, str]]:
        """The comparison's figures as matplotlib Figures, ``(name, figure, caption)`` each.

        :func:`lidframe.report.sections.comparison.overview_figures`: the grid's report
        writes them as ``lid_ccdf.png`` and ``eer_vs_lid.png``, the page inlines them.
        """
        return overview_figures(self)

    def utility_figure(self) -> tuple[Figure, str] | None:
        """The privacy-utility chart and its caption (:func:`lidframe.report.sections.utility_chart.utility_figure`).

        None without a utility.
        """
        return utility_figure(self)

    def dp_audit(self) -> list[InlineFigure]:
        """Measured EER and ALID against the GDP bounds (:func:`lidframe.report.analysis_figures.dp_audit_figure`).

        Each attacker keeps the colour and marker of its system on the page, in both panels.
        """
        record = self.report.dp_audit
        if record is None:
            return []
        styles = {s.attacker: self.system_styles[s.name] for s in self.report.systems if s.attacker is not None}
        fig = dp_audit_figure(record, styles=styles)
        caption = (
            "Measured EER (left) and ALID / LIDmax (right) against mu, with the GDP bounds of one release: "
            "EER ≥ Φ(−mu/2), and the mutual-information bound mu²/(2 ln 2) bits, which bounds ALID (the average), "
            "not LIDmax. One colour per attacker in both panels; error bars: the bootstrap intervals."
        )
        return [self.inline(fig, caption)]
