"""The page's section "DP audit": the measured disclosure of the Gaussian speaker mechanism against its bounds.

Its record is the report's :attr:`~lidframe.report.model.Report.dp_audit` (a
:func:`lidframe.privacy.audit.dp_audit` result; :func:`lidframe.report.build.report_from_dp_audit`
makes a page of it, each attacker's numbers at each mu a cell, :func:`dp_audit_summary`):
the table (:func:`dp_audit_table`), the figure
(:meth:`lidframe.report.figures.FigureMaker.dp_audit`, drawn by
:func:`lidframe.report.analysis_figures.dp_audit_figure`), and why the section does not
apply to any other page (:func:`absent`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.report.headline import Interval
from lidframe.report.tables import Column, Table, bits, number_cell, percent, text_cell

if TYPE_CHECKING:
    from lidframe.privacy.audit import DPAuditResult
    from lidframe.report.figures import InlineFigure
    from lidframe.report.model import Report
    from lidframe.report.sections import Page

__all__ = ["dp_audit_summary", "dp_audit_table", "DPSection", "show", "absent"]


def dp_audit_summary(row: Mapping[str, Any], attacker: str, *, calibrator: str, ci_level: float) -> dict[str, Any]:
    """One attacker's numbers in one row (one mu) of a DP audit, as the summary of a report cell.

    Parameters
    ----------
    row : mapping
        A row of a :class:`~lidframe.privacy.audit.DPAuditResult`.
    attacker : {"bayes", "cosine"}
    calibrator : str
        The attacker's calibrator spec.
    ci_level : float
        Confidence level of the row's intervals.

    Returns
    -------
    dict
        The keys :meth:`Headline.from_summary` and :meth:`SystemSettings.from_summary` read.
    """
    return {
        "n_enrolled": row["n_enrolled"],
        "log2_n": row["log2_n"],
        "alid": row[f"{attacker}_alid"],
        "lid_q99": row[f"{attacker}_lid_q99"],
        "lid_max": row[f"{attacker}_lid_max"],
        "eer": row[f"{attacker}_eer"],
        "intervals": {"alid": row[f"{attacker}_alid_ci"], "eer": row[f"{attacker}_eer_ci"]},
        "bootstrap": {"level": ci_level},
        "calibrator": calibrator,
        "prior": "uniform",
    }


def dp_audit_table(record: DPAuditResult) -> Table:
    """Measured EER and ALID of a DP audit against the GDP bounds, one row per mu.

    Parameters
    ----------
    record : DPAuditResult
        What :func:`lidframe.privacy.audit.dp_audit` returned.

    Returns
    -------
    Table
    """
    columns = [
        Column("mu", True),
        Column("sigma", True),
        Column(
            "EER bound",
            True,
            "Phi(-mu_held/2): no attacker's EER lies below it (mu_held: the mu the audit checked holds)",
        ),
        Column("bayes EER", True),
        Column("cosine EER", True),
        Column(
            "MI bound on ALID (bits)",
            True,
            "mu_held^2 / (2 ln 2): the mutual-information bound, which bounds ALID (an average), not LIDmax",
        ),
        Column("bayes ALID", True),
        Column("cosine ALID", True),
        Column("bayes LIDmax", True),
        Column("cosine LIDmax", True),
        Column("bounds checked", False),
        Column("violations", False),
    ]
    rows = []
    for row in record.rows:

        def interval(key: str) -> Interval | None:
            bounds = row.get(key)
            return None if bounds is None else Interval(float(bounds[0]), float(bounds[1]))

        rows.append(
            (
                number_cell(row["mu"], lambda v: f"{float(v):g}"),
                number_cell(row["sigma"], lambda v: f"{float(v):.3g}"),
                number_cell(row["eer_bound"], percent),
                number_cell(row["bayes_eer"], percent, interval("bayes_eer_ci")),
                number_cell(row["cosine_eer"], percent, interval("cosine_eer_ci")),
                number_cell(row["mi_bound_bits"], bits),
                number_cell(row["bayes_alid"], bits, interval("bayes_alid_ci")),
                number_cell(row["cosine_alid"], bits, interval("cosine_alid_ci")),
                number_cell(row["bayes_lid_max"], bits),
                number_cell(row["cosine_lid_max"], bits),
                text_cell("yes" if row["eer_bound_applies"] and row["alid_bound_applies"] else "no"),
                text_cell("; ".join(row["violations"]) if row["violations"] else "none"),
            )
        )
    return Table("dp-table", "Measured disclosure against the GDP bounds, per mu", tuple(columns), tuple(rows))


@attrs.frozen
class DPSection:
    """What the section shows: the bounds' reason, the table, the figure."""

    reason: str | None
    table: Table
    figures: tuple[InlineFigure, ...]


def show(page: Page) -> DPSection:
    """The section of *page* (a DP audit's: :func:`absent` says None)."""
    record = page.report.dp_audit
    assert record is not None
    return DPSection(record.rows[0].get("bounds_reason"), dp_audit_table(record), tuple(page.maker.dp_audit()))


def absent(report: Report) -> str | None:
    """Why the section does not apply to *report* (not a DP audit); None when it does.

    A grid's page adds where its mechanism cells' measured values against mu are drawn.
    """
    if report.dp_audit is not None:
        return None
    mechanisms = report.kind == "grid" and any("[" in s.name for s in report.systems)
    return "Not a DP audit: lidframe dp-audit --report measures the Gaussian speaker mechanism against its bounds." + (
        " This grid's mechanism cells are systems of this page (named with their [mechanism]); their "
        "measured values against mu, with the bounds, are drawn in dp_vs_mu.png beside this page."
        if mechanisms
        else ""
    )
