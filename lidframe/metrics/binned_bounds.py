"""Error bounds of the binned binary view (:mod:`lidframe.metrics.binned`): how far binned can be from exact.

The bounds read the counts and per-bin ranges of a
:class:`~lidframe.metrics.binned.BinnedPairs` (:class:`CountedBins`), and so do
:func:`act_dcf_of_bins` and :func:`dsys_of_bins`, the two binned metrics that split a bin
holding their threshold or edge.

Write a_k = (mated count of bin k) / N_mated and b_k = (non-mated count) / N_non_mated.
Quantising keeps the ROC points at the bin edges and drops those inside a bin: the
exact ROC inside bin k runs, as a staircase, through the box between the two kept
points at its edges (P_miss rises by a_k across it, P_fa falls by b_k).  So every
exact operating point is dominated by the box's best corner -- the one reached if all
the bin's non-mated pairs lay below all its mated ones -- and dominates nothing better.
:meth:`BinnedPairs.error_bounds` therefore computes the *best order*: the same runs with
each bin that holds both classes and more than one value (``bin_low < bin_high``) split
into its non-mated run followed by its mated run, and runs the exact PAV code on it.
For the hull metrics the binned value (the worst, tied order), the exact value and the
best order's value are ordered, so

``eer`` (ROCCH), ``min_cllr``, ``min_dcf``
    0 <= binned - exact <= binned - best;
``dece_bits``
    0 <= exact - binned <= best - binned;

the largest differences any pairs with these per-bin counts and ranges can have (data
with the best order inside each bin reach them).  A bin holding one class, or one value,
loses nothing.  They never exceed the closed forms that hold for any order (with A, B
the largest a_k, b_k over the bins that hold both classes and more than one value):
eer <= max_k min(a_k, b_k); minCllr, the integral over the posterior threshold c of the
hull's minimum cost [(1 - c) P_miss + c P_fa] / (c (1 - c)) / (2 ln 2), rises by at most
[A ln(1 + B / A) + B ln(1 + A / B)] / (2 ln 2) bits; D_ECE falls by at most the integral
over pi of f(pi A, (1 - pi) B) / ln 2, f(x, y) = x ln(1 + y/x) + y ln(1 + x/y) (the
midpoint rule over-estimates it: f is concave).  The reported bound is the smaller of the two.

``act_dcf``
    the counts on each side of the Bayes threshold t are exact but for the bin holding
    t (by the grid's own index), and for it too unless its values straddle t
    (``bin_low`` <= t < ``bin_high``); then its counts are split by linear
    interpolation over its range, and P_miss and P_fa may each be off by its share:
    ``|delta|`` <= the larger change of the cost over those two ranges, at least half
    of (C_miss P_target a_k + C_fa (1 - P_target) b_k) / min(C_miss P_target,
    C_fa (1 - P_target)), about 99 b_k at P_target = 0.01.  Valid but useless on a
    coarse grid: where the straddling bin holds 95 % of the non-mated pairs (a few bins
    per class) the bound is 47 to 95, where an actDCF of 1 is no better than no system;
    on the default grid it is 0 to 2.3e-4 at T = N = 1,024 to 4,096 (measured below).
``eer_threshold``
    the exact and the binned choice both lie on the step ROC between the two kept
    points around the sign change of P_fa - P_miss, i.e. inside one bin j; along it
    (P_fa + P_miss) / 2 moves by at most max(a_j, b_j) / 2, so ``|delta|`` <= that.
``dsys``
    the histogram range [min, max] and its bin count are exact; only a fine bin whose
    values straddle an interior edge of the D_sys histogram (``bin_low`` < edge <=
    ``bin_high``, the bin found by the grid's own index, so that every other fine bin
    lies wholly on one side) is split between its two sides, by linear interpolation
    over its range.  The mated-weighted local linkability g = p_mated D of a D_sys bin
    rises with p_mated and falls with p_non_mated, so its extremes over the counts the
    unknown splits allow are at corners; the exact D_sys lies between the value minus
    the summed falls and plus the summed rises (weights 1, 1/2 for the outer bins of the
    reference trapezoid), and in [0, 1]: the bound is the larger side, at most 1.
``max_abs_llr_log10``
    the ZEBRA value of the quantised LLRs: the PAV blocks at the two ends can only
    start at bin edges, so it can only be lower than the exact value (a lower bound),
    equal whenever no bin that mixes the classes sits at an extreme block boundary.
``cllr``
    exact (a sum; no binning).

A pair's mass is 1 / N_mated (or 1 / N_non_mated), so the bounds shrink with the bin
width only down to the mass of the pairs in the crowded bins.  Measured at the default
:data:`~lidframe.metrics.binned_grid.DEFAULT_BINS` = 2^16 bins over the LLR range of a 1-to-N evaluation of
T = N = 2,048 (the streaming engine's grid; ``tests/metrics/test_binned.py``,
``tests/core/test_streaming_binary.py``): eer <= 1.6e-4, minCllr <= 3.2e-4 bit,
D_ECE <= 2.5e-4 bit for affine, isotonic, beta and Gaussian maps, 1.2 to 15 times the actual
differences; dsys 1e-3 to 8e-3 against actual differences below 2e-5; act_dcf 0, 7.9e-5 and
2.3e-4 at T = N = 1,024, 2,048 and 4,096 (affine maps).  A map that piles
many pairs into a narrow LLR range (an isotonic map's flat steps) crowds its bins: the
order-free closed forms reached 4.5e-3 bit there, the best-order bounds 3e-4.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from lidframe.errors import InputError
from lidframe.metrics.binary_view import DSYS_METHOD, pav_summary
from lidframe.metrics.binned_grid import BinGrid
from lidframe.metrics.detection import OperatingPoint
from lidframe.metrics.linkability import integrate_dsys, linkability_bins, local_d, local_linkability_from_counts

__all__ = ["CountedBins", "act_dcf_of_bins", "bin_error_bounds", "class_sizes", "dsys_of_bins"]


class CountedBins(Protocol):
    """What the bounds read of pairs counted into bins (:class:`~lidframe.metrics.binned.BinnedPairs`)."""

    grid: BinGrid
    mated_counts: np.ndarray
    non_mated_counts: np.ndarray
    low: float
    high: float
    bin_low: np.ndarray
    bin_high: np.ndarray


def class_sizes(bins: CountedBins) -> tuple[int, int]:
    """(mated pairs, non-mated pairs) counted, or an InputError unless there is one of each."""
    n_mated, n_non_mated = int(bins.mated_counts.sum()), int(bins.non_mated_counts.sum())
    if n_mated == 0 or n_non_mated == 0:
        raise InputError(f"binary metrics need mated and non-mated scores, got {n_mated} and {n_non_mated}")
    return n_mated, n_non_mated


def bin_error_bounds(bins: CountedBins, point: OperatingPoint) -> dict[str, float]:
    """Bounds on ``|binned - exact|`` for the counts at hand (module docstring), at the operating point *point*.

    What :meth:`BinnedPairs.error_bounds <lidframe.metrics.binned.BinnedPairs.error_bounds>` returns.
    """
    n_mated, n_non_mated = class_sizes(bins)
    nonempty = (bins.mated_counts + bins.non_mated_counts) > 0
    mated = bins.mated_counts[nonempty].astype(np.float64)
    non_mated = bins.non_mated_counts[nonempty].astype(np.float64)
    binned = pav_summary(np.arange(mated.size, dtype=np.float64), mated, non_mated, operating_point=point)
    best = pav_summary(
        *_best_order(mated, non_mated, bins.bin_low[nonempty] == bins.bin_high[nonempty]), operating_point=point
    )
    # the closed forms of the module docstring (any order, ties not used): never below the above
    mixed = (mated > 0) & (non_mated > 0) & (bins.bin_low[nonempty] < bins.bin_high[nonempty])
    share_mated, share_non_mated = mated / n_mated, non_mated / n_non_mated
    if mixed.any():
        eer = float(np.minimum(share_mated, share_non_mated)[mixed].max())
        worst_mated, worst_non_mated = float(share_mated[mixed].max()), float(share_non_mated[mixed].max())
    else:
        eer = worst_mated = worst_non_mated = 0.0
    min_cllr = _hull_cost_rise(worst_mated, worst_non_mated) / (2 * math.log(2.0))
    priors = (np.arange(4096) + 0.5) / 4096  # midpoint rule: an over-estimate, the integrand is concave
    dece = float(np.mean([_hull_cost_rise(p * worst_mated, (1 - p) * worst_non_mated) for p in priors]))
    return {
        "eer": min(eer, max(float(binned["eer"]) - float(best["eer"]), 0.0)),
        "min_cllr": min(min_cllr, max(float(binned["min_cllr"]) - float(best["min_cllr"]), 0.0)),
        "min_dcf": max(float(binned["min_dcf"]) - float(best["min_dcf"]), 0.0),
        "act_dcf": act_dcf_of_bins(bins, point)[1],
        "dece_bits": min(dece / math.log(2.0), max(float(best["dece_bits"]) - float(binned["dece_bits"]), 0.0)),
        "eer_threshold": _eer_threshold_bound(bins.mated_counts, bins.non_mated_counts),
        "dsys": dsys_of_bins(bins)[1],
    }


def _best_order(
    mated: np.ndarray, non_mated: np.ndarray, one_value: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ordered runs of the best arrangement: in each bin of several values, its non-mated pairs below its mated ones.

    Every ROC point of the exact pairs lies in the box of its bin between the two kept
    points at the bin's edges, so it is dominated by the box's best corner, which this
    arrangement reaches; a bin of one value (``one_value``) is a run of ties either way.

    Returns
    -------
    values, n_mated, n_non_mated : ndarray, shape (K,)
        Runs for :func:`~lidframe.metrics.binary_view.pav_summary` (only their order matters).
    """
    split = ~one_value & (mated > 0) & (non_mated > 0)
    first_mated = np.where(split, 0.0, mated)  # the bin's run, or its non-mated half
    runs_mated = np.stack([first_mated, mated - first_mated], axis=1).ravel()
    runs_non_mated = np.stack([non_mated, np.zeros_like(non_mated)], axis=1).ravel()
    keep = (runs_mated + runs_non_mated) > 0
    return np.arange(int(keep.sum()), dtype=np.float64), runs_mated[keep], runs_non_mated[keep]


