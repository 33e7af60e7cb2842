"""The page's section "Settings and provenance": what an auditor cites, behind every number of the page.

Its record is the report's :class:`~lidframe.report.sections.provenance_model.Provenance`:
the command line and the run's settings, the software
(:func:`~lidframe.report.sections.environment.environment_table`), the attackers with
their settings and file digests (:func:`attacker_tables`), each row's calibrator, prior
and sizes, its fitted calibrator and interval settings
(:mod:`lidframe.report.sections.settings`), the provenance each score file holds
(:func:`score_file_tables`: how ``lidframe score`` made it, down to the digests of the
audio), and the input files with their digests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from lidframe.data.provenance import NO_PROVENANCE, ScoreFile, ScoreProvenance
from lidframe.report.sections.environment import environment_table
from lidframe.report.sections.settings import CalibratorTable, FitNote, calibrator_tables, fit_notes, settings_table
from lidframe.report.tables import Table

if TYPE_CHECKING:
    from lidframe.report.sections import Page
    from lidframe.report.sections.provenance_model import AttackerSettings

__all__ = ["AttackerTable", "attacker_tables", "ScoreFileTable", "score_file_tables", "ProvenanceSection", "show"]


@attrs.frozen
class AttackerTable:
    """One attacker of the provenance: its name, and a row per setting (setting, value, SHA-256 of a file it names)."""

    table_id: str
    name: str
    rows: tuple[tuple[str, str, str], ...]


def attacker_tables(attackers: Sequence[AttackerSettings]) -> list[AttackerTable]:
    """The attackers of a report, a small table each: their settings, and the digest of each file one names."""
    tables = []
    for k, attacker in enumerate(attackers, start=1):
        digests = {f.role: f.sha256 for f in attacker.files}
        rows = [(key, value, digests.get(key, "")) for key, value in attacker.settings]
        keys = {key for key, _ in attacker.settings}
        rows += [(f.role, f.path, f.sha256) for f in attacker.files if f.role not in keys]
        tables.append(AttackerTable(f"attacker-{k}", attacker.name, tuple(rows)))
    return tables


@attrs.frozen
class ScoreFileTable:
    """One score file of the provenance: a row per fact (what, value, SHA-256), or *note* where it holds none.

    Attributes
    ----------
    table_id : str
    role, path : str
        What the file is to the report, and where it lies.
    note : str or None
        :data:`~lidframe.data.provenance.NO_PROVENANCE` where the file holds no provenance.
    rows : tuple of (str, str, str)
        How it was scored (time, command, lidframe, attacker, its files and weights,
        scenario), then each data dir's tables and audio, then the software.
    """

    table_id: str
    role: str
    path: str
    note: str | None
    rows: tuple[tuple[str, str, str], ...]


def _score_rows(record: ScoreProvenance) -> list[tuple[str, str, str]]:
    """The rows of a score file's provenance: the run, the attacker, the scenario, the data dirs, the software."""
    attacker = record.attacker
    rows = [
        ("scored", f"{record.created} by lidframe {record.lidframe_version}", ""),
        ("command", record.command or "not recorded", ""),
        ("working folder", record.working_folder or "not recorded", ""),
        ("attacker", attacker.spec or attacker.name, ""),
        ("attacker code", attacker.code or "not recorded", ""),
    ]
    rows += [(f"attacker {setting}", value, "") for setting, value in attacker.settings]
    rows += [(f"attacker {f.role}", f.path, f.sha256) for f in attacker.files]
    rows += [(f"fused from {item.file.role}", item.file.path, item.file.sha256) for item in record.fused_from]
    if attacker.weights_sha256 is not None:
        rows.append(("attacker weights", "the weights its model scored with", attacker.weights_sha256))
    if record.scenario is not None:
        rows.append(("scenario", record.scenario["stated"] or record.scenario["name"], ""))
    for folder in record.data_dirs:
        counts = f"{folder.n_utterances} utterances of {folder.n_speakers} speakers"
        rows.append((f"{folder.role} data dir", f"{folder.path} ({counts})", ""))
        rows += [(f"{folder.role} {t.role}", t.path, t.sha256) for t in folder.tables]
        if folder.audio is None:
            rows.append((f"{folder.role} audio", "not read by the attacker (it scores from ids or embeddings)", ""))
        else:
            shown = f"{folder.audio.n_files} files listed in wav.scp (SHA-256 over each file's, in order)"
            rows.append((f"{folder.role} audio", shown, folder.audio.sha256))
    rows += [(f"software {key}", value, "") for key, value in record.software]
    return rows


def score_file_tables(files: Sequence[ScoreFile]) -> list[ScoreFileTable]:
    """The score files of a report, a table each: how it was scored, from which bytes; or that it does not say."""
    tables = []
    for k, item in enumerate(files, start=1):
        note = NO_PROVENANCE if item.provenance is None else None
        rows = () if item.provenance is None else tuple(_score_rows(item.provenance))
        tables.append(ScoreFileTable(f"score-file-{k}", item.role, item.path, note, rows))
    return tables


@attrs.frozen
class ProvenanceSection:
    """What the section shows besides the provenance record itself: its tables.

    Attributes
    ----------
    environment : tuple of (str, str, str)
        The software, (key, what, value) each (:func:`environment_table`).
    attackers : tuple of AttackerTable
    score_files : tuple of ScoreFileTable
        The provenance each score file holds.
    settings : Table
        Calibrator, prior, z-norm and sizes per row.
    calibrators : tuple of CalibratorTable
        The fitted calibrators.
    without_fit : tuple of str
        The rows without a fitted calibrator record.
    fit_notes : tuple of FitNote
        The interval settings per row.
    """

    environment: tuple[tuple[str, str, str], ...]
    attackers: tuple[AttackerTable, ...]
    score_files: tuple[ScoreFileTable, ...]
    settings: Table
    calibrators: tuple[CalibratorTable, ...]
    without_fit: tuple[str, ...]
    fit_notes: tuple[FitNote, ...]


def show(page: Page) -> ProvenanceSection:
    """The section of *page*."""
    report = page.report
    calibrators, without_fit = calibrator_tables(report)
    return ProvenanceSection(
        environment=tuple(environment_table(report.provenance.environment)),
        attackers=tuple(attacker_tables(report.provenance.attackers)),
        score_files=tuple(score_file_tables(report.provenance.score_files)),
        settings=settings_table(report),
        calibrators=tuple(calibrators),
        without_fit=tuple(without_fit),
        fit_notes=tuple(fit_notes(report)),
    )
