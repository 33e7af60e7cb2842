"""The grid's work, as its workers run it: score a split into the cache, fuse attackers' score sets, fit a
calibrator and evaluate its cells.

Each function takes and returns picklable records (a worker process or a dask worker
runs it); nothing here writes the store.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lidframe.core.result import Result  # at run time: Sphinx resolves cell_result's signature
from lidframe.data.fileio import json_clean
from lidframe.errors import InputError
from lidframe.grid.records import Cell, CellOutcome, FitTask, FusionJob, ScoreJob

if TYPE_CHECKING:
    from lidframe.analyses.legal import SinglingOut
    from lidframe.attackers.base import EmbeddingAttacker
    from lidframe.data.scoreset import ScoreSet

__all__ = ["readable_scores", "score_split", "fuse_splits", "run_task", "cell_result"]


def readable_scores(score_file: str) -> bool:
    """Whether a cached score set loads (a damaged cache file is scored again, not failed on forever)."""
    from lidframe.data.scoreset import ScoreSet

    try:
        ScoreSet.load(score_file)
    except InputError:
        return False
    return True


def score_split(job: ScoreJob) -> str:
    """Score a data-dir split with an attacker into the cache (skipped when cached); the cache file."""
    target = Path(job.target)
    if target.is_file():
        return str(target)
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.utterance import group_by_speaker
    from lidframe.grid.spec.records import source_wav_paths
    from lidframe.registry import create

    attacker = create("attacker", job.attacker)
    wav_paths = source_wav_paths(job.source)
    enrol = read_data_dir(job.source["enrol"], wav_paths=wav_paths)
    trials = [u for folder in job.source["trials"] for u in read_data_dir(folder, wav_paths=wav_paths)]
    target.parent.mkdir(parents=True, exist_ok=True)
    if job.mechanism is None:
        scores = attacker.score(trials, group_by_speaker(enrol))
    else:
        from lidframe.privacy.audit import released_scoreset

        # released_scoreset checks that the attacker embeds and enrols (an EmbeddingAttacker's methods)
        embedding_attacker = cast("EmbeddingAttacker", attacker)
        scores = released_scoreset(embedding_attacker, job.mechanism, group_by_speaker(enrol), trials)
    scores.save(target)
    return str(target)


def fuse_splits(job: FusionJob) -> tuple[str, str]:
    """Fuse the members' cached score sets of *job* into its dev and eval files (skipped when cached); the files.

    The fusion is fitted on the members' dev sets and applied to both splits
    (:func:`lidframe.core.fusion.fit_fusion`, :func:`~lidframe.core.fusion.apply_fusion`, as
    ``lidframe fuse``); both files hold its provenance
    (:func:`lidframe.report.score_files.fusion_provenance`: each member's cache file with
    its digest, and the weights named by the members' specs), written both or neither.

    Raises
    ------
    InputError
        The members' sets do not match (trials, speakers), or the fit has no optimum.
    """
    if all(readable_scores(target) for target in job.targets):
        return job.targets
    from lidframe.core.fusion import apply_fusion, fit_fusion
    from lidframe.data.fileio import staged_outputs
    from lidframe.data.scoreset import ScoreSet
    from lidframe.report.score_files import fusion_provenance

    dev = [ScoreSet.load(path) for path in job.dev]
    ev = [ScoreSet.load(path) for path in job.eval]
    fusion = fit_fusion(dev, C=job.C, znorm_ddof=job.znorm_ddof, names=job.members)
    fused = [apply_fusion(fusion, dev, names=job.members), apply_fusion(fusion, ev, names=job.members)]
    inputs = [(f"{split} {k}", path) for split in ("dev", "eval") for k, path in enumerate(getattr(job, split), 1)]
    provenance = fusion_provenance(fusion, inputs, command=None, names=job.members)
    Path(job.dev_target).parent.mkdir(parents=True, exist_ok=True)
    with staged_outputs():  # both files or, on an error, neither
        for scores, target in zip(fused, job.targets, strict=True):
            scores.save(target, provenance=provenance)
    return job.targets


def run_task(task: FitTask) -> list[CellOutcome]:
    """Fit one calibrator on dev, evaluate every (prior, seed) cell; errors are returned, not raised.

    The fit depends on whether a cell's prior is open (``outside`` > 0, or ``"auto"`` on a
    dev set with outsider trials): in the open set the dev outsider trials add non-mated
    pairs (:func:`lidframe.core.evaluation.fit_calibrator`, as :func:`lidframe.evaluate`
    does).  So the calibrator is fitted lazily, once per openness its cells need: at most
    twice per task, once when every prior is closed (or every one open).  With
    ``[grid] legal`` (:attr:`FitTask.legal`), singling out -- which depends on the eval set
    and the cell's seed, not on the calibrator or the prior -- is drawn once per seed of
    the task (:class:`_SinglingOut`) and linkability computed per cell from its ranks.
    """
    from lidframe.data.scoreset import ScoreSet

    start = time.perf_counter()
    try:
        dev, ev = ScoreSet.load(task.dev), ScoreSet.load(task.eval)
    except Exception as exc:  # noqa: BLE001 - recorded per cell, the grid goes on
        error = f"{type(exc).__name__}: {exc}"
        return [
            CellOutcome(cell=cell, status="error", error=error, seconds=time.perf_counter() - start)
            for cell in task.cells
        ]
    fits = _LazyFits(task, dev, start)
    singled = _SinglingOut(task, ev)
    outcomes = []
    for cell in task.cells:
        try:
            open_set = _is_open(cell.prior, dev)
        except Exception as exc:  # noqa: BLE001 - recorded per cell, the grid goes on
            outcomes.append(CellOutcome(cell=cell, status="error", error=f"{type(exc).__name__}: {exc}"))
            continue
        fitted, fit_error, fit_seconds = fits.get(open_set)
        if fit_error is not None:
            outcomes.append(CellOutcome(cell=cell, status="error", error=fit_error, seconds=fit_seconds))
        else:
            outcomes.append(_evaluate_cell(task, cell, dev, ev, fitted, singled))
    return outcomes


def _is_open(prior_spec: str, dev: ScoreSet) -> bool:
    """Whether *prior_spec* is an open-set prior on *dev* (its ``outside`` > 0, ``"auto"`` resolved on dev)."""
    from lidframe.core.openset import resolve_outside
    from lidframe.registry import resolve_prior

    outside, _ = resolve_outside(resolve_prior(prior_spec), dev)
    return outside > 0


def _fit(task: FitTask, dev: ScoreSet, open_set: bool) -> Any:
    """*task*'s calibrator fitted on *dev* (in the open set with the outsider trials' pairs), as every cell's is."""
    from lidframe.core.evaluation import fit_calibrator

    return fit_calibrator(dev, task.calibrator, znorm_ddof=task.znorm_ddof, outsider_pairs=open_set)


