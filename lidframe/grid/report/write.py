"""Writing a grid's report: :func:`write_report` (what ``lidframe report OUT_DIR`` runs).

It reads the finished cells (:func:`load_results`), checks each per-trial file against
its stored digest, reads each system's utility file afresh, and writes every file (the
tables, ``summary.json`` with the worst case across attackers, the figures, the page) into a
temporary folder beside ``report/``; only when all are complete are they moved into
``report/``, and an earlier report's files that this one does not write are removed
(:data:`REPORT_FILES`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lidframe.data import runpaths
from lidframe.data.fileio import StrPath, write_json
from lidframe.errors import InputError
from lidframe.grid import store
from lidframe.grid.records import FinishedCell
from lidframe.grid.report.columns import stored_scenario
from lidframe.grid.report.comparison import SCENARIO_NOTE, scenario_rows, utility_note
from lidframe.grid.report.figures import write_figures
from lidframe.grid.report.per_speaker import with_per_speaker
from lidframe.grid.report.staleness import report_warnings
from lidframe.grid.report.tidy import tidy_table
from lidframe.grid.report.writers import html_summary, latex_table, markdown_summary
from lidframe.grid.stored import verify_per_trial_files

if TYPE_CHECKING:
    import pandas as pd

    from lidframe.analyses.verdict import Policy
    from lidframe.data.provenance import ScoreFile
    from lidframe.grid.freshness import Freshness
    from lidframe.grid.utility import UtilityFile
    from lidframe.report.model import Report

__all__ = ["REPORT_FILES", "load_results", "write_report"]

#: Every file a report may write (those of an earlier report that this one does not write are removed).
REPORT_FILES = (
    "table.csv",
    "table.parquet",
    "summary.json",
    "summary.md",
    "summary.html",
    "table.tex",
    "lid_ccdf.png",
    "eer_vs_lid.png",
    "calibrator_sensitivity.png",
    "dp_vs_mu.png",
    "report.html",
)


def load_results(out_dir: StrPath) -> list[FinishedCell]:
    """Finished cells of a grid output folder: component columns, summary, per-trial path.

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid's output folder (holds ``results.sqlite``).

    Returns
    -------
    list of FinishedCell
        One record per logical cell with status ``ok``: ``system``, ``attacker``,
        ``mechanism`` (None when the cell has none), ``calibrator``, ``prior``, ``seed``,
        ``summary`` (a :class:`~lidframe.core.summary.Summary`), ``calibrator_fit`` and
        ``longitudinal`` (stored beside it), ``per_trial`` (the per-trial file, relative to
        *out_dir*), ``cell_id`` and ``per_trial_sha256``.  ``cell["summary"]`` still reads a
        cell as the stored row (:meth:`~lidframe.grid.records.FinishedCell.to_dict`, ``-`` for none).

    Raises
    ------
    InputError
        No store, or one that cannot be read (:func:`lidframe.grid.store.check_store`).
    """
    return store.read_finished(out_dir)


def write_report(
    out_dir: StrPath, *, figures: bool = True, freshness: Freshness | None = None, policy: Policy | None = None
) -> list[str]:
    """Write the report files of a grid output folder; return their paths.

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid's output folder; the files go to ``out_dir/report/`` (:mod:`lidframe.grid.report`).
    figures : bool
        Also draw the PNG figures and write ``report.html`` (both need matplotlib; the
        page also jinja2).
    freshness : Freshness, optional
        Whether the finished cells are current (default: :func:`~lidframe.grid.freshness.check_freshness` of the
        spec ``grid.json`` names).  Stale cells -- whose inputs changed since they were
        computed -- are still reported, but ``summary.md``, ``summary.html``,
        ``table.tex`` and ``report.html`` open with a warning naming them and why
        (:func:`~lidframe.grid.report.staleness.freshness_warnings`); so does a report whose cells could not be checked,
        and one whose per-trial files could not be (:func:`~lidframe.grid.report.staleness.report_warnings`).  Its spec
        (``freshness.spec``) also names each system's utility file, read now
        (:func:`lidframe.grid.utility.grid_utility`).
    policy : Policy, optional
        A verdict policy: the page judges every cell against it (its section "Verdict").

    Returns
    -------
    list of str
        Paths of the files written, ``report.html`` last when written.

    Raises
    ------
    InputError
        An unreadable store or per-trial file, a per-trial file that is not the one
        stored with its cell (changed or swapped), no finished cell, ``report`` not
        being a folder, a utility file that is gone or no longer a utility record, or
        jinja2 / matplotlib missing with *figures* -- with nothing in ``report/`` changed.
    """
    out = Path(out_dir)
    folder = out / "report"
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: is a file, not a folder; move it away (lidframe report writes its tables there)")
    if figures:
        from lidframe.report import require_renderer

        require_renderer()
    results = _checked_results(out)
    if freshness is None:
        from lidframe.grid.freshness import check_freshness

        freshness = check_freshness(out)
    found = _utility_files(out, freshness, results)
    scored = _score_files(freshness, results) if figures else []  # a damaged provenance: one line, before any file
    runpaths.refuse_outputs_on_inputs(
        folders={"report folder": folder}, inputs=[entry.path for entry in found.values()]
    )
    utility = {name: entry.utility for name, entry in found.items()}
    frame = tidy_table(results, utility=utility)
    note = utility_note(found)
    warnings = report_warnings(freshness, results, out)
    # the page reads (and digests) every per-trial file: a damaged one stops here, before any file is written
    report = _page(results, out, warnings, found, scored, policy, freshness) if figures else None
    summary = _summary_json(results, out, policy)
    staging = Path(tempfile.mkdtemp(prefix=".report.", dir=out))
    try:
        written = _write_all(results, frame, staging, report, warnings, note)
        write_json(staging / "summary.json", summary)
        written.insert(1, "summary.json")
        _publish(staging, folder, written)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [str(folder / name) for name in written]


def _summary_json(results: Sequence[FinishedCell], out: Path, policy: Policy | None) -> dict[str, Any]:
    """What ``report/summary.json`` holds: the finished cells, the systems and, with several attacks of one, the worst case.

    ``worst_case`` (:func:`lidframe.report.build_grid.grid_worst_case`): per system, the
    attack with the highest ALID and the one with the highest LID q99, with their
    intervals, and with a policy the verdict of its worst case; absent where every system
    has one attack.  The per-cell numbers are ``table.csv``'s.
    """
    from lidframe.report.build_grid import grid_attack, grid_worst_case

    block = grid_worst_case(results, out_dir=out, policy=policy)
    summary: dict[str, Any] = {
        "cells": len(results),
        "systems": list(dict.fromkeys(grid_attack(cell)[0] for cell in results)),
    }
    if block is not None:
        summary["worst_case"] = block
    return summary


def _checked_results(out: Path) -> list[FinishedCell]:
    """The finished cells of *out*, each per-trial file checked against its stored digest.

    Raises
    ------
    InputError
        No finished cell, or a per-trial file that is not the one stored with its cell.
    """
    results = load_results(out)
    if not results:
        raise InputError(
            f"{out / 'results.sqlite'}: no finished cells to report (every stored cell failed; see its error column)"
        )
    # each per-trial file must be the one stored with its cell (not changed, not swapped with
    # another cell's) before anything reads it: a file that is not is refused by its digest
    verify_per_trial_files(out, results)
    return results


def _utility_files(out: Path, freshness: Freshness, results: Sequence[FinishedCell]) -> dict[str, UtilityFile]:
    """The utility file of each reported system that names one in the spec, read now."""
    from lidframe.grid.utility import grid_utility

    # read now, never from the store: a changed utility file changes the report, not a cell
    found = grid_utility(out, spec=freshness.spec)
    reported = {r.system for r in results}
    return {name: entry for name, entry in found.items() if name in reported}


def _score_files(freshness: Freshness, results: Sequence[FinishedCell]) -> list[ScoreFile]:
    """The score files of the reported systems whose cells are all fresh, each with the provenance it holds, read now."""
    from lidframe.data.provenance import ScoreFile

    stale = {r.system for r in results if r.cell_id in freshness.stale}
    reported = {r.system for r in results} - stale  # a changed file's provenance is not that of the cells' numbers
    return [
        ScoreFile.of(f"{system} {split}", path) for system, split, path in freshness.score_files if system in reported
    ]


def _page(
    results: Sequence[FinishedCell],
    out: Path,
    warnings: Sequence[str],
    found: Mapping[str, UtilityFile],
    scored: Sequence[ScoreFile] = (),
    policy: Policy | None = None,
    freshness: Freshness | None = None,
) -> Report:
    """The ``report.html`` record of the grid: its warnings and scenarios as notes, utility, per-speaker tables.

    *freshness* gives each fresh cell's task, from which its per-speaker intervals refit the calibrator.
    """
    from lidframe.report import report_from_grid

    scenarios = [
        f"Scenario {name} ({code}): enrolment {enrolment}; trials {trials}; model {model}."
        for name, code, enrolment, trials, model in scenario_rows([stored_scenario(r) for r in results])
    ]
    notes = [*warnings, *scenarios, *([SCENARIO_NOTE] if scenarios else [])]
    utility = {name: entry.utility for name, entry in found.items()}
    # the privacy-utility chart: each system's utility, its file digested into the provenance
    report = report_from_grid(
        results,
        out_dir=out,
        settings={"grid folder": out},
        notes=notes,
        inputs={f"utility of {name}": entry.path for name, entry in found.items()},
        utility=utility or None,
        utility_note=utility_note(found, page=True),
        score_files=scored,
        policy=policy,
    )
    return with_per_speaker(report, results, out, freshness=freshness)


def _publish(staging: Path, folder: Path, written: Sequence[str]) -> None:
    """Move the files *written* into *staging* to ``report/`` (each an atomic rename); remove an earlier report's others."""
    folder.mkdir(exist_ok=True)
    for name in written:
        os.replace(staging / name, folder / name)
    for name in set(REPORT_FILES) - set(written):  # an earlier report's files that this one did not write
        with contextlib.suppress(FileNotFoundError):
            (folder / name).unlink()


