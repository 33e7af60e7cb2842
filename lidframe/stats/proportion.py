"""Confidence intervals of a proportion from few trials: Clopper-Pearson.

A speaker's PDR is the share of its n trials with LID > 0: k successes out of n, with n
often 10 to 30.  A bootstrap of so few 0/1 values cannot hold its level: every resample of
a speaker whose trials all disclose (k = n) or none do (k = 0) has the same share, so its
interval has zero width, and for k near 0 or n the few distinct resampled shares make it
too short (``bench/ci_coverage.py``: 69, 78 and 81 % coverage at nominal 95 % with 10, 20
and 30 trials per speaker).

:func:`clopper_pearson` is the exact binomial interval (Clopper & Pearson 1934): the set
of p whose binomial test at level 1 - *level* does not reject k out of n, one tail each
side::

    low  = Beta quantile (1 - level) / 2     of Beta(k, n - k + 1)      (0 when k = 0)
    high = Beta quantile 1 - (1 - level) / 2 of Beta(k + 1, n - k)      (1 when k = n)

Its coverage is at least *level* for every p and every n (it inverts two one-sided exact
tests), which is why it is used here rather than the Wilson or Agresti-Coull interval:
those are shorter and closer to the level on average, but for some p their coverage
falls below it (Brown, Cai & DasGupta 2001): at nominal 95 % and n of 10 to 30, to
83.5 % (Wilson, n = 10) at p near 0.018 or 0.982 -- where a speaker who discloses on
almost every trial sits -- and to 92.2 % (Agresti-Coull, n = 12) at p near 0.46 or 0.54
(the least exact binomial coverage over p in (0, 1), from every interval end and a
grid; Clopper-Pearson's least is 95.1 % (n = 25)).  The price is width: its coverage
lies above the level, most for p near 0 or 1.  The formula is
statsmodels' ``proportion_confint(k, n, alpha, method="beta")``, computed here with scipy
(the tests compare the two) so that importing lidframe does not import statsmodels.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta

from lidframe.errors import InputError
from lidframe.stats.bootstrap import check_level
from lidframe.stats.interval import Interval

__all__ = [
    "CLOPPER_PEARSON",
    "CLOPPER_PEARSON_MIXTURE",
    "clopper_pearson",
    "clopper_pearson_interval",
    "clopper_pearson_mixture",
]

#: The interval's name in records (``Interval.method``, a per-speaker table's ``interval_methods``).
CLOPPER_PEARSON = "clopper-pearson"
#: The name of :func:`clopper_pearson_mixture`'s interval in records.
CLOPPER_PEARSON_MIXTURE = "clopper-pearson, averaged over refitted calibrators"


def clopper_pearson(successes: ArrayLike, trials: ArrayLike, *, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson interval of a proportion: k successes out of n trials (module docstring).

    Parameters
    ----------
    successes : array_like of int
        k, the successes (0 <= k <= n); any shape that broadcasts with *trials*.
    trials : array_like of int
        n, the trials (n >= 0); n = 0 gives NaN ends.
    level : float, default 0.95
        Confidence level, in (0, 1).

    Returns
    -------
    low, high : ndarray of float64
        The interval's ends, the broadcast shape of *successes* and *trials* (0-d for
        scalars): proportions in [0, 1], ``low`` 0 when k = 0 and ``high`` 1 when k = n.

    Raises
    ------
    InputError
        If a count is not a whole number, k is outside [0, n], or *level* is not in (0, 1).

    Examples
    --------
    >>> low, high = clopper_pearson(0, 10)
    >>> float(low), round(float(high), 4)
    (0.0, 0.3085)
    """
    level = check_level(level)
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    k, n = np.broadcast_arrays(k, n)
    if not (np.isfinite(k).all() and np.isfinite(n).all()) or (k != np.round(k)).any() or (n != np.round(n)).any():
        raise InputError("clopper_pearson needs whole numbers of successes and trials")
    if (k < 0).any() or (k > n).any():
        raise InputError("clopper_pearson needs 0 <= successes <= trials")
    tail = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, beta.ppf(tail, np.maximum(k, 1.0), n - k + 1.0), 0.0)
        high = np.where(k < n, beta.ppf(1.0 - tail, k + 1.0, np.maximum(n - k, 1.0)), 1.0)
    empty = n == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def clopper_pearson_interval(successes: int, trials: int, *, level: float = 0.95) -> Interval:
    """The Clopper-Pearson :class:`~lidframe.stats.interval.Interval` of one proportion k/n (:func:`clopper_pearson`).

    Its estimate is k/n (NaN when n = 0, as are its ends), its method :data:`CLOPPER_PEARSON`.

    Examples
    --------
    >>> interval = clopper_pearson_interval(3, 10)
    >>> interval.estimate, round(interval.low, 4), round(interval.high, 4)
    (0.3, 0.0667, 0.6525)
    """
    low, high = clopper_pearson(successes, trials, level=level)
    estimate = float(successes) / float(trials) if trials else float("nan")
    return Interval(estimate, float(low), float(high), check_level(level), CLOPPER_PEARSON)


