"""Metrics under resampling: each metric for a block of resamples at once, a resample given as trial weights.

A bootstrap resample (or a jackknife replicate) is a row of non-negative trial weights
(resample counts); :func:`lid_metrics_weighted`, :func:`binary_metrics_weighted` (over a
trial's pair LLRs, :class:`PairLLRs`) and :func:`group_means_weighted` evaluate every
metric for every row, vectorised over :data:`RESAMPLE_BLOCK` rows at a time.  The weight
of 1 for every trial gives the metric of the sample itself.  :mod:`lidframe.stats.bootstrap`
draws the weights; :mod:`lidframe.analyses.compare` reuses these for paired resamples.
:class:`EvalSample` holds the per-trial values a bootstrap's metrics are computed from
(:func:`metrics_of_sample`), and :class:`DevResampling` what a resample of the dev set
changes in them (the calibrator refitted: :mod:`lidframe.core.refit`; :func:`metrics_of_samples`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import attrs
import numpy as np
from scipy import sparse

from lidframe.metrics.detection import eer_from_bins, pav_bins_from_counts

__all__ = [
    "BINARY_METRICS",
    "LID_METRICS",
    "RESAMPLE_BLOCK",
    "PairLLRs",
    "EvalSample",
    "DevResampling",
    "binary_metrics_weighted",
    "binary_metrics_of_samples",
    "group_means_weighted",
    "lid_metrics_weighted",
    "metrics_of_sample",
    "metrics_of_samples",
]

#: Per-trial LID metrics with intervals.
LID_METRICS = ("alid", "pdr", "lid_pos", "lid_neg", "lid_q99", "lid_max")
#: Binary-view metrics with intervals (need the pair LLRs).
BINARY_METRICS = ("eer", "cllr")
RESAMPLE_BLOCK = 128  # resamples per vectorised block


def _weighted_quantile(sorted_values, weights_sorted, q: float):
    """numpy's linear-interpolation quantile of the multiset given by integer weights (rows)."""
    cum = np.cumsum(weights_sorted, axis=1)
    total = cum[:, -1]
    h = (total - 1) * q
    lo = np.floor(h)
    frac = h - lo
    hi = np.minimum(lo + 1, total - 1)
    i_lo = (cum > lo[:, None]).argmax(axis=1)
    i_hi = (cum > hi[:, None]).argmax(axis=1)
    return sorted_values[i_lo] + frac * (sorted_values[i_hi] - sorted_values[i_lo])


def lid_metrics_weighted(lid: np.ndarray, weights: np.ndarray) -> dict:
    """LID summary metrics for each row of trial weights.

    Parameters
    ----------
    lid : ndarray, shape (T,)
        Per-trial LID (bits), closed-set trials only.
    weights : ndarray, shape (B, T)
        Non-negative trial weights (resample counts); each row a resample.

    Returns
    -------
    dict of ndarray (B,)
        ``alid, pdr, lid_pos, lid_neg, lid_q99, lid_max`` (NaN where a side is empty).
    """
    out = {k: np.empty(weights.shape[0]) for k in LID_METRICS}
    positive = lid > 0
    order = np.argsort(lid, kind="stable")
    sorted_lid = lid[order]
    for start in range(0, weights.shape[0], RESAMPLE_BLOCK):
        w = weights[start : start + RESAMPLE_BLOCK]
        sl = slice(start, start + w.shape[0])
        total = w.sum(axis=1)
        n_pos = w @ positive
        with np.errstate(invalid="ignore", divide="ignore"):
            out["alid"][sl] = (w @ lid) / total
            out["pdr"][sl] = n_pos / total
            out["lid_pos"][sl] = np.where(n_pos > 0, (w @ np.where(positive, lid, 0.0)) / n_pos, np.nan)
            n_neg = total - n_pos
            out["lid_neg"][sl] = np.where(n_neg > 0, (w @ np.where(positive, 0.0, lid)) / n_neg, np.nan)
        out["lid_max"][sl] = np.where(w > 0, lid, -np.inf).max(axis=1)
        out["lid_q99"][sl] = _weighted_quantile(sorted_lid, w[:, order], 0.99)
    return out


