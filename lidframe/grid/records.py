"""What a grid plans, computes and stores, as records.

In memory a component that a cell does not have (the attacker and the mechanism of a
score-file system, the mechanism of a grid without mechanisms, the scenario of a grid
without the ``scenarios`` axis or of a score-file system) is ``None``; on disk --
the store's columns, the cell ids, messages and the report's tables -- it is written
``-`` (:data:`NONE`), as it always was, so every grid folder stays valid.  The
conversion is :func:`stored_name` and :func:`from_stored` (used at the store's boundary
only).

:class:`Cell`, :class:`ScoreJob`, :class:`FusionJob`, :class:`FitTask` and :class:`GridPlan` are what
:func:`lidframe.grid.plan.plan_grid` returns; :class:`CellOutcome` is what a worker
returns for one cell; :class:`FinishedCell` is a finished cell read back from the store
(:func:`lidframe.grid.report.load_results`); :class:`GridRun` is what
:func:`lidframe.grid.runner.run_grid` returns.  :func:`read_grid_json` reads back
``OUT/grid.json``, the record of the last run.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lidframe.core.options import EvaluateOptions
from lidframe.core.summary import Summary
from lidframe.data.documents import read_json
from lidframe.data.fileio import StrPath

if TYPE_CHECKING:
    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.grid.spec.records import DataDirSource, GridSpec

__all__ = [
    "NONE",
    "Inputs",
    "stored_name",
    "from_stored",
    "Cell",
    "ScoreJob",
    "FusionJob",
    "FitTask",
    "GridPlan",
    "CellOutcome",
    "FinishedCell",
    "GridRun",
    "GRID_JSON_MAX_BYTES",
    "read_grid_json",
]

#: How the store, the cell ids and the messages write a component a cell does not have.
NONE = "-"

#: ``{key: [label, digest]}``: what a cell or a score set was computed from.
Inputs = dict[str, list[str]]

#: The largest ``OUT/grid.json`` read (bytes, 16 MB): it holds a spec's path and digest, a
#: folder, counts and one path per system, a few kB.
GRID_JSON_MAX_BYTES = 16_000_000


def read_grid_json(out_dir: StrPath) -> Any:
    """The JSON value of ``OUT/grid.json`` (:func:`lidframe.data.documents.read_json`: through the one opener).

    Raises
    ------
    InputError
        Missing, not a regular file (a FIFO is never waited on), larger than
        :data:`GRID_JSON_MAX_BYTES`, or not JSON (nested too deeply, too large).
    """
    what = "the grid's record of its last run (written by lidframe grid)"
    return read_json(Path(out_dir) / "grid.json", what, max_bytes=GRID_JSON_MAX_BYTES)


def stored_name(component: str | None) -> str:
    """*component* as the store writes it: :data:`NONE` for None."""
    return NONE if component is None else component


def from_stored(component: str) -> str | None:
    """A component read from the store: None for :data:`NONE`."""
    return None if component == NONE else component


@attrs.frozen(kw_only=True)
class CellComponents:
    """What names a cell: its id and its components (:class:`Cell`, :class:`FinishedCell`).

    Attributes
    ----------
    cell_id : str
        32 hex digits identifying the cell by its components
        (:func:`lidframe.grid.store.cell_id`).
    system : str
    attacker, mechanism : str or None
        Component specs; None when the cell has none (a score-file system's attacker;
        stored as ``-``).
    calibrator, prior : str
        Component specs.
    seed : int
        The bootstrap seed (and the longitudinal grouping seed).
    scenario : str or None
        The threat-model scenario (:data:`lidframe.data.scenario.SCENARIOS`) of a data-dir
        system's cell in a grid with the ``scenarios`` axis; None otherwise (stored as ``-``),
        and then the cell is named and keyed by its six other components alone.
    """

    cell_id: str
    system: str
    attacker: str | None
    mechanism: str | None
    calibrator: str
    prior: str
    seed: int
    scenario: str | None = None

    @property
    def name(self) -> str:
        """The components joined by ``/`` (``alpha/-/-/logistic/uniform/0``), as messages name a cell.

        A cell with a scenario has it after the mechanism (``b3/ecapa/-/ignorant/logistic/uniform/0``).
        """
        parts = [self.system, stored_name(self.attacker), stored_name(self.mechanism)]
        if self.scenario is not None:
            parts.append(self.scenario)
        return "/".join([*parts, self.calibrator, self.prior, str(self.seed)])


@attrs.frozen(kw_only=True)
class Cell(CellComponents):
    """One planned cell: a (system, attacker, mechanism, calibrator, prior, seed), its scenario, and what it reads.

    Attributes
    ----------
    cell_id, system, attacker, mechanism, calibrator, prior, seed, scenario
        As in :class:`CellComponents`.
    inputs : dict
        ``{key: [label, digest]}`` of every file, code version and setting it reads.
    inputs_digest : str
        One hash of *inputs*' digests (:func:`lidframe.grid.inputs.inputs_digest`).
    """

    inputs: Inputs = attrs.field(eq=False)
    inputs_digest: str


@attrs.frozen(kw_only=True)
class ScoreJob:
    """Scoring one data-dir split with one attacker (and mechanism) into the score cache.

    Attributes
    ----------
    source : DataDirSource
        The enrolment and trial data dirs it scores (for the ``ignorant`` scenario, the
        split's ``original_enrol`` as the enrolment).
    attacker : str
        The attacker's component spec, as it scores (for the ``semi-informed`` scenario,
        with the system's adapted checkpoint).
    mechanism : str or None
        The Gaussian speaker mechanism releasing the trial embeddings; None for none.
    target : str
        The cache file ``OUT/cache/scores/<hash>.npz`` it writes.
    """

    source: DataDirSource
    attacker: str
    mechanism: str | None
    target: str


@attrs.frozen(kw_only=True)
class FusionJob:
    """Fusing K attackers' cached score sets of one (system, mechanism, scenario) into the cache (``fusion?of=``).

    The fusion is fitted on the K dev sets and applied to the dev and the eval sets
    (:func:`lidframe.core.fusion.fit_fusion`, as ``lidframe fuse``); its cache key is built
    from the K components' score-cache keys and the fusion's settings, so a changed
    component is fused again under a new key, never read from the old one.

    Attributes
    ----------
    system : str
    attacker : str
        The fusion entry of ``[grid] attackers`` (``fusion?of=ecapa,xvector``).
    mechanism, scenario : str or None
        The cells' mechanism and scenario (None for none).
    members : tuple of str, length K
        The fused attackers' specs as they score (for ``semi-informed``, with the system's
        adapted checkpoint): what the provenance names each weight after.
    dev, eval : tuple of str, length K
        The K components' score-cache files (:attr:`ScoreJob.target`) of each split.
    C : float or None
        Inverse L2 penalty on the weights (None: none).
    znorm_ddof : int
        The row z-norm of the inputs (the grid's).
    dev_target, eval_target : str
        The fused files ``OUT/cache/fused/<hash>/dev.npz`` and ``eval.npz`` it writes.
    """

    system: str
    attacker: str
    mechanism: str | None
    scenario: str | None
    members: tuple[str, ...]
    dev: tuple[str, ...]
    eval: tuple[str, ...]
    C: float | None
    znorm_ddof: int
    dev_target: str
    eval_target: str

    @property
    def targets(self) -> tuple[str, str]:
        """The fused dev and eval files."""
        return self.dev_target, self.eval_target

    def role(self, split: str) -> str:
        """What the fused *split* file is to a report: ``"dev fused by fusion?of=a,b"`` (its mechanism and scenario after)."""
        shown = [f"{split} fused by {self.attacker}"]
        shown += [f"mechanism {self.mechanism}"] if self.mechanism is not None else []
        shown += [f"scenario {self.scenario}"] if self.scenario is not None else []
        return ", ".join(shown)


@attrs.frozen(kw_only=True)
class FitTask:
    """One calibrator fitted on one dev set and evaluated in each of its cells (every prior and seed).

    Attributes
    ----------
    dev, eval : str
        Score-set files: the system's own, or the score cache a :class:`ScoreJob` (or, for a
        fused attacker, a :class:`FusionJob`) writes.
    calibrator : str
        The calibrator's component spec.
    cells : tuple of Cell
        The cells it evaluates.
    options : EvaluateOptions
        How its cells are evaluated (the spec's :attr:`~lidframe.grid.spec.GridSpec.evaluate`);
        with a bootstrap, each cell's seed replaces its ``seed`` (:meth:`cell_options`).
    longitudinal : dict or None
        ``[grid.longitudinal]`` (``k``, ``fusions``, ``groups``), for the uniform-prior cells.
    legal : bool
        ``[grid] legal``: each cell's summary gains the ``legal`` block (linkability and
        singling out, :func:`lidframe.analyses.legal_criteria.legal_criteria`).
    """

    dev: str
    eval: str
    calibrator: str
    cells: tuple[Cell, ...]
    options: EvaluateOptions
    longitudinal: dict[str, Any] | None = attrs.field(eq=False)
    legal: bool = True

    @property
    def znorm_ddof(self) -> int:
        """The row z-norm's degrees of freedom of :attr:`options`."""
        return self.options.znorm_ddof

    def cell_options(self, cell: Cell) -> EvaluateOptions:
        """The options *cell* is evaluated with: :attr:`options`, its bootstrap seeded with the cell's seed."""
        bootstrap = self.options.bootstrap
        return attrs.evolve(
            self.options, bootstrap=None if bootstrap is None else attrs.evolve(bootstrap, seed=cell.seed)
        )


