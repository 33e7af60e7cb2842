"""``evaluate``: from a dev and an eval set to per-trial LID and its summary.

:func:`fit_calibrator` fits a calibrator on a dev set, :func:`evaluate_fitted` applies a
fitted one to an eval set, and :func:`evaluate` does both; they return a :class:`Result`
whose ``summary`` is a :class:`~lidframe.core.summary.Summary`
(:func:`~lidframe.core.summarise.summarise`).
:func:`~lidframe.core.sets.as_set` / :func:`~lidframe.core.sets.as_scoreset` read a score or
embedding set given as a path; :class:`~lidframe.core.result.Result` is in :mod:`lidframe.core.result`.

Pipeline (the maths: ``docs/theory.md``; the path of one score: ``docs/architecture.md``)::

    dev  --row z-norm--> z --Calibrator.fit(z, mated?)--> fitted calibrator
    eval --row z-norm--> z --Calibrator.llr--> LLR (T, N) --+ log prior, log-softmax--> LID (bits)

An eval *embedding* set takes the same steps inside the streaming engine
(:func:`~lidframe.core.streaming.lid_from_embeddings`), without forming the (T, N) matrix;
:func:`~lidframe.core.dispatch.run_engine` picks the engine.  A dev embedding set is
scored in full (it must fit in memory).

Outsider trials (speaker not enrolled) are counted in ``summary.n_outsider_trials``
(eval) and ``summary.n_dev_outsider_trials``.  In the closed set (the prior's ``outside``
0, the default) they are left out of the calibration and of LID.  In the open set
(``outside`` > 0, :mod:`lidframe.core.openset`) every eval trial gets a LID -- an outsider
trial its membership disclosure -- and the dev set's outsider trials add their pairs to
the calibration as non-mated pairs.

Options come as records: bootstrap intervals as a :class:`~lidframe.stats.bootstrap.Bootstrap`
(``bootstrap=``, None for none) and the engine settings as an
:class:`~lidframe.core.engine.Engine` (``engine=``).  ``calibrator`` and ``prior`` are
keyword-only; given by position they still work for one release, with a FutureWarning.

Binary view
-----------
``binary_metrics`` asks for the binary view over all closed-set eval pairs (``eer``,
``eer_threshold``, ``cllr``, ``min_cllr``, ``min_dcf``, ``act_dcf``, ``dece_bits``,
``max_abs_llr_log10``, ``zebra_tag``, ``dsys``, ``dsys_method``;
:mod:`lidframe.metrics.binary_view`), by one of two methods (``summary.binary.method``).
The detection costs are measured at ``operating_point``
(:class:`~lidframe.metrics.detection.OperatingPoint`; default P_target = 0.01,
C_miss = C_fa = 1, SpeechBrain's ``minDCF`` defaults; the mapping view's
``binary_operating_point``).  The methods:

* ``"exact"`` holds every pair's LLR at once (T x N float64) and sorts it; an eval
  embedding set is then scored in full (its cosine matrix materialised);
* ``"binned"`` (eval embedding sets) counts the LLRs into per-class histograms of
  :data:`~lidframe.metrics.binned_grid.DEFAULT_BINS` bins in the streaming pass (memory a few
  tiles; Cllr exact, the others within the bounds of :mod:`lidframe.metrics.binned`,
  ``summary.binary.error_bounds``).  Binned metrics have no bootstrap intervals.

True: exact for a score set, binned for an embedding set (any size).  ``"auto"``: exact,
except binned for an embedding set of more than :data:`BINARY_PAIR_LIMIT` (2**27) pairs
or on a cluster.  False: none (``summary.binary`` is None, the mapping view shows NaN;
memory a few tiles).  ``summary.binary_metrics`` says ``"computed"`` or ``"skipped: <why>"``.

Cluster
-------
``scheduler=`` (an address such as ``"tcp://10.0.0.5:8786"``, connected with a 10 s
timeout, or a ``distributed.Client``) runs the streaming engine of an eval embedding set on
a dask.distributed cluster: the eval trials are cut into blocks of rows, one task each,
and the enrolled profiles and the calibrator's map are sent once per worker
(:func:`lidframe.core.cluster.lid_on_cluster`); the numbers equal the single-process run
(LID to float64 rounding, ranks and binned counts exactly).  The binary view is then
binned at every size (the exact one needs every pair on the client).
``summary.scheduler`` records the address and ``summary.n_blocks`` the blocks.  Not an
:class:`~lidframe.core.engine.Engine` field: a client is a live connection, not a
setting, and where the blocks ran does not change a number.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
import numpy as np

from lidframe.core.deprecation import keyword_only
from lidframe.core.dispatch import DENSE_ENGINE, EngineResult, run_engine
from lidframe.core.engine import Engine, resolve_device
from lidframe.core.engine_result import EngineUsed
from lidframe.core.lid import LN2
from lidframe.core.openset import OpenSetTrials, open_set_trials, resolve_outside
from lidframe.core.options import EvaluateOptions, check_evaluate_options
from lidframe.core.refit import RefitInputs, dev_fit_data
from lidframe.core.result import Result, result_of_run
from lidframe.core.sets import SetLike, as_scoreset, as_set, naming_set, set_label
from lidframe.core.summarise import summarise
from lidframe.core.summary import Summary
from lidframe.core.znorm import calibrator_input, check_ddof
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError
from lidframe.metrics.detection import OperatingPoint
from lidframe.registry import (
    CalibratorLike,
    PriorLike,
    capabilities_of,
    describe_component,
    resolve_calibrator,
    resolve_prior,
)
from lidframe.stats.bootstrap import Bootstrap

__all__ = [
    "evaluate",
    "evaluate_fitted",
    "fit_calibrator",
    "Result",
    "as_scoreset",
    "as_set",
    "naming_set",
    "set_label",
    "BINARY_PAIR_LIMIT",
    "SetLike",
    "Summary",
]


#: ``binary_metrics="auto"`` computes the exact binary view of an eval *embedding* set (by
#: scoring it in full) up to this many (trial, enrolled speaker) pairs, and the binned one
#: (streamed, :mod:`lidframe.metrics.binned`) above: the exact one holds every pair's LLR,
#: 8 bytes each (1 GiB here); a score set of any size is already in memory (always exact).
BINARY_PAIR_LIMIT = 1 << 27


def fit_calibrator(
    dev: ScoreSet,
    calibrator: str | CalibratorLike = "logistic",
    *,
    znorm_ddof: int = 1,
    outsider_pairs: bool = False,
) -> CalibratorLike:
    """Fit a calibrator on the row-z-normed pairs (or rows) of *dev*'s enrolled trials.

    A calibrator with a ``fit_rows(z, true_index)`` method is fitted on the (T, N) dev
    rows of the enrolled trials; others on the flattened pairs with labels 1 = mated.  A
    calibrator whose ``input_scale`` is ``"raw"`` gets the raw scores instead of z-scores.
    With *outsider_pairs* (the open set) the dev set's outsider trials add their N pairs
    each as non-mated pairs (a ``fit_rows`` calibrator, which needs a true column per
    row, still gets the enrolled rows only).

    Parameters
    ----------
    dev : ScoreSet
        Development scores; outsider trials are left out.
    calibrator : str or calibrator
        Registry name, ``"package.module:Class"``, or an instance (cloned, not modified).
    znorm_ddof : {0, 1}
        Delta degrees of freedom of the row z-norm.
    outsider_pairs : bool, default False
        Also fit on the outsider trials' pairs, as non-mated pairs (what
        :func:`evaluate` does in the open set).

    Returns
    -------
    calibrator
        A fitted copy.
    """
    znorm_ddof = check_ddof(znorm_ddof)
    calibrator = resolve_calibrator(calibrator)
    fit_rows = capabilities_of("calibrator", calibrator).fit_rows  # the optional whole-row hook
    with naming_set(dev, "dev"):
        data = dev_fit_data(dev, calibrator, znorm_ddof=znorm_ddof, outsider_pairs=outsider_pairs)
    closed, z = data.trials, data.x
    try:  # a bad parameter value (C=-1) shows here too: name the calibrator as well as the set
        if callable(fit_rows):
            fitted = fit_rows(z, closed.true_index)
        else:
            fitted = calibrator.fit(z.ravel(), closed.mated_mask().ravel())
    except InputError as exc:
        raise InputError(
            f"{set_label(dev, 'dev')}: fitting calibrator {describe_component(calibrator)}: {exc}"
        ) from None
    return calibrator if fitted is None else fitted


@keyword_only("calibrator", "prior")
def evaluate(
    dev: SetLike,
    eval: SetLike,
    *,
    calibrator: str | CalibratorLike = "logistic",
    prior: str | PriorLike = "uniform",
    znorm_ddof: int = 1,
    binary_metrics: bool | Literal["auto"] = "auto",
    bootstrap: Bootstrap | None = None,
    engine: Engine | None = None,
    scheduler: str | Any | None = None,
    misattribution_threshold: float = 0.9,
    operating_point: OperatingPoint | None = None,
    options: EvaluateOptions | None = None,
) -> Result:
    """Local Information Disclosure of an attacker on *eval*, calibrated on *dev*.

    Parameters
    ----------
    dev, eval : ScoreSet, EmbeddingSet or path
        Score sets (``.npz`` or long ``.csv`` paths are loaded) or embedding sets of a
        cosine attacker (:class:`~lidframe.data.embedset.EmbeddingSet`: the dev set scored
        in full, the eval set streamed); dev and eval may have different enrolled speakers
        and sizes.
    calibrator : str or calibrator, default "logistic"
        Registry name, ``"package.module:Class"`` or an instance (cloned and fitted on dev).
    prior : str or prior, default "uniform"
        ``"uniform"``, a spec string (``"uniform?outside=0.2"``) or a prior instance
        (``WatchList``, ``Explicit``, ...), applied to the eval enrolled speakers.  Its
        ``outside`` > 0 makes this an open-set evaluation (module docstring,
        :mod:`lidframe.core.openset`); ``outside="auto"`` takes the dev set's share of
        outsider trials.  *calibrator* and *prior* are keyword-only (module docstring).
    znorm_ddof : {0, 1}, default 1
        Row z-norm degrees of freedom (1 = reference code, 0 = the paper's example).
    binary_metrics : {"auto", True, False}, default "auto"
        The binary view over all closed-set eval pairs (:class:`~lidframe.core.summary_views.BinaryView`):
        exact or binned (module docstring), ``"auto"`` choosing by size; False: none.
    bootstrap : Bootstrap, optional
        Add bootstrap confidence intervals (:func:`lidframe.stats.bootstrap.bootstrap_ci`)
        with these settings (``summary.intervals`` for ALID, PDR, LID+, LID-, LID q99,
        LIDmax and, with the exact binary view, EER and Cllr); by default each resample
        also resamples the dev speakers and refits the calibrator on them
        (``Bootstrap.resample``, ``docs/statistics.md``).  None (default): none.
    engine : Engine, optional
        Engine settings (default ``Engine()``; which engine each concerns:
        :class:`~lidframe.core.engine.Engine`); what ran is ``summary.engine``.
    scheduler : str or distributed.Client, optional
        Run the streaming engine of an eval embedding set on a dask.distributed cluster
        (module docstring); a score set cannot be sharded (an InputError).
    misattribution_threshold, operating_point
        As for :func:`evaluate_fitted`.

    Returns
    -------
    Result

    Examples
    --------
    >>> from lidframe.data.simulate import simulate_system
    >>> res = evaluate(*simulate_system(leakage=1.0, seed=1))
    >>> res.summary.lid_max <= res.summary.log2_n
    True
    """
    measure = check_evaluate_options(options, _keywords(locals()))
    dev = as_scoreset(dev, "dev")
    eval_set = as_set(eval, "eval")
    prior = resolve_prior(prior)
    outside, _source = resolve_outside(prior, dev)
    fitted = fit_calibrator(dev, calibrator, znorm_ddof=measure.znorm_ddof, outsider_pairs=outside > 0)
    return evaluate_fitted(eval_set, fitted, prior=prior, dev=dev, scheduler=scheduler, options=measure)


def _binary_metrics_decision(
    eval_set: ScoreSet | EmbeddingSet, binary_metrics: bool | Literal["auto"], *, on_cluster: bool = False
) -> tuple[str, str | None]:
    """(status, method) for *binary_metrics* ("auto", True or False) on *eval_set*.

    status is ``"computed"`` or ``"skipped: <why>"``; method ``"exact"``, ``"binned"`` or None.
    *on_cluster*: the streaming engine runs on a cluster, so an embedding set is binned at any size.
    """
    if binary_metrics is False:  # checked by EvaluateOptions: "auto", True or False
        return "skipped: binary_metrics=False", None
    if not isinstance(eval_set, EmbeddingSet):
        return "computed", "exact"
    n_pairs = eval_set.n_trials * eval_set.n_enrolled
    if binary_metrics == "auto" and n_pairs <= BINARY_PAIR_LIMIT and not on_cluster:
        return "computed", "exact"
    return "computed", "binned"


def _check_scheduler(eval_set: ScoreSet | EmbeddingSet, scheduler: object) -> None:
    if scheduler is not None and not isinstance(eval_set, EmbeddingSet):
        raise InputError(
            f"{set_label(eval_set, 'eval')}: scheduler= shards an eval embedding set over a cluster; "
            "this is a score set (evaluate it without a scheduler)"
        )


def _scored_in_full(
    eval_set: ScoreSet | EmbeddingSet, binary_method: str | None, settings: Engine
) -> tuple[ScoreSet | EmbeddingSet, EngineUsed | None]:
    """An embedding set whose exact binary view is asked for as its cosine ScoreSet (and what ran), else as is."""
    if isinstance(eval_set, EmbeddingSet) and binary_method == "exact":
        resolve_device(settings.device)  # an explicit CUDA device this machine lacks: refused, as when streamed
        return as_scoreset(eval_set, "eval"), DENSE_ENGINE  # every pair's LLR is needed: scored in full (float64)
    return eval_set, None


def _enrolled_trials(
    eval_set: ScoreSet | EmbeddingSet, *, open_set: bool = False
) -> tuple[np.ndarray, ScoreSet | EmbeddingSet]:
    """(rows of the trials whose speaker is enrolled, the trials the engine runs); an InputError if none is enrolled.

    The engine runs on the enrolled trials (a set of them is built), or in the open set on every trial (*eval_set*).
    """
    closed_rows = np.flatnonzero(~eval_set.is_outsider)
    if closed_rows.size == 0:
        why = (
            "an open-set evaluation needs at least one enrolled trial (its identification disclosure)"
            if open_set
            else "so no trial has a LID (all are outsider trials)"
        )
        raise InputError(f"{set_label(eval_set, 'eval')}: no trial's speaker is enrolled, {why}")
    if open_set:
        return closed_rows, eval_set
    return closed_rows, eval_set if closed_rows.size == eval_set.n_trials else eval_set.subset(closed_rows)


def _check_open_set_calibrator(fitted: CalibratorLike, outside: float) -> None:
    """An InputError for an open-set evaluation with a calibrator whose LLRs are right only up to a constant per row."""
    if outside > 0 and not capabilities_of("calibrator", fitted).absolute_llr:
        raise InputError(
            f"calibrator {describe_component(fitted)} gives LLRs up to a constant per row, which cancels in the "
            "closed set only; the open set (outside > 0) needs LLRs that are likelihood ratios: use logistic, "
            "isotonic, beta or gaussian"
        )


@keyword_only("prior")
def evaluate_fitted(
    eval: SetLike,
    fitted: CalibratorLike,
    *,
    prior: str | PriorLike = "uniform",
    dev: ScoreSet | None = None,
    znorm_ddof: int = 1,
    binary_metrics: bool | Literal["auto"] = "auto",
    bootstrap: Bootstrap | None = None,
    engine: Engine | None = None,
    scheduler: str | Any | None = None,
    misattribution_threshold: float = 0.9,
    operating_point: OperatingPoint | None = None,
    options: EvaluateOptions | None = None,
) -> Result:
    """:func:`evaluate` with an already fitted calibrator (fit once, evaluate under many priors).

    Parameters
    ----------
    fitted : calibrator
        A fitted calibrator, used as is (not copied).  For an open-set prior, fit it with
        ``fit_calibrator(..., outsider_pairs=True)`` as :func:`evaluate` does.
    dev : ScoreSet, optional
        Fills the dev sizes of the summary, gives ``outside="auto"`` its estimate, and, for a
        bootstrap with ``resample="dev+eval"``, what a copy of *fitted* (its fit) is refitted on
        in each resample (:mod:`lidframe.core.refit`); without it *fitted* is held fixed.
    misattribution_threshold : float, default 0.9
        Open set: the chosen threshold of ``summary.open_set.misattribution_rate_at_threshold``
        (the share of outsider trials whose top enrolled posterior exceeds it), in [0.5, 1).
    operating_point : OperatingPoint, optional
        Where the binary view's ``min_dcf`` and ``act_dcf`` are measured
        (:class:`~lidframe.metrics.detection.OperatingPoint`; default: module docstring).
    options : EvaluateOptions, optional
        All of the settings above in one record (:class:`~lidframe.core.options.EvaluateOptions`),
        instead of the keywords: give one or the other (else an InputError).
    eval, prior, znorm_ddof, binary_metrics, bootstrap, engine, scheduler
        As for :func:`evaluate` (``prior`` keyword-only; by position: a FutureWarning, for one release).

    Returns
    -------
    Result
    """
    measure = check_evaluate_options(options, _keywords(locals()))
    eval_set = as_set(eval, "eval")
    _check_scheduler(eval_set, scheduler)
    binary_status, binary_method = _binary_metrics_decision(
        eval_set, measure.binary_metrics, on_cluster=scheduler is not None
    )
    eval_set, engine_used = _scored_in_full(eval_set, binary_method, measure.engine)
    prior = resolve_prior(prior)
    outside, outside_source = resolve_outside(prior, dev)
    log_prior = _eval_log_prior(prior, eval_set)
    _check_open_set_calibrator(fitted, outside)
    closed_rows, run_set = _enrolled_trials(eval_set, open_set=outside > 0)  # the open set: every trial gets a LID
    ddof, settings = measure.znorm_ddof, measure.engine
    run = _run_named(run_set, fitted, log_prior, ddof, settings, binary_method, scheduler, engine_used, outside)
    posterior_closed = _closed_posterior(run, eval_set, closed_rows, log_prior, outside)
    open_trials = _open_trials(run, run_set, log_prior, outside)
    refit = _refit_inputs(measure, dev, fitted, run_set, log_prior, outside, on_cluster=scheduler is not None)
    summary = summarise(
        run,
        run_set,
        posterior_closed,
        n_outsider_trials=eval_set.n_outsider_trials,
        binary_status=binary_status,
        bootstrap=measure.bootstrap,
        fitted=fitted,
        prior=prior,
        znorm_ddof=ddof,
        dev=dev,
        open_trials=open_trials,
        outside_source=outside_source,
        misattribution_threshold=measure.misattribution_threshold,
        operating_point=measure.operating_point,
        refit=refit,
    )
    return result_of_run(
        eval_set, closed_rows, run, posterior_closed, open_trials, log_prior, summary, fitted, prior, outside, refit
    )


#: The keyword settings of :func:`evaluate` and :func:`evaluate_fitted` that :class:`EvaluateOptions` holds.
_OPTION_KEYWORDS = tuple(field.name for field in attrs.fields(EvaluateOptions))


def _keywords(given: dict[str, Any]) -> dict[str, Any]:
    """The option keywords among a call's *given* locals (``locals()`` at its first line)."""
    return {name: given[name] for name in _OPTION_KEYWORDS}


def _run_named(
    run_set: ScoreSet | EmbeddingSet,
    fitted: CalibratorLike,
    log_prior: np.ndarray,
    znorm_ddof: int,
    settings: Engine,
    binary_method: str | None,
    scheduler: Any,
    engine_used: EngineUsed | None,
    outside: float,
) -> EngineResult:
    """:func:`~lidframe.core.dispatch.run_engine` on *run_set* (open-set statistics too where *outside* > 0).

    Its errors begin with the set's label: z-norm errors name the trial; this adds the file and split.
    """
    with naming_set(run_set, "eval"):
        return run_engine(
            run_set,
            fitted,
            log_prior,
            znorm_ddof=znorm_ddof,
            engine=settings,
            binary_method=binary_method,
            scheduler=scheduler,
            engine_used=engine_used,
            open_set=outside > 0,
        )


def _refit_inputs(
    measure: EvaluateOptions,
    dev: ScoreSet | None,
    fitted: CalibratorLike,
    run_set: ScoreSet | EmbeddingSet,
    log_prior: np.ndarray,
    outside: float,
    *,
    on_cluster: bool,
) -> RefitInputs | None:
    """What the bootstrap needs to refit the calibrator on resampled dev speakers, or None where it holds it fixed.

    None without a bootstrap or with ``resample="eval"``; without a dev set (the intervals
    then hold *fitted* fixed, and the summary's bootstrap says ``resample="eval"``); and for
    an eval embedding set run on a cluster or of more than :data:`BINARY_PAIR_LIMIT` pairs,
    whose scores are never held at once.
    """
    settings = measure.bootstrap
    if settings is None or settings.resample != "dev+eval" or dev is None or on_cluster:
        return None
    if isinstance(run_set, EmbeddingSet):
        if run_set.n_trials * run_set.n_enrolled > BINARY_PAIR_LIMIT:
            return None
        run_set = as_scoreset(run_set, "eval")
    with naming_set(run_set, "eval"):
        eval_x = calibrator_input(run_set.scores, fitted, znorm_ddof=measure.znorm_ddof, row_names=run_set.trial_ids)
    return RefitInputs(
        dev=dev,
        fitted=fitted,
        znorm_ddof=measure.znorm_ddof,
        outsider_pairs=outside > 0,
        eval_x=eval_x,
        true_index=np.asarray(run_set.true_index),
        log_prior=log_prior,
        outside=outside,
        threads=measure.engine.cpu_threads(),
    )


def _eval_log_prior(prior: PriorLike, eval_set: ScoreSet | EmbeddingSet) -> np.ndarray:
    """*prior*'s natural-log prior over the eval set's enrolled speakers, float64."""
    with naming_set(eval_set, "eval"):  # a watch-list id not enrolled in this file, ...
        return np.asarray(prior.log_prior(eval_set.enrolled), dtype=np.float64)


def _closed_posterior(
    run: EngineResult,
    eval_set: ScoreSet | EmbeddingSet,
    closed_rows: np.ndarray,
    log_prior: np.ndarray,
    outside: float,
) -> np.ndarray:
    """The closed-set posterior of each enrolled trial's true speaker (rows *closed_rows*), from its LID."""
    closed_lid = run.lid_bits if outside == 0 else run.lid_bits[closed_rows]
    # exp(LID ln 2 + ln prior) can round to a hair above 1 when the attacker is certain: clipped
    return np.minimum(np.exp(closed_lid * LN2 + log_prior[eval_set.true_index[closed_rows]]), 1.0)


def _open_trials(
    run: EngineResult, run_set: ScoreSet | EmbeddingSet, log_prior: np.ndarray, outside: float
) -> OpenSetTrials | None:
    """Every trial's open-set disclosure from *run*'s statistics (None in the closed set, *outside* 0)."""
    if outside == 0:
        return None
    assert run.open_stats is not None  # every engine returns them with open_set=True
    with naming_set(run_set, "eval"):
        return open_set_trials(run.lid_bits, run.open_stats, run_set.true_index, log_prior, outside)
