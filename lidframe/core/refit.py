"""The calibrator refitted on bootstrap resamples of the dev speakers: :func:`dev_resampling`.

A calibrator fitted on a few dev speakers is uncertain, and every LID moves with it.  The
bootstrap of ``evaluate`` (``Bootstrap(resample="dev+eval")``, the default;
:mod:`lidframe.stats.bootstrap`) therefore draws the dev speakers too, refits the
calibrator on each dev resample and evaluates the eval trials under it.  This module
gives it the eval values of a resample (a :class:`~lidframe.stats.bootstrap.DevResampling`)
without running the pipeline again:

* **Dev side, once.**  The row z-norm of a dev trial uses its own row only, so a
  resample's dev z-scores are those of its trials: the calibrator input
  (:func:`~lidframe.core.znorm.calibrator_input`) is computed once.  A calibrator fitted
  on pairs whose ``fit`` takes ``sample_weight`` (every built-in one but Temperature)
  gets the dev pairs pooled once by (score bin, class) into :data:`REFIT_BINS` bins
  (:func:`~lidframe.calibrators.base.group_pairs`; the tail pairs kept exactly); a
  resample's pooled pairs -- each group's weight and mean score under the resample's trial
  counts -- are two sparse products per block of resamples, and the fit runs on at most
  2 x :data:`REFIT_BINS` + :data:`REFIT_BINS` points, warm-started from the dev fit where the
  calibrator offers ``refit_weighted`` (Logistic: Newton steps,
  :meth:`~lidframe.calibrators.Logistic.refit_weighted`).  Pooling moves a score by less
  than its bin's width and a smooth fit's estimating equations by O(h^2) (the bound of
  :mod:`lidframe.calibrators.base`): ~1e-6 in a logistic slope on 36,000 pairs, far
  below the sampling error the interval states.  A ``fit_rows`` calibrator (Temperature)
  is refitted on the resample's rows, a plugin's ``fit(scores, labels)`` on its pairs,
  each repeated by its count.
* **Eval side, per resample.**  The eval calibrator input is computed once; a resample
  applies its calibrator's closed-form map (``llr_map``) to it and takes LID by the tiled
  engine (:func:`~lidframe.core.lid.lid_from_llr`), the open set's statistics with it,
  and the pair LLRs where EER and Cllr have intervals.  A strictly increasing affine map
  keeps the pairs' order, so their sorted-run structure (the EER's) is computed once.

The cost per resample is one fit on the pooled pairs and a few passes over the eval
(T, N) scores (``bench/refit_bootstrap.py``).  The maps of the calibrators fitted are kept
in :attr:`RefitInputs.fits` by their dev weights (at most :data:`MAX_KEPT_FITS`), so a
second bootstrap on the same dev resamples -- the per-speaker table's
(:mod:`lidframe.analyses.speaker_intervals`), drawn from the same seed -- reuses the
headline's refits and pays for the passes over the eval scores only.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
from scipy import sparse

from lidframe.calibrators.base import group_pairs
from lidframe.calibrators.maps import AffineMap, llr_map_of
from lidframe.core.lid import lid_from_llr
from lidframe.core.openset import OpenSetStats, OpenSetTrials, open_set_trials
from lidframe.core.sets import set_label
from lidframe.core.znorm import calibrator_input
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError
from lidframe.registry import CalibratorLike, capabilities_of, describe_component, resolve_calibrator
from lidframe.stats.bootstrap import Bootstrap, DevResampling, EvalSample, resampling_units, trial_weight_blocks
from lidframe.stats.weighted import PairLLRs

__all__ = [
    "MAX_KEPT_FITS",
    "REFIT_BINS",
    "DevFitData",
    "RefitInputs",
    "dev_fit_data",
    "dev_refits",
    "dev_resampling",
    "refitted_log_evidence",
]

#: Score bins per class into which the dev pairs are pooled for the refits of the bootstrap
#: (module docstring): a resample's fit runs on at most 3 x this many points.
REFIT_BINS = 1024
#: Most refitted calibrators' maps that :attr:`RefitInputs.fits` keeps (a few hundred bytes
#: each for an affine map): past it, a resample's calibrator is fitted again when asked again.
MAX_KEPT_FITS = 100_000


@attrs.frozen(eq=False)
class DevFitData:
    """What a calibrator is fitted on, from a dev set (:func:`dev_fit_data`).

    Attributes
    ----------
    trials : ScoreSet
        The dev trials it is fitted on (the enrolled ones; in the open set with a pair
        calibrator, every trial).
    x : ndarray, shape (T_dev, N_dev), float64
        Their calibrator input: row z-scores, or the raw scores (``input_scale="raw"``).
    by_rows : bool
        Whether the calibrator is fitted on whole rows (``fit_rows``), else on pairs.
    """

    trials: ScoreSet
    x: np.ndarray
    by_rows: bool

    def labels(self) -> np.ndarray:
        """Pair labels (T_dev * N_dev,), int8: 1 for a mated pair (row-major, as ``x.ravel()``)."""
        return self.trials.mated_mask().ravel().astype(np.int8)


def dev_fit_data(dev: ScoreSet, calibrator: CalibratorLike, *, znorm_ddof: int, outsider_pairs: bool) -> DevFitData:
    """The dev trials and calibrator input that *calibrator* is fitted on (what :func:`~lidframe.core.evaluation.fit_calibrator` fits).

    Parameters
    ----------
    dev : ScoreSet
        Development scores; at least one trial's speaker enrolled.
    calibrator : calibrator
        Fitted or not: only its capabilities are read (``fit_rows``, ``input_scale``).
    znorm_ddof : {0, 1}
    outsider_pairs : bool
        The open set: the outsider trials' pairs are non-mated pairs (not for a ``fit_rows`` calibrator).
    """
    by_rows = callable(capabilities_of("calibrator", calibrator).fit_rows)
    if dev.n_outsider_trials == dev.n_trials:
        raise InputError("no trial's speaker is enrolled, so there is no mated pair to calibrate on")
    keep_outsiders = outsider_pairs and not by_rows
    trials = dev.closed_set() if dev.n_outsider_trials and not keep_outsiders else dev
    x = calibrator_input(trials.scores, calibrator, znorm_ddof=znorm_ddof, row_names=trials.trial_ids)
    if np.may_share_memory(x, trials.scores):  # raw scores: the calibrator gets its own (writable) copy
        x = x.copy()
    return DevFitData(trials, x, by_rows)


@attrs.frozen(eq=False, kw_only=True)
class RefitInputs:
    """What the refits need besides the bootstrap: the dev fit and the eval trials it is applied to.

    Attributes
    ----------
    dev : ScoreSet
        The dev set the calibrator was fitted on.
    fitted : calibrator
        The calibrator fitted on it (cloned for each refit, not changed).
    znorm_ddof : int
    outsider_pairs : bool
        Whether the fit took the outsider trials' pairs (the open set).
    eval_x : ndarray, shape (T, N), float64
        Calibrator input of the eval trials the engine ran.
    true_index : ndarray of int, shape (T,)
        Their true columns (-1: outsider trial, the open set).
    log_prior : ndarray, shape (N,)
    outside : float
        π_∅ (0: the closed set).
    threads : int
        CPU threads the LID tiles of a resample run in (the evaluation's engine's).
    fits : dict
        The LLR maps of the calibrators refitted so far, by the digest of their dev trial
        weights (filled by :func:`dev_resampling`; module docstring).
    """

    dev: ScoreSet
    fitted: CalibratorLike
    znorm_ddof: int
    outsider_pairs: bool
    eval_x: np.ndarray
    true_index: np.ndarray
    log_prior: np.ndarray
    outside: float
    threads: int = 1
    fits: dict[bytes, Any] = attrs.field(factory=dict, repr=False)


def dev_resampling(
    inputs: RefitInputs,
    *,
    pairs: PairLLRs | None,
    group_means_of: Callable[[OpenSetTrials], Mapping[str, tuple[np.ndarray, np.ndarray]]] | None,
) -> DevResampling:
    """The dev side of the bootstrap of ``evaluate``: the eval values under the calibrator refitted on each dev resample.

    Parameters
    ----------
    inputs : RefitInputs
    pairs : PairLLRs or None
        The eval pair LLRs under the dev fit (EER and Cllr get intervals), or None.
    group_means_of : callable or None
        The open set's group means of a resample's :class:`~lidframe.core.openset.OpenSetTrials`
        (None: the closed set).

    Returns
    -------
    DevResampling
    """
    data, maps = dev_refits(
        inputs.dev, inputs.fitted, znorm_ddof=inputs.znorm_ddof, outsider_pairs=inputs.outsider_pairs, fits=inputs.fits
    )
    base_map = llr_map_of(inputs.fitted)
    apply = _Evaluator(inputs, pairs, group_means_of, base_map)

    def evaluate(dev_weights: np.ndarray) -> Sequence[EvalSample]:
        return [apply(llr_map) for llr_map in maps(dev_weights)]

    return DevResampling(speakers=np.asarray(data.trials.trial_speakers), evaluate=evaluate)


def dev_refits(
    dev: ScoreSet, fitted: CalibratorLike, *, znorm_ddof: int, outsider_pairs: bool, fits: dict[bytes, Any]
) -> tuple[DevFitData, Callable[[np.ndarray], list[Any]]]:
    """What *fitted* was fitted on, and ``maps(weights)``: the LLR map of it refitted on each dev resample.

    Parameters
    ----------
    dev : ScoreSet
    fitted : calibrator
        Fitted on *dev* (:func:`~lidframe.core.evaluation.fit_calibrator`); not changed.
    znorm_ddof : {0, 1}
    outsider_pairs : bool
        As for :func:`dev_fit_data`.
    fits : dict
        The maps refitted so far, by the digest of their dev weights (:attr:`RefitInputs.fits`):
        ``maps`` reads and fills it (module docstring).

    Returns
    -------
    data : DevFitData
        The dev trials (their speakers are the resampling units) and their calibrator input.
    maps : callable
        ``maps(weights (b, T_dev)) -> b`` LLR maps (``llr_map(x) -> LLRs``), the calibrator
        refitted on each row's dev trial counts, by the cheapest way it allows; a refit that
        fails is an InputError naming the dev set, the calibrator and the way out.
    """
    data = dev_fit_data(dev, fitted, znorm_ddof=znorm_ddof, outsider_pairs=outsider_pairs)
    refit = _refitter(data, fitted)

    def maps(weights: np.ndarray) -> list[Any]:
        try:
            return _kept_maps(fits, refit, weights)
        except InputError as exc:
            raise InputError(
                f"{set_label(dev, 'dev')}: refitting calibrator {describe_component(fitted)} on a "
                f"bootstrap resample of the dev speakers: {exc} (Bootstrap(resample='eval') holds it fixed)"
            ) from None

    return data, maps


def refitted_log_evidence(inputs: RefitInputs, bootstrap: Bootstrap) -> Iterator[np.ndarray]:
    """Every eval trial's E under the calibrator refitted on each of the headline's dev resamples, one at a time.

    The dev resamples are those of ``bootstrap_ci`` with a dev resampling (the second
    stream of ``bootstrap.seed`` over the dev units of ``bootstrap.unit``, ``n_boot`` of
    them, in order), so the refits the headline's intervals made are reused from
    :attr:`RefitInputs.fits` and each resample costs one pass over the eval scores.

    Parameters
    ----------
    inputs : RefitInputs
        Of an open-set evaluation (``outside`` > 0).
    bootstrap : Bootstrap
        The headline's settings.

    Yields
    ------
    ndarray, shape (T,)
        E of the trials the engine ran (nats; :mod:`lidframe.core.openset`), resample by resample.
    """
    if inputs.outside <= 0:
        raise InputError("the log evidence of 'enrolled' against 'nobody' needs the open set (outside > 0)")
    dev = dev_resampling(inputs, pairs=None, group_means_of=None)
    units, n_units = resampling_units(len(dev.speakers), dev.speakers, bootstrap.unit)
    if n_units < 2:
        raise InputError(f"bootstrap over dev {bootstrap.unit}s needs at least two of them, got {n_units}")
    rng = np.random.default_rng([bootstrap.seed, 1])  # the headline's dev resamples
    for _, weights in trial_weight_blocks(rng, units, n_units, bootstrap.n_boot):
        for sample in dev.evaluate(weights):
            assert sample.log_evidence is not None  # the open set's evaluator always gives it
            yield sample.log_evidence


def _kept_maps(fits: dict[bytes, Any], refit: Callable[[np.ndarray], list[Any]], weights: np.ndarray) -> list[Any]:
    """The LLR map of the calibrator refitted on each row of *weights* (b, T_dev): kept in *fits*, or fitted now and kept."""
    keys = [hashlib.blake2b(np.ascontiguousarray(row).tobytes(), digest_size=16).digest() for row in weights]
    missing = [i for i, key in enumerate(keys) if key not in fits]
    if missing:  # every row missing (a first bootstrap): the block as given, fitted as it always was
        fitted = refit(weights if len(missing) == len(keys) else weights[missing])
        new = {keys[i]: llr_map_of(calibrator) for i, calibrator in zip(missing, fitted, strict=True)}
        if len(fits) + len(new) > MAX_KEPT_FITS:
            return [new[key] if key in new else fits[key] for key in keys]
        fits.update(new)
    return [fits[key] for key in keys]


def _refitter(data: DevFitData, fitted: CalibratorLike) -> Callable[[np.ndarray], list[Any]]:
    """``refit(weights (b, T_dev)) -> b fitted calibrators``, by the cheapest way *fitted* allows (module docstring)."""
    template = resolve_calibrator(fitted)  # an unfitted clone
    if data.by_rows:
        true_index = data.trials.true_index
        return lambda weights: [_fitted(template, "fit_rows", *_rows_of(data.x, true_index, w)) for w in weights]
    if "sample_weight" in inspect.signature(template.fit).parameters:
        return _PooledRefit(data, fitted, template)
    pair_scores, labels = data.x.ravel(), data.labels()
    n_enrolled = data.x.shape[1]

    def repeated(weights: np.ndarray) -> list[Any]:
        counts = [np.repeat(w.astype(np.intp), n_enrolled) for w in weights]  # each pair's count: its trial's
        return [_fitted(template, "fit", np.repeat(pair_scores, c), np.repeat(labels, c)) for c in counts]

    return repeated


def _rows_of(x: np.ndarray, true_index: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a resample (each repeated by its count) and their true columns."""
    rows = np.repeat(np.arange(weights.size), weights.astype(np.intp))
    return x[rows], true_index[rows]


