"""Binary-view metrics of mated and non-mated pair scores (functional, sort-based).

The binary view of a score set treats each of its T x N (trial, enrolled) pairs as a
verification trial: T mated pairs and T (N - 1) non-mated pairs.  Every metric here
names its definition:

``eer_rocch``
    equal error rate on the ROC convex hull (as BOSARIS, ZEBRA and pyllr compute it).
``eer_threshold``
    equal error rate on the step ROC at the best single threshold (SpeechBrain style).
``cllr``
    log-likelihood-ratio cost of *calibrated* LLRs, in bits:
    ``(mean log2(1 + e^-tar) + mean log2(1 + e^non)) / 2``.
``min_cllr``
    the ``cllr`` of the best monotone recalibration of the same scores (PAV).
``pav_llr``
    the PAV (pool-adjacent-violators) LLRs behind ``min_cllr`` and the ROC hull.

Tied scores are pooled before PAV, so the results do not depend on the order of ties.
PAV is scikit-learn's public :func:`sklearn.isotonic.isotonic_regression`.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.isotonic import isotonic_regression

from lidframe.errors import InputError

__all__ = ["eer_rocch", "eer_threshold", "cllr", "min_cllr", "pav_llr", "pav_bins"]


def _check_pair(tar, non):
    tar = np.asarray(tar, dtype=np.float64).ravel()
    non = np.asarray(non, dtype=np.float64).ravel()
    if tar.size == 0 or non.size == 0:
        raise InputError(f"binary metrics need mated and non-mated scores, got {tar.size} and {non.size}")
    if np.isnan(tar).any() or np.isnan(non).any():
        raise InputError("binary metrics need scores without NaN")
    return tar, non


def _unique_counts(sorted_values: np.ndarray):
    """Unique values of a sorted array and their counts, in O(n)."""
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    counts = np.diff(np.r_[starts, sorted_values.size])
    return sorted_values[starts], counts


def _runs(tar_sorted: np.ndarray, non_sorted: np.ndarray):
    """Pool the sorted scores into runs: ties, and stretches of non-mated scores between.

    A stretch of consecutive non-mated scores (no mated score between them) is one PAV
    block or part of one, so pooling it first changes neither the PAV result nor the ROC
    hull; ties are pooled because their order is arbitrary.  The result has at most
    2 K + 1 entries for K distinct mated scores, however many non-mated ones there are,
    and costs two binary searches per mated value: no (T x N)-sized temporaries.
    """
    tar_u, tar_c = _unique_counts(tar_sorted)
    left = np.searchsorted(non_sorted, tar_u, side="left")
    right = np.searchsorted(non_sorted, tar_u, side="right")
    k = tar_u.size
    upper = np.empty(2 * k + 1)
    n_tar = np.zeros(2 * k + 1)
    n_non = np.zeros(2 * k + 1)
    gap = left - np.r_[0, right[:-1]]  # non-mated strictly between consecutive mated values
    n_non[0 : 2 * k : 2] = gap
    upper[0 : 2 * k : 2] = non_sorted[np.maximum(left - 1, 0)] if non_sorted.size else 0.0
    n_tar[1 : 2 * k : 2] = tar_c
    n_non[1 : 2 * k : 2] = right - left
    upper[1 : 2 * k : 2] = tar_u
    n_non[-1] = non_sorted.size - right[-1]
    upper[-1] = non_sorted[-1]
    keep = (n_tar + n_non) > 0
    return upper[keep], n_tar[keep], n_non[keep]


def _pav_bins_sorted(tar_sorted, non_sorted, laplace: bool):
    values, n_tar, n_non = _runs(tar_sorted, non_sorted)
    if laplace:
        values = np.r_[-np.inf, values, np.inf]
        n_tar = np.r_[1.0, n_tar, 1.0]
        n_non = np.r_[1.0, n_non, 1.0]
    weight = n_tar + n_non
    fitted = isotonic_regression(n_tar / weight, sample_weight=weight, increasing=True)
    # runs of equal fitted value form one PAV bin
    ends = np.flatnonzero(np.r_[fitted[1:] != fitted[:-1], True])
    starts = np.r_[0, ends[:-1] + 1]
    return values[ends], np.add.reduceat(n_tar, starts), np.add.reduceat(n_non, starts)


def pav_bins(tar, non, *, laplace: bool = False):
    """Pool tied scores, then PAV: the ROC-convex-hull bins of a mated/non-mated split.

    Parameters
    ----------
    tar : array_like, shape (n_tar,)
        Mated-pair scores (any monotone scale).
    non : array_like, shape (n_non,)
        Non-mated-pair scores.
    laplace : bool
        Add one pseudo mated and one pseudo non-mated pair below all scores (at -inf) and
        above all scores (at +inf) before PAV: the Laplace rule of succession of BOSARIS
        and ZEBRA, which keeps every bin's posterior strictly inside (0, 1).

    Returns
    -------
    upper : ndarray, shape (K,)
        Largest score in each PAV bin, ascending.
    n_tar, n_non : ndarray of float, shape (K,)
        Mated and non-mated counts per bin (pseudo-counts included).  The mated
        fraction ``n_tar / (n_tar + n_non)`` is non-decreasing from bin to bin.
    """
    tar, non = _check_pair(tar, non)
    return _pav_bins_sorted(np.sort(tar), np.sort(non), laplace)


def _bin_llr(bin_tar, bin_non, total_tar: float, total_non: float):
    """PAV LLR (nats) of each bin: posterior log-odds minus the data's prior log-odds."""
    with np.errstate(divide="ignore"):
        log_odds = np.log(bin_tar) - np.log(bin_non)
    return log_odds - math.log(total_tar / total_non)


