"""Affine (logistic-regression) calibration of z-scores: llr = slope * z + intercept.

This is the calibrator of the LID paper and its reference code.  A 1-D logistic
regression of the mated label on the z-score gives ``logit P(mated | z) = w z + b``.
By Bayes, that posterior log-odds equals the LLR plus the prior log-odds *that the fit
saw*, so the intercept needs care because dev pairs are imbalanced (one mated pair per
trial against N - 1 non-mated).  Two documented weightings:

``weighting="balanced"`` (default; the published reference code)
    ``LogisticRegression(class_weight="balanced")``: the two classes carry equal total
    weight, the effective prior odds are 1, so ``llr = w z + b`` directly.
``weighting="prior"`` (the paper's text)
    unweighted fit, then ``llr = w z + b - ln(N_mated / N_non_mated)``.

Both use scikit-learn's default L2 penalty with ``C=1`` unless ``C`` says otherwise
(``C=None``: no penalty).  The solver runs to a tight tolerance (1e-10 instead of
scikit-learn's 1e-4, where L-BFGS stops early the more so the better the classes separate),
and damped Newton steps on the two parameters finish its answer (L-BFGS also stops on a
relative decrease of the objective, which left fits on a few heavily weighted rows -- pooled
pairs -- ~1e-7 from the optimum, and with outliers of 1e5 stopped before moving the intercept,
1.8e-3 short; the steps take both to ~1e-12, and leave the solver's answer where they find no
finite optimum), so slopes may differ from the reference code's: measured on 300 trials x 100 enrolled
(5 seeds), by up to 0.07 % with the mated score 2 standard deviations above the non-mated
ones, 1.3 % at 4, 3.4 % at 5 and 13.5 % at 6.

Provenance of the defaults: ``weighting="balanced"`` and ``C=1`` are the published
reference code's (``LogisticRegression(class_weight="balanced")`` with scikit-learn's
default penalty); ``weighting="prior"`` is the recipe of the paper's text (lidframe
applies the same ``C`` to it).  The tolerance, the standard errors and the
negative-slope fallback are lidframe's own.

Large dev sets (``max_pairs``, ``bins``): above ``max_pairs`` pairs (default 10^6) the
regression is fitted on the pairs pooled by (score bin, class) -- at most 2 ``bins``
weighted points at their groups' mean z-scores, plus up to ``bins`` tail pairs kept as
they are (:func:`~lidframe.calibrators.base.group_pairs`; the bins are equal in
asinh((z - median) / scale) over the core range, :func:`~lidframe.calibrators.base.pooling_grid`)
-- instead of on every pair; up to ``max_pairs`` the fit is the one on every pair.  The
pooled fit is the exact (penalised, weighted) maximum-likelihood fit of the dev set with
each z-score moved to its group mean.  Because the mean keeps the terms linear in z exact
(sum y z, sum w), the full-data estimating equations
U(slope, intercept) = sum_i w_i (y_i - sigmoid(a z_i + b)) (1, z_i) are off at the pooled
fit only by the curvature of sigmoid inside each group: with W_g the weight of group g
and d_g the spread of its scores (at most its bin's width; 0 for a tail pair), ::

    |U_intercept| <= sum_g s a^2 W_g d_g^2 / 8,   |U_slope| <= sum_g (a / 2 + s a^2 |z|_g) W_g d_g^2 / 8,

with ``s = max |sigmoid''| = 1 / (6 sqrt 3)``, a the slope and ``|z|_g`` the group's largest
``|z|``.  The fitted (intercept, slope) then differ from the full fit by J^-1 U, J the
Hessian of the fitted objective (to first order): an O(h^2) error.  With the default
2^16 bins over a dev z-range of ~20, h ~ 5e-5 where the pairs crowd and the shift is
~1e-9 (slope and intercept, measured on 1.2 M pairs), below the solver's tolerance.
Outliers do not change that: up to ``bins`` of them are tails, more widen the bins only
with the logarithm of their distance (six scores of +-1e5 among 1.2 M: slope within 1e-10
of statsmodels' fit on every pair, where equal bins over [min, max] were 13.5 % off).
``tests/calibrators/test_large_dev.py`` checks the pooled fit against the full one within
this bound on drawn data, ``tests/calibrators/test_pooled_outliers.py`` with outliers.

Standard errors (``standard_errors``): statsmodels refits the full, unpooled dev set
(it needs every pair: ~1 s per 10^6 pairs, and an (n, 2) design matrix).  ``"auto"``
(default) computes them up to ``max_pairs`` pairs and leaves them NaN above; True always
computes them (opt-in for large dev sets); False never.

The intercept adds the same constant to every LLR of a trial's row, and a constant
added to a whole row cancels in the closed-set posterior softmax under *any* prior (uniform,
watch-list or explicit), so only the slope moves closed-set LID.  The intercept matters
where pairs are read one at a time, as the binary view's actual ``cllr`` does, and in the
open set (:mod:`lidframe.core.openset`), where "nobody enrolled" has no LLR to move with it.
"""

