"""The Calibrator interface: z-scores in, natural-log likelihood ratios out.

A calibrator is fitted on the development pairs of an attacker's score sets -- 1-D
row-z-normed scores with labels 1 (mated: trial and enrolled speaker are the same
person) and 0 (non-mated) -- and then maps any z-score to an LLR::

    llr(z) = log p(z | mated) - log p(z | non-mated)      (natural log)

It follows scikit-learn's estimator conventions (cf. ``sklearn/calibration.py``):

* ``__init__`` takes keyword-only parameters and only stores them;
* ``fit(scores, labels, *, sample_weight=None)`` validates its input and returns ``self``;
* fitted attributes end in ``_``; using an unfitted calibrator raises ``NotFittedError``;
* ``get_params`` / ``set_params`` / :func:`sklearn.base.clone` work (via ``BaseEstimator``);
* ``fit`` and ``llr`` keep the contract of calibrators, :class:`lidframe.registry.CalibratorLike`
  (what each is called with and returns is written there once);
* ``to_dict()`` / ``from_dict()`` round-trip a fitted calibrator through JSON (no pickle).

How a calibrator deals with the class imbalance of the dev pairs (one mated pair per
trial against N - 1 non-mated) is its own business and is documented on each class.

The map itself is written once, as one of two methods (a subclass of :class:`Calibrator`
defines either; the other is derived):

``llr_map() -> map``
    the fitted map in closed form: a record of :mod:`lidframe.calibrators.maps`
    (:class:`~lidframe.calibrators.maps.AffineMap`,
    :class:`~lidframe.calibrators.maps.PiecewiseLinearMap`, ...) that the engines apply to
    numpy arrays and to torch tiles on any device.  Every built-in calibrator defines it;
    :meth:`Calibrator.llr` then applies it to float64 copies of the scores, so numpy and
    GPU paths share one formula.
``llr(scores) -> ndarray``
    a plugin without a closed form defines ``llr`` instead; :meth:`Calibrator.llr_map`
    then wraps it in a :class:`~lidframe.calibrators.maps.CallbackMap` (the engines call
    it on float64 numpy copies of their tiles).

Large dev sets: a 1-D fit needs only the distribution of the dev z-scores per class, so
the calibrators that fit on pairs take ``max_pairs`` and ``bins`` (keyword-only): above
``max_pairs`` pairs they fit on the pairs pooled by (bin of the score, class), each group
carrying its total weight at its weighted mean score (:func:`group_pairs`,
:class:`PairGroups`).  The bins are robust to outliers (:func:`pooling_grid`): up to
``bins`` pairs at the two ends (the tails) stay single, exact, and the core range between
them is cut into bins equal in asinh((z - median) / scale), so a bin is
h(z) ~ du sqrt(scale^2 + (z - median)^2) wide, du growing only with the logarithm of the
range.  Replacing each score by its group's mean moves it by less than its bin's width,
and, because the mean keeps every term that is linear in the score exact, moves a
smooth fit's estimating equations by O(h^2) only (each calibrator states its bound).
Below ``max_pairs`` they fit on every pair, exactly as before.

Capabilities: what a calibrator may declare beyond its contract, each with a default
(:class:`lidframe.registry.CalibratorCapabilities` holds their types; lidframe reads them,
for built-ins and plugins alike, through :func:`lidframe.registry.capabilities_of`):

``fit_rows(z, true_index) -> self``
    a calibrator that fits on the 1-to-N task itself (whole dev rows, e.g.
    :class:`~lidframe.calibrators.Temperature`) defines it; it is then called with the
    (T, N) z-normed dev matrix and each row's true column instead of ``fit``.  The base
    class has none (its absence means "fitted on pairs").
``input_scale = "raw"``
    the calibrator wants the attacker's raw scores, not row z-scores (e.g.
    :class:`~lidframe.calibrators.Identity` for scores that already are LLRs).  The
    default is ``"znorm"``.
``absolute_llr = False``
    its LLRs are right only up to a constant per row (``Temperature``), which cancels
    in the closed set only: the open set refuses it.  The default is True.
``refit_weighted(scores, labels, sample_weight) -> fitted copy``
    on a fitted calibrator, a copy fitted on other weighted pairs as ``fit`` fits them,
    from this fit's state (:class:`~lidframe.calibrators.Logistic` and
    :class:`~lidframe.calibrators.Beta`: Newton steps, :func:`logistic_newton`); the
    bootstrap that refits the calibrator on resampled dev speakers calls it per resample
    (:mod:`lidframe.core.refit`).  Absent: a clone is fitted by ``fit``.
``llr_map()``, ``to_dict()``, ``describe()``
    the base class defines them (above and below).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from typing import ClassVar, Literal, Self

import attrs
import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from lidframe.data.scoreset import check_true_index
from lidframe.errors import InputError
from lidframe.metrics.binned_grid import BinGrid
from lidframe.registry.capabilities import NO_RANGES, InputFiles
from lidframe.registry.ranges import Range

from .maps import CallbackMap, LLRMap

__all__ = [
    "Calibrator",
    "check_fit_input",
    "check_rows_input",
    "check_fit_size",
    "group_pairs",
    "pooling_grid",
    "PairGroups",
    "DEFAULT_MAX_PAIRS",
    "DEFAULT_FIT_BINS",
    "logistic_newton",
    "balance_classes",
]

#: Dev pairs up to which the pair calibrators fit on every pair (above: on pooled pairs).
DEFAULT_MAX_PAIRS = 1_000_000
#: Score bins of the pooled fit above ``max_pairs``.
DEFAULT_FIT_BINS = 1 << 16


def check_fit_input(
    scores: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate calibrator training data.

    Parameters
    ----------
    scores : array_like, shape (n,)
        Finite z-normed scores.
    labels : array_like, shape (n,)
        1 for mated pairs, 0 for non-mated; both classes present.
    sample_weight : array_like, shape (n,), optional
        Non-negative finite weights.

    Returns
    -------
    scores, labels, sample_weight : ndarray
        float64, int8 (0/1) and float64 or None.
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    if scores.ndim != 1:
        raise InputError(f"calibrator scores must be 1-D, got shape {scores.shape}")
    if labels.shape != scores.shape:
        raise InputError(f"labels have shape {labels.shape} but scores have {scores.shape}")
    if not np.isfinite(scores).all():
        raise InputError(f"calibrator scores must be finite (index {int(np.flatnonzero(~np.isfinite(scores))[0])})")
    if labels.dtype == bool:
        labels = labels.astype(np.int8)
    valid = (labels == 0) | (labels == 1)
    if not valid.all():
        i = int(np.flatnonzero(~valid)[0])
        raise InputError(f"labels must be 0 (non-mated) or 1 (mated); index {i} is {labels[i].item()!r}")
    labels = labels.astype(np.int8)
    n_mated = int(labels.sum())
    if n_mated == 0 or n_mated == labels.size:
        raise InputError(f"calibration needs both mated and non-mated pairs, got {n_mated} mated of {labels.size}")
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != scores.shape:
            raise InputError(f"sample_weight has shape {sample_weight.shape} but scores have {scores.shape}")
        if not (np.isfinite(sample_weight).all() and (sample_weight >= 0).all()):
            raise InputError("sample_weight must be finite and non-negative")
    return scores, labels, sample_weight


def check_rows_input(z: ArrayLike, true_index: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validate whole dev rows for calibrators with a ``fit_rows`` hook.

    Parameters
    ----------
    z : array_like, shape (T, N)
        Finite z-normed dev scores, N >= 2.
    true_index : array_like of int, shape (T,)
        Column of each row's true speaker, in [0, N).

    Returns
    -------
    z, true_index : ndarray
        float64 and intp.
    """
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] < 1 or z.shape[1] < 2:
        raise InputError(f"dev rows must be a (T, N) array with T >= 1 and N >= 2, got shape {z.shape}")
    if not np.isfinite(z).all():
        i, j = np.argwhere(~np.isfinite(z))[0]
        raise InputError(f"dev rows must be finite; row {i}, column {j} is {z[i, j]}")
    return z, check_true_index(true_index, z.shape[0], z.shape[1], allow_outsider=False)


