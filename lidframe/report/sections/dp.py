"""The page's section "DP audit": the measured disclosure of the Gaussian speaker mechanism against its bounds.

Its record is the report's :attr:`~lidframe.report.model.Report.dp_audit` (a
:func:`lidframe.privacy.audit.dp_audit` result; :func:`lidframe.report.build.report_from_dp_audit`
makes a page of it, each attacker's numbers at each mu a cell, :func:`dp_audit_headline`, :func:`dp_audit_settings`):
the table (:func:`dp_audit_table`), the figure
(:meth:`lidframe.report.figures.FigureMaker.dp_audit`, drawn by
:func:`lidframe.report.analysis_figures.dp_audit_figure`), and why the section does not
apply to any other page (:func:`absent`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.report.headline import Headline
from lidframe.report.sections.provenance_model import SystemSettings
from lidframe.report.tables import Column, Table, bits, number_cell, percent, text_cell
from lidframe.stats.interval import Interval

if TYPE_CHECKING:
    from lidframe.privacy.audit import DPAuditResult
    from lidframe.report.figures import InlineFigure
    from lidframe.report.model import Report
    from lidframe.report.sections import Page

__all__ = ["dp_audit_headline", "dp_audit_settings", "dp_audit_table", "DPSection", "show", "absent"]


def dp_audit_headline(row: Mapping[str, Any], attacker: str, *, ci_level: float) -> Headline:
    """One attacker's numbers in one row (one mu) of a DP audit, as the headline of a report cell.

    Parameters
    ----------
    row : mapping
        A row of a :class:`~lidframe.privacy.audit.DPAuditResult`.
    attacker : {"bayes", "cosine"}
    ci_level : float
        Confidence level of the row's intervals.

    Returns
    -------
    Headline
        N, log2 N, ALID, LIDq99, LIDmax and the pairwise EER, with the intervals of ALID and
        EER; what a DP audit does not measure is NaN.
    """
    nan = math.nan
    intervals = {
        metric: Interval.from_columns(row, f"{attacker}_{metric}", level=ci_level) for metric in ("alid", "eer")
    }
    return Headline(
        n_enrolled=int(row["n_enrolled"]),
        log2_n=float(row["log2_n"]),
        n_enrolled_trials=None,
        n_outsider_trials=None,
        alid=float(row[f"{attacker}_alid"]),
        pdr=nan,
        lid_pos=nan,
        lid_neg=nan,
        lid_q99=float(row[f"{attacker}_lid_q99"]),
        lid_max=float(row[f"{attacker}_lid_max"]),
        eer=float(row[f"{attacker}_eer"]),
        cllr=nan,
        rank1_rate=nan,
        intervals={metric: found for metric, found in intervals.items() if found is not None},
        interval_level=float(ci_level),
    )


def dp_audit_settings(label: str, *, calibrator: str, ci_level: float) -> SystemSettings:
    """The settings row of one attacker's cell of a DP audit page: its calibrator, the uniform prior, the level."""
    counts = dict.fromkeys(
        (
            "znorm_ddof",
            "n_dev_enrolled_trials",
            "n_dev_enrolled",
            "n_dev_outsider_trials",
            "n_eval_enrolled_trials",
            "n_eval_enrolled",
            "n_eval_outsider_trials",
        )
    )
    return SystemSettings(
        label=label,
        calibrator=calibrator,
        calibrator_fit=None,
        prior="uniform",
        binary_metrics=None,
        bootstrap={"level": float(ci_level)},
        **counts,
    )


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
        Column("bayes EER", True, key="eer"),
        Column("cosine EER", True, key="eer"),
        Column(
            "MI bound on ALID (bits)",
            True,
            "mu_held^2 / (2 ln 2): the mutual-information bound, which bounds ALID (an average), not LIDmax",
        ),
        Column("bayes ALID", True, key="alid"),
        Column("cosine ALID", True, key="alid"),
        Column("bayes LIDmax", True, key="lid_max"),
        Column("cosine LIDmax", True, key="lid_max"),
        Column("bounds checked", False),
        Column("violations", False),
    ]
    rows = []
    for row in record.rows:

        def interval(key: str) -> Interval | None:
            return Interval.from_columns(row, key)

        rows.append(
            (
                number_cell(row["mu"], lambda v: f"{float(v):g}"),
                number_cell(row["sigma"], lambda v: f"{float(v):.3g}"),
                number_cell(row["eer_bound"], percent),
                number_cell(row["bayes_eer"], percent, interval("bayes_eer")),
                number_cell(row["cosine_eer"], percent, interval("cosine_eer")),
                number_cell(row["mi_bound_bits"], bits),
                number_cell(row["bayes_alid"], bits, interval("bayes_alid")),
                number_cell(row["cosine_alid"], bits, interval("cosine_alid")),
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
