"""Two of the law's criteria as numbers: linkability pi_link(N') and singling out pi_sing(N).

The Article 29 Working Party's Opinion 05/2014 tests an anonymisation against three
criteria: can a person be *singled out*, can records be *linked*, can anything be
*inferred* (LID answers the third).  Vauquier et al. (Interspeech 2025) turned the first
two into probabilities measured on speaker scores; this module computes them from a
score matrix, its ranks or its conversations (docs/legal.md).

Linkability pi_link(N')
    The attacker holds one test recording and searches a candidate set of N' enrolled
    speakers: the true one and N' - 1 others drawn at random, without replacement, from
    the other N - 1.  It links when the true speaker scores highest in the set; a tie
    counts for the attacker, as lidframe's rank-1 does
    (:func:`~lidframe.metrics.identification.true_speaker_rank`).  With m_i = rank_i - 1
    the enrolled speakers that score strictly higher than the true one on trial i, the
    link succeeds when none of them is drawn, a hypergeometric event::

        P_i(link) = C(N - 1 - m_i, N' - 1) / C(N - 1, N' - 1)
                  = prod_{t = 0}^{m_i - 1} (N - N' - t) / (N - 1 - t)

    (the second form counts, the other way round, the ways to leave all m_i beaters out
    of the draw).  pi_link(N') is the mean of P_i over trials: the *exact* expectation
    over the candidate draws, with no sampling noise.  Chance is 1/N' (a blind guess
    among N'); pi_link(N) is the rank-1 rate exactly (P_i is 1 for m_i = 0, else 0), and
    pi_link(1) would be 1.  The product is summed in logs, ``log1p(-(N' - 1) / (N - 1 - t))``
    per factor, cumulatively over t for every m at once, so N of 10^5 costs O(N) per N'
    and keeps ~1e-13 relative accuracy.

Singling out pi_sing(N)
    Predicate singling out after Cohen & Nissim, as Vauquier et al. define it.  The
    attacker holds one enrolled speaker's profile e and a threshold: the predicate fires
    on a conversation whose score against e is above the threshold.  A draw picks N
    speakers: e's own speaker and N - 1 others at random.  Each of them has one *test*
    conversation and M_s >= 1 *calibration* conversations.  With M = M_own the
    calibration conversations of e's own speaker, the threshold sits midway between the
    M-th and (M + 1)-th highest of e's scores on the calibration conversations of the N
    drawn speakers -- so the predicate fires on M of them, 1/N when every speaker has M.
    Isolation succeeds when the predicate fires on exactly one of the N test
    conversations, whoever's it is.  pi_sing(N) is the success rate over predicates and
    draws; a predicate that fires at random with probability 1/N on each of N
    conversations isolates with probability (1 - 1/N)^(N - 1) -> e^-1 ~ 0.368, the chance
    level.  The calibrated threshold is itself noisy, so a random attacker with few
    calibration conversations per speaker stays below e^-1 (about 0.35 at M = 9,
    docs/legal.md); e^-1 is the limit of many speakers and many calibration conversations.

Conversations are given per speaker as a padded table of rows (:func:`conversation_table`):
row s lists the score-matrix rows of speaker s's conversations, ``counts[s]`` of them.
Which of a speaker's conversations is the test one is either fixed (``test_slot``) or
drawn anew, uniformly, in every draw.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError, shorten

__all__ = [
    "SINGLING_OUT_CHANCE",
    "linkability_chance",
    "check_n_primes",
    "link_probabilities",
    "linkability_exact",
    "conversation_table",
    "isolation_outcomes",
    "singling_out_outcomes",
]

#: Chance level of pi_sing: e^-1, the isolation rate of a predicate that fires with
#: probability 1/N on each of N conversations, as N grows.
SINGLING_OUT_CHANCE = math.exp(-1.0)

#: Most scores one block of draws of :func:`isolation_outcomes` holds (draws x N x K).
_DRAW_BLOCK_VALUES = 1 << 22


def linkability_chance(n_prime: int) -> float:
    """Chance level of pi_link(N'): 1/N', a blind guess among the N' candidates."""
    return 1.0 / n_prime


def check_n_primes(n_primes: ArrayLike, n_enrolled: int) -> np.ndarray:
    """Candidate-set sizes N' as a sorted int array without repeats, each checked to lie in 2..N.

    Raises
    ------
    InputError
        No size, a size that is not an integer, or one outside 2..N (all named).
    """
    values = list(np.atleast_1d(np.asarray(n_primes, dtype=object)))
    if not values:
        raise InputError("linkability needs at least one candidate-set size N'")
    bad_type = [v for v in values if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))]
    if bad_type:
        raise InputError(f"candidate-set sizes N' must be integers, got {_listed(bad_type)}")
    outside = sorted({int(v) for v in values if not 2 <= v <= n_enrolled})
    if outside:
        raise InputError(
            f"candidate-set sizes N' must be within 2..{n_enrolled} (N, the enrolled speakers), got {_listed(outside)}"
        )
    return np.array(sorted({int(v) for v in values}), dtype=np.int64)