@attrs.frozen(kw_only=True)
class GridPlan:
    """The work of a grid: its score jobs, fusion jobs and fit tasks (:func:`lidframe.grid.plan.plan_grid`).

    The fusion jobs run after the score jobs (they read their files) and before the fit
    tasks (which read theirs).
    """

    score_jobs: tuple[ScoreJob, ...]
    tasks: tuple[FitTask, ...]
    fusion_jobs: tuple[FusionJob, ...] = ()

    @property
    def cells(self) -> Iterator[Cell]:
        """Every planned cell, task by task."""
        return (cell for task in self.tasks for cell in task.cells)

    @property
    def n_cells(self) -> int:
        """How many cells the plan has."""
        return sum(len(task.cells) for task in self.tasks)


@attrs.frozen(kw_only=True)
class CellOutcome:
    """What computing one cell gave: its summary and per-trial arrays, or its error.

    Attributes
    ----------
    cell : Cell
    status : {"ok", "error"}
    error : str or None
        The error text of a failed cell.
    seconds : float
        Wall time of the cell (of the calibrator fit, for a cell that failed there).
    summary : dict or None
        ``Result.to_dict()`` as plain JSON (plus ``longitudinal`` rows), for an ``ok`` cell.
    trial_ids, trial_speakers, lid, posterior_true : ndarray, shape (T,), or None
        The per-trial file's arrays (LID in bits, NaN for outsider trials in the closed set).
    outsider, membership_bits, top_posterior : ndarray, shape (T,), or None
        An open-set cell's further arrays (:class:`lidframe.core.evaluation.Result`):
        1 for an outsider trial (int8), the membership disclosure (bits) and the top
        enrolled posterior; None for a closed-set cell (its file holds the four above only).
    """

    cell: Cell
    status: str
    error: str | None = None
    seconds: float = 0.0
    summary: dict[str, Any] | None = attrs.field(default=None, eq=False)
    trial_ids: np.ndarray | None = attrs.field(default=None, eq=False)
    trial_speakers: np.ndarray | None = attrs.field(default=None, eq=False)
    lid: np.ndarray | None = attrs.field(default=None, eq=False)
    posterior_true: np.ndarray | None = attrs.field(default=None, eq=False)
    outsider: np.ndarray | None = attrs.field(default=None, eq=False)
    membership_bits: np.ndarray | None = attrs.field(default=None, eq=False)
    top_posterior: np.ndarray | None = attrs.field(default=None, eq=False)


