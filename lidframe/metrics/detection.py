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
    ``(mean log2(1 + e^-mated_llr) + mean log2(1 + e^non_mated_llr)) / 2``.
``min_cllr``
    the ``cllr`` of the best monotone recalibration of the same scores (PAV).
``pav_llr``
    the PAV (pool-adjacent-violators) LLRs behind ``min_cllr`` and the ROC hull.
``min_dcf``, ``act_dcf``
    the normalised detection cost (NIST SRE, SpeechBrain) at an :class:`OperatingPoint`
    -- target prior P_target, costs C_miss and C_fa, by default 0.01, 1 and 1 as
    SpeechBrain's ``minDCF`` --
    ``DCF(t) = [C_miss P_target P_miss(t) + C_fa (1 - P_target) P_fa(t)]
    / min(C_miss P_target, C_fa (1 - P_target))``,
    with P_miss(t) the share of mated pairs scoring <= t and P_fa(t) the share of
    non-mated pairs scoring > t (SpeechBrain's convention; a pair scoring above t is
    accepted as mated).  ``min_dcf`` is its minimum over every threshold (any score: it
    needs no calibration); ``act_dcf`` its value at the Bayes threshold of calibrated
    LLRs, t = -ln(C_miss P_target / (C_fa (1 - P_target))) (it needs calibration).
    Normalised, 1 is the cost of the best fixed decision (reject all, or accept all):
    ``min_dcf`` <= 1 always, ``act_dcf`` > 1 means the LLRs do worse than no system.

The PAV bins are extracted in one place, which every user of PAV calls:
:func:`pav_bins` (tied scores pooled, then PAV; ZEBRA, and the binary view on its
pre-sorted scores),
:func:`pav_bins_from_counts` (PAV over ordered mated / non-mated counts; the bootstrap's
resampled EER via :func:`eer_from_bins`) and :func:`pav_blocks` (the runs of a PAV fit;
the isotonic calibrator).

Tied scores are pooled before PAV, so the results do not depend on the order of ties.
PAV is SciPy's public :func:`scipy.optimize.isotonic_regression` (the same blocks as
scikit-learn's ``isotonic_regression``, which the tests check, without its per-call input
validation: ~0.03 ms a call against ~0.45 ms, which the bootstrap's thousands of resampled
EERs paid).
"""

from __future__ import annotations

import math

import attrs
import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import isotonic_regression

from lidframe.errors import InputError

__all__ = [
    "eer_rocch",
    "eer_threshold",
    "cllr",
    "min_cllr",
    "pav_llr",
    "pav_bins",
    "pav_blocks",
    "pav_bins_from_counts",
    "eer_from_bins",
    "OperatingPoint",
    "min_dcf",
    "act_dcf",
    "min_dcf_from_counts",
    "act_dcf_sorted",
]


def check_pair(mated: ArrayLike, non_mated: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Mated and non-mated scores as 1-D float64 arrays; an InputError if a class is empty or holds NaN."""
    mated = np.asarray(mated, dtype=np.float64).ravel()
    non_mated = np.asarray(non_mated, dtype=np.float64).ravel()
    if mated.size == 0 or non_mated.size == 0:
        raise InputError(f"binary metrics need mated and non-mated scores, got {mated.size} and {non_mated.size}")
    # min() propagates NaN: a NaN check without an input-sized boolean temporary
    if np.isnan(mated.min()) or np.isnan(non_mated.min()):
        raise InputError("binary metrics need scores without NaN")
    return mated, non_mated