def _hull_cost_rise(a: float, b: float) -> float:
    """Integral over c in (0, 1) of min((1 - c) a, c b) / (c (1 - c)) = a ln(1 + b/a) + b ln(1 + a/b) (nats)."""
    if a <= 0.0 or b <= 0.0:
        return 0.0
    return a * math.log1p(b / a) + b * math.log1p(a / b)


def _eer_threshold_bound(mated_counts: np.ndarray, non_mated_counts: np.ndarray) -> float:
    """max(a_j, b_j) / 2 of the bin j ending at the first kept threshold with P_fa - P_miss <= 0."""
    nonempty = (mated_counts + non_mated_counts) > 0
    mated, non_mated = mated_counts[nonempty], non_mated_counts[nonempty]
    gap = (1.0 - np.cumsum(non_mated) / non_mated.sum()) - np.cumsum(mated) / mated.sum()
    j = int(np.argmax(gap <= 0))  # the last threshold has gap -1
    return float(max(mated[j] / mated.sum(), non_mated[j] / non_mated.sum()) / 2)


def act_dcf_of_bins(pairs: CountedBins, point: OperatingPoint) -> tuple[float, float]:
    """(actDCF, bound on ``|binned - exact|``): the counts at or below the Bayes threshold t of *point*.

    Only the bin holding t (by the grid's own index) can have values on both sides; its
    range settles it unless bin_low <= t < bin_high, where its counts are split by linear
    interpolation over the range and P_miss and P_fa may each be off by the bin's share.
    """
    n_mated, n_non_mated = class_sizes(pairs)
    t = point.threshold
    k = int(pairs.grid.index(np.array([t]))[0])
    lowest, highest = float(pairs.bin_low[k]), float(pairs.bin_high[k])
    straddle = lowest <= t < highest
    frac = (t - lowest) / (highest - lowest) if straddle else (1.0 if t >= highest else 0.0)
    below_mated = float(pairs.mated_counts[:k].sum()) + frac * float(pairs.mated_counts[k])
    below_non_mated = float(pairs.non_mated_counts[:k].sum()) + frac * float(pairs.non_mated_counts[k])
    p_miss, p_fa = below_mated / n_mated, 1.0 - below_non_mated / n_non_mated
    value = float(point.cost(p_miss, p_fa))
    if not straddle:
        return value, 0.0
    miss_low = float(pairs.mated_counts[:k].sum()) / n_mated
    fa_low = 1.0 - float(pairs.non_mated_counts[: k + 1].sum()) / n_non_mated
    lowest_cost = float(point.cost(miss_low, fa_low))
    highest_cost = float(
        point.cost(miss_low + pairs.mated_counts[k] / n_mated, fa_low + pairs.non_mated_counts[k] / n_non_mated)
    )
    return value, max(highest_cost - value, value - lowest_cost, 0.0)


