"""The page's section "Settings and provenance": what an auditor cites, behind every number of the page.

Its record is the report's :class:`~lidframe.report.sections.provenance_model.Provenance`:
the command line and the run's settings, the software
(:func:`~lidframe.report.sections.environment.environment_table`), the attackers with
their settings and file digests (:func:`attacker_tables`), each row's calibrator, prior
and sizes, its fitted calibrator and interval settings
(:mod:`lidframe.report.sections.settings`), and the input files with their digests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from lidframe.report.sections.environment import environment_table
from lidframe.report.sections.settings import CalibratorTable, FitNote, calibrator_tables, fit_notes, settings_table
from lidframe.report.tables import Table

if TYPE_CHECKING:
    from lidframe.report.sections import Page
    from lidframe.report.sections.provenance_model import AttackerSettings

__all__ = ["AttackerTable", "attacker_tables", "ProvenanceSection", "show"]


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
class ProvenanceSection:
    """What the section shows besides the provenance record itself: its tables.

    Attributes
    ----------
    environment : tuple of (str, str, str)
        The software, (key, what, value) each (:func:`environment_table`).
    attackers : tuple of AttackerTable
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
        settings=settings_table(report),
        calibrators=tuple(calibrators),
        without_fit=tuple(without_fit),
        fit_notes=tuple(fit_notes(report)),
    )
