"""A system's subsection "Per speaker": the disclosure of each speaker, as a table and a dot plot.

Its record is a cell's :func:`lidframe.analyses.per_speaker.per_speaker` result
(:attr:`~lidframe.report.model.ReportSystem.per_speaker`): the table
(:func:`per_speaker_table`, each speaker's rank-1 beside its chance 1/N), the figure (:func:`per_speaker_figures`, drawn by
:func:`lidframe.report.analysis_figures.per_speaker_figure`), and why a system has none
(:func:`absent`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from lidframe.metrics import catalogue
from lidframe.report.analysis_figures import per_speaker_figure
from lidframe.report.sections.identification import chance_column, rank1_chance_cell
from lidframe.report.tables import Table, record_table

if TYPE_CHECKING:
    from lidframe.report.figures import FigureMaker, InlineFigure
    from lidframe.report.model import Report, ReportSystem
    from lidframe.report.sections import Page

__all__ = ["per_speaker_table", "per_speaker_figures", "PerSpeakerItem", "item", "absent"]


def per_speaker_table(system: ReportSystem, table_id: str) -> Table:
    """The per-speaker table of *system* (a ``per_speaker`` record): one row per speaker, intervals folded in.

    Parameters
    ----------
    system : ReportSystem
        With a ``per_speaker`` record.
    table_id : str
        Unique in the page.

    Returns
    -------
    Table
        Its rank-1 column followed by the chance 1/N of the system's N (not computed for
        an outsider, who has no enrolled speaker to rank).
    """
    frame = system.per_speaker.to_frame()
    keys = [str(c) for c in frame.columns]
    rows = frame.to_dict("records")
    table = record_table(table_id, f"Disclosure per speaker of {system.label}", rows, keys)
    rank1 = catalogue.metric("rank1_rate")
    at = next((i for i, c in enumerate(table.columns) if c.title == rank1.label), None)
    if at is None:
        return table
    n_enrolled = system.headline.n_enrolled
    return attrs.evolve(
        table,
        columns=(*table.columns[: at + 1], chance_column("1/N"), *table.columns[at + 1 :]),
        rows=tuple(
            (*cells[: at + 1], rank1_chance_cell(row.get(rank1.key), n_enrolled), *cells[at + 1 :])
            for row, cells in zip(rows, table.rows, strict=True)
        ),
    )


def per_speaker_figures(maker: FigureMaker, system: ReportSystem) -> list[InlineFigure]:
    """The per-speaker dot plot (:func:`lidframe.report.analysis_figures.per_speaker_figure`)."""
    if system.per_speaker is None:
        return []
    fig = per_speaker_figure(system.per_speaker, title=f"{system.label}: ALID per speaker")
    return [
        maker.inline(fig, f"ALID per speaker of {system.label} (calibrator {system.calibrator}, prior {system.prior}).")
    ]


@attrs.frozen
class PerSpeakerItem:
    """The subsection of one cell: its table and its figure."""

    table: Table
    figures: tuple[InlineFigure, ...]


def item(page: Page, system: ReportSystem, table_id: str) -> PerSpeakerItem | None:
    """The subsection of the cell *system* (its table *table_id*); None without a per-speaker record."""
    if system.per_speaker is None:
        return None
    return PerSpeakerItem(per_speaker_table(system, table_id), tuple(per_speaker_figures(page.maker, system)))


def absent(report: Report, cells: Sequence[ReportSystem]) -> str | None:
    """Why the system of *cells* has no per-speaker table (none of them has a record); None when one has."""
    if any(s.per_speaker is not None for s in cells):
        return None

    if report.kind == "dp-audit":
        return (
            "Not available: a DP audit keeps each attacker's aggregates only (ALID, LID q99, LIDmax, EER), not the "
            "per-trial LIDs a per-speaker table splits by speaker."
        )
    if report.kind == "grid":
        return (
            "Not computed: lidframe report adds the per-speaker table of each system's first cell "
            "(lidframe.grid.report.with_per_speaker); this page was built without it."
        )
    return (
        "Not computed for this page: lidframe evaluate --report and the demos add it; from Python, pass "
        "per_speaker= (lidframe.analyses.per_speaker) to report_from_results."
    )
