"""The :class:`~lidframe.core.summary.Summary` of an engine's run: :func:`summarise`.

The LID aggregates, identification metrics, bootstrap intervals (before the binary view,
which sorts the pair LLRs in place), binary view and open-set view of the trials an
engine ran (an :class:`~lidframe.core.engine_result.EngineResult`), with the settings
that produced them.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from lidframe._version import __version__
from lidframe.core.engine_result import EngineResult
from lidframe.core.membership import MembershipDetection, membership_detection
from lidframe.core.openset import OpenSetTrials
from lidframe.core.refit import RefitInputs, dev_resampling, refitted_log_evidence
from lidframe.core.summary import Summary
from lidframe.core.summary_views import BinaryView, OpenSetView
from lidframe.core.znorm import uses_znorm
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.scoreset import ScoreSet
from lidframe.metrics.aggregates import lid_summary
from lidframe.metrics.detection import OperatingPoint
from lidframe.metrics.identification import cllr_multiclass, rank1_rate, rank_disclosure
from lidframe.registry import CalibratorLike, PriorLike, describe_component
from lidframe.stats.bootstrap import Bootstrap, bootstrap_ci
from lidframe.stats.interval import Interval
from lidframe.stats.weighted import PairLLRs

__all__ = ["summarise"]


def summarise(
    run: EngineResult,
    run_set: ScoreSet | EmbeddingSet,
    posterior_closed: np.ndarray,
    *,
    n_outsider_trials: int,
    binary_status: str,
    bootstrap: Bootstrap | None,
    fitted: CalibratorLike,
    prior: PriorLike,
    znorm_ddof: int,
    dev: ScoreSet | None,
    open_trials: OpenSetTrials | None = None,
    outside_source: str = "given",
    misattribution_threshold: float = 0.9,
    operating_point: OperatingPoint | None = None,
    refit: RefitInputs | None = None,
) -> Summary:
    """The :class:`~lidframe.core.summary.Summary` of an engine's run on the trials of *run_set*.

    Parameters
    ----------
    run : EngineResult
        LID, ranks and pair LLRs (or counts) of the T trials of *run_set*.
    run_set : ScoreSet or EmbeddingSet
        The eval trials the engine ran: those whose speaker is enrolled (closed set), or
        every trial (open set).
    posterior_closed : ndarray, shape (T_c,)
        The closed-set posterior of each enrolled trial's true speaker.
    n_outsider_trials : int
        Eval trials whose speaker is not enrolled.
    binary_status : str
        ``"computed"`` or ``"skipped: <why>"``.
    bootstrap, refit : Bootstrap or None, RefitInputs or None
        Settings of the intervals (None: none; *run*'s pair LLRs are resampled before the
        binary view sorts them), and the dev fit whose calibrator each resample refits
        (:mod:`lidframe.core.refit`; None: held fixed, the settings say ``resample="eval"``).
    fitted, prior, znorm_ddof, dev
        The settings recorded (dev: its sizes, or None).
    open_trials : OpenSetTrials, optional
        Every trial's open-set disclosure (:func:`lidframe.core.openset.open_set_trials`);
        None in the closed set.
    outside_source : {"given", "auto"}
    misattribution_threshold : float
        The chosen threshold of :attr:`OpenSetView.misattribution_rate_at_threshold`.
    operating_point : OperatingPoint, optional
        Of the binary view's ``min_dcf`` and ``act_dcf`` (default ``OperatingPoint()``).
    """
    enrolled = np.asarray(run_set.true_index) >= 0
    lid_bits = run.lid_bits if open_trials is None else open_trials.lid_bits
    ranks = run.true_rank[enrolled] if open_trials is not None else run.true_rank
    intervals, bootstrap = _bootstrap_intervals(
        run, run_set, lid_bits, bootstrap, open_trials, misattribution_threshold, refit
    )
    open_set = None
    if open_trials is not None:
        open_set = _open_set_view(run, open_trials, outside_source, misattribution_threshold, bootstrap, refit)
    return Summary(
        n_enrolled_trials=int(enrolled.sum()),
        n_enrolled=int(run_set.n_enrolled),
        n_outsider_trials=int(n_outsider_trials),
        log2_n=math.log2(run_set.n_enrolled),
        **lid_summary(lid_bits),
        cllr_mc=cllr_multiclass(posterior_closed),
        rank1_rate=rank1_rate(ranks),
        rank_disclosure_bits=rank_disclosure(ranks, run_set.n_enrolled)[1],
        intervals=intervals,
        bootstrap=bootstrap,
        binary_metrics=binary_status,
        binary=_binary_view(run, operating_point),
        calibrator=describe_component(fitted),
        prior=describe_component(prior),
        znorm_ddof=znorm_ddof if uses_znorm(fitted) else None,
        **_dev_sizes(dev),
        lidframe_version=__version__,
        engine=run.engine,
        scheduler=run.scheduler,
        n_blocks=run.n_blocks,
        open_set=open_set,
    )


def _dev_sizes(dev: ScoreSet | None) -> dict[str, Any]:
    """The summary's dev sizes: trials whose speaker is enrolled, enrolled speakers, outsider trials (None: no dev set)."""
    if dev is None:
        return {"n_dev_enrolled_trials": None, "n_dev_enrolled": None, "n_dev_outsider_trials": None}
    return {
        "n_dev_enrolled_trials": int(dev.n_trials - dev.n_outsider_trials),
        "n_dev_enrolled": int(dev.n_enrolled),
        "n_dev_outsider_trials": int(dev.n_outsider_trials),
    }