#: The keys of :meth:`FinishedCell.to_dict`, in order.
_FINISHED_KEYS = (
    "system",
    "attacker",
    "mechanism",
    "calibrator",
    "prior",
    "seed",
    "scenario",
    "summary",
    "per_trial",
    "cell_id",
    "per_trial_sha256",
)


@attrs.frozen(kw_only=True)
class FinishedCell(CellComponents, Mapping[str, Any]):
    """A cell stored as ``ok``, read back from the store (:func:`lidframe.grid.report.load_results`).

    ``cell["summary"]`` and ``dict(cell)`` still read it as the row it was: a read-only
    mapping view of :meth:`to_dict`, whose missing components are ``-`` as stored.

    Attributes
    ----------
    cell_id, system, attacker, mechanism, calibrator, prior, seed, scenario
        As in :class:`CellComponents`.
    summary : Summary
        The stored summary (:class:`lidframe.core.summary.Summary`), read by
        :func:`lidframe.grid.stored.finished_cell` (a summary of lidframe 0.2.0 with its
        detection costs missing: :meth:`Summary.from_dict <lidframe.core.summary.Summary.from_dict>`).
    per_trial : str
        Its per-trial file, relative to the grid folder.
    per_trial_sha256 : str or None
        That file's SHA-256 as written; None in a store of an earlier layout.
    calibrator_fit : dict or None
        The fitted calibrator's record, stored beside the summary (``calibrator_fit`` of
        :meth:`Result.to_dict <lidframe.core.evaluation.Result.to_dict>`); None for a
        calibrator without one.
    longitudinal : dict or None
        ``fusion -> rows`` of the k-utterance attacker (``[grid.longitudinal]``, the
        uniform-prior cells), stored beside the summary; None without.
    legal : LegalCriteria or None
        Linkability and singling out of the cell (its summary's ``legal`` block,
        :class:`lidframe.analyses.legal_criteria.LegalCriteria`); None in a cell stored
        without it (``[grid] legal = false``, or by a lidframe before it).
    """

    summary: Summary = attrs.field(eq=False)
    per_trial: str
    per_trial_sha256: str | None = None
    calibrator_fit: dict[str, Any] | None = attrs.field(default=None, eq=False)
    longitudinal: dict[str, list[dict[str, Any]]] | None = attrs.field(default=None, eq=False)
    legal: LegalCriteria | None = attrs.field(default=None, eq=False)

    def stored_summary(self) -> dict[str, Any]:
        """The summary as the store holds its JSON: :meth:`Summary.to_dict`, then ``calibrator_fit``, ``longitudinal``, ``legal``.

        That of a store written by this release, key for key (a store of an earlier one
        reads with the keys of this release).
        """
        stored = self.summary.to_dict()
        if self.calibrator_fit is not None:
            stored["calibrator_fit"] = copy.deepcopy(self.calibrator_fit)
        if self.longitudinal is not None:
            stored["longitudinal"] = copy.deepcopy(self.longitudinal)
        if self.legal is not None:
            stored["legal"] = self.legal.to_dict()
        return stored

    def to_dict(self) -> dict[str, Any]:
        """The cell as the store holds it: components (``-`` for none), summary (:meth:`stored_summary`), per-trial file, id, digest."""
        values = attrs.asdict(self, recurse=False)
        for key in ("attacker", "mechanism", "scenario"):
            values[key] = stored_name(values[key])
        values["summary"] = self.stored_summary()
        return {key: values[key] for key in _FINISHED_KEYS}

    def __getitem__(self, key: str) -> Any:
        if key not in _FINISHED_KEYS:
            raise KeyError(key)
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(_FINISHED_KEYS)

    def __len__(self) -> int:
        return len(_FINISHED_KEYS)