def _evaluated(task: FitTask, cell: Cell, dev: ScoreSet, ev: ScoreSet, fitted: Any) -> Result:
    """*cell*'s evaluation of *ev* under the calibrator *fitted* on *dev* (with its seed's bootstrap)."""
    from lidframe.core.evaluation import evaluate_fitted

    return evaluate_fitted(ev, fitted, prior=cell.prior, dev=dev, options=task.cell_options(cell))


def cell_result(task: FitTask, cell: Cell) -> Result:
    """The evaluation of one cell of *task* computed again, as :func:`run_task` computes it.

    Its calibrator fitted on the task's dev set and the eval set evaluated under it with
    the cell's prior and options (:meth:`FitTask.cell_options`): the
    :class:`~lidframe.core.result.Result` whose ``to_dict()`` the cell stored as its
    summary (without the ``longitudinal`` and ``legal`` blocks the cell adds), with its
    :attr:`~lidframe.core.result.Result.refit` -- what the grid's report refits a cell's
    per-speaker intervals from (:mod:`lidframe.grid.report.refits`).

    Raises
    ------
    InputError
        A score file that is gone or damaged, or a fit or evaluation that fails.
    """
    from lidframe.data.scoreset import ScoreSet

    dev, ev = ScoreSet.load(task.dev), ScoreSet.load(task.eval)
    return _evaluated(task, cell, dev, ev, _fit(task, dev, _is_open(cell.prior, dev)))


