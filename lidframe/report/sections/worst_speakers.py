"""The page's section "Worst speakers": the few speakers each system discloses most, in the summary.

Its record is each cell's :func:`lidframe.analyses.per_speaker.per_speaker` result
(:attr:`~lidframe.report.model.ReportSystem.per_speaker`), whose rows come most disclosed
first (by ALID, or by the lowest EER of the speaker's own pairs with ``sort_by="eer"``).
The section takes the first :data:`WORST_SPEAKERS` enrolled speakers of each system's
headline row (fewer, at least one, where more than :data:`WORST_SPEAKER_ROWS` rows would follow) (:func:`speaker_cells`) into one table (:func:`worst_speakers_table`): a regulator sees who is exposed most without
opening each system's full per-speaker table (its appendix).  Outsider speakers (the open
set) are no part of it: their LID is membership, another quantity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from lidframe.report.sections import per_speaker
from lidframe.report.sections.headlines import headline_cells
from lidframe.report.tables import Column, Table, record_table, text_cell

if TYPE_CHECKING:
    from lidframe.report.model import Report, ReportSystem
    from lidframe.report.sections import Page

__all__ = [
    "WORST_SPEAKERS",
    "WORST_SPEAKER_ROWS",
    "KEYS",
    "speakers_per_system",
    "worst_rows",
    "speaker_cells",
    "worst_speakers_table",
    "WorstSpeakersSection",
    "show",
    "absent",
]

#: How many speakers of each system the summary shows, at most.
WORST_SPEAKERS = 3
#: How many rows the summary's table holds, at most: with more systems each shows fewer speakers (at least one),
#: so that the summary of a page of many systems still prints on two A4 pages (issue 41).
WORST_SPEAKER_ROWS = 9
#: The per-speaker record's columns the table shows (intervals folded into their metric's cell).
KEYS = ("speaker", "n_trials", "alid", "alid_low", "alid_high", "lid_max", "pdr", "rank1_rate")


def speakers_per_system(n_systems: int) -> int:
    """How many speakers each of *n_systems* shows: :data:`WORST_SPEAKERS`, fewer where the table would pass
    :data:`WORST_SPEAKER_ROWS` rows, at least one."""
    return max(1, min(WORST_SPEAKERS, WORST_SPEAKER_ROWS // max(n_systems, 1)))


def worst_rows(system: ReportSystem, k: int = WORST_SPEAKERS) -> list[dict[str, Any]]:
    """The first *k* enrolled speakers of *system*'s per-speaker record (most disclosed first); [] without one."""
    if system.per_speaker is None:
        return []
    rows = [row for row in system.per_speaker.to_frame().to_dict("records") if not row.get("outsider", False)]
    return rows[:k]


def speaker_cells(report: Report) -> list[ReportSystem]:
    """The row whose speakers each system shows: its headline row if that has a per-speaker record, else its first that has.

    The headline row is :func:`~lidframe.report.sections.headlines.headline_cells`'s (of
    several, the one whose ALID is highest); a system none of whose rows has a record has none.
    """
    heads = {s.name: s for s in headline_cells(report)}
    out = []
    for name in report.system_names():
        head = heads[name]
        if head.per_speaker is not None:
            out.append(head)
            continue
        first = next((s for s in report.systems if s.name == name and s.per_speaker is not None), None)
        if first is not None:
            out.append(first)
    return out


def worst_speakers_table(report: Report) -> Table:
    """One row per (system, speaker): the most disclosed speakers of each system with a record (:func:`speakers_per_system`)."""
    rows: list[dict[str, Any]] = []
    labels: list[str] = []
    cells = speaker_cells(report)
    k = speakers_per_system(len(cells))
    for system in cells:
        found = worst_rows(system, k)
        rows += found
        labels += [system.label] * len(found)
    keys = [k for k in KEYS if any(k in row for row in rows)]
    table = record_table("worst-speakers-table", "", rows, keys)
    sorted_by = {s.per_speaker.sorted_by for s in report.systems if s.per_speaker is not None}
    order = "lowest EER of their own pairs" if sorted_by == {"eer"} else "highest ALID"
    who = "The speaker" if k == 1 else f"The {k} speakers"
    caption = f"{who} each system discloses most ({order} first); every speaker is in the system's appendix"
    return attrs.evolve(
        table,
        caption=caption,
        columns=(Column("system", False), *table.columns),
        rows=tuple((text_cell(label), *cells) for label, cells in zip(labels, table.rows, strict=True)),
    )


@attrs.frozen
class WorstSpeakersSection:
    """What the section shows: the table, and the systems without a per-speaker record."""

    table: Table
    left_out: tuple[str, ...]


def show(page: Page) -> WorstSpeakersSection:
    """The section of *page* (one of whose systems has a per-speaker record: :func:`absent` says None)."""
    report = page.report
    names_with = {s.name for s in report.systems if s.per_speaker is not None}
    left_out = tuple(name for name in report.system_names() if name not in names_with)
    return WorstSpeakersSection(worst_speakers_table(report), left_out)


def absent(report: Report) -> str | None:
    """Why the section does not apply (no system has a per-speaker record): the per-speaker table's reason."""
    return per_speaker.absent(report, report.systems)
