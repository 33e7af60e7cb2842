"""ZEBRA privacy metrics (Nautsch et al., Interspeech 2020) of a mated/non-mated split.

ZEBRA asks how much an attacker's *optimally calibrated* scores (PAV LLRs) could
reduce its uncertainty about "same speaker or not", at every prior:

``dece_bits`` -- population metric D_ECE
    The empirical cross-entropy ECE(pi) of LLRs at prior P(mated) = pi is
    ``pi * mean_mated log2(1 + e^-(llr + t)) + (1 - pi) * mean_non_mated log2(1 + e^(llr + t))``
    with t = logit(pi).  With no evidence (llr = 0) it is the binary entropy H2(pi);
    with the PAV LLRs it is the minimum any monotone calibration reaches.  D_ECE is the
    area between the two curves over pi in (0, 1): 0 bit when the scores carry no
    evidence, 1 / ln 4 = 0.7213 bit (the area under H2) for perfect separation.  PAV
    without Laplace smoothing, as ZEBRA does.
``max_abs_llr`` -- individual metric
    the largest ``|LLR|`` (in log10 units, i.e. decimal orders of magnitude) of the
    Laplace-smoothed PAV LLRs *of the real scores*: the strongest evidence any single
    comparison gives.  As in ZEBRA and BOSARIS (``optimal_llr``), the Laplace rule adds
    one pseudo mated and one pseudo non-mated score below and above all scores, PAV runs
    on the lot, and the pseudo scores are dropped *before* the maximum.  A PAV bin that
    holds only a pseudo pair has posterior 1/2, so its LLR is ln(N_non_mated / N_mated):
    with 1-to-N data (1 mated : N - 1 non-mated) counting it would give every system,
    even one without any information, max ``|LLR|`` >= log10(N - 1).
``zebra_tag``
    its category: 0 (= 0), A (<= 1), B (<= 2), C (<= 4), D (<= 5), E (<= 6), F (> 6).
    (ZEBRA itself fails when max ``|LLR|`` = 0; here that is tag "0".)

The integral over pi is evaluated in the prior log-odds t (dpi = pi (1 - pi) dt) with
the trapezoid rule on t in [-40, 40], step 0.02, where the integrand has decayed below
1e-15: accurate to ~1e-9 bit, far below any sampling error.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from lidframe.metrics.detection import bin_llr, check_pair, pav_bins

__all__ = ["ece_bits", "dece_bits", "max_abs_llr", "zebra_tag", "zebra_summary", "ZEBRA_TAGS"]

#: (upper bound of max ``|LLR|`` in log10, tag); above the last bound the tag is "F".
ZEBRA_TAGS = ((0.0, "0"), (1.0, "A"), (2.0, "B"), (4.0, "C"), (5.0, "D"), (6.0, "E"))

_LOG_ODDS_GRID = np.linspace(-40.0, 40.0, 4001)


def ece_bits(mated_llr: ArrayLike, non_mated_llr: ArrayLike, prior_log_odds: ArrayLike) -> np.ndarray:
    """Empirical cross-entropy (bits) of natural-log LLRs at the given prior log-odds.

    Parameters
    ----------
    mated_llr, non_mated_llr : array_like
        LLRs of mated and non-mated pairs (+-inf allowed where they cost nothing).
    prior_log_odds : array_like, shape (G,)
        logit(P(mated)) values.

    Returns
    -------
    ndarray, shape (G,)
    """
    mated, non_mated = check_pair(mated_llr, non_mated_llr)
    t = np.asarray(prior_log_odds, dtype=np.float64)
    return _ece_weighted(mated, np.ones_like(mated), non_mated, np.ones_like(non_mated), t)


def _ece_weighted(
    mated: np.ndarray,
    w_mated: np.ndarray,
    non_mated: np.ndarray,
    w_non_mated: np.ndarray,
    t: np.ndarray,
    chunk: int = 512,
) -> np.ndarray:
    """ECE over a grid for weighted LLR values (bins), chunked over the grid."""
    out = np.empty(t.size)
    pi, one_minus_pi = _sigmoid(t), _sigmoid(-t)
    with np.errstate(invalid="ignore"):
        for start in range(0, t.size, chunk):
            tt = t[start : start + chunk, None]
            miss = (
                np.where(w_mated > 0, w_mated * np.logaddexp(0.0, -(mated[None, :] + tt)), 0.0).sum(1) / w_mated.sum()
            )
            fa = (
                np.where(w_non_mated > 0, w_non_mated * np.logaddexp(0.0, non_mated[None, :] + tt), 0.0).sum(1)
                / w_non_mated.sum()
            )
            sl = slice(start, start + chunk)
            out[sl] = (pi[sl] * miss + one_minus_pi[sl] * fa) / math.log(2.0)
    return out


def _sigmoid(t: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -t))


def dece_bits(mated: ArrayLike, non_mated: ArrayLike) -> float:
    """ZEBRA's population metric D_ECE in bits, from the scores (any monotone scale).

    Parameters
    ----------
    mated, non_mated : array_like
        Mated and non-mated scores.
    """
    _, bin_mated, bin_non_mated = pav_bins(mated, non_mated)  # ZEBRA: no Laplace smoothing here
    return dece_from_bins(bin_mated, bin_non_mated)


def dece_from_bins(bin_mated: np.ndarray, bin_non_mated: np.ndarray) -> float:
    """D_ECE (bits) from PAV bin counts (no Laplace smoothing), see :func:`dece_bits`."""
    llr = bin_llr(bin_mated, bin_non_mated, bin_mated.sum(), bin_non_mated.sum())
    t = _LOG_ODDS_GRID
    ece_min = _ece_weighted(llr, bin_mated, llr, bin_non_mated, t)
    pi, one_minus_pi = _sigmoid(t), _sigmoid(-t)
    # binary entropy H2(pi) in bits, written so that it stays exact for pi near 0 or 1
    prior_only = (pi * np.logaddexp(0.0, -t) + one_minus_pi * np.logaddexp(0.0, t)) / math.log(2.0)
    integrand = (prior_only - ece_min) * pi * one_minus_pi
    return float(np.trapezoid(integrand, t))


def max_abs_llr(mated: ArrayLike, non_mated: ArrayLike) -> float:
    """ZEBRA's individual metric: max ``|LLR|`` over the real scores' Laplace-smoothed PAV LLRs, log10.

    Parameters
    ----------
    mated, non_mated : array_like
        Mated and non-mated scores (any monotone scale; tied scores are pooled).

    Returns
    -------
    float
        max ``|LLR|`` in log10 units (decimal orders of magnitude), >= 0.  The Laplace
        pseudo scores shape the PAV but are not among the scores maximised over (see
        the module docstring).
    """
    mated_arr, non_mated_arr = check_pair(mated, non_mated)
    _, bin_mated, bin_non_mated = pav_bins(mated_arr, non_mated_arr, laplace=True)
    return max_abs_from_bins(bin_mated, bin_non_mated, mated_arr.size, non_mated_arr.size)


#: Scores the Laplace rule adds at each end (one pseudo mated, one pseudo non-mated),
#: see :func:`lidframe.metrics.detection.pav_bins`.
_LAPLACE_PSEUDO_PER_END = 2.0


def max_abs_from_bins(bin_mated: np.ndarray, bin_non_mated: np.ndarray, n_mated: int, n_non_mated: int) -> float:
    """max ``|LLR|`` in log10 over the bins holding real scores, from Laplace-smoothed PAV bins.

    Parameters
    ----------
    bin_mated, bin_non_mated : ndarray of float, shape (B,)
        Counts per bin of ``pav_bins(..., laplace=True)``: the first bin holds the pseudo
        pair at -inf, the last the pseudo pair at +inf (one bin when B = 1).
    n_mated, n_non_mated : int
        Real mated and non-mated counts (the prior odds of the LLRs).

    Returns
    -------
    float
        The largest ``|LLR|`` (log10) of a bin with at least one real score.  A bin made of a
        pseudo pair alone (count 2) is left out, as ZEBRA drops the pseudo scores.
    """
    llr = bin_llr(bin_mated, bin_non_mated, n_mated, n_non_mated)
    real_count = np.asarray(bin_mated + bin_non_mated, dtype=np.float64).copy()
    real_count[0] -= _LAPLACE_PSEUDO_PER_END
    real_count[-1] -= _LAPLACE_PSEUDO_PER_END
    return float(np.max(np.abs(llr[real_count > 0])) / math.log(10.0))


def zebra_tag(max_abs_llr_log10: float) -> str:
    """Categorical tag of a max ``|LLR|`` (log10): 0, A, B, C, D, E or F."""
    value = float(max_abs_llr_log10)
    for bound, tag in ZEBRA_TAGS:
        if value <= bound:
            return tag
    return "F"


def zebra_summary(mated: ArrayLike, non_mated: ArrayLike) -> dict:
    """``{"dece_bits", "max_abs_llr_log10", "zebra_tag"}`` of a mated/non-mated split."""
    value = max_abs_llr(mated, non_mated)
    return {"dece_bits": dece_bits(mated, non_mated), "max_abs_llr_log10": value, "zebra_tag": zebra_tag(value)}
