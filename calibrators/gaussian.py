"""Gaussian back end: a generative calibrator from two fitted normal densities.

Fit N(mu_1, s_1^2) to the mated dev z-scores and N(mu_0, s_0^2) to the non-mated ones;
the LLR is the log ratio of the two densities::

    llr(z) = ln N(z; mu_1, s_1^2) - ln N(z; mu_0, s_0^2)

``shared_variance=True`` (default) pools the two within-class variances into one s^2
(the classical linear discriminant), which makes the LLR affine::

    llr(z) = (mu_1 - mu_0) / s^2 * z - (mu_1^2 - mu_0^2) / (2 s^2)

With ``shared_variance=False`` the LLR is quadratic, A z^2 + B z + C with
A = (1/s_0^2 - 1/s_1^2) / 2, and is **not monotone**: a parabola turns at its vertex
z* = -B / (2A).  A likelihood ratio that falls again for very high (or very low)
scores is an artefact of the Gaussian shape in the tails, not evidence, so lidframe
makes the map monotone by holding it constant on the falling side of the vertex:
for A > 0 (mated scores more spread out) llr(z) = llr(z*) for z < z*, for A < 0
llr(z) = llr(z*) for z > z*.  ``vertex_`` records z* (NaN when linear).  With a shared
variance and mated scores *lower* than non-mated on average (no usable evidence, as for
a random attacker) the affine LLR would fall; it is set to 0 instead.
"""

from __future__ import annotations

import math
from typing import Self

import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError

from .base import Calibrator, check_fit_input
from .maps import AffineMap, ClampedQuadraticMap

__all__ = ["GaussianBackend"]


def _weighted_mean_var(x: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    mean = float(np.average(x, weights=w))
    return mean, float(np.average((x - mean) ** 2, weights=w))


class GaussianBackend(Calibrator):
    """Two-Gaussian generative calibration.

    Parameters
    ----------
    shared_variance : bool, default True
        Pool the class variances (affine, monotone LLR); False fits one variance per
        class (quadratic LLR, made monotone at its vertex; see the module docstring).

    Attributes
    ----------
    mean_mated_, mean_non_mated_ : float
    var_mated_, var_non_mated_ : float
        Fitted variances (equal when shared).
    quad_, lin_, const_ : float
        LLR coefficients: ``llr = quad_ z^2 + lin_ z + const_`` (before the clamp).
    vertex_ : float
        z* where the quadratic turns (NaN when ``quad_ = 0``).
    """

    name = "gaussian"
    _fitted_attributes = (
        "mean_mated_",
        "mean_non_mated_",
        "var_mated_",
        "var_non_mated_",
        "quad_",
        "lin_",
        "const_",
        "vertex_",
    )

    def __init__(self, *, shared_variance: bool = True):
        self.shared_variance = shared_variance

    def fit(self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Self:
        """Fit the two class densities on 1-D dev z-scores.  Returns self."""
        scores, labels, sample_weight = check_fit_input(scores, labels, sample_weight)
        weight = np.ones_like(scores) if sample_weight is None else sample_weight
        mated = labels == 1
        mu1, v1 = _weighted_mean_var(scores[mated], weight[mated])
        mu0, v0 = _weighted_mean_var(scores[~mated], weight[~mated])
        if self.shared_variance:
            w1, w0 = weight[mated].sum(), weight[~mated].sum()
            v1 = v0 = float((w1 * v1 + w0 * v0) / (w1 + w0))
        if not (v1 > 0 and v0 > 0):
            raise InputError("GaussianBackend: a class of dev scores has zero variance; the densities are undefined")
        self.mean_mated_, self.mean_non_mated_ = mu1, mu0
        self.var_mated_, self.var_non_mated_ = v1, v0
        self.quad_ = 0.5 * (1.0 / v0 - 1.0 / v1)
        self.lin_ = mu1 / v1 - mu0 / v0
        self.const_ = -0.5 * math.log(v1 / v0) - mu1 * mu1 / (2 * v1) + mu0 * mu0 / (2 * v0)
        self.vertex_ = -self.lin_ / (2 * self.quad_) if self.quad_ != 0 else float("nan")
        if self.quad_ == 0 and self.lin_ < 0:  # mated scores lower on average: no usable evidence
            self.lin_, self.const_ = 0.0, 0.0
        return self

    def llr_map(self) -> AffineMap | ClampedQuadraticMap:
        """The fitted map: a parabola held at its vertex on the falling side, or affine (nats).

        ``llr = quad_ c^2 + lin_ c + const_`` with ``c`` the z-score clipped to the rising
        side of ``vertex_``; affine ``lin_ z + const_`` when the variances are shared.
        :meth:`llr` applies it to numpy scores; the engines also run it on torch tiles.
        """
        self._check_fitted()
        if self.quad_ == 0:
            return AffineMap(self.lin_, self.const_)
        if self.quad_ > 0:
            return ClampedQuadraticMap(self.quad_, self.lin_, self.const_, lower=self.vertex_)
        return ClampedQuadraticMap(self.quad_, self.lin_, self.const_, upper=self.vertex_)
