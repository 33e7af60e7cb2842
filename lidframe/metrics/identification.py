"""The identification view: where does the true speaker rank among the N enrolled?

``true_speaker_rank``
    1 + the number of enrolled speakers whose score for the trial is strictly higher
    than the true speaker's (ties count in the attacker's favour: a conservative audit).
``rank1_rate``
    share of trials whose true speaker ranks first.
``rank_disclosure``
    the similarity-rank view of Bäckström et al. (2025): from the histogram gamma_k of
    the true speaker's rank, each rank k carries log2(N gamma_k) bits (how much more
    often the true speaker lands at rank k than the 1/N of a blind guess), and their
    trial mean sum_k gamma_k log2(N gamma_k) = log2 N - H(gamma) is >= 0.
``cllr_multiclass``
    C_llr^mc = -mean log2 p_true of the attacker's posterior; under a uniform prior
    ALID = log2 N - C_llr^mc.

Ranks use the raw scores: a row z-norm and a non-decreasing calibrator keep the order.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.scoreset import check_true_index
from lidframe.errors import InputError

__all__ = ["true_speaker_rank", "rank1_rate", "rank_disclosure", "cllr_multiclass"]


def true_speaker_rank(scores: ArrayLike, true_index: ArrayLike, *, tile_rows: int = 4096) -> np.ndarray:
    """Rank (1 = best) of each trial's true speaker among the N enrolled.

    Parameters
    ----------
    scores : array_like, shape (T, N)
    true_index : array_like of int, shape (T,)
        Column of the true speaker; every entry in [0, N).
    tile_rows : int
        Rows compared at a time (memory O(tile_rows x N)).

    Returns
    -------
    ndarray of int, shape (T,)
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise InputError(f"scores must be a (T, N) array, got shape {scores.shape}")
    true_index = check_true_index(true_index, scores.shape[0], scores.shape[1], allow_outsider=False)
    out = np.empty(scores.shape[0], dtype=np.int64)
    for start in range(0, scores.shape[0], tile_rows):
        block = scores[start : start + tile_rows]
        cols = true_index[start : start + tile_rows]
        true_score = block[np.arange(block.shape[0]), cols]
        out[start : start + tile_rows] = 1 + (block > true_score[:, None]).sum(axis=1)
    return out


def rank1_rate(ranks: ArrayLike) -> float:
    """Share of trials whose true speaker ranks first."""
    ranks = np.asarray(ranks)
    if ranks.size == 0:
        raise InputError("rank1_rate needs at least one rank")
    return float(np.mean(ranks == 1))


def rank_disclosure(ranks: ArrayLike, n_enrolled: int) -> tuple[np.ndarray, float]:
    """Bits per rank, log2(N gamma_k), and their trial mean (Bäckström et al. 2025).

    Parameters
    ----------
    ranks : array_like of int
        True-speaker ranks in 1..N.
    n_enrolled : int
        N.

    Returns
    -------
    bits_per_rank : ndarray, shape (N,)
        log2(N gamma_k) for k = 1..N (-inf where no trial has rank k).
    mean_bits : float
        sum_k gamma_k log2(N gamma_k), in [0, log2 N].
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    if ranks.size == 0 or ranks.min() < 1 or ranks.max() > n_enrolled:
        raise InputError(f"ranks must be non-empty and within 1..{n_enrolled}")
    gamma = np.bincount(ranks - 1, minlength=n_enrolled) / ranks.size
    with np.errstate(divide="ignore"):
        bits = np.log2(n_enrolled * gamma)
    seen = gamma > 0
    return bits, float(np.sum(gamma[seen] * bits[seen]))


def cllr_multiclass(posterior_true: ArrayLike) -> float:
    """Multiclass cost C_llr^mc = -mean log2 p_true (bits) of posteriors of the true speaker."""
    p = np.asarray(posterior_true, dtype=np.float64)
    if p.size == 0 or np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise InputError("cllr_multiclass needs posteriors in [0, 1] (no NaN: drop outsider trials)")
    with np.errstate(divide="ignore"):
        return float(-np.mean(np.log2(p)))