def clopper_pearson_mixture(
    successes: ArrayLike, trials: ArrayLike, *, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson intervals averaged over B versions of the successes (the calibrator refitted B times).

    A speaker's PDR counts its trials with LID > 0, and which trials those are depends on
    the calibrator.  With the calibrator refitted on B resamples of the dev set, the
    speaker has B counts k_1 .. k_B of its n trials.  The interval inverts the average
    of their Clopper-Pearson tails (each k's one-sided exact tests, averaged over the
    calibrator's bootstrap distribution)::

        low  solves  mean_b P(Beta(k_b, n - k_b + 1) <= low)  = (1 - level) / 2   (k_b = 0: 1)
        high solves  mean_b P(Beta(k_b + 1, n - k_b) >  high) = (1 - level) / 2   (k_b = n: 1)

    so ``low`` is 0 when at least (1 - level) / 2 of the counts are 0 (``high`` 1 when as
    many are n), and with every k_b = k it is :func:`clopper_pearson`'s interval of k of
    n.  Both sides are found by bisection to 1e-12.

    Parameters
    ----------
    successes : array_like of int, shape (S, B)
        k_b of each of S proportions under each of B calibrators (0 <= k_b <= n).
    trials : array_like of int, shape (S,)
        n of each (n = 0 gives NaN ends).
    level : float, default 0.95

    Returns
    -------
    low, high : ndarray of float64, shape (S,)

    Examples
    --------
    >>> low, high = clopper_pearson_mixture([[3, 3, 3, 3]], [10])
    >>> round(float(low[0]), 4), round(float(high[0]), 4)
    (0.0667, 0.6525)
    """
    level = check_level(level)
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    if k.ndim != 2 or n.shape != (k.shape[0],):
        raise InputError(f"clopper_pearson_mixture needs successes (S, B) and trials (S,), got {k.shape} and {n.shape}")
    if (k != np.round(k)).any() or (n != np.round(n)).any() or (k < 0).any() or (k > n[:, None]).any():
        raise InputError("clopper_pearson_mixture needs whole numbers 0 <= successes <= trials")
    tail = (1.0 - level) / 2.0
    values, shares = _distinct_shares(k)
    n_col = n[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):

        def below(x: np.ndarray) -> np.ndarray:  # mean_b P(Beta(k_b, n - k_b + 1) <= x), increasing in x
            cdf = np.where(values > 0, beta.cdf(x[:, None], np.maximum(values, 1.0), n_col - values + 1.0), 1.0)
            return (shares * cdf).sum(axis=1)

        def above(x: np.ndarray) -> np.ndarray:  # mean_b P(Beta(k_b + 1, n - k_b) > x), decreasing in x
            sf = np.where(values < n_col, beta.sf(x[:, None], values + 1.0, np.maximum(n_col - values, 1.0)), 1.0)
            return (shares * sf).sum(axis=1)

        low = _bisect(lambda x: below(x) >= tail, np.zeros(n.size), np.ones(n.size))
        high = _bisect(lambda x: above(x) <= tail, np.zeros(n.size), np.ones(n.size))
    low = np.where((shares * (values == 0)).sum(axis=1) >= tail, 0.0, low)
    high = np.where((shares * (values == n_col)).sum(axis=1) >= tail, 1.0, high)
    empty = n == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def _distinct_shares(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's distinct values and the share of the row each holds, padded with share 0: two (S, m) arrays."""
    ordered = np.sort(k, axis=1)
    first = np.ones(ordered.shape, dtype=bool)
    first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    width = max(1, int(first.sum(axis=1).max())) if k.size else 1
    values = np.zeros((k.shape[0], width))
    shares = np.zeros((k.shape[0], width))
    for row in range(k.shape[0]):
        distinct, counts = np.unique(ordered[row], return_counts=True)
        values[row, : distinct.size] = distinct
        shares[row, : distinct.size] = counts / ordered.shape[1]
    return values, shares


def _bisect(reached, low: np.ndarray, high: np.ndarray, *, tolerance: float = 1e-12) -> np.ndarray:
    """The least x in [low, high] (each row) where the monotone ``reached(x)`` turns True, to *tolerance*."""
    while (high - low).max(initial=0.0) > tolerance:
        middle = (low + high) / 2.0
        hit = reached(middle)
        high = np.where(hit, middle, high)
        low = np.where(hit, low, middle)
    return (low + high) / 2.0