from __future__ import annotations

import math
from typing import Literal, Self

import numpy as np
from numpy.typing import ArrayLike
from sklearn.linear_model import LogisticRegression

from lidframe.errors import InputError

from .base import (
    DEFAULT_FIT_BINS,
    DEFAULT_MAX_PAIRS,
    Calibrator,
    balance_classes,
    check_fit_input,
    check_fit_size,
    group_pairs,
    logistic_newton,
)
from .maps import AffineMap

__all__ = ["Logistic"]

_WEIGHTINGS = ("balanced", "prior")
# scikit-learn's default tol=1e-4 stops L-BFGS with the slope up to 13.5 % off the optimum
# on strongly separated dev data (module docstring); a 2-parameter fit converges in a few
# more cheap iterations.
_TOL = 1e-10
_Z95 = 1.959963984540054  # standard normal 97.5 % quantile


# Newton steps (logistic_newton) that finish scikit-learn's L-BFGS answer: at most this many
_POLISH_STEPS = 100


def _polish(
    scores: np.ndarray, labels: np.ndarray, weights: np.ndarray, intercept: float, slope: float, penalty: float
) -> tuple[float, float]:
    """(intercept, slope) at the optimum of the objective scikit-learn minimised, from its L-BFGS answer.

    The objective: ``sum_i w_i (log(1 + e^eta_i) - y_i eta_i) + penalty slope^2 / 2`` with
    ``eta = intercept + slope z`` (the intercept unpenalised, as scikit-learn's lbfgs leaves
    it).  L-BFGS also stops on a relative decrease of the objective of 64 eps.  On a few
    heavily weighted rows (pooled pairs) that leaves the parameters ~1e-7 from the optimum
    (test_large_dev); with outliers, whose z^2 makes the objective's curvature in the slope
    ~1e8 times that in the intercept, it can stop before the intercept has moved at all:
    on 6,697 pairs with scores of +-1e5 and -3e4 it stopped after 5 iterations with the
    intercept at -1e-10, where the optimum is -1.8e-3 (0.0028 nats of weighted
    log-likelihood short of it; test_pooled_outliers).  Damped Newton steps on the two
    parameters (:func:`~lidframe.calibrators.base.logistic_newton`: halved until the
    objective does not rise) reach the optimum from any such answer, to ~1e-12; where they
    do not converge (no finite optimum: classes separated without a penalty) the solver's
    answer is kept.
    """
    design = np.column_stack([np.ones_like(scores), scores])
    optimum = logistic_newton(
        design, labels, weights, np.array([intercept, slope]), np.array([0.0, penalty]), max_steps=_POLISH_STEPS
    )
    if optimum is None:
        return intercept, slope
    return float(optimum[0]), float(optimum[1])


def _log_odds(labels: np.ndarray, sample_weight: np.ndarray | None) -> float:
    """ln(mated / non-mated) of the pairs' (weighted) class totals: the prior log-odds an unweighted fit saw."""
    weight = np.ones(labels.size) if sample_weight is None else sample_weight
    return math.log(float(weight[labels == 1].sum()) / float(weight[labels == 0].sum()))


