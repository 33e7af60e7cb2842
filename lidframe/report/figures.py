"""The figures of a report, drawn with :mod:`lidframe.report.lid_figures` and inlined as SVG.

Styles are fixed once per report (:func:`report_styles`): a system keeps its colour and
marker in every figure, and its calibrators differ by line style, so a reader who has
learnt the legend of one figure can read the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from lidframe.report.analysis_figures import dp_audit_figure, ladder_figure, per_speaker_figure
from lidframe.report.lid_figures import (
    UtilityPoint,
    eer_alid_figure,
    eer_alid_panels_figure,
    lid_ccdf_figure,
    lid_ccdf_panels_figure,
    lid_histogram_figure,
    open_set_figure,
    privacy_utility_figure,
)
from lidframe.report.plotting import curve_styles, figure_svg
from lidframe.report.tables import utility_interval

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lidframe.report.model import Report, ReportSystem

__all__ = ["InlineFigure", "FigureMaker", "report_styles", "utility_points"]


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


def _combos(systems) -> list[tuple[str, str]]:
    return list(dict.fromkeys((s.calibrator, s.prior) for s in systems))


def _caption_setting(systems) -> str:
    """'calibrator logistic, prior uniform', or the lists when the systems differ."""
    calibrators = list(dict.fromkeys(s.calibrator for s in systems))
    priors = list(dict.fromkeys(s.prior for s in systems))
    cal = f"calibrator {calibrators[0]}" if len(calibrators) == 1 else f"calibrators {', '.join(calibrators)}"
    pri = f"prior {priors[0]}" if len(priors) == 1 else f"priors {', '.join(priors)}"
    return f"{cal}, {pri}"


def _rung_text(scenario: str | None, code: str) -> str:
    return f"plain speech ({code})" if scenario is None else f"{scenario} ({code})"


#: The settings that may tell a system's rows apart outside a ladder: (ReportSystem attribute, its name).
_ROW_SETTINGS = (("attacker", "attacker"), ("calibrator", "calibrator"), ("prior", "prior"), ("seed", "seed"))


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
                wer_interval=None if wer is None else (wer.low, wer.high),
                alid=row.headline.alid,
                alid_interval=None if alid is None else (alid.low, alid.high),
                lid_max=row.headline.lid_max,
                lid_max_interval=None if lid_max is None else (lid_max.low, lid_max.high),
                log2_n=row.headline.log2_n,
            )
        )
    return points, " / ".join(titles) or "row"


def _names(items) -> str:
    return ", ".join(items)


class FigureMaker:
    """Draws the figures of one report, numbering them so their SVG ids stay unique in the page."""

    def __init__(self, report: Report):
        self.report = report
        self.styles = report_styles(report)
        self.system_styles = _system_styles(report)
        self.count = 0

    def _inline(self, fig: Figure, caption: str) -> InlineFigure:
        self.count += 1
        figure_id = f"fig{self.count}"
        return InlineFigure(figure_id, figure_svg(fig, id_prefix=figure_id, description=caption), caption)

    def _log2_n(self, systems) -> float | None:
        values = {round(s.headline.log2_n, 12) for s in systems}
        return values.pop() if len(values) == 1 else None

    # -------------------------------------------------------------- overview
    def overview_figures(self) -> list[tuple[str, Figure, str]]:
        """The comparison figures as matplotlib Figures: ``(name, figure, caption)`` each.

        ``"lid_ccdf"``: LID CCDFs of every system; ``"eer_vs_lid"``: EER against ALID and
        LIDmax, the systems named in a legend.  In a grid with several calibrator x prior
        combinations both are small multiples, one panel per combination (titled with
        it); otherwise one panel whose title names the calibrator and the prior.  The
        grid's report writes them as ``lid_ccdf.png`` and ``eer_vs_lid.png``, the page
        inlines them (:meth:`overview`).
        """
        systems = [s for s in self.report.systems if s.lid_bits is not None]
        figures: list[tuple[str, Figure, str]] = []
        combos = _combos(self.report.systems)
        grid = self.report.kind == "grid" and len(combos) > 1
        if systems:
            if grid:
                panels: dict[tuple[str, str], dict[str, Any]] = {c: {} for c in _combos(systems)}
                for s in systems:
                    # several seeds of a cell differ in their intervals only: the first one's curve
                    panels[(s.calibrator, s.prior)].setdefault(s.name, s.lid_bits)
                fig = lid_ccdf_panels_figure(
                    panels,
                    title="Share of trials with LID > x, per calibrator (rows) and prior (columns)",
                    log2_n=self._log2_n(systems),
                    styles=self.system_styles,
                )
                caption = (
                    "LID CCDF per system, one panel per calibrator × prior "
                    f"({len(combos)} combinations: {'; '.join(f'calibrator {c}, prior {p}' for c, p in combos)})."
                )
            else:
                curves, styles = self._one_panel(systems, lambda s: s.lid_bits)
                fig = lid_ccdf_figure(
                    curves,
                    title=f"Share of trials with LID > x ({_caption_setting(systems)})",
                    log2_n=self._log2_n(systems),
                    styles=styles,
                )
                caption = f"LID CCDF per system ({_caption_setting(systems)}); log-scale share of trials."
            figures.append(("lid_ccdf", fig, caption))
        scatter = [s for s in self.report.systems if s.headline.eer == s.headline.eer]
        if scatter and self.report.kind != "dp-audit":
            if grid:
                points: dict[tuple[str, str], dict[str, tuple[float, float, float]]] = {c: {} for c in combos}
                for s in scatter:
                    points[(s.calibrator, s.prior)].setdefault(
                        s.name, (s.headline.eer, s.headline.alid, s.headline.lid_max)
                    )
                fig = eer_alid_panels_figure(
                    points,
                    title="EER against ALID (filled) and LIDmax (hollow), per calibrator and prior",
                    log2_n=self._log2_n(scatter),
                    styles=self.system_styles,
                )
                caption = "EER against ALID and LIDmax per system, one panel per calibrator × prior."
            else:
                points_of, styles = self._one_panel(
                    scatter, lambda s: (s.headline.eer, s.headline.alid, s.headline.lid_max)
                )
                fig = eer_alid_figure(
                    points_of,
                    title=f"EER against LID ({_caption_setting(scatter)})",
                    log2_n=self._log2_n(scatter),
                    styles=styles,
                )
                caption = f"EER against ALID (filled) and LIDmax (hollow) per system ({_caption_setting(scatter)})."
            figures.append(("eer_vs_lid", fig, caption))
        return figures

    def _one_panel(self, systems, value) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """label -> value and label -> style of a single-panel overview figure.

        A grid's cells are named by their system (the title names their one calibrator and
        prior; several seeds of a cell differ in their intervals only: the first one is
        drawn); other reports' systems by their labels.
        """
        by_name = self.report.kind == "grid"
        values: dict[str, Any] = {}
        styles: dict[str, dict[str, Any]] = {}
        for s in systems:
            key = s.name if by_name else s.label
            values.setdefault(key, value(s))
            styles.setdefault(key, self.system_styles[s.name] if by_name else self.styles[s.label])
        return values, styles

    def overview(self) -> list[InlineFigure]:
        """The comparison figures (:meth:`overview_figures`) as inline SVG."""
        return [self._inline(fig, caption) for _, fig, caption in self.overview_figures()]

    # -------------------------------------------------------------- threat-model ladder
    def ladder(self) -> list[InlineFigure]:
        """ALID per rung of the report's ladder (:func:`lidframe.report.analysis_figures.ladder_figure`).

        A ladder system that is also a system of the page keeps its colour and marker; none
        without a ladder.
        """
        ladder = self.report.ladder
        if ladder is None:
            return []
        labels = set(ladder.labels())
        cells = [s for s in self.report.systems if s.label in labels]
        setting = _caption_setting(cells)
        styles = {name: self.system_styles[name] for name in ladder.systems() if name in self.system_styles}
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
            f"ALID (bits) of each anonymised system at each rung of the threat-model ladder ({setting}); {bars}; "
            f"{lines}"
        )
        if ladder.references():
            caption += "; grey horizontal lines: the plain speech (nothing anonymised) of the reference rows"
        caption += "; dotted line: the ceiling log2 N."
        return [self._inline(fig, caption)]

    # -------------------------------------------------------------- privacy and utility
    def utility_figure(self) -> tuple[Figure, str] | None:
        """The privacy-utility chart (:func:`lidframe.report.lid_figures.privacy_utility_figure`) and its caption.

        None without a utility.  A system keeps its colour of the page's other figures
        (that of its first row); the caption says what is up, down, left and right, which
        error bars are drawn and which are missing for want of an interval, and the
        caller's note on the speech measured.
        """
        points, variant_title = utility_points(self.report)
        if not points:
            return None
        by_label = {s.label: s for s in self.report.systems}
        rows = [by_label[p.label] for p in points]
        colours = {
            entry.system: self.system_styles[by_label[entry.labels[0]].name]["color"] for entry in self.report.utility
        }
        fig = privacy_utility_figure(
            points,
            colours=colours,
            variant_title=variant_title,
            title=f"Privacy against utility ({_caption_setting(rows)})",
        )
        marks = "colour: the system" + (
            "" if len({p.variant for p in points}) == 1 else f"; marker: the {variant_title}"
        )
        parts = [
            f"Privacy against utility ({_caption_setting(rows)}): each row of a system with a utility is a point at "
            "the word error rate (WER, %) of the system's speech, against its ALID (left) and its LIDmax (right, "
            f"bits); {marks}. Up and left: leaks identity and keeps the words; down and right: hides identity and "
            "loses the words; down and left, where an anonymiser should be: hides identity and keeps the words."
        ]
        without_wer = [
            e.system for e in self.report.utility if all(p.wer_interval is None for p in points if p.system == e.system)
        ]
        if len(without_wer) == len(self.report.utility):
            parts.append("No horizontal error bars: no WER interval was computed (lidframe utility --bootstrap).")
        else:
            text = "Horizontal error bars: the bootstrap intervals of WER (the table above)"
            if without_wer:
                text += f"; none for {_names(without_wer)}, measured without a bootstrap"
            parts.append(text + ".")
        without_lid = [p.label for p in points if p.alid_interval is None]
        levels = sorted({f"{100 * r.headline.interval_level:g} %" for r in rows if r.headline.interval_level})
        units = sorted({f"{r.headline.interval_unit}-" for r in rows if r.headline.interval_unit})
        if len(without_lid) == len(points):
            parts.append("No vertical error bars: no interval of ALID or LIDmax was computed.")
        else:
            text = (
                f"Vertical error bars: the {', '.join(levels)} {''.join(units) if len(units) == 1 else ''}bootstrap "
                "intervals of ALID and LIDmax († LIDmax's is biased low: a percentile interval of a maximum)"
            )
            text = " ".join(text.split())
            if without_lid:
                text += f"; none for {_names(without_lid)}, whose intervals were not computed"
            parts.append(text + ".")
        ceilings = sorted({round(p.log2_n, 12) for p in points})
        parts.append(
            f"Dotted line: the ceiling log2 N = {' or '.join(f'{c:.2f}' for c in ceilings)}; dashed: WER 100 %, as "
            "many errors as reference words."
        )
        if self.report.utility_note:
            parts.append(self.report.utility_note.rstrip(".") + ".")
        return fig, " ".join(parts)

    def utility(self) -> list[InlineFigure]:
        """The privacy-utility chart (:meth:`utility_figure`) as inline SVG; none without a utility."""
        made = self.utility_figure()
        return [] if made is None else [self._inline(*made)]

    # -------------------------------------------------------------- per system
    def system(self, name: str) -> list[InlineFigure]:
        """The figures of one system: its LID CCDF (all its cells) and the histogram of its first cell."""
        cells = [s for s in self.report.systems if s.name == name and s.lid_bits is not None]
        if not cells:
            return []
        fig = lid_ccdf_figure(
            {s.label: s.lid_bits for s in cells if s.lid_bits is not None},
            title=f"{name}: share of trials with LID > x",
            log2_n=self._log2_n(cells),
            styles={s.label: self.styles[s.label] for s in cells},
        )
        out = [self._inline(fig, f"LID CCDF of {name} ({_caption_setting(cells)}).")]
        first = cells[0]
        assert first.lid_bits is not None
        fig = lid_histogram_figure(
            first.lid_bits,
            title=f"{first.label}: LID per trial (calibrator {first.calibrator}, prior {first.prior})",
            log2_n=first.headline.log2_n,
            color=self.styles[first.label]["color"],
        )
        out.append(
            self._inline(
                fig,
                f"Histogram of LID over the {first.lid_bits.size} trials of {first.label} "
                f"(calibrator {first.calibrator}, prior {first.prior}).",
            )
        )
        return out

    def sensitivity(self, system: ReportSystem) -> list[InlineFigure]:
        """LID CCDF per calibrator of a system's sensitivity record: line styles of the system's colour."""
        record = system.sensitivity
        if record is None:
            return []
        lids = record.lids()
        colour = self.styles[system.label]
        styles = curve_styles(list(lids), groups=dict.fromkeys(lids, system.name), variants={k: k for k in lids})
        styles = {k: {**v, "color": colour["color"], "marker": colour["marker"]} for k, v in styles.items()}
        fig = lid_ccdf_figure(
            lids,
            title=f"{system.label}: LID tail per calibrator (prior {system.prior})",
            log2_n=float(record.rows[0]["log2_n"]),
            styles=styles,
        )
        return [
            self._inline(
                fig, f"Calibrator sensitivity of {system.label}: LID CCDF per calibrator, prior {system.prior}."
            )
        ]

    def per_speaker(self, system: ReportSystem) -> list[InlineFigure]:
        """The per-speaker dot plot (:func:`lidframe.report.analysis_figures.per_speaker_figure`)."""
        if system.per_speaker is None:
            return []
        fig = per_speaker_figure(system.per_speaker, title=f"{system.label}: ALID per speaker")
        return [
            self._inline(
                fig, f"ALID per speaker of {system.label} (calibrator {system.calibrator}, prior {system.prior})."
            )
        ]

    def open_set(self) -> list[InlineFigure]:
        """The open-set figure (:func:`lidframe.report.lid_figures.open_set_figure`) of each system.

        One per system name: its first cell with an open-set prior and the per-trial arrays
        to draw (in a grid, as for the histogram of :meth:`system`).
        """
        out = []
        for name in self.report.system_names():
            cell = next(
                (
                    s
                    for s in self.report.systems
                    if s.name == name
                    and s.open_set is not None
                    and s.open_trials is not None
                    and s.lid_bits is not None
                ),
                None,
            )
            if cell is None:
                continue
            assert cell.open_set is not None and cell.open_trials is not None and cell.lid_bits is not None
            threshold = cell.open_set.misattribution_threshold
            fig = open_set_figure(
                cell.lid_bits,
                cell.open_trials.outsider,
                cell.open_trials.top_posterior,
                threshold=threshold,
                title=f"{cell.label}: open set (π_∅ = {cell.open_set.outside:.3g}, prior {cell.prior})",
                log2_n=cell.headline.log2_n,
                color=self.styles[cell.label]["color"],
            )
            n_outsider = int(cell.open_trials.outsider.sum())
            caption = (
                f"Open set of {cell.label} (calibrator {cell.calibrator}, prior {cell.prior}): left, the share of "
                f"the {cell.lid_bits.size - n_outsider} enrolled and the {n_outsider} outsider trials whose LID "
                "exceeds x; right, the outsider trials' top enrolled posterior, with lines at 0.5 and at the "
                f"threshold {threshold:g}."
            )
            out.append(self._inline(fig, caption))
        return out

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
        return [self._inline(fig, caption)]
