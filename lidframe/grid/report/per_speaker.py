"""The per-speaker table of a grid cell, rebuilt from its per-trial file, and of each system on the page.

:func:`cell_per_speaker` is :func:`lidframe.analyses.per_speaker.per_speaker`'s table of
one finished cell -- the one ``lidframe evaluate --report`` and the demos show -- with
within-speaker intervals; :func:`with_per_speaker` gives each system of a
:func:`lidframe.report.report_from_grid` page the table of its first cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lidframe.data.fileio import StrPath
from lidframe.errors import InputError
from lidframe.grid.records import FinishedCell, FitTask
from lidframe.grid.stored import as_finished_cell

if TYPE_CHECKING:
    from lidframe.analyses.per_speaker import PerSpeakerResult
    from lidframe.core.result import Result
    from lidframe.core.summary import Summary
    from lidframe.grid.freshness import Freshness
    from lidframe.report.model import Report
    from lidframe.stats.bootstrap import Bootstrap

__all__ = ["cell_per_speaker", "with_per_speaker"]

#: The arrays of a cell's per-trial file the per-speaker table reads (``lidframe.grid.execute``
#: writes them): ``posterior_true`` is missing from files of early lidframe versions, the
#: open-set arrays from a closed-set cell's, and ``true_rank`` from every file a grid writes now.
_SPEAKER_ARRAYS = ("trial_ids", "trial_speakers", "lid")


_SPEAKER_OPTIONAL = ("posterior_true", "outsider", "membership_bits", "top_posterior", "true_rank")


def _cell_bootstrap(cell: FinishedCell, bootstrap: Bootstrap | None) -> Bootstrap:
    """The interval settings of a cell's per-speaker table: *bootstrap*, the grid's ``[grid.bootstrap]``, or the default.

    The cell's seed is the seed of the default.
    """
    from lidframe.stats.bootstrap import Bootstrap

    if bootstrap is not None:
        return bootstrap
    if cell.summary.bootstrap is not None:  # the grid's, with the seed its cell ran with
        return cell.summary.bootstrap
    return Bootstrap(seed=int(cell.seed))


def cell_per_speaker(
    cell: FinishedCell | Mapping[str, Any],
    out_dir: StrPath,
    *,
    bootstrap: Bootstrap | None = None,
    task: FitTask | None = None,
) -> PerSpeakerResult:
    """The per-speaker table of one finished grid cell, from its per-trial file.

    The table is :func:`lidframe.analyses.per_speaker.per_speaker`'s -- the one ``lidframe
    evaluate --report`` and the demos show -- of the cell's per-trial LIDs, as a
    :class:`~lidframe.core.evaluation.Result` rebuilt from the file: the trials, their
    speakers, LIDs, posteriors of the true speaker and, in the open set, the outsider flags,
    membership disclosures and top enrolled posteriors.  What the file does not hold:

    * the enrolled speakers without a trial, whose ids it does not name: the table counts
      them (``n_speakers_without_trials``, from the summary's N) but has no row for them;
    * the attacker's rank of the true speaker (a grid's files keep none): ``rank1_rate``
      is NaN (shown as not computed);
    * in a file of an early lidframe, without ``posterior_true``, the speaker's prior:
      ``lid_ceiling`` is NaN;
    * the dev scores the cell's bootstrap refitted the calibrator on: given the cell's
      *task*, its evaluation is computed again for them (:mod:`lidframe.grid.report.refits`),
      and the intervals refit the calibrator on the same dev resamples as the cell's did
      (``table.bootstrap["resample"]`` ``"dev+eval"``); without it, or where that
      evaluation is not the stored one, they hold it fixed (``"eval"``) and
      ``interval_note`` says why.

    Parameters
    ----------
    cell : FinishedCell or mapping
        As :func:`~lidframe.grid.report.write.load_results` returns it (or its ``to_dict()``,
        :func:`~lidframe.grid.stored.as_finished_cell`): its summary, per-trial file and seed.
    out_dir : str or os.PathLike
        The grid folder (the per-trial path is relative to it).
    bootstrap : Bootstrap, optional
        The within-speaker intervals' settings; default the grid's ``[grid.bootstrap]``
        (with the cell's seed), else :class:`~lidframe.stats.bootstrap.Bootstrap`'s
        defaults with the cell's seed: the table always has intervals.
    task : FitTask, optional
        The plan's task of the cell, ``check_freshness(out_dir).tasks[cell.cell_id]``
        (:attr:`lidframe.grid.freshness.Freshness.tasks`; only a fresh cell has one).

    Returns
    -------
    PerSpeakerResult
        Shapes as :func:`~lidframe.analyses.per_speaker.per_speaker`'s: one row per
        enrolled speaker with trials, most disclosed first (then, in the open set, one per
        outsider speaker).

    Raises
    ------
    InputError
        The per-trial file is missing, damaged, or does not match the cell's summary.
    """
    why_no_task = "no task of the cell was given to compute its evaluation again (cell_per_speaker's task=)"
    return _cell_table(cell, Path(out_dir), bootstrap, task, why_no_task)[0]


def _cell_table(
    cell: FinishedCell | Mapping[str, Any],
    out: Path,
    bootstrap: Bootstrap | None,
    task: FitTask | None,
    why_no_task: str,
) -> tuple[PerSpeakerResult, str | None]:
    """:func:`cell_per_speaker`'s table and why it holds the calibrator fixed where the cell refitted it (or None)."""
    from lidframe.analyses.per_speaker import per_speaker
    from lidframe.grid.report.refits import cell_refit

    cell = as_finished_cell(cell)
    summary = cell.summary
    file = _read_per_trial(out / str(cell.per_trial), out)
    outside, outsider = _outsiders(summary, file)
    enrolled = np.unique(file.trial_speakers[~outsider])
    n_enrolled = int(summary.n_enrolled or enrolled.size)
    if enrolled.size == 0 or enrolled.size > n_enrolled:
        raise InputError(
            f"{file.path}: {enrolled.size} enrolled speakers with trials, but the cell's summary has N = {n_enrolled}; "
            f"the file is stale: delete it and rerun lidframe grid on {out}"
        )
    settings = _cell_bootstrap(cell, bootstrap)
    refit = cell_refit(cell, task, file.lid, settings, why_no_task=why_no_task)
    result = attrs.evolve(_result(summary, file, enrolled, outsider, outside), refit=refit.refit)
    table = per_speaker(result, bootstrap=settings)
    rows = table.rows
    if "true_rank" not in file.optional:  # no rank in the file: not computed, rather than 0
        rows = tuple(attrs.evolve(row, rank1_rate=math.nan) for row in rows)
    note = table.interval_note
    if refit.why_fixed is not None:
        note = f"{note} here, although the cell's own intervals refitted it: {refit.why_fixed}"
    table = attrs.evolve(
        table,
        rows=rows,
        n_enrolled=n_enrolled,
        log2_n=float(summary.log2_n),
        n_speakers_without_trials=n_enrolled - int(enrolled.size),
        interval_note=note,
    )
    return table, refit.why_fixed


@attrs.frozen
class _PerTrialFile:
    """The arrays of a cell's per-trial file that its per-speaker table reads, each flat.

    ``optional`` holds those of :data:`_SPEAKER_OPTIONAL` the file has, as floats.
    """

    path: Path
    lid: np.ndarray
    trial_speakers: np.ndarray
    trial_ids: np.ndarray
    optional: dict[str, np.ndarray]


def _read_per_trial(path: Path, out: Path) -> _PerTrialFile:
    """Read a cell's per-trial file (*out*: the grid folder, named in the errors).

    Raises
    ------
    InputError
        The file is missing or damaged, or its arrays differ in length.
    """
    from lidframe.data.npzfile import read_npz

    if not path.is_file():
        raise InputError(f"{path}: the per-trial file of a grid cell is missing; rerun lidframe grid on {out}")
    arrays = read_npz(
        path,
        _SPEAKER_ARRAYS,
        _SPEAKER_OPTIONAL,
        kinds=dict.fromkeys(("lid", *_SPEAKER_OPTIONAL), "numbers"),
        what="per-trial LID file",
    )
    lid = np.asarray(arrays["lid"], dtype=np.float64).ravel()
    trial_speakers = np.asarray(arrays["trial_speakers"]).astype(str).ravel()
    trial_ids = np.asarray(arrays["trial_ids"]).astype(str).ravel()
    optional = {k: np.asarray(arrays[k], dtype=np.float64).ravel() for k in _SPEAKER_OPTIONAL if k in arrays}
    sizes = {lid.size, trial_speakers.size, trial_ids.size, *(v.size for v in optional.values())}
    if len(sizes) != 1:
        raise InputError(f"{path}: its arrays have different lengths {sorted(sizes)}; rerun lidframe grid on {out}")
    return _PerTrialFile(path, lid, trial_speakers, trial_ids, optional)


def _outsiders(summary: Summary, file: _PerTrialFile) -> tuple[float, np.ndarray]:
    """The cell's outsider share and which trials are outsiders (or have no LID).

    A file without the open-set arrays of an open-set cell's summary is read as its
    enrolled trials only (outside 0).
    """
    open_set = summary.open_set
    outside = 0.0 if open_set is None or math.isnan(open_set.outside) else float(open_set.outside)
    optional = file.optional
    outsider = optional["outsider"] != 0 if "outsider" in optional else np.isnan(file.lid)
    if outside > 0 and not {"membership_bits", "top_posterior"} <= set(optional):
        outside = 0.0  # an open-set summary, a file without the open-set arrays: its enrolled trials only
        outsider = np.isnan(file.lid) | outsider
    return outside, outsider


def _result(
    summary: Summary, file: _PerTrialFile, enrolled: np.ndarray, outsider: np.ndarray, outside: float
) -> Result:
    """The :class:`~lidframe.core.evaluation.Result` of a cell, rebuilt from its per-trial file for ``per_speaker``.

    *summary* is the cell's stored summary.  Each enrolled speaker's log prior is
    recovered from its trials' LIDs and posteriors (NaN without ``posterior_true``); the
    rank of the true speaker is 0 where the file has none.
    """
    from lidframe.core.result import Result

    lid, optional = file.lid, file.optional
    column = np.searchsorted(enrolled, file.trial_speakers[~outsider])
    log_prior = np.full(enrolled.size, np.nan)
    if "posterior_true" in optional:
        # LID = log2(p / ((1 - π_∅) π_j)): the prior of each trial's speaker, from its LID and posterior
        with np.errstate(divide="ignore", invalid="ignore"):
            per_trial = np.log(optional["posterior_true"][~outsider]) - lid[~outsider] * math.log(2.0)
        per_trial -= math.log1p(-outside) if outside > 0 else 0.0
        finite = np.isfinite(per_trial)
        log_prior[column[finite]] = per_trial[finite]
    ranks = optional.get("true_rank")
    return Result(
        lid=lid,
        posterior_true=optional.get("posterior_true", np.full(lid.size, np.nan)),
        true_rank=np.zeros(lid.size, dtype=np.int64) if ranks is None else ranks.astype(np.int64),
        is_outsider=outsider,
        trial_ids=file.trial_ids,
        trial_speakers=file.trial_speakers,
        enrolled=enrolled,
        log_prior=log_prior,
        summary=summary,  # the stored summary: per_speaker reads its calibrator and prior
        calibrator=None,
        prior=None,
        outside=outside,
        membership_bits=optional.get("membership_bits") if outside > 0 else None,
        top_posterior=optional.get("top_posterior") if outside > 0 else None,
    )


def with_per_speaker(
    report: Report,
    cells: Sequence[FinishedCell | Mapping[str, Any]],
    out_dir: StrPath,
    *,
    bootstrap: Bootstrap | None = None,
    freshness: Freshness | None = None,
) -> Report:
    """*report* (:func:`lidframe.report.report_from_grid` of *cells*) with a per-speaker table for each system.

    Per system (a section of the page) its first cell -- the one whose histogram the
    section shows -- gets :func:`cell_per_speaker`: the page then has, like the pages of
    ``lidframe evaluate --report`` and the demos, the system's speakers from the most to
    the least disclosed with their within-speaker intervals, and the dot plot that names
    the top and bottom ones.  A fresh cell whose intervals refitted the calibrator gets
    its task from *freshness*, so its table refits too; a table that holds it fixed
    where its cell refitted it says why in a note of the page.

    Parameters
    ----------
    report : Report
        Of the grid's cells; each cell's per-trial file is found by its digest entry in the
        provenance (``per-trial LID of <label>``).
    cells : sequence of FinishedCell or mapping
        The cells the report was built from.
    out_dir : str or os.PathLike
        The grid folder.
    bootstrap : Bootstrap, optional
        As for :func:`cell_per_speaker`.
    freshness : Freshness, optional
        The cells checked against the grid's spec (default
        :func:`lidframe.grid.freshness.check_freshness` of *out_dir*): each fresh cell's task.

    Returns
    -------
    Report
        A new record; *report* is not changed.
    """
    out = Path(out_dir)
    by_path = {str(out / str(c.per_trial)): c for c in map(as_finished_cell, cells)}
    prefix = "per-trial LID of "
    path_of = {f.role[len(prefix) :]: f.path for f in report.provenance.inputs if f.role.startswith(prefix)}
    if freshness is None:
        from lidframe.grid.freshness import check_freshness

        freshness = check_freshness(out)
    systems, done, notes = [], set(), []
    for system in report.systems:
        cell = by_path.get(path_of.get(system.label, ""))
        if system.name in done or cell is None or system.per_speaker is not None:
            systems.append(system)
            continue
        done.add(system.name)
        task = freshness.tasks.get(cell.cell_id)
        table, why_fixed = _cell_table(cell, out, bootstrap, task, _why_no_task(cell, freshness))
        if why_fixed is not None:
            notes.append(
                f"The per-speaker intervals of {system.label} hold the calibrator fixed, although the cell's own "
                f"intervals refitted it: {why_fixed}."
            )
        systems.append(attrs.evolve(system, per_speaker=table))
    return attrs.evolve(report, systems=systems, notes=(*report.notes, *notes))


def _why_no_task(cell: FinishedCell, freshness: Freshness) -> str:
    """Why *freshness* has no task of *cell*: its inputs changed, or they could not be checked."""
    if cell.cell_id in freshness.stale:
        return f"its inputs changed since it was computed ({freshness.stale[cell.cell_id]})"
    if freshness.unchecked is not None:
        return f"its inputs could not be checked against the grid's spec ({freshness.unchecked})"
    return "the grid's spec does not plan it as it was computed"