def _glm_standard_errors(
    scores: np.ndarray,
    labels: np.ndarray,
    model: LogisticRegression,
    sample_weight: np.ndarray | None,
    weighting: str,
) -> tuple[float, float]:
    """(slope SE, intercept SE) of the unpenalised weighted logistic fit (statsmodels GLM)."""
    import warnings

    import statsmodels.api as sm

    weight = np.ones_like(scores) if sample_weight is None else sample_weight.copy()
    if weighting == "balanced":
        # scikit-learn's class_weight="balanced": n / (2 n_class)
        n = weight.sum()
        for value in (0, 1):
            mask = labels == value
            weight[mask] *= n / (2.0 * weight[mask].sum())
    design = np.column_stack([np.ones_like(scores), scores])
    glm = sm.GLM(labels.astype(np.float64), design, family=sm.families.Binomial(), var_weights=weight)
    start = np.array([model.intercept_[0], model.coef_[0, 0]])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # perfectly separated dev data has no finite MLE: statsmodels warns, the SEs are
        # not finite, and we report NaN (documented) instead of passing its noise on
        warnings.simplefilter("ignore")
        try:
            fit = glm.fit(start_params=start, cov_type="HC0" if weighting == "balanced" else "nonrobust")
        except (np.linalg.LinAlgError, ValueError):  # e.g. a singular design on a handful of pairs
            return float("nan"), float("nan")
    intercept_se, slope_se = (float(v) if np.isfinite(v) else float("nan") for v in fit.bse)
    return slope_se, intercept_se


