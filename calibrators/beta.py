"""Beta calibration (Kull, Silva Filho & Flach, 2017) of z-scores.

Beta calibration models the posterior of a score u in (0, 1) as::

    logit P(mated | u) = a ln u - b ln(1 - u) + c,     a, b >= 0

which covers sigmoids (a = b) and asymmetric, skewed shapes, and is monotone because
a, b >= 0.  Our scores are row z-scores on the whole real line, so lidframe maps them
to (0, 1) with the standard normal CDF, u = Phi(z): a z-score that behaves like a
standard normal becomes uniform on (0, 1).  ``ln u`` and ``ln(1 - u)`` are computed
as ``log_ndtr(z)`` and ``log_ndtr(-z)``, exact far into the tails.

The fit is an unweighted maximum-likelihood logistic regression on the two features
under the bounds a, b >= 0 (L-BFGS-B), so, as for isotonic calibration, the dev prior
log-odds are then removed: ``llr = a ln u - b ln(1 - u) + c - ln(N_mated / N_non_mated)``.
A weak L2 penalty on (a, b) (``C``, on the summed log-loss) keeps the fit finite when
the dev classes are perfectly separated; at usual dev sizes it moves (a, b) by < 1e-5.

Large dev sets (``max_pairs``, ``bins``, as :class:`~lidframe.calibrators.Logistic`):
above ``max_pairs`` pairs the fit runs on the pairs pooled by (z-score bin, class)
(:func:`~lidframe.calibrators.base.group_pairs`: asinh bins over the core range, up to
``bins`` tail pairs kept single), each group at the weighted means of its two features
(ln u, -ln(1 - u)).  The model is linear in the features, so the means keep every linear
term of the estimating equations exact; what is left is the curvature of the sigmoid over
each group's spread of m = a ln u - b ln(1 - u) + c, at most
``d (a |d ln u/dz| + b |d ln(1 - u)/dz|) =: d L`` for a group whose scores spread over d (at
most its bin's width, 0 for a tail pair), so per unit weight the equations are off by at
most s (d L)^2 / 2 times the largest ``|feature|`` (s = 1 / (6 sqrt 3)): O(h^2): on 10^5 drawn
pairs the LLR map moves by 3e-4 at 512 bins, 4e-11 at the default 2^16
(``tests/calibrators/test_large_dev.py`` checks the rate; ``test_pooled_outliers.py`` the
fit with outliers of 1e5, whose features reach 5e9).
"""

from __future__ import annotations

import math
from typing import Self

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.special import log_expit, log_ndtr

from lidframe.errors import InputError

from .base import (
    DEFAULT_FIT_BINS,
    DEFAULT_MAX_PAIRS,
    Calibrator,
    check_fit_input,
    check_fit_size,
    group_pairs,
    logistic_newton,
)
from .maps import BetaMap

__all__ = ["Beta"]


