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
``top_k_rates``
    the CMC (cumulative match characteristic): for each k, the share of trials whose true
    speaker ranks k-th or better; ``cmc_ks`` picks the k of a curve (every k up to
    :data:`CMC_ALL_KS_UP_TO`, log-spaced above).
``chance_p_values``
    how surprising h hits of T trials are for an attacker without information, whose
    top-k rate is k/N: P(Binomial(T, k/N) >= h).

Ranks use the raw scores: a row z-norm and a non-decreasing calibrator keep the order.

Chance
------
An attacker whose scores carry no information about the voice (i.i.d. continuous scores,
or any scores independent of who speaks) ranks the true speaker at each of the N places
with probability 1/N, so its top-k rate is k/N in expectation for *any* mix of trial
speakers, and its hits over T trials are Binomial(T, k/N): the trials are independent for
such an attacker even when a speaker has many, which is what makes the binomial tail an
exact test of "no better than chance".  Two caveats: ranks count ties for the attacker, so
an attacker with tied scores (a constant one ranks everyone first) is above k/N by
construction; and the ranks are of the scores, not of the posterior, so the prior does not
enter them: k/N is their chance level under any prior (``docs/metrics.md``, "Chance beside every identification number").
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import binom

from lidframe.data.scoreset import check_true_index
from lidframe.errors import InputError

__all__ = [
    "true_speaker_rank",
    "rank1_rate",
    "rank_disclosure",
    "cllr_multiclass",
    "cmc_ks",
    "top_k_rates",
    "chance_p_values",
    "CMC_ALL_KS_UP_TO",
    "CMC_POINTS",
]

#: A CMC curve of :func:`cmc_ks` has every k = 1..N up to this N, and every k up to it
#: (the ranks an identification claim is read at) plus log-spaced k above it for a larger N.
CMC_ALL_KS_UP_TO = 10
#: The log-spaced k of :func:`cmc_ks` above :data:`CMC_ALL_KS_UP_TO` (at most this many, N the last).
CMC_POINTS = 40


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


def cmc_ks(n_enrolled: int, ks: ArrayLike | None = None) -> np.ndarray:
    """The k (ranks) of a CMC curve over N enrolled speakers: the given ones checked, or a default grid.

    Parameters
    ----------
    n_enrolled : int
        N >= 1.
    ks : array_like of int, optional
        The k to report, each in 1..N (sorted and de-duplicated here).  Default: every k up
        to :data:`CMC_ALL_KS_UP_TO`, then :data:`CMC_POINTS` log-spaced k up to N
        (rounded, de-duplicated; N always the last).

    Returns
    -------
    ndarray of int64, shape (K,)
        Ascending.

    Raises
    ------
    InputError
        A k that is not a whole number in 1..N, or an empty list.

    Examples
    --------
    >>> cmc_ks(4).tolist()
    [1, 2, 3, 4]
    >>> cmc_ks(1000)[:12].tolist()
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13]
    """
    if isinstance(n_enrolled, bool) or int(n_enrolled) != n_enrolled or n_enrolled < 1:
        raise InputError(f"a CMC curve needs N >= 1 enrolled speakers, got {n_enrolled!r}")
    n = int(n_enrolled)
    if ks is None:
        low = np.arange(1, min(n, CMC_ALL_KS_UP_TO) + 1)
        high = np.round(np.geomspace(CMC_ALL_KS_UP_TO, n, CMC_POINTS)) if n > CMC_ALL_KS_UP_TO else low
        return np.unique(np.concatenate([low, high]).astype(np.int64))
    values = np.asarray(ks, dtype=np.float64).ravel()
    if values.size == 0 or not np.isfinite(values).all() or (values != np.round(values)).any():
        raise InputError(f"CMC ranks k must be whole numbers in 1..{n}, got {np.asarray(ks).ravel().tolist()!r}")
    bad = values[(values < 1) | (values > n)]
    if bad.size:
        raise InputError(f"CMC rank k = {bad[0]:g} is outside 1..N = 1..{n}")
    return np.unique(values.astype(np.int64))


def top_k_rates(ranks: ArrayLike, ks: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The CMC at each k: hits (trials whose true speaker ranks k-th or better) and their share.

    Parameters
    ----------
    ranks : array_like of int, shape (T,)
        True-speaker ranks (1 = first), T >= 1.
    ks : array_like of int, shape (K,)

    Returns
    -------
    hits : ndarray of int64, shape (K,)
        #{i : rank_i <= k}.
    rates : ndarray of float64, shape (K,)
        hits / T.

    Examples
    --------
    >>> hits, rates = top_k_rates([1, 3, 2, 1], [1, 2, 3])
    >>> hits.tolist(), rates.tolist()
    ([2, 3, 4], [0.5, 0.75, 1.0])
    """
    ranks = np.asarray(ranks, dtype=np.int64).ravel()
    if ranks.size == 0 or ranks.min() < 1:
        raise InputError("top_k_rates needs at least one rank, each >= 1")
    ks = np.asarray(ks, dtype=np.int64).ravel()
    hits = np.searchsorted(np.sort(ranks), ks, side="right").astype(np.int64)
    return hits, hits / ranks.size


def chance_p_values(hits: ArrayLike, n_trials: int, chance: ArrayLike) -> np.ndarray:
    """P(Binomial(T, p) >= h): how often an attacker at chance *p* gets *hits* or more of T trials (module docstring).

    Parameters
    ----------
    hits : array_like of int, shape (K,)
        h, in 0..T.
    n_trials : int
        T.
    chance : array_like of float, shape (K,)
        p, the chance level of each point (k/N of a CMC point).

    Returns
    -------
    ndarray, shape (K,)
        One-sided p-values (1 where h = 0).

    Examples
    --------
    >>> round(float(chance_p_values([12], 120, [1 / 24])[0]), 4)
    0.0045
    """
    h = np.asarray(hits, dtype=np.float64)
    p = np.asarray(chance, dtype=np.float64)
    return np.asarray(binom.sf(h - 1.0, int(n_trials), p), dtype=np.float64)