class Logistic(Calibrator):
    """Affine calibration ``llr = slope_ * z + intercept_`` fitted by logistic regression.

    Parameters
    ----------
    weighting : {"balanced", "prior"}, default "balanced"
        How the class imbalance of the dev pairs is removed (see the module docstring).
    C : float or None, default 1.0
        Inverse L2 regularisation strength, as in scikit-learn; ``None`` fits without
        a penalty.
    standard_errors : {"auto", True, False}, default "auto"
        Also estimate standard errors and 95 % confidence intervals of slope and
        intercept with statsmodels' GLM on every dev pair (costs a second fit and an
        (n, 2) design matrix).  ``"auto"``: up to ``max_pairs`` pairs; True: always
        (opt-in above ``max_pairs``); False: never.
    max_pairs : int or None, default 1_000_000
        Fit on every dev pair up to this many; above, on the pairs pooled into ``bins``
        score bins per class (see the module docstring for the error).  None: always
        every pair.
    bins : int, default 65536
        Score bins of the pooled fit.

    Attributes
    ----------
    slope_ : float
        LLR per unit z-score (nats), >= 0.  A calibrator must be non-decreasing: when the
        fit's slope is negative (dev scores carry no usable evidence, as for a random
        attacker) the map falls back to the intercept-only model, which for both
        weightings is llr = 0 (``clamped_`` is then True).
    intercept_ : float
        LLR at z = 0 (nats), after the prior-odds correction for ``weighting="prior"``.
    clamped_ : bool
        Whether the negative-slope fallback was applied.
    n_mated_, n_non_mated_ : int
        Number of mated and non-mated dev pairs seen by ``fit``.
    slope_se_, intercept_se_ : float
        Standard errors (NaN when ``standard_errors=False`` or the dev classes are
        perfectly separated, where no finite estimate exists): of the *unpenalised*
        weighted fit, from statsmodels' binomial GLM -- the HC0 sandwich for
        ``"balanced"`` (class weights are not frequencies), model-based for ``"prior"``.
        The L2 penalty moves the estimate by far less than one SE at usual dev sizes.
    slope_ci_, intercept_ci_ : ndarray (2,)
        95 % normal confidence intervals around ``slope_`` and ``intercept_``.
    fit_bins_ : int or None
        The score bins of a pooled fit (above ``max_pairs``), None for a fit on every pair.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = np.r_[rng.normal(2, 1, 200), rng.normal(0, 1, 2000)]
    >>> y = np.r_[np.ones(200), np.zeros(2000)]
    >>> cal = Logistic().fit(z, y)
    >>> bool(cal.slope_ > 0)
    True
    """

    name = "logistic"
    _fitted_attributes = (
        "slope_",
        "intercept_",
        "clamped_",
        "n_mated_",
        "n_non_mated_",
        "slope_se_",
        "intercept_se_",
        "slope_ci_",
        "intercept_ci_",
    )
    _optional_fitted_attributes = ("fit_bins_",)

    def __init__(
        self,
        *,
        weighting: str = "balanced",
        C: float | None = 1.0,
        standard_errors: bool | Literal["auto"] = "auto",
        max_pairs: int | None = DEFAULT_MAX_PAIRS,
        bins: int = DEFAULT_FIT_BINS,
    ):
        self.weighting = weighting
        self.C = C
        self.standard_errors = standard_errors
        self.max_pairs = max_pairs
        self.bins = bins

    def fit(self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Self:
        """Fit the affine map on 1-D dev z-scores; *labels* are 1 for mated pairs.

        Returns
        -------
        self : Logistic
        """
        self._check_parameters()
        scores, labels, sample_weight = check_fit_input(scores, labels, sample_weight)
        small = self.max_pairs is None or scores.size <= self.max_pairs
        if small:
            fit_scores, fit_labels, fit_weight = scores, labels, sample_weight
            self.fit_bins_ = None
        else:  # pooled pairs: O(bins) points instead of O(pairs), O(h^2) error
            groups = group_pairs(scores, labels, sample_weight, self.bins)
            fit_scores, fit_labels, fit_weight = groups.scores, groups.labels, groups.weights
            self.fit_bins_ = int(self.bins)
        class_weight: str | None = "balanced" if self.weighting == "balanced" else None
        if class_weight == "balanced" and fit_weight is not None:
            # balance the classes by their *weighted* totals (pairs, for pooled groups)
            # explicitly: scikit-learn before 1.6 balanced class_weight="balanced" by the
            # number of rows, ignoring sample_weight, which would weigh pooled groups, not pairs
            fit_weight = balance_classes(fit_weight, fit_labels)
            class_weight = None
        model = LogisticRegression(
            C=np.inf if self.C is None else float(self.C),
            class_weight=class_weight,
            tol=_TOL,
            max_iter=1000,
        )
        model.fit(fit_scores.reshape(-1, 1), fit_labels, sample_weight=fit_weight)
        # the weights scikit-learn fitted with (its class_weight="balanced", n / (2 n_class), on unit weights)
        polish_weight = np.ones(fit_scores.size) if fit_weight is None else fit_weight
        if class_weight == "balanced":
            polish_weight = balance_classes(polish_weight, fit_labels)
        polished = _polish(
            fit_scores,
            fit_labels.astype(np.float64),
            polish_weight,
            float(model.intercept_[0]),
            float(model.coef_[0, 0]),
            0.0 if self.C is None else 1.0 / float(self.C),
        )
        model.intercept_[0], model.coef_[0, 0] = polished  # (the standard errors start from it)
        self._set_fitted(float(model.intercept_[0]), float(model.coef_[0, 0]), labels, sample_weight)
        if self.standard_errors is True or (self.standard_errors == "auto" and small):
            slope_se, intercept_se = _glm_standard_errors(scores, labels, model, sample_weight, self.weighting)
        else:
            slope_se = intercept_se = float("nan")
        self._set_standard_errors(slope_se, intercept_se)
        return self

    def _set_fitted(self, intercept: float, slope: float, labels: np.ndarray, sample_weight: np.ndarray | None) -> None:
        """Set the fitted map from the optimum (intercept, slope) of the weighted objective, and the class counts."""
        n_mated = int(labels.sum())
        n_non_mated = int(labels.size - n_mated)
        if self.weighting == "prior":
            intercept -= _log_odds(labels, sample_weight)
        self.slope_ = float(slope)
        self.intercept_ = float(intercept)
        self.clamped_ = self.slope_ < 0
        if self.clamped_:  # intercept-only model: balanced -> log-odds 0; prior -> ln(odds) - ln(odds) = 0
            self.slope_, self.intercept_ = 0.0, 0.0
        self.n_mated_ = n_mated
        self.n_non_mated_ = n_non_mated

    def _set_standard_errors(self, slope_se: float, intercept_se: float) -> None:
        self.slope_se_, self.intercept_se_ = slope_se, intercept_se
        self.slope_ci_ = self.slope_ + _Z95 * np.array([-slope_se, slope_se])
        self.intercept_ci_ = self.intercept_ + _Z95 * np.array([-intercept_se, intercept_se])

    def refit_weighted(self, scores: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike) -> Logistic:
        """A copy fitted on other weighted pairs as :meth:`fit` fits them, by Newton steps from this fit.

        The bootstrap that refits the calibrator on resampled dev speakers calls it on each
        resample's pooled pairs (:mod:`lidframe.core.refit`): a resample's optimum lies
        near this fit's, and damped Newton steps on the two parameters reach the optimum of
        the same objective (penalised, weighted, balanced as :meth:`fit` balances) in a few
        O(n) passes, where :meth:`fit` starts L-BFGS from zero.  Where they do not converge
        (classes separated without a penalty) the copy is fitted by :meth:`fit`.  The copy
        has no standard errors (NaN).

        Parameters
        ----------
        scores : array_like, shape (n,)
            Z-scores (pooled groups' mean scores, say).
        labels : array_like, shape (n,)
            1 for mated, 0 for non-mated.
        sample_weight : array_like, shape (n,)
            Non-negative weights (the groups' pair counts).

        Returns
        -------
        Logistic
            A fitted copy (``standard_errors=False``); this one is not changed.
        """
        self._check_fitted()
        scores, labels, weights = check_fit_input(scores, labels, sample_weight)
        assert weights is not None  # sample_weight is required here
        copy = type(self)(**{**self.get_params(), "standard_errors": False})
        copy._check_parameters()
        penalty = 0.0 if self.C is None else 1.0 / float(self.C)
        fit_weight = balance_classes(weights, labels) if self.weighting == "balanced" else weights
        start = self.intercept_ + (_log_odds(labels, weights) if self.weighting == "prior" else 0.0)
        design = np.column_stack([np.ones_like(scores), scores])
        optimum = logistic_newton(design, labels, fit_weight, np.array([start, self.slope_]), np.array([0.0, penalty]))
        if optimum is None:
            return copy.fit(scores, labels, sample_weight=weights)
        copy._set_fitted(float(optimum[0]), float(optimum[1]), labels, weights)
        copy._set_standard_errors(float("nan"), float("nan"))
        copy.fit_bins_ = None
        return copy

    def _check_parameters(self) -> None:
        """Refuse parameters ``fit`` cannot use, naming the parameter (an :class:`InputError`)."""
        if self.weighting not in _WEIGHTINGS:
            raise InputError(f"Logistic weighting must be one of {_WEIGHTINGS}, got {self.weighting!r}")
        if self.C is not None and not (isinstance(self.C, (int, float)) and self.C > 0):
            raise InputError(f"Logistic C must be a positive number or None, got {self.C!r}")
        if self.standard_errors not in (True, False, "auto"):
            raise InputError(f"Logistic standard_errors must be 'auto', True or False, got {self.standard_errors!r}")
        check_fit_size("Logistic", self.max_pairs, self.bins)

    def llr_map(self) -> AffineMap:
        """The fitted map ``llr = slope_ * z + intercept_`` (nats).

        :meth:`llr` applies it to numpy scores; the engines also run it on torch tiles.
        """
        self._check_fitted()
        return AffineMap(self.slope_, self.intercept_)