class _LazyFits:
    """The calibrator of one task fitted on dev at most once per openness (closed, open), on first need."""

    def __init__(self, task: FitTask, dev: ScoreSet, start: float):
        self.task, self.dev, self.start = task, dev, start
        self.fitted: dict[bool, tuple[Any, str | None, float]] = {}

    def get(self, open_set: bool) -> tuple[Any, str | None, float]:
        """(fitted calibrator or None, error text or None, seconds the fit took) for *open_set*."""
        if open_set not in self.fitted:
            began = time.perf_counter() if self.fitted else self.start  # the first fit also counts the loading
            try:
                fitted = _fit(self.task, self.dev, open_set)
                self.fitted[open_set] = (fitted, None, time.perf_counter() - began)
            except Exception as exc:  # noqa: BLE001 - recorded per cell, the grid goes on
                self.fitted[open_set] = (None, f"{type(exc).__name__}: {exc}", time.perf_counter() - began)
        return self.fitted[open_set]


class _SinglingOut:
    """Singling out of one task's eval set, drawn at most once per seed of its cells, on first need.

    Its draws and its interval depend on the eval set, the seed (the draws' and the
    bootstrap's, as ``lidframe evaluate --seed``'s) and the task's bootstrap settings
    only, so every cell of one seed shares it, whatever its prior.
    """

    def __init__(self, task: FitTask, ev: ScoreSet):
        self.task, self.ev = task, ev
        self.by_seed: dict[int, tuple[SinglingOut | None, str | None]] = {}

    def get(self, cell: Cell) -> tuple[SinglingOut | None, str | None]:
        """(SinglingOut or None, why it is absent or None) of *cell*'s seed (:func:`singling_out_criterion`)."""
        from lidframe.analyses.legal_criteria import singling_out_criterion

        if cell.seed not in self.by_seed:
            bootstrap = self.task.cell_options(cell).bootstrap
            self.by_seed[cell.seed] = singling_out_criterion(self.ev, bootstrap=bootstrap, seed=cell.seed)
        return self.by_seed[cell.seed]


def _evaluate_cell(
    task: FitTask, cell: Cell, dev: ScoreSet, ev: ScoreSet, fitted: Any, singled: _SinglingOut
) -> CellOutcome:
    """One cell of *task*, with its calibrator *fitted* on *dev*: its summary and per-trial arrays, or its error."""
    from lidframe.analyses.legal_criteria import legal_criteria

    began = time.perf_counter()
    try:
        options = task.cell_options(cell)
        result = _evaluated(task, cell, dev, ev, fitted)
        summary = dict(result.to_dict())  # a plain dict: the k-utterance rows and the legal block are added to it
        if task.longitudinal and cell.prior == "uniform":  # the k-utterance attacker uses a uniform prior
            summary["longitudinal"] = _longitudinal_rows(task, cell, dev, ev)
        if task.legal:  # as lidframe evaluate --seed SEED computes it, singling out shared by the seed's cells
            legal = legal_criteria(
                result, ev, bootstrap=options.bootstrap, seed=cell.seed, singled_out=singled.get(cell)
            )
            summary["legal"] = legal.to_dict()
        return CellOutcome(
            cell=cell,
            status="ok",
            summary=json_clean(summary),
            trial_ids=result.trial_ids,
            trial_speakers=result.trial_speakers,
            lid=result.lid,
            posterior_true=result.posterior_true,
            outsider=None if result.outside == 0 else result.is_outsider.astype(np.int8),
            membership_bits=result.membership_bits,
            top_posterior=result.top_posterior,
            seconds=time.perf_counter() - began,
        )
    except Exception as exc:  # noqa: BLE001 - a worker reports any failure as its cell's error
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return CellOutcome(cell=cell, status="error", error=detail, seconds=time.perf_counter() - began)


def _longitudinal_rows(task: FitTask, cell: Cell, dev: ScoreSet, ev: ScoreSet) -> dict[str, list]:
    """``fusion -> rows`` of the k-utterance attacker (``[grid.longitudinal]``) in one cell."""
    from lidframe.analyses.longitudinal import longitudinal

    settings = task.longitudinal or {}
    return {
        fusion: longitudinal(
            dev,
            ev,
            settings["k"],
            fusion=fusion,
            calibrator=task.calibrator,
            groups_per_speaker=settings["groups"],
            znorm_ddof=task.znorm_ddof,
            bootstrap=None,
            seed=cell.seed,
        ).to_dict()["rows"]
        for fusion in settings["fusions"]
    }
