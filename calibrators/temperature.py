"""Temperature calibration: one slope fitted on the 1-to-N task itself.

Instead of fitting mated-vs-non-mated pairs, ``Temperature`` picks the slope a of
``llr = a z`` that maximises the mean log posterior of the true speaker over the dev
rows (the multiclass cross-entropy of a softmax over each trial's N enrolled)::

    a* = argmax_a  mean_i [ a z_i,true - logsumexp_j (a z_ij) ]

The objective is concave in a, so the optimum is unique.  Under a uniform prior this is
the strongest affine attacker on the dev set (an intercept cancels in the closed-set softmax, so
none is fitted).  It needs the row structure, so it implements the ``fit_rows`` hook
(:mod:`lidframe.calibrators.base`), which :func:`lidframe.core.evaluation.fit_calibrator`
(and so ``evaluate``) calls with the dev z-matrix.
When dev rows are perfectly separated the optimum runs to infinity; the slope is
bounded by ``max_slope``.  When the dev rows carry no usable evidence -- the objective's
slope at a = 0, mean_i (z_i,true - mean_j z_ij), is <= 0, so by concavity the optimum
on [0, max_slope] is a = 0 -- the slope is exactly 0 (llr = 0, no disclosure), as
for :class:`~lidframe.calibrators.Logistic`'s fallback, instead of the ~1e-10 at which
the bounded search would stop.

Large dev sets (``max_pairs``): the objective is not a sum over pairs (each row's
logsumexp couples its N scores), so pooling does not apply; instead, above ``max_pairs``
dev pairs the optimum is found by safeguarded Newton steps on its derivative
g(a) = mean_i (z_i,true - E_softmax(a z_i)[z]), whose own derivative is
-mean_i Var_softmax(a z_i)[z] (concavity keeps a bracket [lo, hi] with g(lo) > 0 > g(hi)),
a handful of passes over the rows (in blocks of rows, no (T, N) temporaries) instead of
the ~40 of the bounded scalar search used below ``max_pairs``.  Newton stops at the
optimum to ~1e-12 (``|g|`` ~ 1e-16); the bounded search, whose stopping rule looks at the
objective's values, within ~1e-7 of it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NoReturn, Self

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp, softmax

from lidframe.errors import InputError

from .base import DEFAULT_MAX_PAIRS, Calibrator, check_fit_size, check_rows_input
from .maps import AffineMap

__all__ = ["Temperature"]


def mean_log_posterior(slope: float, z: np.ndarray, true_index: np.ndarray) -> float:
    """Mean natural-log posterior of the true column under llr = slope * z (uniform prior)."""
    scaled = slope * z
    return float(np.mean(scaled[np.arange(z.shape[0]), true_index] - logsumexp(scaled, axis=1)))


class Temperature(Calibrator):
    """Affine-through-zero calibration ``llr = slope_ * z`` fitted by multiclass cross-entropy.

    Parameters
    ----------
    max_slope : float, default 100
        Upper bound of the slope (reached only for perfectly separated dev rows).
    max_pairs : int or None, default 1_000_000
        Above this many dev pairs (T x N), find the optimum by Newton steps (see the
        module docstring); None: always the bounded scalar search.

    Attributes
    ----------
    slope_ : float
        Fitted slope (nats per unit z), >= 0; exactly 0 when the dev rows show no
        evidence (the objective does not increase from a = 0).
    dev_mean_log_posterior_ : float
        Mean ln p_true on the dev rows at ``slope_``.
    """

    name = "temperature"
    #: Its LLRs are a z: right up to a constant per row, which cancels in the closed set only;
    #: the open set (a prior with ``outside`` > 0) refuses it (:func:`lidframe.evaluate`).
    absolute_llr = False
    _fitted_attributes = ("slope_", "dev_mean_log_posterior_")

    def __init__(self, *, max_slope: float = 100.0, max_pairs: int | None = DEFAULT_MAX_PAIRS):
        self.max_slope = max_slope
        self.max_pairs = max_pairs

    def fit(self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> NoReturn:
        """Not available: this calibrator needs whole dev rows; use :meth:`fit_rows`."""
        raise InputError(
            "Temperature fits on whole dev rows: call fit_rows(z, true_index) (lidframe.evaluate and fit_calibrator do)"
        )

    def fit_rows(self, z: ArrayLike, true_index: ArrayLike) -> Self:
        """Fit the slope on dev rows.

        Parameters
        ----------
        z : array_like, shape (T, N)
            Row-z-normed dev scores.
        true_index : array_like of int, shape (T,)
            Column of each row's true speaker (all rows closed-set).

        Returns
        -------
        self
        """
        if not (isinstance(self.max_slope, (int, float)) and self.max_slope > 0):
            raise InputError(f"Temperature max_slope must be a positive number, got {self.max_slope!r}")
        check_fit_size("Temperature", self.max_pairs, 2)
        z, true_index = check_rows_input(z, true_index)
        large = self.max_pairs is not None and z.size > self.max_pairs  # in blocks of rows, by Newton steps
        rises = (_gradient_and_curvature(0.0, z, true_index)[0] if large else _gradient(0.0, z, true_index)) > 0.0
        if not rises:  # concave: the optimum on [0, max_slope] is 0
            self.slope_ = 0.0
        elif large:
            self.slope_ = _newton_slope(z, true_index, float(self.max_slope))
        else:
            result = minimize_scalar(
                lambda a: -mean_log_posterior(a, z, true_index),
                bounds=(0.0, float(self.max_slope)),
                method="bounded",
                options={"xatol": 1e-10},
            )
            self.slope_ = float(result.x)
        if large:
            self.dev_mean_log_posterior_ = _blocked_mean_log_posterior(self.slope_, z, true_index)
        else:
            self.dev_mean_log_posterior_ = mean_log_posterior(self.slope_, z, true_index)
        return self

    def llr_map(self) -> AffineMap:
        """The fitted map ``llr = slope_ * z`` (nats).

        :meth:`llr` applies it to numpy scores; the engines also run it on torch tiles.
        """
        self._check_fitted()
        return AffineMap(self.slope_, 0.0)

    def dev_gradient(self, z: ArrayLike, true_index: ArrayLike) -> float:
        """d/da of the mean log posterior at ``slope_`` (about 0 at an interior optimum)."""
        self._check_fitted()
        z, true_index = check_rows_input(z, true_index)
        return _gradient(self.slope_, z, true_index)


# rows per block of the Newton passes: blocks of about 2^21 values
_BLOCK_VALUES = 1 << 21


def _row_blocks(z: np.ndarray, true_index: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(rows, their true values) in blocks of about 2^21 values: no (T, N) temporaries."""
    block = max(1, _BLOCK_VALUES // z.shape[1])
    for start in range(0, z.shape[0], block):
        rows = z[start : start + block]
        yield rows, rows[np.arange(rows.shape[0]), true_index[start : start + block]]


def _blocked_mean_log_posterior(slope: float, z: np.ndarray, true_index: np.ndarray) -> float:
    """:func:`mean_log_posterior` in blocks of rows."""
    total = sum(
        float((slope * true - logsumexp(slope * rows, axis=1)).sum()) for rows, true in _row_blocks(z, true_index)
    )
    return total / z.shape[0]


def _gradient_and_curvature(slope: float, z: np.ndarray, true_index: np.ndarray) -> tuple[float, float]:
    """(g, g') at *slope*: g = d/da of :func:`mean_log_posterior`, g' = -mean_i Var_softmax(a z_i)[z] <= 0."""
    grad = curv = 0.0
    for rows, true in _row_blocks(z, true_index):
        p = softmax(slope * rows, axis=1)
        mean = (p * rows).sum(axis=1)
        second = (p * rows * rows).sum(axis=1)
        grad += float((true - mean).sum())
        curv -= float(np.clip(second - mean * mean, 0.0, None).sum())
    return grad / z.shape[0], curv / z.shape[0]


def _newton_slope(z: np.ndarray, true_index: np.ndarray, max_slope: float, tol: float = 1e-12) -> float:
    """argmax over [0, max_slope] of the (concave) mean log posterior, given g(0) > 0: safeguarded Newton."""
    grad, curv = _gradient_and_curvature(max_slope, z, true_index)
    if grad >= 0.0:  # still rising at the bound
        return max_slope
    low, high = 0.0, max_slope  # g(low) > 0 > g(high)
    slope = min(1.0, max_slope / 2)
    for _ in range(200):
        grad, curv = _gradient_and_curvature(slope, z, true_index)
        if grad > 0.0:
            low = slope
        else:
            high = slope
        step = slope - grad / curv if curv < 0.0 else math.nan
        if abs(step - slope) <= tol * max(1.0, slope):  # Newton has converged
            return step
        if not low < step < high:  # outside the bracket (or no curvature): bisect
            step = (low + high) / 2
        if high - low <= tol * max(1.0, slope):
            return step
        slope = step
    return slope


def _gradient(slope: float, z: np.ndarray, true_index: np.ndarray) -> float:
    """d/da of :func:`mean_log_posterior` at *slope*: mean_i (z_i,true - E_softmax(a z_i)[z])."""
    p = softmax(slope * z, axis=1)
    return float(np.mean(z[np.arange(z.shape[0]), true_index] - (p * z).sum(axis=1)))
