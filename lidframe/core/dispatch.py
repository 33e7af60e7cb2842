"""One dispatch over the LID engines of :func:`lidframe.evaluate_fitted`, each returning an :class:`EngineResult`.

The trials of an eval set -- its enrolled trials, or every trial in the open set
(``open_set=True``, :mod:`lidframe.core.openset`) -- go to one of three engines:

* a score set (or an embedding set scored in full for the exact binary view): the tiled
  dense engine (:func:`lidframe.core.lid.lid_from_scores`), :func:`run_dense`;
* an embedding set: the streaming engine (:func:`lidframe.core.streaming.lid_from_embeddings`),
  :func:`run_streaming`;
* an embedding set with a dask scheduler: the same engine over blocks of trial rows
  (:func:`lidframe.core.cluster.lid_on_cluster`), :func:`run_cluster`.

:func:`run_engine` picks one; each returns the same record
(:class:`~lidframe.core.engine_result.EngineResult`), from which
:func:`lidframe.core.summarise.summarise` builds the :class:`~lidframe.core.summary.Summary`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lidframe.core.cluster import lid_on_cluster
from lidframe.core.engine import Engine
from lidframe.core.engine_result import EngineResult, EngineUsed
from lidframe.core.lid import lid_from_scores
from lidframe.core.openset import OpenSetStats
from lidframe.core.streaming import StreamingResult, lid_from_embeddings
from lidframe.core.znorm import FittedCalibrator
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.scoreset import ScoreSet
from lidframe.metrics.binned_grid import DEFAULT_BINS

#: What ran on an embedding set scored in full (its cosine matrix, float64 on the CPU).
DENSE_ENGINE = EngineUsed(kernel="dense", device="cpu", precision="float64")


def run_dense(
    closed: ScoreSet,
    fitted: FittedCalibrator,
    log_prior: np.ndarray,
    *,
    znorm_ddof: int,
    engine: Engine,
    exact_pairs: bool,
    engine_used: EngineUsed | None = None,
    open_set: bool = False,
) -> EngineResult:
    """The tiled dense engine on a score set; *exact_pairs* also keeps every enrolled trial's pair LLRs.

    *closed* holds enrolled trials only, or (*open_set*) outsider trials too.
    """
    n_trials, n_enrolled = closed.n_trials, closed.n_enrolled
    n_enrolled_trials = int((closed.true_index >= 0).sum())
    pair_llr = (np.empty(n_enrolled_trials), np.empty(n_enrolled_trials * (n_enrolled - 1))) if exact_pairs else None
    stats = OpenSetStats.empty(n_trials) if open_set else None
    ranks = np.empty(n_trials, dtype=np.int64)  # 0 for an outsider trial: no true speaker to rank
    lid_bits = lid_from_scores(
        closed.scores,
        closed.true_index,
        fitted,
        log_prior,
        znorm_ddof=znorm_ddof,
        tile_rows=engine.tile_rows,
        row_names=closed.trial_ids,
        pair_llr_out=pair_llr,
        stats_out=None if stats is None else (stats.log_evidence, stats.log_top),
        rank_out=ranks,
        threads=engine.cpu_threads(),
    )
    return EngineResult(lid_bits=lid_bits, true_rank=ranks, pair_llr=pair_llr, engine=engine_used, open_stats=stats)


def _engine_used(streamed: StreamingResult) -> EngineUsed:
    return EngineUsed(kernel=streamed.kernel, device=streamed.device, precision=streamed.precision)


def run_streaming(
    closed: EmbeddingSet,
    fitted: FittedCalibrator,
    log_prior: np.ndarray,
    *,
    znorm_ddof: int,
    engine: Engine,
    binary_bins: int | None,
    open_set: bool = False,
) -> EngineResult:
    """The streaming engine on an embedding set; *binary_bins* also counts the enrolled trials' pairs."""
    streamed = lid_from_embeddings(
        closed.trial_vectors,
        closed.enrol_vectors,
        closed.true_index,
        fitted,
        log_prior,
        znorm_ddof=znorm_ddof,
        engine=engine,
        row_names=closed.trial_ids,
        binary_bins=binary_bins,
        open_set=open_set,
    )
    return EngineResult(
        lid_bits=streamed.lid_bits,
        true_rank=streamed.true_rank,
        binned_pairs=streamed.binned_pairs,
        engine=_engine_used(streamed),
        open_stats=streamed.open_stats,
    )


def run_cluster(
    closed: EmbeddingSet,
    fitted: FittedCalibrator,
    log_prior: np.ndarray,
    *,
    znorm_ddof: int,
    engine: Engine,
    binary_bins: int | None,
    scheduler: Any,
    open_set: bool = False,
) -> EngineResult:
    """The streaming engine over blocks of trial rows on the dask cluster at *scheduler*."""
    run = lid_on_cluster(
        closed.trial_vectors,
        closed.enrol_vectors,
        closed.true_index,
        fitted,
        log_prior,
        scheduler=scheduler,
        znorm_ddof=znorm_ddof,
        engine=engine,
        row_names=closed.trial_ids,
        binary_bins=binary_bins,
        open_set=open_set,
    )
    return EngineResult(
        lid_bits=run.lid.lid_bits,
        true_rank=run.lid.true_rank,
        binned_pairs=run.lid.binned_pairs,
        engine=_engine_used(run.lid),
        scheduler=run.scheduler,
        n_blocks=run.n_blocks,
        open_stats=run.lid.open_stats,
    )


def run_engine(
    closed: ScoreSet | EmbeddingSet,
    fitted: FittedCalibrator,
    log_prior: np.ndarray,
    *,
    znorm_ddof: int,
    engine: Engine,
    binary_method: str | None,
    scheduler: Any = None,
    engine_used: EngineUsed | None = None,
    open_set: bool = False,
) -> EngineResult:
    """LID of the trials of *closed* by the engine that fits it (module docstring).

    Parameters
    ----------
    closed : ScoreSet or EmbeddingSet
        Eval trials whose speaker is enrolled (no outsider trials), or every eval trial
        with *open_set*.
    fitted : calibrator
        A fitted calibrator.
    log_prior : ndarray, shape (N,)
        Natural-log prior over the enrolled speakers.
    znorm_ddof : {0, 1}
    engine : Engine
    binary_method : {"exact", "binned"} or None
        The binary view the engine prepares: every pair's LLR (a score set), pair counts
        (an embedding set), or none.
    scheduler : str or distributed.Client, optional
        Run an embedding set on this dask cluster.
    engine_used : EngineUsed, optional
        Recorded for a score set (:data:`DENSE_ENGINE` for an embedding set scored in full).
    open_set : bool, default False
        Also compute every trial's open-set statistics (``EngineResult.open_stats``).
    """
    if isinstance(closed, ScoreSet):
        exact_pairs = binary_method == "exact"
        return run_dense(
            closed,
            fitted,
            log_prior,
            znorm_ddof=znorm_ddof,
            engine=engine,
            exact_pairs=exact_pairs,
            engine_used=engine_used,
            open_set=open_set,
        )
    bins = DEFAULT_BINS if binary_method == "binned" else None
    common: dict[str, Any] = {"znorm_ddof": znorm_ddof, "engine": engine, "binary_bins": bins, "open_set": open_set}
    if scheduler is not None:
        return run_cluster(closed, fitted, log_prior, scheduler=scheduler, **common)
    return run_streaming(closed, fitted, log_prior, **common)
