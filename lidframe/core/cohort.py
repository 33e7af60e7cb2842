"""Cohort score normalisation: S-norm and adaptive S-norm (AS-norm) of a T x N score matrix.

A *cohort* is a set of C speakers who are neither enrolled nor among the trials'
speakers.  Scoring each side of a pair against the cohort says how high that side scores
against strangers; normalising by it puts every enrolled speaker's column and every
trial's row on one scale.  For trial i and enrolled speaker j with raw score s_ij::

    S-norm:   s'_ij = ½ [ (s_ij − μ_e(j)) / σ_e(j)  +  (s_ij − μ_t(i)) / σ_t(i) ]

where ``c_e(j)`` (C scores) is enrolled speaker j's profile scored against the C cohort
speakers, ``c_t(i)`` (C scores) is trial i scored against them, and μ, σ are the mean and
the sample standard deviation (ddof = 1) of those scores::

    μ_e(j) = mean(c_e(j)),   σ_e(j)² = Σ_c (c_e(j)_c − μ_e(j))² / (K − 1)      (likewise μ_t(i), σ_t(i))

**AS-norm** (adaptive S-norm) takes the same formula with the statistics of only the K =
``top_k`` largest scores of each side: the cohort speakers most like that enrolled speaker,
and those most like that trial (the "top-k" cohort, chosen per row, so each side is
compared with its own impostors).  S-norm is AS-norm with K = C.  ddof = 1 is the choice of
the common implementations (WeSpeaker's ``torch.std``); any other ddof scales every
normalised score by one constant, which a calibrator absorbs.

A side whose K cohort scores are all equal has σ = 0 and no normalisation: it is refused
by name.  The cohort must hold at least K >= 2 speakers.

Composition with the LID recipe's row z-norm
--------------------------------------------
The normalised matrix is what an attacker hands on: the recipe then z-normalises each
trial's row over the N enrolled speakers (:mod:`lidframe.core.znorm`), which removes any
shift and positive scale of a row.  The two halves of S-norm fare differently:

* the trial half (s_ij − μ_t(i)) / σ_t(i) (T-norm in speaker-recognition terms) is such a
  per-row affine map: alone it would change no LID;
* the enrolment half (s_ij − μ_e(j)) / σ_e(j) (Z-norm) moves and scales each *column*:
  an enrolled speaker who scores high against everybody (a hub) no longer draws every
  trial's posterior.  The row z-norm cannot do this.

Together, up to the shift and scale of row i that the row z-norm takes away::

    s'_ij  ≅  s_ij + (σ_t(i) / σ_e(j)) · (s_ij − μ_e(j))

so what reaches the calibrator is the raw score plus the column correction, weighted per
row by the trial's cohort spread σ_t(i).  docs/theory.md says this in words.

Cost
----
The statistics cost O((T + N) · C) time (one partial sort per row: :func:`numpy.partition`
for AS-norm) and the normalisation O(T · N), both in row blocks of :data:`BLOCK_VALUES`
scores, so the extra memory is the (T + N) x C cohort scores and one block, never a second
T x N matrix when ``out`` is the scores themselves (``bench/asnorm.py`` measures it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError, preview

__all__ = [
    "SCORE_NORMS",
    "DEFAULT_TOP_K",
    "BLOCK_VALUES",
    "CohortNorm",
    "CohortStats",
    "cohort_stats",
    "normalise_scores",
    "cohort_normalise",
]

#: The score normalisations an embedding attacker takes (``score_norm=``): none, S-norm, AS-norm.
SCORE_NORMS = ("none", "snorm", "asnorm")
#: K of AS-norm when none is given: WeSpeaker's VoxCeleb recipe (300 cohort speakers).
DEFAULT_TOP_K = 300
#: Scores per row block (4 Mi float64 = 32 MiB) of the statistics and of the normalisation.
BLOCK_VALUES = 1 << 22

_METHODS = SCORE_NORMS[1:]


def _check_method(_record: object, _attribute: object, method: str) -> None:
    if method not in _METHODS:
        raise InputError(f"score_norm must be one of {', '.join(SCORE_NORMS)} (a cohort normalisation), got {method!r}")


def _check_top_k(record: CohortNorm, _attribute: object, top_k: int | None) -> None:
    if top_k is None:
        return
    if record.method == "snorm":
        raise InputError(f"cohort_top_k={top_k!r} applies to score_norm='asnorm' only: S-norm takes every cohort score")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 2:
        raise InputError(f"cohort_top_k must be an integer >= 2 (a standard deviation needs two scores), got {top_k!r}")


@attrs.frozen(kw_only=True)
class CohortNorm:
    """How scores are normalised against a cohort: the one record of the cohort options.

    Attributes
    ----------
    method : {"snorm", "asnorm"}, default "snorm"
        S-norm (every cohort score) or adaptive S-norm (the top K of each side; module docstring).
    top_k : int or None, default None
        K of AS-norm (>= 2); None: :data:`DEFAULT_TOP_K`.  S-norm takes none.

    Raises
    ------
    InputError
        On construction, for a value outside the above.

    Examples
    --------
    >>> CohortNorm(method="asnorm", top_k=100).to_dict()
    {'method': 'asnorm', 'top_k': 100}
    >>> CohortNorm(method="asnorm").k(1000), CohortNorm().k(1000)
    (300, 1000)
    """

    method: str = attrs.field(default="snorm", validator=_check_method)
    top_k: int | None = attrs.field(default=None, validator=_check_top_k)

    def k(self, cohort_size: int, *, where: str = "cohort") -> int:
        """K, the cohort scores each side's statistics take, for a cohort of *cohort_size* speakers.

        Raises
        ------
        InputError
            A cohort smaller than K (or than 2), one line naming *where* and both numbers.
        """
        wanted = cohort_size if self.method == "snorm" else (self.top_k or DEFAULT_TOP_K)
        if cohort_size < max(wanted, 2):
            given = "the default" if self.top_k is None else "given"
            need = (
                f"at least cohort_top_k = {wanted} ({given}; set a smaller cohort_top_k or give a larger cohort)"
                if self.method == "asnorm"
                else "at least 2"
            )
            raise InputError(f"{where}: {cohort_size} cohort speakers; {self.method} needs {need}")
        return int(wanted)

    def to_dict(self) -> dict[str, Any]:
        """The options as a JSON-able dict."""
        return {"method": self.method, "top_k": None if self.top_k is None else int(self.top_k)}


@attrs.frozen(eq=False, kw_only=True)
class CohortStats:
    """The cohort statistics of R rows (trials, or enrolled speakers): μ and σ of their top-K cohort scores.

    Attributes
    ----------
    mean : ndarray, shape (R,), float64
    sd : ndarray, shape (R,), float64
        Sample standard deviation (ddof = 1), > 0.
    """

    mean: np.ndarray
    sd: np.ndarray


def _block_rows(n_columns: int) -> int:
    return max(1, BLOCK_VALUES // max(1, n_columns))


def cohort_stats(
    cohort_scores: ArrayLike, k: int, *, what: str = "rows", ids: Sequence[str] | np.ndarray | None = None
) -> CohortStats:
    """μ and σ (ddof = 1) of the *k* largest cohort scores of every row.

    Parameters
    ----------
    cohort_scores : array_like, shape (R, C), float
        Each row's scores against the C cohort speakers.
    k : int
        How many of each row's largest scores count (2 <= k <= C; k = C: all, S-norm).
    what : str
        What the rows are (``"trials"``), for the error message.
    ids : sequence of str, shape (R,), optional
        Row names for the error message; without them the row indices are named.

    Returns
    -------
    CohortStats

    Raises
    ------
    InputError
        A shape or k that does not fit, non-finite scores, or rows whose k scores are all
        equal (σ = 0), named.
    """
    scores = np.asarray(cohort_scores, dtype=np.float64)
    if scores.ndim != 2 or not 2 <= k <= scores.shape[1]:
        raise InputError(f"cohort scores of {what} must be (rows, C) with 2 <= k <= C, got {scores.shape} and k={k}")
    n_rows, n_cohort = scores.shape
    mean, sd = np.empty(n_rows), np.empty(n_rows)
    step = _block_rows(n_cohort)
    for start in range(0, n_rows, step):
        block = scores[start : start + step]
        top = block if k == n_cohort else np.partition(block, n_cohort - k, axis=1)[:, n_cohort - k :]
        mean[start : start + step] = top.mean(axis=1)
        sd[start : start + step] = top.std(axis=1, ddof=1)
    bad = ~(np.isfinite(mean) & np.isfinite(sd))
    if bad.any():
        raise InputError(f"cohort scores of {what} hold NaN or inf: {_named(bad, ids)}")
    flat = sd <= 0
    if flat.any():
        raise InputError(
            f"the top {k} cohort scores of {what} {_named(flat, ids)} are all equal: no standard deviation to "
            "normalise by (a cohort of identical speakers?)"
        )
    return CohortStats(mean=mean, sd=sd)


def _named(rows: np.ndarray, ids: Sequence[str] | np.ndarray | None) -> str:
    found = np.flatnonzero(rows)
    return preview(found if ids is None else np.asarray(ids)[found])


def normalise_scores(
    scores: ArrayLike, trial: CohortStats, enrolled: CohortStats, *, out: np.ndarray | None = None
) -> np.ndarray:
    """s'_ij = ½ [(s_ij − μ_e(j)) / σ_e(j) + (s_ij − μ_t(i)) / σ_t(i)] of every pair (module docstring).

    Parameters
    ----------
    scores : array_like, shape (T, N), float
        Raw scores of T trials against N enrolled speakers.
    trial : CohortStats
        Of the T trials (shape (T,)).
    enrolled : CohortStats
        Of the N enrolled speakers (shape (N,)).
    out : ndarray, shape (T, N), float64, optional
        Where to write; may be *scores* itself (normalised in place, no second T x N matrix).

    Returns
    -------
    ndarray, shape (T, N), float64
        *out*, or a new array.
    """
    raw = np.asarray(scores, dtype=np.float64)
    n_trials, n_enrolled = raw.shape if raw.ndim == 2 else (-1, -1)
    if trial.mean.shape != (n_trials,) or enrolled.mean.shape != (n_enrolled,):
        raise InputError(
            f"scores {raw.shape} do not fit cohort statistics of {trial.mean.shape[0]} trials and "
            f"{enrolled.mean.shape[0]} enrolled speakers"
        )
    result = np.empty_like(raw) if out is None else out
    # s' = s (a_j + b_i) - (a_j μ_e(j) + b_i μ_t(i)), a = 1 / (2 σ_e), b = 1 / (2 σ_t): four passes over a
    # block of the result, one buffer of a block's size reused
    scale_e, scale_t = 0.5 / enrolled.sd, 0.5 / trial.sd
    shift_e, shift_t = scale_e * enrolled.mean, scale_t * trial.mean
    step = _block_rows(n_enrolled)
    buffer = np.empty((min(step, n_trials), n_enrolled))
    for start in range(0, n_trials, step):
        rows = slice(start, start + step)
        block, factor = result[rows], buffer[: len(range(*rows.indices(n_trials)))]
        np.add.outer(scale_t[rows], scale_e, out=factor)
        np.multiply(raw[rows], factor, out=block)
        np.add.outer(shift_t[rows], shift_e, out=factor)
        block -= factor
    return result


def cohort_normalise(
    scores: ArrayLike,
    trial_cohort: ArrayLike,
    enrolled_cohort: ArrayLike,
    norm: CohortNorm,
    *,
    trial_ids: Sequence[str] | np.ndarray | None = None,
    enrolled: Sequence[str] | np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """S-norm or AS-norm of a T x N score matrix (module docstring), in one call.

    Parameters
    ----------
    scores : array_like, shape (T, N)
        Raw scores s_ij.
    trial_cohort : array_like, shape (T, C)
        Each trial scored against the C cohort speakers.
    enrolled_cohort : array_like, shape (N, C)
        Each enrolled speaker's profile scored against them.
    norm : CohortNorm
        S-norm or AS-norm, and K.
    trial_ids, enrolled : sequence of str, optional
        Names of the trials and enrolled speakers, for error messages.
    out : ndarray, optional
        As :func:`normalise_scores` (``out=scores`` normalises in place).

    Returns
    -------
    ndarray, shape (T, N), float64

    Raises
    ------
    InputError
        Cohorts of different sizes on the two sides, a cohort smaller than K, or a side
        without spread (:func:`cohort_stats`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=(3, 4))
    >>> out = cohort_normalise(s, rng.normal(size=(3, 5)), rng.normal(size=(4, 5)), CohortNorm(method="asnorm", top_k=2))
    >>> out.shape
    (3, 4)
    """
    trial_side = np.asarray(trial_cohort, dtype=np.float64)
    enrolled_side = np.asarray(enrolled_cohort, dtype=np.float64)
    if trial_side.ndim != 2 or enrolled_side.ndim != 2 or trial_side.shape[1] != enrolled_side.shape[1]:
        raise InputError(
            f"trial cohort scores (T, C) and enrolled cohort scores (N, C) needed, got {trial_side.shape} and "
            f"{enrolled_side.shape}"
        )
    k = norm.k(trial_side.shape[1])
    return normalise_scores(
        scores,
        cohort_stats(trial_side, k, what="trials", ids=trial_ids),
        cohort_stats(enrolled_side, k, what="enrolled speakers", ids=enrolled),
        out=out,
    )