def _fitted(template: CalibratorLike, method: str, *args: Any, **kwargs: Any) -> Any:
    """A fresh clone of *template* fitted by its *method* (``"fit"``, ``"fit_rows"``) on *args*."""
    calibrator = resolve_calibrator(template)
    result = getattr(calibrator, method)(*args, **kwargs)
    return calibrator if result is None else result


class _PooledRefit:
    """Refits of a pair calibrator on the dev pairs pooled once into :data:`REFIT_BINS` bins per class."""

    def __init__(self, data: DevFitData, fitted: CalibratorLike, template: CalibratorLike):
        pair_scores, labels = data.x.ravel(), data.labels()
        groups = group_pairs(pair_scores, labels, None, REFIT_BINS)
        n_trials, n_enrolled = data.x.shape
        row = np.repeat(np.arange(n_trials), n_enrolled)
        shape = (n_trials, groups.scores.size)
        # (trial, group) -> pairs of the trial in the group, and the sum of their scores
        self.counts = sparse.csr_matrix((np.ones(row.size), (row, groups.group)), shape=shape)
        self.sums = sparse.csr_matrix((pair_scores, (row, groups.group)), shape=shape)
        self.labels, self.template = groups.labels, template
        self.warm = capabilities_of("calibrator", fitted).refit_weighted
        get_params = getattr(template, "get_params", None)
        if callable(get_params) and "standard_errors" in get_params():  # none per refit (a statsmodels fit each)
            clone: Any = resolve_calibrator(template)
            self.template = clone.set_params(standard_errors=False)

    def __call__(self, weights: np.ndarray) -> list[Any]:
        group_weight = np.asarray((self.counts.T @ weights.T).T)
        group_sum = np.asarray((self.sums.T @ weights.T).T)
        out = []
        for weight, total in zip(group_weight, group_sum, strict=True):
            kept = weight > 0
            scores = total[kept] / weight[kept]
            if callable(self.warm):
                out.append(self.warm(scores, self.labels[kept], weight[kept]))
            else:
                out.append(_fitted(self.template, "fit", scores, self.labels[kept], sample_weight=weight[kept]))
        return out