def pav_llr(tar, non, *, laplace: bool = False):
    """PAV-optimal LLRs of every mated and non-mated score.

    Parameters
    ----------
    tar, non : array_like
        Mated and non-mated scores.
    laplace : bool
        Laplace pseudo-counts (see :func:`pav_bins`), which keep every LLR finite;
        without them the lowest bin may get -inf and the highest +inf.

    Returns
    -------
    tar_llr, non_llr : ndarray
        Natural-log LLRs, same shapes as the flattened inputs.
    """
    tar, non = _check_pair(tar, non)
    upper, bin_tar, bin_non = pav_bins(tar, non, laplace=laplace)
    llr = _bin_llr(bin_tar, bin_non, tar.size, non.size)
    return llr[np.searchsorted(upper, tar)], llr[np.searchsorted(upper, non)]


def _cllr_from_bins(llr, bin_tar, bin_non):
    with np.errstate(invalid="ignore"):
        miss = np.where(bin_tar > 0, bin_tar * np.logaddexp(0.0, -llr), 0.0).sum() / bin_tar.sum()
        fa = np.where(bin_non > 0, bin_non * np.logaddexp(0.0, llr), 0.0).sum() / bin_non.sum()
    return float((miss + fa) / (2 * math.log(2.0)))


def cllr(tar_llr, non_llr) -> float:
    """Log-likelihood-ratio cost in bits of natural-log LLRs (0 = perfect, 1 = uninformative).

    Parameters
    ----------
    tar_llr : array_like
        LLRs of mated pairs.
    non_llr : array_like
        LLRs of non-mated pairs.
    """
    tar, non = _check_pair(tar_llr, non_llr)
    miss = _mean_softplus(-tar)
    fa = _mean_softplus(non)
    return float((miss + fa) / (2 * math.log(2.0)))


def _mean_softplus(values: np.ndarray, chunk: int = 1 << 20) -> float:
    """mean(log(1 + e^x)) in chunks, so no temporary as large as *values*."""
    total = 0.0
    for start in range(0, values.size, chunk):
        total += float(np.logaddexp(0.0, values[start : start + chunk]).sum())
    return total / values.size


def _min_cllr_from_bins(bin_tar, bin_non) -> float:
    llr = _bin_llr(bin_tar, bin_non, bin_tar.sum(), bin_non.sum())
    return _cllr_from_bins(llr, bin_tar, bin_non)


def min_cllr(tar, non) -> float:
    """Cllr (bits) after the optimal monotone recalibration (PAV, no Laplace smoothing)."""
    _, bin_tar, bin_non = pav_bins(tar, non)
    return _min_cllr_from_bins(bin_tar, bin_non)


def eer_rocch(tar, non) -> float:
    """Equal error rate (fraction, 0..0.5) on the ROC convex hull.

    The hull's vertices are the PAV bin boundaries; the EER is where the segment
    between two consecutive vertices crosses P_miss = P_fa.
    """
    _, bin_tar, bin_non = pav_bins(tar, non)
    return _eer_from_bins(bin_tar, bin_non)


def eer_threshold(tar, non) -> float:
    """Equal error rate (fraction) at a single threshold of the step ROC, SpeechBrain style.

    For every distinct score t: P_miss(t) = share of mated scores <= t and
    P_fa(t) = share of non-mated scores > t; the threshold minimising |P_fa - P_miss|
    (the lowest such t) gives EER = (P_fa + P_miss) / 2.  Thresholds between two
    distinct scores give the same rates as the lower one, so they need no separate
    visit.  On small sets it can differ from :func:`eer_rocch`, which interpolates
    along the convex hull.
    """
    tar, non = _check_pair(tar, non)
    return _eer_threshold_sorted(np.sort(tar), np.sort(non))


def _eer_threshold_sorted(tar, non) -> float:
    thresholds = np.union1d(tar, non)
    p_miss = np.searchsorted(tar, thresholds, side="right") / tar.size
    p_fa = 1.0 - np.searchsorted(non, thresholds, side="right") / non.size
    k = int(np.argmin(np.abs(p_fa - p_miss)))
    return float((p_fa[k] + p_miss[k]) / 2)


def _eer_from_bins(bin_tar, bin_non) -> float:
    p_miss = np.r_[0.0, np.cumsum(bin_tar)] / bin_tar.sum()
    p_fa = 1.0 - np.r_[0.0, np.cumsum(bin_non)] / bin_non.sum()
    diff = p_miss - p_fa  # -1 at the first vertex, +1 at the last
    k = int(np.argmax(diff >= 0))
    if diff[k] == 0:
        return float(p_miss[k])
    t = -diff[k - 1] / (diff[k] - diff[k - 1])
    return float(p_miss[k - 1] + t * (p_miss[k] - p_miss[k - 1]))