def check_fit_size(owner: str, max_pairs: int | None, bins: int) -> None:
    """Validate the ``max_pairs`` (None or >= 1) and ``bins`` (>= 2) parameters of *owner*."""
    if max_pairs is not None and not (isinstance(max_pairs, (int, np.integer)) and max_pairs >= 1):
        raise InputError(f"{owner} max_pairs must be None or a positive integer, got {max_pairs!r}")
    if not (isinstance(bins, (int, np.integer)) and bins >= 2):
        raise InputError(f"{owner} bins must be an integer >= 2, got {bins!r}")


@attrs.frozen(eq=False)
class PairGroups:
    """Dev pairs pooled by (bin of the score, class): what a 1-D fit needs of a large dev set.

    Attributes
    ----------
    group : ndarray of intp, shape (n,)
        Group of each pair, in [0, G).
    scores : ndarray, shape (G,)
        Weighted mean score of each group (inside its bin; a tail pair's own score).
    labels : ndarray of int8, shape (G,)
        Class of each group (1 = mated).
    weights : ndarray, shape (G,)
        Total weight (the pair count without sample weights) of each group.
    grid : BinGrid
        The bins of the core range (:func:`pooling_grid`): every pair in it lies within its
        bin's width of its group's mean.
    n_tail : int
        Pairs outside the core range, each its own group (exact).
    """

    group: np.ndarray
    scores: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    grid: BinGrid
    n_tail: int

    def mean(self, values: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
        """Weighted mean of a per-pair value (shape (n,)) over each group, shape (G,)."""
        sums = np.bincount(
            self.group, weights=values if weight is None else weight * values, minlength=self.scores.size
        )
        return sums / self.weights


#: Interquartile range of a standard normal: IQR / this is a robust standard deviation.
_NORMAL_IQR = 1.3489795003921634


def pooling_grid(scores: np.ndarray, bins: int) -> BinGrid:
    """The bins of a pooled fit: the core range of the scores, in bins equal in asinh((z - median) / scale).

    The core range runs from the (k + 1)-th smallest to the (k + 1)-th largest score,
    k = min(bins // 2, (n - 1) // 2): the k pairs below it and the k above it (fewer
    with ties at its ends) are the *tails*, which :func:`group_pairs` keeps exactly, one
    group per pair.  ``scale`` is the interquartile range / 1.349 (the standard deviation
    of normal scores), at least (core width) / bins.  A bin at z is about
    du sqrt(scale^2 + (z - median)^2) wide, du = (u(top) - u(bottom)) / bins with
    u(z) = asinh((z - median) / scale): du * scale where the scores crowd, a fixed
    relative width du further out.  Up to k outliers on a side fall into the exact
    tails and leave the bins as they were; more of them widen the bulk's bins only with the
    logarithm of their distance (du x 2.8 for scores of 1e5 among scores within +-10),
    where equal bins over [min, max] widen 10^4-fold.

    Parameters
    ----------
    scores : ndarray, shape (n,)
        Finite scores (validated: :func:`check_fit_input`).
    bins : int
        Number of bins, >= 2.

    Returns
    -------
    BinGrid
        An :meth:`~lidframe.metrics.binned.BinGrid.asinh` grid over the core range (equal
        bins of [v, v + 1] when the core holds one value v; one bin per distinct value
        when the core is too narrow for ``bins`` distinct float64 edges).
    """
    return _core_and_grid(scores, bins)[2]


def _core_and_grid(scores: np.ndarray, bins: int) -> tuple[float, float, BinGrid]:
    """(lowest, highest core score, :func:`pooling_grid`): the pairs outside [lowest, highest] are the tails."""
    n = scores.size
    k = min(int(bins) // 2, (n - 1) // 2)
    ranks = sorted({k, n // 4, n // 2, (3 * n) // 4, n - 1 - k})
    at = dict(zip(ranks, np.partition(scores, ranks)[ranks].tolist(), strict=True))
    low, high, median = at[k], at[n - 1 - k], at[n // 2]
    if not high > low:
        return low, high, BinGrid.uniform(low, high, bins)
    scale = max((at[(3 * n) // 4] - at[n // 4]) / _NORMAL_IQR, (high - low) / bins)
    try:
        return low, high, BinGrid.asinh(low, high, bins, center=min(max(median, low), high), scale=scale)
    except InputError:  # a core a few float64 steps wide: one bin per distinct value
        values = np.unique(scores[(scores >= low) & (scores <= high)])
        return low, high, BinGrid(np.r_[values, np.nextafter(high, math.inf)])


def group_pairs(scores: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None, bins: int) -> PairGroups:
    """Pool validated dev pairs (:func:`check_fit_input`) by (score bin, class), the tails kept exactly.

    Parameters
    ----------
    scores : ndarray, shape (n,)
    labels : ndarray of int8, shape (n,)
    sample_weight : ndarray, shape (n,), or None
    bins : int
        Bins of :func:`pooling_grid` over the core range (equal in asinh of the robustly
        scaled score); the pairs outside it (at most ``bins``) stay single.

    Returns
    -------
    PairGroups
        At most 2 ``bins`` groups of core pairs, then one group per tail pair (in input
        order); groups of zero weight are left out.
    """
    low, high, grid = _core_and_grid(scores, bins)
    n_bins = grid.n_bins
    tail = np.flatnonzero((scores < low) | (scores > high))
    key = grid.index(scores)  # a fresh intp array: the group key is built in place
    key *= 2
    key += labels
    key[tail] = 2 * n_bins + np.arange(tail.size)
    size = 2 * n_bins + tail.size
    weights: np.ndarray
    if sample_weight is None:
        weights = np.bincount(key, minlength=size).astype(np.float64)
        sums = np.bincount(key, weights=scores, minlength=size)
    else:
        weights = np.bincount(key, weights=sample_weight, minlength=size)
        sums = np.bincount(key, weights=sample_weight * scores, minlength=size)
    kept = np.flatnonzero(weights > 0)
    compact = np.full(size, -1, dtype=np.intp)
    compact[kept] = np.arange(kept.size)
    core = kept[kept < 2 * n_bins]
    bin_of = core // 2
    # the mean of a bin's scores lies inside the bin and the core (clipped against rounding); a tail pair is itself
    means = np.clip(sums[core] / weights[core], grid.edges[bin_of], grid.edges[bin_of + 1])
    means = np.clip(means, low, high)
    tail_kept = kept[kept >= 2 * n_bins] - 2 * n_bins
    return PairGroups(
        group=compact[key],
        scores=np.r_[means, scores[tail[tail_kept]]],
        labels=np.r_[core % 2, labels[tail[tail_kept]]].astype(np.int8),
        weights=weights[kept],
        grid=grid,
        n_tail=int(tail.size),
    )


# Newton steps of logistic_newton: at most this many, stopped when a step moves the parameters by less than
# _NEWTON_TOL of their size; a step below _NEWTON_NEAR of it is taken whole, unchecked (the objective's
# rounding would hide its gain, and Newton converges quadratically there)
_NEWTON_STEPS = 100
_NEWTON_TOL = 1e-12
_NEWTON_NEAR = 1e-4


def balance_classes(weights: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """*weights* scaled so that each class carries half of their total (scikit-learn's ``class_weight="balanced"``).

    Parameters
    ----------
    weights : ndarray, shape (n,)
        Non-negative weights (ones, or pooled pair counts); both classes must carry some.
    labels : ndarray, shape (n,)
        1 (mated) or 0.

    Returns
    -------
    ndarray, shape (n,)
        ``weights * n_total / (2 n_class)`` per class, where ``n_class`` is the class's total weight.
    """
    totals = np.array([weights[labels == 0].sum(), weights[labels == 1].sum()])
    return weights * (totals.sum() / (2.0 * totals))[labels.astype(np.intp)]


def logistic_newton(
    design: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray,
    start: np.ndarray,
    penalty: np.ndarray,
    *,
    max_steps: int = _NEWTON_STEPS,
) -> np.ndarray | None:
    """The optimum of a weighted, L2-penalised logistic regression by damped Newton steps from *start*.

    Minimises ``sum_i w_i (log(1 + e^eta_i) - y_i eta_i) + sum_k penalty_k theta_k^2 / 2``
    with ``eta = design @ theta``: the objective of :class:`~lidframe.calibrators.Logistic`
    (design (1, z)) and :class:`~lidframe.calibrators.Beta` (design (ln u, -ln(1 - u), 1)).
    A step is halved until the objective does not rise (it is convex), so the iteration
    converges from any start where an optimum exists; what their ``refit_weighted`` call
    from a fit's optimum, on a bootstrap resample's pairs.

    Parameters
    ----------
    design : ndarray, shape (n, k)
    labels : ndarray, shape (n,)
        1 (mated) or 0.
    weights : ndarray, shape (n,)
        Non-negative.
    start : ndarray, shape (k,)
    penalty : ndarray, shape (k,)
        Non-negative; 0 for an unpenalised parameter.
    max_steps : int, default 100
        Newton steps at most.

    Returns
    -------
    ndarray, shape (k,), or None
        None when it has not converged in ``max_steps`` steps or met a singular Hessian (no
        finite optimum: classes separated without a penalty).
    """
    from scipy.special import expit

    y = labels.astype(np.float64)

    def objective(theta: np.ndarray) -> float:
        eta = design @ theta
        return float((weights * (np.logaddexp(0.0, eta) - y * eta)).sum() + 0.5 * (penalty * theta * theta).sum())

    theta = np.asarray(start, dtype=np.float64).copy()
    value = objective(theta)
    for _ in range(max_steps):
        prob = expit(design @ theta)
        gradient = design.T @ (weights * (prob - y)) + penalty * theta
        hessian = (design * (weights * prob * (1.0 - prob))[:, None]).T @ design + np.diag(penalty)
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            return None
        if not np.isfinite(step).all():
            return None
        scale = max(1.0, float(np.abs(theta).max()))
        if np.abs(step).max() <= _NEWTON_NEAR * scale:  # in the quadratic range: the full step
            theta = theta - step
            if np.abs(step).max() <= _NEWTON_TOL * scale:
                return theta
            value = objective(theta)  # a later damped step must not rise above *this* point
            continue
        size = 1.0
        while size > 1e-6 and not objective(theta - size * step) <= value:
            size /= 2
        theta = theta - size * step
        value = objective(theta)
    return None


def _overrides(calibrator: Calibrator, method: str) -> bool:
    """Whether *calibrator*'s class defines *method* below :class:`Calibrator`."""
    return getattr(type(calibrator), method) is not getattr(Calibrator, method)


class Calibrator(BaseEstimator):
    """Base class of lidframe calibrators.

    The contract is :class:`lidframe.registry.CalibratorLike`; the conventions and the
    capabilities (``input_scale``, ``absolute_llr``, the ``fit_rows`` hook, ...) are in
    the module docstring.

    Subclasses set ``name`` (the registry name), ``_fitted_attributes`` (names of the
    fitted attributes that :meth:`to_dict` saves; JSON-able scalars or 1-D float arrays)
    and implement :meth:`fit` (or ``fit_rows``) and one of :meth:`llr_map` (a closed
    form, preferred) or :meth:`llr`; the other is derived from it.
    """

    name: str = ""
    _fitted_attributes: tuple = ()
    #: fitted attributes saved by :meth:`to_dict` when set, restored by :meth:`from_dict` when
    #: present (records written before they existed still load)
    _optional_fitted_attributes: tuple = ()
    #: ``"znorm"`` (row z-scores in) or ``"raw"`` (the attacker's scores as they are).
    input_scale: ClassVar[Literal["znorm", "raw"]] = "znorm"
    #: Whether its LLRs are likelihood ratios, not only right up to a constant per row
    #: (which cancels in the closed set only): the open set refuses a calibrator without them.
    absolute_llr: ClassVar[bool] = True
    #: The files a spec of it reads besides those its parameters name (a classmethod
    #: ``input_files(params)``); None: only those.
    input_files: InputFiles | None = None
    #: The values each numeric option takes, ``{option: Range(...)}``, checked when a spec is read; none declared.
    option_ranges: ClassVar[Mapping[str, Range]] = NO_RANGES

    def fit(
        self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
    ) -> Self:  # pragma: no cover - interface
        """See :meth:`lidframe.registry.CalibratorLike.fit`; ``sample_weight`` weighs each pair."""
        raise NotImplementedError

    def llr(self, scores: ArrayLike) -> np.ndarray:
        """:meth:`lidframe.registry.CalibratorLike.llr`: the fitted :meth:`llr_map` applied to a float64 copy.

        Returns
        -------
        ndarray, float64
            As the contract says; float64 whatever the dtype of *scores*.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        """
        if not _overrides(self, "llr_map"):  # neither hook written, or super().llr() from an llr override
            raise NotImplementedError(f"{type(self).__name__} must define llr_map() or llr()")
        return np.asarray(self.llr_map()(np.asarray(scores, dtype=np.float64)), dtype=np.float64)

    def llr_map(self) -> LLRMap:
        """The fitted score-to-LLR map as a record of :mod:`lidframe.calibrators.maps`.

        Built-in calibrators return their closed form (affine, piecewise linear, clamped
        quadratic, beta), which the engines run on numpy arrays and on torch tiles.  A
        subclass that only writes :meth:`llr` gets a
        :class:`~lidframe.calibrators.maps.CallbackMap` around it.

        Returns
        -------
        AffineMap, PiecewiseLinearMap, ClampedQuadraticMap, BetaMap or CallbackMap
            Callable ``map(z) -> llr`` (elementwise, nats) on numpy arrays or torch tensors.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        """
        if not _overrides(self, "llr"):
            raise NotImplementedError(f"{type(self).__name__} must define llr_map() or llr()")
        self._check_fitted()
        return CallbackMap(self.llr)

    def _check_fitted(self) -> None:
        check_is_fitted(self, list(self._fitted_attributes))

    def describe(self) -> str:
        """``name(param=value, ...)`` with the parameters that differ from their defaults."""
        defaults = {k: p.default for k, p in inspect.signature(type(self).__init__).parameters.items() if k != "self"}
        params = ", ".join(
            f"{k}={v}" for k, v in sorted(self.get_params().items()) if k not in defaults or defaults[k] != v
        )
        return f"{self.name}({params})" if params else self.name

    def to_dict(self) -> dict:
        """JSON-able record of the class, parameters and fitted state (requires a fitted calibrator)."""
        self._check_fitted()
        fitted = {}
        optional = tuple(k for k in self._optional_fitted_attributes if hasattr(self, k))
        for key in self._fitted_attributes + optional:
            value = getattr(self, key)
            fitted[key] = value.tolist() if isinstance(value, np.ndarray) else value
        cls = type(self)
        return {
            "calibrator": f"{cls.__module__}:{cls.__qualname__}",
            "params": self.get_params(),
            "fitted": fitted,
        }

    @classmethod
    def from_dict(cls, record: dict) -> Self:
        """Rebuild a fitted calibrator from :meth:`to_dict` output."""
        try:
            params, fitted = record["params"], record["fitted"]
        except (KeyError, TypeError):
            raise InputError("a calibrator record needs 'params' and 'fitted' entries") from None
        expected = f"{cls.__module__}:{cls.__qualname__}"
        if record.get("calibrator", expected) != expected:
            raise InputError(f"record is for calibrator {record['calibrator']!r}, not {expected!r}")
        missing = [k for k in cls._fitted_attributes if k not in fitted]
        if missing:
            raise InputError(f"calibrator record lacks fitted attribute(s) {', '.join(missing)}")
        obj = cls(**params)
        for key in cls._fitted_attributes + tuple(k for k in cls._optional_fitted_attributes if k in fitted):
            value = fitted[key]
            setattr(obj, key, np.asarray(value, dtype=np.float64) if isinstance(value, list) else value)
        return obj