@attrs.frozen(eq=False)
class PairLLRs:
    """Mated and non-mated LLRs of each closed-set trial, for binary metrics under resampling.

    Attributes
    ----------
    mated : ndarray (T,)
        LLR of each trial's mated pair.
    non_mated : ndarray (T, N - 1)
        LLRs of its non-mated pairs.
    runs : (sparse (T, G), sparse (T, G)) or None
        The :meth:`structure` of these pairs where the caller has it already: that of
        pairs in the same order, ties included (the same pairs through a strictly
        increasing map, say); None: computed by :meth:`structure`.
    """

    mated: np.ndarray
    non_mated: np.ndarray
    runs: tuple[sparse.csr_matrix, sparse.csr_matrix] | None = None

    def structure(self) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
        """Sorted-run structure shared by all resamples: (mated (T, G), non_mated (T, G)) sparse counts."""
        if self.runs is not None:
            return self.runs
        n_trials, n_non_mated = self.non_mated.shape
        values = np.r_[self.mated, self.non_mated.ravel()]
        is_mated = np.r_[np.ones(n_trials, bool), np.zeros(values.size - n_trials, bool)]
        trial = np.r_[np.arange(n_trials), np.repeat(np.arange(n_trials), n_non_mated)]
        order = np.argsort(values, kind="stable")
        v, lab, tr = values[order], is_mated[order], trial[order]
        # tie groups, then pool consecutive label-pure groups (a PAV/ROCCH no-op)
        new_value = np.r_[True, v[1:] != v[:-1]]
        tie_group = np.cumsum(new_value) - 1
        n_groups = tie_group[-1] + 1
        has_mated = np.zeros(n_groups, bool)
        has_non_mated = np.zeros(n_groups, bool)
        has_mated[tie_group[lab]] = True
        has_non_mated[tie_group[~lab]] = True
        kind = np.where(
            has_mated & has_non_mated, 2, np.where(has_mated, 1, 0)
        )  # 0 non-mated only, 1 mated only, 2 mixed
        starts_run = np.r_[True, (kind[1:] != kind[:-1]) | (kind[1:] == 2)]
        run_of_group = np.cumsum(starts_run) - 1
        run = run_of_group[tie_group]
        n_runs = run_of_group[-1] + 1
        mated = sparse.csr_matrix((np.ones(lab.sum()), (tr[lab], run[lab])), shape=(n_trials, n_runs))
        non_mated = sparse.csr_matrix((np.ones((~lab).sum()), (tr[~lab], run[~lab])), shape=(n_trials, n_runs))
        return mated, non_mated


def _eer_from_counts(n_mated: np.ndarray, n_non_mated: np.ndarray) -> float:
    """ROCCH EER of one resample from its weighted run counts (runs it left empty dropped)."""
    keep = (n_mated + n_non_mated) > 0
    _, bin_mated, bin_non_mated = pav_bins_from_counts(n_mated[keep], n_non_mated[keep])
    return eer_from_bins(bin_mated, bin_non_mated)


def binary_metrics_weighted(pairs: PairLLRs, weights: np.ndarray) -> dict:
    """ROCCH EER and Cllr (bits) for each row of trial weights (a trial brings all its pairs)."""
    miss_cost, fa_cost = _pair_costs(pairs)
    runs = pairs.structure()
    out = {"eer": np.empty(weights.shape[0]), "cllr": np.empty(weights.shape[0])}
    for start in range(0, weights.shape[0], RESAMPLE_BLOCK):
        w = weights[start : start + RESAMPLE_BLOCK]
        sl = slice(start, start + w.shape[0])
        out["cllr"][sl] = _cllr_rows(miss_cost, fa_cost, w, pairs.non_mated.shape[1])
        out["eer"][sl] = _eer_rows(runs, w)
    return out


def binary_metrics_of_samples(pairs: list[PairLLRs], weights: np.ndarray) -> dict:
    """ROCCH EER and Cllr (bits) of row b of trial weights over pairs[b]: each resample its own pair LLRs.

    The EERs of pairs that share one run structure (``runs``, the same object: their
    order is one) are computed together, as :func:`binary_metrics_weighted` computes a block.

    Parameters
    ----------
    pairs : list of PairLLRs, length B
    weights : ndarray, shape (B, T)

    Returns
    -------
    dict of ndarray (B,)
        ``eer``, ``cllr``.
    """
    costs = [_pair_costs(p) for p in pairs]
    miss = np.stack([c[0] for c in costs])
    fa = np.stack([c[1] for c in costs])
    n_non_mated = pairs[0].non_mated.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        total = weights.sum(axis=1)
        cllr = (
            np.einsum("bt,bt->b", weights, miss) / total + np.einsum("bt,bt->b", weights, fa) / (total * n_non_mated)
        ) / (2 * math.log(2.0))
    shared = pairs[0].runs
    if shared is not None and all(p.runs is shared for p in pairs):
        eer = _eer_rows(shared, weights)
    else:
        eer = np.array([_eer_rows(p.structure(), weights[b : b + 1])[0] for b, p in enumerate(pairs)])
    return {"eer": eer, "cllr": cllr}


def _pair_costs(pairs: PairLLRs) -> tuple[np.ndarray, np.ndarray]:
    """Per trial (T,): the miss cost log(1 + e^-llr) of its mated pair, and the summed false-alarm costs of its others."""
    return np.logaddexp(0.0, -pairs.mated), np.logaddexp(0.0, pairs.non_mated).sum(axis=1)


