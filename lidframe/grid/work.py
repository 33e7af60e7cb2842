"""The grid's work, as its workers run it: score a split into the cache, fit a calibrator and evaluate its cells.

Each function takes and returns picklable records (a worker process or a dask worker
runs it); nothing here writes the store.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import attrs

from lidframe.data.fileio import json_clean
from lidframe.errors import InputError
from lidframe.grid.records import Cell, CellOutcome, FitTask, ScoreJob

if TYPE_CHECKING:
    from lidframe.attackers.base import EmbeddingAttacker
    from lidframe.data.scoreset import ScoreSet

__all__ = ["readable_scores", "score_split", "run_task"]


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
    from lidframe.registry import create

    attacker = create("attacker", job.attacker)
    enrol = read_data_dir(job.source["enrol"])
    trials = [u for folder in job.source["trials"] for u in read_data_dir(folder)]
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


def run_task(task: FitTask) -> list[CellOutcome]:
    """Fit one calibrator on dev, evaluate every (prior, seed) cell; errors are returned, not raised."""
    from lidframe.core.evaluation import fit_calibrator
    from lidframe.data.scoreset import ScoreSet

    start = time.perf_counter()
    try:
        dev, ev = ScoreSet.load(task.dev), ScoreSet.load(task.eval)
        fitted = fit_calibrator(dev, task.calibrator, znorm_ddof=task.znorm_ddof)
    except Exception as exc:  # recorded per cell, the grid goes on
        error = f"{type(exc).__name__}: {exc}"
        fit_seconds = time.perf_counter() - start
        return [CellOutcome(cell=cell, status="error", error=error, seconds=fit_seconds) for cell in task.cells]
    return [_evaluate_cell(task, cell, dev, ev, fitted) for cell in task.cells]


def _evaluate_cell(task: FitTask, cell: Cell, dev: ScoreSet, ev: ScoreSet, fitted: Any) -> CellOutcome:
    """One cell of *task*, with its calibrator *fitted* on *dev*: its summary and per-trial arrays, or its error."""
    from lidframe.core.evaluation import evaluate_fitted

    began = time.perf_counter()
    try:
        result = evaluate_fitted(
            ev,
            fitted,
            prior=cell.prior,
            dev=dev,
            znorm_ddof=task.znorm_ddof,
            bootstrap=None if task.bootstrap is None else attrs.evolve(task.bootstrap, seed=cell.seed),
        )
        summary = dict(result.to_dict())  # a plain dict: the k-utterance rows are added to it
        if task.longitudinal and cell.prior == "uniform":  # the k-utterance attacker uses a uniform prior
            summary["longitudinal"] = _longitudinal_rows(task, cell, dev, ev)
        return CellOutcome(
            cell=cell,
            status="ok",
            summary=json_clean(summary),
            trial_ids=result.trial_ids,
            trial_speakers=result.trial_speakers,
            lid=result.lid,
            posterior_true=result.posterior_true,
            seconds=time.perf_counter() - began,
        )
    except Exception as exc:
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