def _write_all(
    results: Sequence[Mapping[str, Any]],
    frame: pd.DataFrame,
    folder: Path,
    report: Report | None,
    warnings: Sequence[str] = (),
    utility: str | None = None,
) -> list[str]:
    """Write every report file into *folder* (figures and the page when *report* is given); return their names.

    *utility* is the paragraph that says what the WER and rho_F0 columns are (:func:`~lidframe.grid.report.comparison.utility_note`).
    """
    written = []
    frame.to_csv(folder / "table.csv", index=False, float_format="%.10g", na_rep="nan")
    written.append("table.csv")
    try:
        frame.to_parquet(folder / "table.parquet", index=False)
        written.append("table.parquet")
    except ImportError:
        pass  # pyarrow not installed: the CSV carries the same table
    (folder / "summary.md").write_text(markdown_summary(frame, results, warnings, utility), encoding="utf-8")
    (folder / "summary.html").write_text(html_summary(frame, results, warnings, utility), encoding="utf-8")
    (folder / "table.tex").write_text(latex_table(frame, results, warnings, utility), encoding="utf-8")
    written += ["summary.md", "summary.html", "table.tex"]
    if report is not None:
        from lidframe.report import render_html

        written += write_figures(frame, folder, report)
        (folder / "report.html").write_text(render_html(report), encoding="utf-8")
        written.append("report.html")
    return written
