"""A system's subsection "Calibrator sensitivity", and the worst case its headline card shows.

Its record is a cell's :func:`lidframe.analyses.sensitivity.sensitivity` result
(:attr:`~lidframe.report.model.ReportSystem.sensitivity`): the attacker's worst case over
its calibrators and priors (:class:`WorstCase`, on the cell's headline card), the table
(:func:`sensitivity_table`), the figure (:func:`sensitivity_figures`), and why a system
has none (:func:`absent`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.metrics import catalogue
from lidframe.report.headline import float_or_nan
from lidframe.report.lid_figures import lid_ccdf_figure
from lidframe.report.plotting import curve_styles
from lidframe.report.tables import _RECORD_FORMATS, Table, bits, record_table

if TYPE_CHECKING:
    from lidframe.report.figures import FigureMaker, InlineFigure
    from lidframe.report.model import Report, ReportSystem
    from lidframe.report.sections import Page

__all__ = [
    "WORST_CASE_METRICS",
    "WorstCaseEntry",
    "WorstCase",
    "sensitivity_table",
    "sensitivity_figures",
    "SensitivityItem",
    "item",
    "absent",
]


#: The metrics of a system's worst-case headline, (key, title, catalogue unit), in order: the attacker's best
#: calibrator and prior for each (:mod:`lidframe.analyses.sensitivity`, all "max" metrics).
WORST_CASE_METRICS = tuple((m.key, m.label, m.unit) for m in catalogue.table("worst_case"))


@attrs.frozen
class WorstCaseEntry:
    """One metric of the worst case: its most attacker-favourable value and where it is reached.

    Attributes
    ----------
    metric : str
        A key of :data:`WORST_CASE_METRICS`.
    value : float
        Bits, or a fraction for PDR; NaN when no calibrator computed it.
    calibrator : str or None
        The calibrator (as given to the analysis) that reaches it; None when none did.
    prior : str or None
        The prior (as given) that reaches it.
    """

    metric: str
    value: float
    calibrator: str | None
    prior: str | None


@attrs.frozen
class WorstCase:
    """A system's worst case across calibrators and priors: the headline of its sensitivity analysis.

    Attributes
    ----------
    entries : tuple of WorstCaseEntry
        One per metric of :data:`WORST_CASE_METRICS`, in that order.
    calibrators, priors : tuple of str
        The calibrators and priors the analysis compared (as given, in order).
    """

    entries: tuple[WorstCaseEntry, ...]
    calibrators: tuple[str, ...]
    priors: tuple[str, ...]

    def entry(self, metric: str) -> WorstCaseEntry | None:
        """The entry of *metric*, or None."""
        return next((e for e in self.entries if e.metric == metric), None)

    @classmethod
    def of(cls, record: Any) -> WorstCase:
        """The worst case of a :class:`~lidframe.analyses.sensitivity.SensitivityResult` (or its ``to_dict()``)."""
        found = record.to_dict() if hasattr(record, "to_dict") else record
        rows, worst = found.get("rows") or [], found.get("worst_case") or {}
        entries = []
        for key, _, _ in WORST_CASE_METRICS:
            entry = worst.get(key) or {}
            calibrator = entry.get("calibrator")
            entries.append(
                WorstCaseEntry(
                    metric=key,
                    value=float_or_nan(entry.get("value")),
                    calibrator=None if calibrator is None else str(calibrator),
                    prior=None if entry.get("prior") is None else str(entry["prior"]),
                )
            )
        return cls(
            entries=tuple(entries),
            calibrators=tuple(dict.fromkeys(str(r["calibrator"]) for r in rows)),
            priors=tuple(dict.fromkeys(str(r["prior"]) for r in rows if r.get("prior") is not None)),
        )


_SENSITIVITY_KEYS = (
    "calibrator",
    "describe",
    "alid",
    "pdr",
    "lid_q99",
    "lid_max",
    "eer",
    "cllr",
    "dev_logloss_bits",
    # open set only (:data:`lidframe.analyses.sensitivity.OPEN_SET_SENSITIVITY_METRICS`)
    "alid_enrolled",
    "alid_outsider",
    "membership_enrolled",
    "misattribution_rate",
)


def sensitivity_table(system: ReportSystem, table_id: str) -> tuple[Table, list[str]]:
    """The calibrator-sensitivity table of *system* and its worst cases, one sentence per LID metric.

    Parameters
    ----------
    system : ReportSystem
        With a ``sensitivity`` record.
    table_id : str
        Unique in the page.

    Returns
    -------
    table : Table
        One row per calibrator.
    worst : list of str
        ``"ALID: 2.31 bits with isotonic (spread over calibrators 0.12 bits)"`` per metric
        (ALID, LID q99, LIDmax) that has a worst case.
    """
    record = system.sensitivity
    priors = list(dict.fromkeys(str(r["prior"]) for r in record.rows if r.get("prior") is not None))
    keys = [k for k in _SENSITIVITY_KEYS if any(k in r for r in record.rows)]
    if len(priors) > 1:
        keys.insert(1, "prior")
        caption = f"Calibrator sensitivity of {system.label}: each calibrator under each of {len(priors)} priors"
    else:
        caption = f"Calibrator sensitivity of {system.label} (prior {priors[0] if priors else system.prior})"
    table = record_table(table_id, caption, record.rows, keys)
    over = "calibrators and priors" if len(priors) > 1 else "calibrators"
    worst = []
    for metric in ("alid", "lid_q99", "lid_max"):
        entry = record.worst_case.get(metric) or {}
        if entry.get("calibrator") is not None:
            spread = record.spread.get(metric)
            where = entry["calibrator"] + (f" under prior {entry['prior']}" if len(priors) > 1 else "")
            worst.append(
                f"{_RECORD_FORMATS[metric][0]}: {bits(entry['value'])} bits with {where} "
                f"(spread over {over} {bits(spread)} bits)"
            )
    return table, worst


def sensitivity_figures(maker: FigureMaker, system: ReportSystem) -> list[InlineFigure]:
    """LID CCDF per calibrator of a system's sensitivity record: line styles of the system's colour."""
    record = system.sensitivity
    if record is None:
        return []
    lids = record.lids()
    colour = maker.styles[system.label]
    styles = curve_styles(list(lids), groups=dict.fromkeys(lids, system.name), variants={k: k for k in lids})
    styles = {k: {**v, "color": colour["color"], "marker": colour["marker"]} for k, v in styles.items()}
    fig = lid_ccdf_figure(
        lids,
        title=f"{system.label}: LID tail per calibrator (prior {system.prior})",
        log2_n=float(record.rows[0]["log2_n"]),
        styles=styles,
    )
    return [
        maker.inline(fig, f"Calibrator sensitivity of {system.label}: LID CCDF per calibrator, prior {system.prior}.")
    ]


@attrs.frozen
class SensitivityItem:
    """The subsection of one cell: its table, its worst cases in words, its figure."""

    table: Table
    worst: tuple[str, ...]
    figures: tuple[InlineFigure, ...]


def item(page: Page, system: ReportSystem, table_id: str) -> SensitivityItem | None:
    """The subsection of the cell *system* (its table *table_id*); None without a sensitivity record."""
    if system.sensitivity is None:
        return None
    table, worst = sensitivity_table(system, table_id)
    return SensitivityItem(table, tuple(worst), tuple(sensitivity_figures(page.maker, system)))


def _names(items: Sequence[str]) -> str:
    return ", ".join(items)


def absent(report: Report, cells: Sequence[ReportSystem]) -> str | None:
    """Why the system of *cells* has no calibrator sensitivity (none of them has a record); None when one has."""
    if any(s.sensitivity is not None for s in cells):
        return None
    if report.kind == "dp-audit":
        return (
            "Not applicable: the audit's attackers have their calibrators fixed (the Bayes attacker identity, the "
            "cosine attacker --calibrator); its settings are under Settings and provenance."
        )
    if report.kind == "grid":
        combos = list(dict.fromkeys((s.calibrator, s.prior) for s in cells))
        calibrators = list(dict.fromkeys(c for c, _ in combos))
        if len(calibrators) > 1:
            return (
                f"In a grid the calibrators are cells of their own: this system's {_names(calibrators)} are compared "
                "in its headline cards and its LID CCDF above."
            )
        return (
            f"Not computed: this grid gives the system one calibrator ({calibrators[0]}); list more in its "
            "calibrators to compare them."
        )
    return (
        "Not computed for this page: lidframe sensitivity --report (or lidframe.analyses.sensitivity) fits every "
        "calibrator on the same dev set and shows the one that discloses most."
    )
