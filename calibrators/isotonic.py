"""Isotonic (PAV) calibration: the best monotone map, with no shape assumed.

Pool-adjacent-violators (scikit-learn's :class:`~sklearn.isotonic.IsotonicRegression`)
fits the non-decreasing posterior P(mated | z) that best explains the dev pairs; its
steps ("bins") are runs of dev scores with one posterior each.  The LLR of a bin is the
posterior log-odds minus the dev prior log-odds::

    llr_k = logit(p_k) - ln(N_mated / N_non_mated)

Three details make that usable as a calibrator:

* **Infinite LLRs.**  The lowest and highest bins often hold one class only (p = 0 or 1,
  LLR = -inf or +inf).  ``laplace=True`` (default) adds one pseudo mated and one pseudo
  non-mated pair below all dev scores and above them, as BOSARIS and ZEBRA do, which
  keeps every posterior inside (0, 1).  With ``laplace=False`` the bins whose posterior
  is 0 or 1 are dropped from the map, which then saturates at the most extreme finite
  bin (a bin with finite LLR always exists unless the dev classes are perfectly
  separated, which raises an error).
* **Continuity.**  The PAV posterior is a step function; the LLR map interpolates
  linearly between the bins' centres (the mean dev score of each bin), so it is
  continuous and still non-decreasing.
* **Extrapolation.**  Outside the range of the bin centres the map is clipped to the
  first / last bin's LLR.

:meth:`Isotonic.pav_posterior` gives the un-interpolated PAV step function (equal to
scikit-learn's fit at the dev points when ``laplace=False``).

Large dev sets (``max_pairs``, ``bins``, as :class:`~lidframe.calibrators.Logistic`):
above ``max_pairs`` pairs, PAV runs on the pairs pooled by (z-score bin, class)
(:func:`~lidframe.calibrators.base.group_pairs`): the fit is then the *exact* PAV fit of
the dev set with every score moved to its group's mean score, less than its bin's width
h away; up to ``bins`` pairs at the two ends, where PAV steps rest on few pairs, are kept
as they are (``tests/calibrators/test_large_dev.py`` and ``test_pooled_outliers.py`` check
exactly that).  PAV bins become unions of those groups, so a step of the map moves by
less than h, and the ROC-hull quantities behind it (its EER, minCllr) move by at most
the bin-mass bounds of :mod:`lidframe.metrics.binned`.
"""

from __future__ import annotations

import math
from typing import Self

import numpy as np
from numpy.typing import ArrayLike
from sklearn.isotonic import IsotonicRegression

from lidframe.errors import InputError
from lidframe.metrics.detection import pav_blocks

from .base import DEFAULT_FIT_BINS, DEFAULT_MAX_PAIRS, Calibrator, check_fit_input, check_fit_size, group_pairs
from .maps import PiecewiseLinearMap

__all__ = ["Isotonic"]