#: The counts of :class:`GridRun`, in the order ``grid.json``'s ``last_run`` holds them.
_COUNTS = ("cells", "skipped", "ok", "error", "fits", "scored", "recomputed")


@attrs.frozen(kw_only=True, eq=False)
class GridRun(Mapping[str, int]):
    """What one :func:`lidframe.grid.runner.run_grid` did.

    Also a read-only mapping of its counts, as when ``run_grid`` returned a dict:
    ``run["ok"]``, ``"ok" in run``, ``dict(run)`` and ``run == {"cells": 12, ...}`` (equality
    is that of the counts) keep working.

    Attributes
    ----------
    spec : GridSpec
        The spec it ran.
    out_dir : pathlib.Path
        The output folder.
    cells : int
        Cells of the spec.
    skipped : int
        Cells stored as ``ok`` with unchanged inputs: not computed again.
    ok, error : int
        Cells computed now that succeeded / failed (a failed cell is stored with its error).
    fits : int
        Calibrator fit tasks run (one per system, attacker, mechanism, scenario and calibrator; a task
        whose priors are both closed and open fits its calibrator once for each).
    scored : int
        Score sets computed into the score cache (a fused attacker's dev and eval sets: two).
    recomputed : int
        Stored cells computed again because their inputs changed (or their per-trial file went).
    """

    spec: GridSpec
    out_dir: Path
    cells: int
    skipped: int
    ok: int
    error: int
    fits: int
    scored: int
    recomputed: int

    def counts(self) -> dict[str, int]:
        """The counts as ``grid.json``'s ``last_run`` holds them: ``{"cells", "skipped", ..., "recomputed"}``."""
        return {key: getattr(self, key) for key in _COUNTS}

    def __getitem__(self, key: str) -> int:
        if key not in _COUNTS:
            raise KeyError(key)
        return int(getattr(self, key))

    def __iter__(self) -> Iterator[str]:
        return iter(_COUNTS)

    def __len__(self) -> int:
        return len(_COUNTS)