def _split_counts(pairs: CountedBins, coarse_edges: np.ndarray) -> tuple[np.ndarray, ...]:
    """Counts per coarse bin, by linear interpolation inside the fine bin holding each coarse edge.

    The fine bin of an edge x is the one the grid's own (monotone) index puts x in: every
    value in a lower bin is then below x and every value in a higher bin above it (also
    when rounding puts values at a nominal edge into the neighbouring bin), so that bin
    is the only one whose split can be unknown.  Its range of values [bin_low, bin_high]
    settles it when x lies outside the range (x <= bin_low: every value on the upper
    side, as a value at an edge belongs to the bin above it; x > bin_high: every value
    below); otherwise its counts are split by interpolation over that range.

    Returns
    -------
    coarse_mated, coarse_non_mated : ndarray, shape (C,)
        Estimated mated and non-mated counts per coarse bin.
    slack_mated, slack_non_mated : ndarray, shape (C,)
        How far each estimate can be off: the counts of the fine bins whose values
        straddle one of its interior edges.
    """
    interior = coarse_edges[1:-1]
    holder = pairs.grid.index(interior)
    lowest, highest = pairs.bin_low[holder], pairs.bin_high[holder]
    straddle = (lowest < interior) & (interior <= highest)
    width = np.where(straddle, highest - lowest, 1.0)
    frac = np.where(straddle, (interior - lowest) / width, np.where(interior > highest, 1.0, 0.0))
    frac = np.clip(frac, 0.0, 1.0)
    out = []
    for counts in (pairs.mated_counts, pairs.non_mated_counts):
        cumulative = np.r_[0, np.cumsum(counts)].astype(np.float64)
        at_edges = np.r_[0.0, cumulative[holder] + frac * counts[holder], cumulative[-1]]
        # no slack at the exact outer edges, nor where the holder's values lie on one side
        edge_slack = np.r_[0.0, np.where(straddle, counts[holder], 0), 0.0].astype(np.float64)
        out.append((np.diff(at_edges), edge_slack[:-1] + edge_slack[1:]))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def dsys_of_bins(pairs: CountedBins, method: str = DSYS_METHOD) -> tuple[float, float]:
    """(D_sys, bound on ``|binned - exact|``) on the exact range and bin count of :func:`~lidframe.metrics.linkability.dsys`.

    The bound: each coarse bin's term w_b g_b, g = p_mated D (omega = 1), is monotone
    (up in p_mated, down in p_non_mated), so over the box of counts its slack allows its
    largest rise and fall are at corners; the exact value lies within the summed falls
    below and the summed rises above, and in [0, 1], and the bound is the larger side.
    """
    n_mated, n_non_mated = class_sizes(pairs)
    low, high = pairs.low, pairs.high
    if low == high:  # all scores equal: nothing links (as dsys)
        return 0.0, 0.0
    if not (math.isfinite(low) and math.isfinite(high)):
        raise InputError("linkability needs finite scores (got an infinite one)")
    edges = np.linspace(low, high, linkability_bins(n_mated) + 1)
    mated, non_mated, slack_mated, slack_non_mated = _split_counts(pairs, edges)
    density_mated, d = local_linkability_from_counts(edges, mated, non_mated, 1.0)
    value = integrate_dsys(edges, density_mated, d, method)
    weight = np.ones(edges.size - 1)
    if method == "reference":
        weight[0] = weight[-1] = 0.5

    def term(share_mated: np.ndarray, share_non_mated: np.ndarray) -> np.ndarray:
        share_mated, share_non_mated = np.clip(share_mated, 0.0, None), np.clip(share_non_mated, 0.0, None)
        return share_mated * local_d(share_mated, share_non_mated, 1.0)

    middle = term(mated / n_mated, non_mated / n_non_mated)
    highest = term((mated + slack_mated) / n_mated, (non_mated - slack_non_mated) / n_non_mated)
    lowest = term((mated - slack_mated) / n_mated, (non_mated + slack_non_mated) / n_non_mated)
    rise = float(np.sum(weight * np.maximum(highest - middle, 0.0)))
    fall = float(np.sum(weight * np.maximum(middle - lowest, 0.0)))
    # the exact D_sys lies in [value - fall, value + rise] and in [0, 1]
    return value, max(min(rise, 1.0 - value), min(fall, value), 0.0)
