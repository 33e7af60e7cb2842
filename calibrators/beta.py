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
"""

from __future__ import annotations

import math
from typing import Self

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.special import log_expit, log_ndtr

from lidframe.errors import InputError

from .base import Calibrator, check_fit_input
from .maps import BetaMap

__all__ = ["Beta"]


def beta_features(scores) -> tuple[np.ndarray, np.ndarray]:
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

    Attributes
    ----------
    a_, b_ : float
        Non-negative weights of ln u and -ln(1 - u).
    c_ : float
        Intercept of the fitted posterior log-odds.
    prior_log_odds_ : float
        ln(N_mated / N_non_mated) of the dev pairs, subtracted from the log-odds to get the LLR.
    """

    name = "beta"
    _fitted_attributes = ("a_", "b_", "c_", "prior_log_odds_")

    def __init__(self, *, C: float | None = 1e4):
        self.C = C

    def fit(self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Self:
        """Fit (a, b, c) on 1-D dev z-scores; *labels* are 1 for mated pairs.  Returns self."""
        if self.C is not None and not (isinstance(self.C, (int, float)) and self.C > 0):
            raise InputError(f"Beta C must be a positive number or None, got {self.C!r}")
        scores, labels, sample_weight = check_fit_input(scores, labels, sample_weight)
        weight = np.ones_like(scores) if sample_weight is None else sample_weight
        f1, f2 = beta_features(scores)
        sign = np.where(labels == 1, 1.0, -1.0)
        penalty = 0.0 if self.C is None else 1.0 / self.C
        scale = 1.0 / weight.sum()  # optimise the mean loss: better conditioned

        def loss_and_grad(theta):
            a, b, c = theta
            margin = sign * (a * f1 + b * f2 + c)
            loss = -(weight * log_expit(margin)).sum() + 0.5 * penalty * (a * a + b * b)
            # d/dm of -log(sigmoid(m)) = -sigmoid(-m)
            r = -weight * sign * np.exp(log_expit(-margin))
            grad = np.array([(r * f1).sum() + penalty * a, (r * f2).sum() + penalty * b, r.sum()])
            return loss * scale, grad * scale

        result = minimize(
            loss_and_grad,
            x0=np.array([1.0, 1.0, 0.0]),
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, None), (0.0, None), (None, None)],
            options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10000},
        )
        a, b, c = (float(v) for v in result.x)
        w_mated = float(weight[labels == 1].sum())
        w_non_mated = float(weight[labels == 0].sum())
        self.a_, self.b_, self.c_ = a, b, c
        self.prior_log_odds_ = math.log(w_mated / w_non_mated)
        return self

    def llr_map(self) -> BetaMap:
        """The fitted map ``llr = a ln Phi(z) - b ln Phi(-z) + c - prior_log_odds_`` (nats).

        :meth:`llr` applies it to numpy scores; the engines also run it on torch tiles.
        """
        self._check_fitted()
        return BetaMap(self.a_, self.b_, self.c_ - self.prior_log_odds_)