def _unique_counts(sorted_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique values of a sorted array and their counts, in O(n)."""
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    counts = np.diff(np.r_[starts, sorted_values.size])
    return sorted_values[starts], counts


def tied_runs(mated_sorted: np.ndarray, non_mated_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pool the sorted scores into runs: ties, and stretches of non-mated scores between.

    A stretch of consecutive non-mated scores (no mated score between them) is one PAV
    block or part of one, so pooling it first changes neither the PAV result nor the ROC
    hull; ties are pooled because their order is arbitrary.  The result has at most
    2 K + 1 entries for K distinct mated scores, however many non-mated ones there are,
    and costs two binary searches per mated value: no (T x N)-sized temporaries.
    """
    mated_values, mated_counts = _unique_counts(mated_sorted)
    left = np.searchsorted(non_mated_sorted, mated_values, side="left")
    right = np.searchsorted(non_mated_sorted, mated_values, side="right")
    k = mated_values.size
    upper = np.empty(2 * k + 1)
    n_mated = np.zeros(2 * k + 1)
    n_non_mated = np.zeros(2 * k + 1)
    gap = left - np.r_[0, right[:-1]]  # non-mated strictly between consecutive mated values
    n_non_mated[0 : 2 * k : 2] = gap
    upper[0 : 2 * k : 2] = non_mated_sorted[np.maximum(left - 1, 0)] if non_mated_sorted.size else 0.0
    n_mated[1 : 2 * k : 2] = mated_counts
    n_non_mated[1 : 2 * k : 2] = right - left
    upper[1 : 2 * k : 2] = mated_values
    n_non_mated[-1] = non_mated_sorted.size - right[-1]
    upper[-1] = non_mated_sorted[-1]
    keep = (n_mated + n_non_mated) > 0
    return upper[keep], n_mated[keep], n_non_mated[keep]


def _pav_bins_sorted(
    mated_sorted: np.ndarray, non_mated_sorted: np.ndarray, laplace: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    values, n_mated, n_non_mated = tied_runs(mated_sorted, non_mated_sorted)
    return pav_bins_of_runs(values, n_mated, n_non_mated, laplace)


def pav_bins_of_runs(
    values: np.ndarray, n_mated: np.ndarray, n_non_mated: np.ndarray, laplace: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PAV bins (upper value, mated, non-mated counts) of ordered runs, optionally Laplace-smoothed."""
    if laplace:
        values = np.r_[-np.inf, values, np.inf]
        n_mated = np.r_[1.0, n_mated, 1.0]
        n_non_mated = np.r_[1.0, n_non_mated, 1.0]
    ends, bin_mated, bin_non_mated = pav_bins_from_counts(n_mated, n_non_mated)
    return values[ends], bin_mated, bin_non_mated


def pav_blocks(fitted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The blocks of a PAV fit: runs of equal fitted value, as index ranges.

    Parameters
    ----------
    fitted : ndarray, shape (K,)
        Non-decreasing output of an isotonic regression, in the order of its input.

    Returns
    -------
    starts, ends : ndarray of intp, shape (B,)
        First and last index of each block (``ends`` inclusive), ascending.
    """
    ends = np.flatnonzero(np.r_[fitted[1:] != fitted[:-1], True])
    return np.r_[0, ends[:-1] + 1], ends


def pav_bins_from_counts(n_mated: np.ndarray, n_non_mated: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PAV over ordered runs of mated / non-mated counts, pooled into bins.

    Parameters
    ----------
    n_mated, n_non_mated : ndarray of float, shape (K,)
        Mated and non-mated counts (or weights) of each run of scores, in ascending
        score order; every run has ``n_mated + n_non_mated > 0``.

    Returns
    -------
    ends : ndarray of intp, shape (B,)
        Index of the last run of each bin.
    bin_mated, bin_non_mated : ndarray of float, shape (B,)
        Counts per bin; the mated fraction is non-decreasing from bin to bin.
    """
    weight = n_mated + n_non_mated
    fitted = isotonic_regression(n_mated / weight, weights=weight, increasing=True).x
    starts, ends = pav_blocks(fitted)
    return ends, np.add.reduceat(n_mated, starts), np.add.reduceat(n_non_mated, starts)


def pav_bins(
    mated: ArrayLike, non_mated: ArrayLike, *, laplace: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pool tied scores, then PAV: the ROC-convex-hull bins of a mated/non-mated split.

    Parameters
    ----------
    mated : array_like, shape (n_mated,)
        Mated-pair scores (any monotone scale).
    non_mated : array_like, shape (n_non_mated,)
        Non-mated-pair scores.
    laplace : bool
        Add one pseudo mated and one pseudo non-mated pair below all scores (at -inf) and
        above all scores (at +inf) before PAV: the Laplace rule of succession of BOSARIS
        and ZEBRA, which keeps every bin's posterior strictly inside (0, 1).

    Returns
    -------
    upper : ndarray, shape (K,)
        Largest score in each PAV bin, ascending.
    n_mated, n_non_mated : ndarray of float, shape (K,)
        Mated and non-mated counts per bin (pseudo-counts included).  The mated
        fraction ``n_mated / (n_mated + n_non_mated)`` is non-decreasing from bin to bin.
    """
    mated, non_mated = check_pair(mated, non_mated)
    return _pav_bins_sorted(np.sort(mated), np.sort(non_mated), laplace)


def bin_llr(bin_mated: np.ndarray, bin_non_mated: np.ndarray, total_mated: float, total_non_mated: float) -> np.ndarray:
    """PAV LLR (nats) of each bin: posterior log-odds minus the data's prior log-odds."""
    with np.errstate(divide="ignore"):
        log_odds = np.log(bin_mated) - np.log(bin_non_mated)
    return log_odds - math.log(total_mated / total_non_mated)


def pav_llr(mated: ArrayLike, non_mated: ArrayLike, *, laplace: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """PAV-optimal LLRs of every mated and non-mated score.

    Parameters
    ----------
    mated, non_mated : array_like
        Mated and non-mated scores.
    laplace : bool
        Laplace pseudo-counts (see :func:`pav_bins`), which keep every LLR finite;
        without them the lowest bin may get -inf and the highest +inf.

    Returns
    -------
    mated_llr, non_mated_llr : ndarray
        Natural-log LLRs, same shapes as the flattened inputs.
    """
    mated, non_mated = check_pair(mated, non_mated)
    upper, bin_mated, bin_non_mated = pav_bins(mated, non_mated, laplace=laplace)
    llr = bin_llr(bin_mated, bin_non_mated, mated.size, non_mated.size)
    return llr[np.searchsorted(upper, mated)], llr[np.searchsorted(upper, non_mated)]


def cllr_from_bins(llr: np.ndarray, bin_mated: np.ndarray, bin_non_mated: np.ndarray) -> float:
    """Cllr (bits) of PAV bins given their LLRs (nats) and mated / non-mated counts."""
    with np.errstate(invalid="ignore"):
        miss = np.where(bin_mated > 0, bin_mated * np.logaddexp(0.0, -llr), 0.0).sum() / bin_mated.sum()
        fa = np.where(bin_non_mated > 0, bin_non_mated * np.logaddexp(0.0, llr), 0.0).sum() / bin_non_mated.sum()
    return float((miss + fa) / (2 * math.log(2.0)))


def cllr(mated_llr: ArrayLike, non_mated_llr: ArrayLike) -> float:
    """Log-likelihood-ratio cost in bits of natural-log LLRs (0 = perfect, 1 = uninformative).

    Parameters
    ----------
    mated_llr : array_like
        LLRs of mated pairs.
    non_mated_llr : array_like
        LLRs of non-mated pairs.
    """
    mated, non_mated = check_pair(mated_llr, non_mated_llr)
    miss = _mean_softplus(-mated)
    fa = _mean_softplus(non_mated)
    return float((miss + fa) / (2 * math.log(2.0)))


def _mean_softplus(values: np.ndarray, chunk: int = 1 << 20) -> float:
    """mean(log(1 + e^x)) in chunks, so no temporary as large as *values*."""
    total = 0.0
    for start in range(0, values.size, chunk):
        total += float(np.logaddexp(0.0, values[start : start + chunk]).sum())
    return total / values.size


def _min_cllr_from_bins(bin_mated: np.ndarray, bin_non_mated: np.ndarray) -> float:
    llr = bin_llr(bin_mated, bin_non_mated, bin_mated.sum(), bin_non_mated.sum())
    return cllr_from_bins(llr, bin_mated, bin_non_mated)


def min_cllr(mated: ArrayLike, non_mated: ArrayLike) -> float:
    """Cllr (bits) after the optimal monotone recalibration (PAV, no Laplace smoothing)."""
    _, bin_mated, bin_non_mated = pav_bins(mated, non_mated)
    return _min_cllr_from_bins(bin_mated, bin_non_mated)


def eer_rocch(mated: ArrayLike, non_mated: ArrayLike) -> float:
    """Equal error rate (fraction, 0..0.5) on the ROC convex hull.

    The hull's vertices are the PAV bin boundaries; the EER is where the segment
    between two consecutive vertices crosses P_miss = P_fa.
    """
    _, bin_mated, bin_non_mated = pav_bins(mated, non_mated)
    return eer_from_bins(bin_mated, bin_non_mated)


def eer_threshold(mated: ArrayLike, non_mated: ArrayLike) -> float:
    """Equal error rate (fraction) at a single threshold of the step ROC, SpeechBrain style.

    For every distinct score t: P_miss(t) = share of mated scores <= t and
    P_fa(t) = share of non-mated scores > t; the threshold minimising ``|P_fa - P_miss|``
    (the lowest such t) gives EER = (P_fa + P_miss) / 2.  Thresholds between two
    distinct scores give the same rates as the lower one, so they need no separate
    visit.  On small sets it can differ from :func:`eer_rocch`, which interpolates
    along the convex hull.
    """
    mated, non_mated = check_pair(mated, non_mated)
    return eer_threshold_sorted(np.sort(mated), np.sort(non_mated))


def eer_threshold_sorted(mated: np.ndarray, non_mated: np.ndarray) -> float:
    """:func:`eer_threshold` of sorted arrays, without visiting every threshold.

    The definition visits every distinct score t (the union of both arrays) and takes
    the lowest t minimising ``|gap(t)|``, gap = P_fa - P_miss.  gap is non-increasing in t
    (also in floating point: each operation is monotone), so the minimisers sit at the
    sign change of gap: the last t with gap > 0 (or the first t of its plateau of equal
    gap, which the lowest-t rule picks) and the first t with gap <= 0.  Both are found by
    bisection over each sorted array (O(log^2 n), no temporaries); the rates are the same
    floating-point expressions as the definition's, so the result is identical to it.
    """
    n_mated, n_non_mated = mated.size, non_mated.size

    def rates(t: float) -> tuple[float, float]:
        p_miss = int(np.searchsorted(mated, t, side="right")) / n_mated
        p_fa = 1.0 - int(np.searchsorted(non_mated, t, side="right")) / n_non_mated
        return p_fa, p_miss

    def gap(t: float) -> float:
        p_fa, p_miss = rates(t)
        return p_fa - p_miss

    def first_at_most(level: float) -> float:
        """Smallest score t (of either array) with gap(t) <= level; gap(max score) = -1."""
        best = math.inf
        for values in (mated, non_mated):
            low, high = 0, values.size  # invariant: gap > level below low, <= level from high
            while low < high:
                mid = (low + high) // 2
                if gap(float(values[mid])) <= level:
                    high = mid
                else:
                    low = mid + 1
            if low < values.size:
                best = min(best, float(values[low]))
        return best

    t_low = first_at_most(0.0)
    below = [float(v[i - 1]) for v in (mated, non_mated) if (i := int(np.searchsorted(v, t_low, side="left"))) > 0]
    chosen = t_low
    if below:  # the largest score below t_low has gap > 0
        positive_gap = gap(max(below))
        if positive_gap <= abs(gap(t_low)):  # a tie goes to the lower threshold, as argmin does
            chosen = first_at_most(positive_gap)
    p_fa, p_miss = rates(chosen)
    return float((p_fa + p_miss) / 2)


def eer_threshold_from_counts(n_mated: np.ndarray, n_non_mated: np.ndarray) -> float:
    """:func:`eer_threshold` from ordered runs of mated / non-mated counts (a run = one threshold).

    Parameters
    ----------
    n_mated, n_non_mated : ndarray, shape (K,)
        Counts of each run of tied (or binned) scores, in ascending score order; every run
        non-empty.  With the runs of tied scores this is :func:`eer_threshold` itself.
    """
    p_miss = np.cumsum(n_mated) / n_mated.sum()
    p_fa = 1.0 - np.cumsum(n_non_mated) / n_non_mated.sum()
    k = int(np.argmin(np.abs(p_fa - p_miss)))
    return float((p_fa[k] + p_miss[k]) / 2)


def eer_from_bins(bin_mated: np.ndarray, bin_non_mated: np.ndarray) -> float:
    """ROC-convex-hull EER (fraction) from PAV bin counts (see :func:`pav_bins`).

    Parameters
    ----------
    bin_mated, bin_non_mated : ndarray of float, shape (B,)
        Mated and non-mated counts (or weights) per PAV bin, in ascending score order.
    """
    p_miss = np.r_[0.0, np.cumsum(bin_mated)] / bin_mated.sum()
    p_fa = 1.0 - np.r_[0.0, np.cumsum(bin_non_mated)] / bin_non_mated.sum()
    diff = p_miss - p_fa  # -1 at the first vertex, +1 at the last
    k = int(np.argmax(diff >= 0))
    if diff[k] == 0:
        return float(p_miss[k])
    t = -diff[k - 1] / (diff[k] - diff[k - 1])
    return float(p_miss[k - 1] + t * (p_miss[k] - p_miss[k - 1]))


def _number(name: str, value: object) -> float:
    """*value* as a float, or an InputError naming the operating point's *name*."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"operating point {name} must be a number, got {value!r}")
    return float(value)


def _p_target(value: object) -> float:
    number = _number("p_target", value)
    if not 0.0 < number < 1.0:
        raise InputError(f"operating point p_target must be a probability in (0, 1), got {value!r}")
    return number


def _c_miss(value: object) -> float:
    number = _number("c_miss", value)
    if not (math.isfinite(number) and number > 0):
        raise InputError(f"operating point c_miss must be a positive, finite cost, got {value!r}")
    return number


def _c_fa(value: object) -> float:
    number = _number("c_fa", value)
    if not (math.isfinite(number) and number > 0):
        raise InputError(f"operating point c_fa must be a positive, finite cost, got {value!r}")
    return number


@attrs.frozen
class OperatingPoint:
    """Where the detection cost is measured: the target prior and the two error costs.

    Attributes
    ----------
    p_target : float, default 0.01
        Prior probability of a mated (target) pair, in (0, 1).
    c_miss, c_fa : float, default 1.0
        Costs of a miss and of a false alarm, positive.  The defaults are SpeechBrain's
        ``minDCF`` defaults (and NIST SRE's P_target = 0.01 operating point).

    Examples
    --------
    >>> point = OperatingPoint(p_target=0.05)
    >>> round(point.threshold, 4)  # the Bayes threshold of calibrated LLRs (nats)
    2.9444
    """

    p_target: float = attrs.field(default=0.01, converter=_p_target, kw_only=True)
    c_miss: float = attrs.field(default=1.0, converter=_c_miss, kw_only=True)
    c_fa: float = attrs.field(default=1.0, converter=_c_fa, kw_only=True)

    @property
    def threshold(self) -> float:
        """-ln(C_miss P_target / (C_fa (1 - P_target))): above it a calibrated LLR decides "mated" (nats)."""
        return math.log(self.c_fa * (1.0 - self.p_target)) - math.log(self.c_miss * self.p_target)

    @property
    def normaliser(self) -> float:
        """min(C_miss P_target, C_fa (1 - P_target)): the cost of the best fixed decision."""
        return min(self.c_miss * self.p_target, self.c_fa * (1.0 - self.p_target))

    def cost(self, p_miss: ArrayLike, p_fa: ArrayLike) -> np.ndarray:
        """Normalised DCF of error rates (fractions, any shape), elementwise."""
        p_miss, p_fa = np.asarray(p_miss, dtype=np.float64), np.asarray(p_fa, dtype=np.float64)
        raw = self.c_miss * self.p_target * p_miss + self.c_fa * (1.0 - self.p_target) * p_fa
        return raw / self.normaliser

    def to_dict(self) -> dict[str, float]:
        """``{"p_target": .., "c_miss": .., "c_fa": ..}``."""
        return {"p_target": self.p_target, "c_miss": self.c_miss, "c_fa": self.c_fa}


def min_dcf_from_counts(n_mated: np.ndarray, n_non_mated: np.ndarray, point: OperatingPoint) -> float:
    """Normalised minDCF from ordered runs of mated / non-mated counts (a run = scores that one threshold cannot split).

    Parameters
    ----------
    n_mated, n_non_mated : ndarray, shape (K,)
        Counts (or weights) of each run of tied (or binned) scores, in ascending score order.
    point : OperatingPoint

    Returns
    -------
    float
        The minimum over the K + 1 thresholds below every run and just above each: a
        threshold inside a run of non-mated scores only is never better than at its top
        (P_miss stays, P_fa falls), so with the runs of tied scores this is the minimum
        over every threshold.
    """
    p_miss = np.r_[0.0, np.cumsum(n_mated)] / np.sum(n_mated)
    p_fa = 1.0 - np.r_[0.0, np.cumsum(n_non_mated)] / np.sum(n_non_mated)
    return float(np.min(point.cost(p_miss, np.maximum(p_fa, 0.0))))


def act_dcf_sorted(mated_sorted: np.ndarray, non_mated_sorted: np.ndarray, point: OperatingPoint) -> float:
    """Normalised actDCF of sorted LLRs at the Bayes threshold of *point* (two binary searches)."""
    t = point.threshold
    p_miss = np.searchsorted(mated_sorted, t, side="right") / mated_sorted.size
    p_fa = 1.0 - np.searchsorted(non_mated_sorted, t, side="right") / non_mated_sorted.size
    return float(point.cost(p_miss, p_fa))


def min_dcf(
    mated: ArrayLike, non_mated: ArrayLike, *, p_target: float = 0.01, c_miss: float = 1.0, c_fa: float = 1.0
) -> float:
    """Normalised minimum detection cost over every threshold (module docstring).

    Parameters
    ----------
    mated, non_mated : array_like
        Scores of mated and non-mated pairs (any monotone score; no calibration needed).
    p_target, c_miss, c_fa : float
        The :class:`OperatingPoint` (defaults 0.01, 1, 1: SpeechBrain's ``minDCF``).

    Returns
    -------
    float in [0, 1]
        SpeechBrain's ``minDCF`` value divided by min(C_miss P_target, C_fa (1 - P_target))
        (where its thresholds reach the minimum: it leaves out "accept every pair").
    """
    point = OperatingPoint(p_target=p_target, c_miss=c_miss, c_fa=c_fa)
    mated, non_mated = check_pair(mated, non_mated)
    _, n_mated, n_non_mated = tied_runs(np.sort(mated), np.sort(non_mated))
    return min_dcf_from_counts(n_mated, n_non_mated, point)


def act_dcf(
    mated_llr: ArrayLike, non_mated_llr: ArrayLike, *, p_target: float = 0.01, c_miss: float = 1.0, c_fa: float = 1.0
) -> float:
    """Normalised detection cost of calibrated LLRs at their Bayes threshold (module docstring).

    Parameters
    ----------
    mated_llr, non_mated_llr : array_like
        Natural-log LLRs of mated and non-mated pairs.
    p_target, c_miss, c_fa : float
        The :class:`OperatingPoint` (defaults 0.01, 1, 1).

    Returns
    -------
    float >= min_dcf
        A pair is accepted when its LLR > -ln(C_miss P_target / (C_fa (1 - P_target))).
    """
    point = OperatingPoint(p_target=p_target, c_miss=c_miss, c_fa=c_fa)
    mated, non_mated = check_pair(mated_llr, non_mated_llr)
    return act_dcf_sorted(np.sort(mated), np.sort(non_mated), point)