def _listed(values: list, limit: int = 5) -> str:
    """``'0, 9, 2.5 (+3 more)'``: the first *limit* values as Python writes them (each cut as ids are)."""
    shown = ", ".join(shorten(repr(v) if isinstance(v, str) else v) for v in values[:limit])
    return shown + (f" (+{len(values) - limit} more)" if len(values) > limit else "")


def _check_beaters(beaters: ArrayLike, n_enrolled: int) -> np.ndarray:
    beaters = np.asarray(beaters)
    if isinstance(n_enrolled, bool) or not isinstance(n_enrolled, (int, np.integer)) or n_enrolled < 2:
        raise InputError(f"linkability needs N >= 2 enrolled speakers, got {n_enrolled!r}")
    if beaters.ndim != 1 or beaters.size == 0 or not np.issubdtype(beaters.dtype, np.integer):
        raise InputError(f"linkability needs a non-empty 1-d integer array of beaters m_i, got shape {beaters.shape}")
    if beaters.min() < 0 or beaters.max() > n_enrolled - 1:
        raise InputError(
            f"beaters m_i must be within 0..{n_enrolled - 1} (N - 1), got {beaters.min()}..{beaters.max()}"
        )
    return beaters.astype(np.int64)


def _log_link_by_beaters(n_enrolled: int, n_prime: int, max_beaters: int) -> np.ndarray:
    """log P(link) for m = 0..max_beaters beaters: cumulative sums of log((N - N' - t) / (N - 1 - t))."""
    terms = np.full(max_beaters, -np.inf)  # t >= N - N': a beater is always drawn
    t = np.arange(min(max_beaters, n_enrolled - n_prime), dtype=np.float64)
    terms[: t.size] = np.log1p(-(n_prime - 1) / (n_enrolled - 1 - t))
    return np.concatenate(([0.0], np.cumsum(terms)))


def link_probabilities(beaters: ArrayLike, n_enrolled: int, n_primes: ArrayLike) -> np.ndarray:
    """P_i(link) of every trial at every candidate-set size (module docstring).

    Parameters
    ----------
    beaters : array_like of int, shape (T,)
        m_i, the enrolled speakers that score strictly higher than trial i's true speaker
        (``true_speaker_rank - 1``), each in 0..N-1.
    n_enrolled : int
        N, the enrolled speakers (>= 2).
    n_primes : array_like of int, shape (K,)
        Candidate-set sizes N', each in 2..N (:func:`check_n_primes`; sorted, repeats dropped).

    Returns
    -------
    ndarray, shape (K, T)
        Row k holds P_i(link) at the k-th (sorted) N', each in [0, 1]; exactly 1 for
        m_i = 0 and exactly 0 where m_i > N - N'.
    """
    beaters = _check_beaters(beaters, n_enrolled)
    sizes = check_n_primes(n_primes, n_enrolled)
    out = np.empty((sizes.size, beaters.size))
    for k, n_prime in enumerate(sizes):
        out[k] = np.exp(_log_link_by_beaters(n_enrolled, int(n_prime), int(beaters.max())))[beaters]
    return out


def linkability_exact(beaters: ArrayLike, n_enrolled: int, n_primes: ArrayLike) -> np.ndarray:
    """pi_link(N') = mean over trials of P_i(link), at each (sorted) N'; shape (K,).

    The same arguments as :func:`link_probabilities`; the mean is taken over the counts
    of each m, so a million trials cost no more than N values per N'.
    """
    beaters = _check_beaters(beaters, n_enrolled)
    sizes = check_n_primes(n_primes, n_enrolled)
    share = np.bincount(beaters) / beaters.size
    return np.array([float(share @ np.exp(_log_link_by_beaters(n_enrolled, int(n), share.size - 1))) for n in sizes])