def _bootstrap_intervals(
    run: EngineResult,
    run_set: ScoreSet | EmbeddingSet,
    lid_bits: np.ndarray,
    bootstrap: Bootstrap | None,
    open_trials: OpenSetTrials | None,
    misattribution_threshold: float,
    refit: RefitInputs | None,
) -> tuple[dict[str, Interval] | None, Bootstrap | None]:
    """The intervals of :func:`summarise` and the settings that say what they cover (None, None without a bootstrap).

    LID, with *run*'s exact pair LLRs EER and Cllr, in the open set its groups.  With
    *refit*, each resample also refits the calibrator on resampled dev speakers; without,
    the settings say ``resample="eval"``.
    """
    if bootstrap is None:
        return None, None
    enrolled = np.asarray(run_set.true_index) >= 0
    pairs = None
    if run.pair_llr is not None:
        n_enrolled_trials = int(enrolled.sum())
        pairs = PairLLRs(run.pair_llr[0], run.pair_llr[1].reshape(n_enrolled_trials, run_set.n_enrolled - 1))
    dev = None
    if refit is not None:
        means = None if open_trials is None else partial(_open_set_means, threshold=misattribution_threshold)
        dev = dev_resampling(refit, pairs=pairs, group_means_of=means)
    intervals = bootstrap_ci(
        lid_bits,
        bootstrap,
        speakers=run_set.trial_speakers,
        pairs=pairs,
        pair_rows=None if open_trials is None else np.flatnonzero(enrolled),
        group_means=None if open_trials is None else _open_set_means(open_trials, misattribution_threshold),
        dev=dev,
    )
    return intervals, bootstrap if refit is not None else bootstrap.held_fixed()


def _open_set_view(
    run: EngineResult,
    trials: OpenSetTrials,
    outside_source: str,
    misattribution_threshold: float,
    bootstrap: Bootstrap | None,
    refit: RefitInputs | None,
) -> OpenSetView:
    """The summary's open-set view, with the membership attack at low FPRs from every trial's log evidence.

    The attack needs outsider trials (None without); its Clopper-Pearson intervals are at
    the bootstrap's level, 95 % without one.  Where the bootstrap refitted the calibrator
    (*bootstrap* says ``"dev+eval"``), they average over the same refits
    (:mod:`lidframe.core.membership`); elsewhere they hold it fixed.
    """
    membership: MembershipDetection | None = None
    if run.open_stats is not None and trials.is_outsider.any():
        level = 0.95 if bootstrap is None else bootstrap.level
        refitted = None
        if refit is not None and bootstrap is not None and bootstrap.resample == "dev+eval":
            refitted = refitted_log_evidence(refit, bootstrap)
        membership = membership_detection(
            run.open_stats.log_evidence, trials.is_outsider, trials.outside, level=level, refitted=refitted
        )
    return OpenSetView.of(
        trials,
        outside_source=outside_source,
        misattribution_threshold=misattribution_threshold,
        membership_detection=membership,
    )


def _binary_view(run: EngineResult, operating_point: OperatingPoint | None) -> BinaryView | None:
    """The exact view of *run*'s pair LLRs (sorting them in place), or the binned one of its counts, or None."""
    if run.pair_llr is not None:
        return BinaryView.from_pair_llrs(*run.pair_llr, overwrite=True, operating_point=operating_point)
    if run.binned_pairs is not None:
        return BinaryView.from_binned(run.binned_pairs, operating_point=operating_point)
    return None


def _open_set_means(trials: OpenSetTrials, threshold: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The group means of :data:`OPEN_SET_INTERVALS` as (per-trial values, group) for the bootstrap."""
    enrolled, outsider = ~trials.is_outsider, trials.is_outsider
    means = {
        "alid_enrolled": (trials.lid_bits, enrolled),
        "alid_outsider": (trials.lid_bits, outsider),
        "membership_enrolled": (trials.membership_bits, enrolled),
        "misattribution_rate": ((trials.top_posterior > 0.5).astype(np.float64), outsider),
        "misattribution_rate_at_threshold": ((trials.top_posterior > threshold).astype(np.float64), outsider),
    }
    if not outsider.any():  # no outsider trial: nothing to resample
        for key in ("alid_outsider", "misattribution_rate", "misattribution_rate_at_threshold"):
            del means[key]
    return means