def beta_features(scores: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(ln u, -ln(1 - u)) with u = Phi(scores), computed stably."""
    scores = np.asarray(scores, dtype=np.float64)
    return log_ndtr(scores), -log_ndtr(-scores)


class Beta(Calibrator):
    """Beta calibration on u = Phi(z), with a, b >= 0.

    Parameters
    ----------
    C : float or None, default 1e4
        Inverse strength of the L2 penalty 0.5 (a^2 + b^2) / C added to the summed
        log-loss; None fits without penalty (may diverge on separable dev data).
    max_pairs : int or None, default 1_000_000
        Fit on every dev pair up to this many; above, on the pairs pooled into ``bins``
        z-score bins per class (see the module docstring).  None: always every pair.
    bins : int, default 65536
        Score bins of the pooled fit.

    Attributes
    ----------
    a_, b_ : float
        Non-negative weights of ln u and -ln(1 - u).
    c_ : float
        Intercept of the fitted posterior log-odds.
    prior_log_odds_ : float
        ln(N_mated / N_non_mated) of the dev pairs, subtracted from the log-odds to get the LLR.
    fit_bins_ : int or None
        The score bins of a pooled fit (above ``max_pairs``), None for a fit on every pair.
    """

    name = "beta"
    _fitted_attributes = ("a_", "b_", "c_", "prior_log_odds_")
    _optional_fitted_attributes = ("fit_bins_",)

    def __init__(
        self, *, C: float | None = 1e4, max_pairs: int | None = DEFAULT_MAX_PAIRS, bins: int = DEFAULT_FIT_BINS
    ):
        self.C = C
        self.max_pairs = max_pairs
        self.bins = bins

    def fit(self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Self:
        """Fit (a, b, c) on 1-D dev z-scores; *labels* are 1 for mated pairs.  Returns self."""
        if self.C is not None and not (isinstance(self.C, (int, float)) and self.C > 0):
            raise InputError(f"Beta C must be a positive number or None, got {self.C!r}")
        check_fit_size("Beta", self.max_pairs, self.bins)
        scores, labels, sample_weight = check_fit_input(scores, labels, sample_weight)
        weight = np.ones_like(scores) if sample_weight is None else sample_weight
        f1, f2 = beta_features(scores)
        w_mated = float(weight[labels == 1].sum())
        w_non_mated = float(weight[labels == 0].sum())
        self.fit_bins_ = None
        if self.max_pairs is not None and scores.size > self.max_pairs:  # pooled pairs, O(h^2) error
            groups = group_pairs(scores, labels, sample_weight, self.bins)
            f1, f2 = groups.mean(f1, sample_weight), groups.mean(f2, sample_weight)
            labels, weight = groups.labels, groups.weights
            self.fit_bins_ = int(self.bins)
        self._solve(f1, f2, labels, weight, np.array([1.0, 1.0, 0.0]))
        self.prior_log_odds_ = math.log(w_mated / w_non_mated)
        return self

    def _solve(self, f1: np.ndarray, f2: np.ndarray, labels: np.ndarray, weight: np.ndarray, start: np.ndarray) -> None:
        """Set (a_, b_, c_): the penalised weighted log-loss of the features minimised by L-BFGS-B from *start*."""
        sign = np.where(labels == 1, 1.0, -1.0)
        penalty = 0.0 if self.C is None else 1.0 / self.C
        scale = 1.0 / weight.sum()  # optimise the mean loss: better conditioned

        def loss_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
            a, b, c = theta
            margin = sign * (a * f1 + b * f2 + c)
            loss = -(weight * log_expit(margin)).sum() + 0.5 * penalty * (a * a + b * b)
            # d/dm of -log(sigmoid(m)) = -sigmoid(-m)
            r = -weight * sign * np.exp(log_expit(-margin))
            grad = np.array([(r * f1).sum() + penalty * a, (r * f2).sum() + penalty * b, r.sum()])
            return loss * scale, grad * scale

        result = minimize(
            loss_and_grad,
            x0=start,
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, None), (0.0, None), (None, None)],
            options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10000},
        )
        self.a_, self.b_, self.c_ = (float(v) for v in result.x)

    def refit_weighted(self, scores: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike) -> Beta:
        """A copy fitted on other weighted pairs as :meth:`fit` fits them, L-BFGS-B started from this fit.

        The bootstrap that refits the calibrator on resampled dev speakers calls it on each
        resample's pooled pairs (:mod:`lidframe.core.refit`): a resample's optimum lies near
        this fit's, and Newton steps from it (:func:`~lidframe.calibrators.base.logistic_newton`)
        reach the optimum of :meth:`fit`'s objective in a few passes where it is interior;
        on a bound (a or b = 0) L-BFGS-B, as :meth:`fit`, takes over from this fit.

        Returns
        -------
        Beta
            A fitted copy; this one is not changed.
        """
        self._check_fitted()
        scores, labels, weights = check_fit_input(scores, labels, sample_weight)
        assert weights is not None  # sample_weight is required here
        copy = type(self)(**self.get_params())
        f1, f2 = beta_features(scores)
        start = np.array([self.a_, self.b_, self.c_])
        penalty = 0.0 if self.C is None else 1.0 / self.C
        design = np.column_stack([f1, f2, np.ones_like(f1)])
        optimum = logistic_newton(design, labels, weights, start, np.array([penalty, penalty, 0.0]))
        if optimum is not None and optimum[0] >= 0 and optimum[1] >= 0:  # an interior optimum: the bounds hold
            copy.a_, copy.b_, copy.c_ = (float(v) for v in optimum)
        else:  # on a bound (a or b = 0), or none found: the bounded solver
            copy._solve(f1, f2, labels, weights, np.clip(start, [0.0, 0.0, -np.inf], None))
        copy.prior_log_odds_ = math.log(float(weights[labels == 1].sum()) / float(weights[labels == 0].sum()))
        copy.fit_bins_ = None
        return copy

    def llr_map(self) -> BetaMap:
        """The fitted map ``llr = a ln Phi(z) - b ln Phi(-z) + c - prior_log_odds_`` (nats).

        :meth:`llr` applies it to numpy scores; the engines also run it on torch tiles.
        """
        self._check_fitted()
        return BetaMap(self.a_, self.b_, self.c_ - self.prior_log_odds_)