def conversation_table(speakers: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each speaker's rows, as the padded table the singling-out functions take.

    Parameters
    ----------
    speakers : array_like of str, shape (T,)
        The speaker of each row (conversation) of a score matrix.

    Returns
    -------
    names : ndarray of str, shape (S,)
        The distinct speakers, sorted.
    rows : ndarray of int, shape (S, K)
        ``rows[s, :counts[s]]`` are speaker s's rows in their order; the rest is 0 (padding).
    counts : ndarray of int, shape (S,)
        Conversations per speaker; K is the largest.
    """
    names, codes = np.unique(np.asarray(speakers), return_inverse=True)
    codes = codes.ravel()
    counts = np.bincount(codes, minlength=names.size)
    order = np.argsort(codes, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    slot = np.arange(codes.size) - np.repeat(starts, counts)
    rows = np.zeros((names.size, int(counts.max()) if counts.size else 0), dtype=np.int64)
    rows[codes[order], slot] = order
    return names, rows, counts


def _check_singling_out(counts: np.ndarray, n: int, draws: int) -> None:
    if (counts < 2).any():
        raise InputError(
            "singling out needs a test and at least one calibration conversation of every speaker "
            f"(>= 2 conversations each); {int((counts < 2).sum())} speakers have fewer"
        )
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= n <= counts.size:
        raise InputError(f"singling out's N must be an integer within 2..{counts.size} (the speakers), got {n!r}")
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise InputError(f"singling out's draws must be a positive integer, got {draws!r}")


def isolation_outcomes(
    conversation_scores: np.ndarray,
    counts: np.ndarray,
    own: int,
    n: int,
    draws: int,
    rng: np.random.Generator,
    *,
    test_slot: np.ndarray | None = None,
) -> np.ndarray:
    """Whether one predicate isolates, in each of *draws* random sets of *n* speakers.

    Parameters
    ----------
    conversation_scores : ndarray, shape (S, K)
        The predicate's score on speaker s's k-th conversation at ``[s, k]``, for
        ``k < counts[s]`` (the rest is padding, never read).
    counts : ndarray of int, shape (S,)
        Conversations per speaker, each >= 2.
    own : int
        The predicate's own speaker (always in the set).
    n : int
        Speakers per set, 2..S.
    draws : int
        Sets drawn.
    rng : numpy.random.Generator
        Draws the n - 1 others (and the test slots), in that order, a block at a time.
    test_slot : ndarray of int, shape (S,), optional
        The test conversation of each speaker (the others calibrate); default: drawn
        uniformly among the speaker's conversations in every draw.

    Returns
    -------
    ndarray of bool, shape (draws,)
        True where the predicate fired on exactly one of the set's test conversations.
    """
    n_speakers, width = conversation_scores.shape
    n_above = int(counts[own]) - 1  # M: the own speaker's calibration conversations
    out = np.empty(draws, dtype=bool)
    block = max(1, _DRAW_BLOCK_VALUES // (n * width))
    for start in range(0, draws, block):
        size = min(block, draws - start)
        keys = rng.random((size, n_speakers))
        keys[:, own] = -1.0  # always among the n smallest keys
        members = np.argpartition(keys, n - 1, axis=1)[:, :n]
        member_counts = counts[members]
        slot = rng.integers(0, member_counts) if test_slot is None else test_slot[members]
        chosen = conversation_scores[members]  # (size, n, K)
        test = np.take_along_axis(chosen, slot[..., None], axis=2)[..., 0]
        k = np.arange(width)
        calibrates = (k < member_counts[..., None]) & (k != slot[..., None])
        negated = np.where(calibrates, -chosen, np.inf).reshape(size, n * width)
        top = -np.partition(negated, (n_above - 1, n_above), axis=1)[:, [n_above - 1, n_above]]
        threshold = (top[:, 0] + top[:, 1]) / 2.0
        out[start : start + size] = (test > threshold[:, None]).sum(axis=1) == 1
    return out


def singling_out_outcomes(
    scores: np.ndarray,
    rows: np.ndarray,
    counts: np.ndarray,
    own: np.ndarray,
    n: int,
    draws: int,
    rng: np.random.Generator,
    *,
    test_slot: np.ndarray | None = None,
) -> np.ndarray:
    """Isolation outcomes of every predicate (column of *scores*), *draws* sets each.

    Parameters
    ----------
    scores : ndarray, shape (T, P)
        Score of conversation t against predicate (enrolled profile) p.
    rows, counts : ndarray of int, shapes (S, K) and (S,)
        Each speaker's conversations as rows of *scores* (:func:`conversation_table`);
        every count >= 2.
    own : ndarray of int, shape (P,)
        Each predicate's own speaker, an index into *counts*.
    n : int
        Speakers per set, 2..S.
    draws : int
        Sets drawn per predicate, >= 1.
    rng : numpy.random.Generator
        Used predicate by predicate, in column order (the same seed, the same outcomes).
    test_slot : ndarray of int, shape (S,), optional
        Fixed test conversation of each speaker (:func:`isolation_outcomes`).

    Returns
    -------
    ndarray of bool, shape (P, draws)

    Raises
    ------
    InputError
        A speaker with fewer than two conversations, *n* outside 2..S, or *draws* < 1.
    """
    counts = np.asarray(counts, dtype=np.int64)
    _check_singling_out(counts, n, draws)
    padding = np.arange(rows.shape[1]) >= counts[:, None]
    outcomes = np.empty((scores.shape[1], draws), dtype=bool)
    for p in range(scores.shape[1]):
        conversation_scores = np.where(padding, np.nan, scores[rows, p])
        outcomes[p] = isolation_outcomes(
            conversation_scores, counts, int(own[p]), int(n), int(draws), rng, test_slot=test_slot
        )
    return outcomes