class _Evaluator:
    """The eval values (:class:`EvalSample`) under one fitted map: LID, the open set's groups, the pair LLRs."""

    def __init__(
        self,
        inputs: RefitInputs,
        pairs: PairLLRs | None,
        group_means_of: Callable[[OpenSetTrials], Mapping[str, tuple[np.ndarray, np.ndarray]]] | None,
        base_map: Any,
    ):
        self.inputs, self.group_means_of = inputs, group_means_of
        self.enrolled = np.flatnonzero(inputs.true_index >= 0)
        self.want_pairs = pairs is not None
        self.runs = pairs.structure() if pairs is not None and _strictly_increasing(base_map) else None
        self.mated_mask = np.zeros(inputs.eval_x[self.enrolled].shape, dtype=bool)
        self.mated_mask[np.arange(self.enrolled.size), inputs.true_index[self.enrolled]] = True

    def __call__(self, llr_map: Any) -> EvalSample:
        i = self.inputs
        llr = np.asarray(llr_map(i.eval_x), dtype=np.float64)
        stats = (np.empty(llr.shape[0]), np.empty(llr.shape[0])) if i.outside > 0 else None
        lid = lid_from_llr(llr, i.log_prior, i.true_index, stats_out=stats, threads=i.threads)
        group_means, log_evidence = None, None
        if stats is not None:
            log_evidence = stats[0]
            trials = open_set_trials(
                lid, OpenSetStats(log_evidence=stats[0], log_top=stats[1]), i.true_index, i.log_prior, i.outside
            )
            lid = trials.lid_bits
            group_means = None if self.group_means_of is None else self.group_means_of(trials)
        return EvalSample(lid, self._pairs(llr, llr_map), group_means, log_evidence)

    def _pairs(self, llr: np.ndarray, llr_map: Any) -> PairLLRs | None:
        """The enrolled trials' mated and non-mated LLRs (their runs reused where the map keeps the order)."""
        if not self.want_pairs:
            return None
        rows = llr[self.enrolled] if self.enrolled.size < llr.shape[0] else llr
        mated = rows[self.mated_mask]
        non_mated = rows[~self.mated_mask].reshape(rows.shape[0], rows.shape[1] - 1)
        runs = self.runs if _strictly_increasing(llr_map) else None
        return PairLLRs(mated, non_mated, runs=runs)


def _strictly_increasing(llr_map: Any) -> bool:
    """Whether *llr_map* is an affine map of positive slope (it keeps the order of the scores, ties included)."""
    return isinstance(llr_map, AffineMap) and llr_map.slope > 0
