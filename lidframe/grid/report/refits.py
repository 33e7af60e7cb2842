"""What a grid cell's per-speaker intervals refit the calibrator from: its evaluation, computed again.

A cell stores its summary and its per-trial LIDs, not the dev scores on which its
bootstrap refitted the calibrator (``Bootstrap(resample="dev+eval")``,
:mod:`lidframe.core.refit`).  So that its per-speaker table
(:func:`lidframe.grid.report.cell_per_speaker`) refits where the cell's own intervals
refitted, :func:`cell_refit` computes the cell's evaluation again from the plan's task of
it (:func:`lidframe.grid.work.cell_result`: the grid's dev and eval score sets, the cell's
calibrator, prior, seed and settings) and hands on its
:attr:`~lidframe.core.result.Result.refit`.  It does so only for a cell that is fresh
(its inputs digest that of the cell the spec plans now,
:attr:`lidframe.grid.freshness.Freshness.tasks`), and uses the evaluation only where it
is the stored one bit for bit: its summary (``Result.to_dict()``) the cell's stored
summary without the ``longitudinal`` and ``legal`` blocks, and its per-trial LIDs the
file's.  Anywhere else -- a stale cell, a spec that could not be planned, a score file
gone, an evaluation that differs -- the table holds the calibrator fixed, as it did
before 0.3.0, and says why (:attr:`CellRefit.why_fixed`).

Cost: one evaluation of the cell (its calibrator fit and its bootstrap's refits); the
table then reuses those refits and pays the passes over the eval scores only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lidframe.data.fileio import json_clean
from lidframe.errors import InputError
from lidframe.grid.records import FinishedCell, FitTask

if TYPE_CHECKING:
    from lidframe.core.refit import RefitInputs
    from lidframe.stats.bootstrap import Bootstrap

__all__ = ["CellRefit", "cell_refit", "refitted_by_cell"]

#: The blocks a cell adds to its evaluation's ``to_dict()`` in its stored summary (not computed again).
_ADDED_BLOCKS = ("longitudinal", "legal")


@attrs.frozen
class CellRefit:
    """What a cell's per-speaker intervals refit the calibrator from (:func:`cell_refit`).

    Attributes
    ----------
    refit : RefitInputs or None
        The cell's evaluation's :attr:`~lidframe.core.result.Result.refit`; None where the
        table holds the calibrator fixed.
    why_fixed : str or None
        Why it holds it fixed although the cell's own intervals refitted it (a clause:
        ``"its inputs changed since it was computed (eval file e.npz changed)"``); None where
        it refits, or where the cell's intervals held it fixed too.
    """

    refit: RefitInputs | None = None
    why_fixed: str | None = None


def refitted_by_cell(cell: FinishedCell) -> bool:
    """Whether the cell's own intervals refitted the calibrator (its summary's bootstrap ``resample="dev+eval"``)."""
    stored = cell.summary.bootstrap
    return stored is not None and stored.resample == "dev+eval"


def cell_refit(
    cell: FinishedCell, task: FitTask | None, lid: np.ndarray, bootstrap: Bootstrap, *, why_no_task: str
) -> CellRefit:
    """What *cell*'s per-speaker table refits the calibrator from, or why it holds it fixed (module docstring).

    Parameters
    ----------
    cell : FinishedCell
        The stored cell.
    task : FitTask or None
        The plan's task of the cell (:attr:`lidframe.grid.freshness.Freshness.tasks`, with
        that cell only), whose cell of *cell*'s id is computed again; None for a cell that
        is not fresh or not planned.
    lid : ndarray, shape (T,)
        The LIDs of its per-trial file (bits; NaN for a closed-set outsider trial).
    bootstrap : Bootstrap
        The table's interval settings: with ``resample="eval"`` nothing is computed.
    why_no_task : str
        Why *task* is None, said in :attr:`CellRefit.why_fixed`.

    Returns
    -------
    CellRefit
    """
    if bootstrap.resample != "dev+eval" or not refitted_by_cell(cell):
        return CellRefit()  # held fixed as the cell's intervals held it (or as asked)
    planned = None if task is None else next((c for c in task.cells if c.cell_id == cell.cell_id), None)
    if task is None or planned is None:
        return CellRefit(why_fixed=why_no_task if task is None else "the task given does not plan this cell")
    from lidframe.grid.work import cell_result

    try:
        result = cell_result(task, planned)
    except InputError as exc:
        return CellRefit(why_fixed=f"its evaluation could not be computed again ({' '.join(str(exc).split())})")
    if _summary_json(result.to_dict()) != _summary_json(cell.stored_summary(), stored=True) or not np.array_equal(
        np.asarray(result.lid, dtype=np.float64), lid, equal_nan=True
    ):
        return CellRefit(
            why_fixed="its evaluation computed again from the grid's score sets is not the stored one "
            "(a score file or the code changed since; rerun lidframe grid)"
        )
    if result.refit is None:
        return CellRefit(why_fixed="its evaluation computed again holds the calibrator fixed")
    return CellRefit(refit=result.refit)


def _summary_json(summary: Any, *, stored: bool = False) -> str:
    """A summary as JSON text, to compare bit for bit: NaN as null, keys sorted, without the cell's added blocks."""
    record = dict(summary)
    if stored:
        for key in _ADDED_BLOCKS:
            record.pop(key, None)
    if record.get("calibrator_fit") is None:  # a calibrator without a record: no key in the stored summary
        record.pop("calibrator_fit", None)
    return json.dumps(json_clean(record), sort_keys=True)