def _cllr_rows(miss_cost: np.ndarray, fa_cost: np.ndarray, w: np.ndarray, n_non_mated: int) -> np.ndarray:
    """Cllr (bits) of each row of trial weights *w* (b, T), from the trials' costs (:func:`_pair_costs`)."""
    total = w.sum(axis=1)
    return ((w @ miss_cost) / total + (w @ fa_cost) / (total * n_non_mated)) / (2 * math.log(2.0))


def _eer_rows(runs: tuple[sparse.csr_matrix, sparse.csr_matrix], w: np.ndarray) -> np.ndarray:
    """ROCCH EER of each row of trial weights *w* (b, T) over the pairs' sorted runs (:meth:`PairLLRs.structure`)."""
    mated_runs, non_mated_runs = runs
    run_mated = np.asarray((mated_runs.T @ w.T).T)
    run_non_mated = np.asarray((non_mated_runs.T @ w.T).T)
    return np.array([_eer_from_counts(a, b) for a, b in zip(run_mated, run_non_mated)])


def group_means_weighted(group_means: Mapping[str, tuple[np.ndarray, np.ndarray]], weights: np.ndarray) -> dict:
    """The mean of each group's values over its trials, for each row of trial weights.

    Parameters
    ----------
    group_means : mapping of str to (values (T,), member (T,) bool)
        Per metric: per-trial values and which trials form the group (values outside it
        are ignored, may be NaN).
    weights : ndarray, shape (B, T)

    Returns
    -------
    dict of ndarray (B,)
        NaN where a resample holds no trial of the group.
    """
    out = {}
    for metric, (values, member) in group_means.items():
        member = np.asarray(member, dtype=bool)
        inside = np.where(member, values, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[metric] = (weights @ inside) / (weights @ member.astype(np.float64))
    return out


@attrs.frozen(eq=False)
class EvalSample:
    """The eval trials' values that :func:`bootstrap_ci` computes its metrics from, under one calibrator.

    Attributes
    ----------
    lid : ndarray, shape (T,)
        Per-trial LID (bits).
    pairs : PairLLRs or None
        Pair LLRs of the trials *pair_rows* (EER and Cllr), or None.
    group_means : mapping of str to (values (T,), member (T,)), or None
        More metrics, each a mean over a group of trials (:func:`group_means_weighted`).
    log_evidence : ndarray, shape (T,), or None
        The open set: each trial's E, the log likelihood ratio of "enrolled" against
        "nobody" (nats; :mod:`lidframe.core.openset`), which the membership attack ranks
        trials by (:mod:`lidframe.core.membership`); None in the closed set.
    """

    lid: np.ndarray
    pairs: PairLLRs | None = None
    group_means: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None
    log_evidence: np.ndarray | None = None


@attrs.frozen(eq=False)
class DevResampling:
    """The dev side of a two-sample bootstrap: the dev trials' units, and the eval values a resample of them gives.

    Attributes
    ----------
    speakers : ndarray, shape (T_dev,)
        The speaker of each dev trial the calibrator is fitted on (the resampling units
        with ``unit="speaker"``; with ``unit="trial"`` each trial is one).
    evaluate : callable
        ``evaluate(weights)`` with *weights* (b, T_dev) float64 dev trial weights (resample
        counts) returns b :class:`EvalSample`: the eval trials' values under the calibrator
        refitted on each row's dev resample (:func:`lidframe.core.refit.dev_resampling`).
    """

    speakers: np.ndarray
    evaluate: Callable[[np.ndarray], Sequence[EvalSample]]


def metrics_of_sample(sample: EvalSample, weights: np.ndarray, pair_rows: np.ndarray | None = None) -> dict:
    """Every metric of *sample* for each row of trial *weights* (B, T): LID's, with pairs EER and Cllr, its group means.

    *pair_rows*: the rows of the trials that ``sample.pairs`` belong to (default every row).
    """
    values = lid_metrics_weighted(sample.lid, weights)
    if sample.pairs is not None:
        values.update(binary_metrics_weighted(sample.pairs, weights if pair_rows is None else weights[:, pair_rows]))
    if sample.group_means:
        values.update(group_means_weighted(sample.group_means, weights))
    return values


def metrics_of_samples(samples: Sequence[EvalSample], weights: np.ndarray, pair_rows: np.ndarray | None = None) -> dict:
    """:func:`metrics_of_sample` of row b of *weights* (B, T) over samples[b]: each resample under its own calibrator."""
    rows = [
        lid_metrics_weighted(s.lid, weights[b : b + 1])
        | (group_means_weighted(s.group_means, weights[b : b + 1]) if s.group_means else {})
        for b, s in enumerate(samples)
    ]
    values = {metric: np.concatenate([row[metric] for row in rows]) for metric in rows[0]}
    pair_sets = [s.pairs for s in samples if s.pairs is not None]
    if pair_sets:
        values.update(binary_metrics_of_samples(pair_sets, weights if pair_rows is None else weights[:, pair_rows]))
    return values