class Isotonic(Calibrator):
    """Monotone non-parametric calibration by PAV, interpolated between bin centres.

    Parameters
    ----------
    laplace : bool, default True
        Laplace pseudo-counts (one mated + one non-mated pair beyond each end of the dev
        range) so that no bin has posterior 0 or 1.
    max_pairs : int or None, default 1_000_000
        Fit on every dev pair up to this many; above, on the pairs pooled into ``bins``
        z-score bins per class (see the module docstring).  None: always every pair.
    bins : int, default 65536
        Score bins of the pooled fit.

    Attributes
    ----------
    pav_upper_ : ndarray (B,)
        Largest dev z-score of each PAV bin, increasing.
    pav_posterior_ : ndarray (B,)
        PAV posterior P(mated | bin), non-decreasing (pseudo-counts included when ``laplace``).
    knot_z_ : ndarray (K,)
        Interpolation knots: the mean dev z-score of each bin whose LLR is finite.
    knot_llr_ : ndarray (K,)
        LLR (nats) at each knot, non-decreasing.
    n_mated_, n_non_mated_ : int
        Dev pair counts (pseudo-counts excluded).
    fit_bins_ : int or None
        The score bins of a pooled fit (above ``max_pairs``), None for a fit on every pair.
    """

    name = "isotonic"
    _fitted_attributes = ("pav_upper_", "pav_posterior_", "knot_z_", "knot_llr_", "n_mated_", "n_non_mated_")
    _optional_fitted_attributes = ("fit_bins_",)

    def __init__(
        self, *, laplace: bool = True, max_pairs: int | None = DEFAULT_MAX_PAIRS, bins: int = DEFAULT_FIT_BINS
    ):
        self.laplace = laplace
        self.max_pairs = max_pairs
        self.bins = bins

    def fit(self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Self:
        """Fit PAV on 1-D dev z-scores; *labels* are 1 for mated pairs.  Returns self."""
        check_fit_size("Isotonic", self.max_pairs, self.bins)
        scores, labels, sample_weight = check_fit_input(scores, labels, sample_weight)
        self.n_mated_ = int((labels == 1).sum())
        self.n_non_mated_ = int((labels == 0).sum())
        self.fit_bins_ = None
        if self.max_pairs is not None and scores.size > self.max_pairs:  # PAV of the pooled pairs
            groups = group_pairs(scores, labels, sample_weight, self.bins)
            scores, labels, sample_weight = groups.scores, groups.labels, groups.weights
            self.fit_bins_ = int(self.bins)
        weight = np.ones_like(scores) if sample_weight is None else sample_weight
        order = np.argsort(scores, kind="stable")
        x, y, w = scores[order], labels[order].astype(np.float64), weight[order]
        if self.laplace:
            # one mated + one non-mated pseudo pair tied just below and just above the data:
            # PAV depends only on the order, so these act as pairs at -inf and +inf
            lo, hi = x[0] - 1.0, x[-1] + 1.0
            x_fit = np.r_[lo, lo, x, hi, hi]
            y_fit = np.r_[1.0, 0.0, y, 1.0, 0.0]
            w_fit = np.r_[1.0, 1.0, w, 1.0, 1.0]
        else:
            x_fit, y_fit, w_fit = x, y, w
        pav = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(x_fit, y_fit, sample_weight=w_fit)
        post = pav.predict(x)  # PAV posterior at each (sorted) dev point
        # bins: runs of equal posterior over the real dev points
        starts, ends = pav_blocks(post)
        bin_weight = np.add.reduceat(w, starts)
        # mean score of each bin, kept inside the bin against rounding (a bin of one tied
        # value must have exactly that value as its centre)
        centres = np.clip(np.add.reduceat(w * x, starts) / bin_weight, x[starts], x[ends])
        bin_post = post[ends]
        w_mated = float(w[y == 1].sum())
        w_non_mated = float(w[y == 0].sum())
        with np.errstate(divide="ignore"):
            llr = np.log(bin_post) - np.log1p(-bin_post) - math.log(w_mated / w_non_mated)
        finite = np.isfinite(llr)
        if not finite.any():
            raise InputError(
                "Isotonic(laplace=False): dev classes are perfectly separated, every PAV bin has posterior 0 or 1; "
                "use laplace=True"
            )
        self.pav_upper_ = x[ends]
        self.pav_posterior_ = bin_post
        self.knot_z_ = centres[finite]
        self.knot_llr_ = llr[finite]
        return self

    def llr_map(self) -> PiecewiseLinearMap:
        """The fitted map: linear interpolation of the bin LLRs between bin centres, clipped (nats).

        :meth:`llr` applies it to numpy scores; the engines also run it on torch tiles.
        """
        self._check_fitted()
        return PiecewiseLinearMap(self.knot_z_, self.knot_llr_)

    def pav_posterior(self, scores: ArrayLike) -> np.ndarray:
        """PAV step-function posterior P(mated | z) (no interpolation, no prior correction)."""
        self._check_fitted()
        scores = np.asarray(scores, dtype=np.float64)
        index = np.minimum(np.searchsorted(self.pav_upper_, scores, side="left"), self.pav_upper_.size - 1)
        return self.pav_posterior_[index]
