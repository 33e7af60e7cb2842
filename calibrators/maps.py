"""Closed forms of fitted calibrators' score-to-LLR maps, for numpy and torch tensors.

Each built-in calibrator writes its map once, as ``llr_map()`` returning one of the
records below; its ``llr`` (numpy, float64) applies that record
(:meth:`lidframe.calibrators.Calibrator.llr`).  The streaming engine
(:mod:`lidframe.core.streaming`) evaluates the same record on tiles that live on a GPU
or in float32; it

* folds an :class:`AffineMap` into the scaled dot products of the fused matmul +
  online-logsumexp kernel (under any prior only the slope matters, see below), and
* applies the other maps elementwise to each (tile_rows, N) tile of z-scores, on the
  tile's device and in its dtype (vectorised: ``searchsorted`` + linear interpolation
  for :class:`PiecewiseLinearMap`).

Calibrators without a closed form (third-party plugins that write only ``llr``) still
work: their ``llr`` is called on float64 numpy copies of the tiles (:class:`CallbackMap`,
which is also what :meth:`~lidframe.calibrators.Calibrator.llr_map` returns for them).

Why only the slope of an affine map matters: LID_i = (llr_im - logsumexp_j(llr_ij +
ln pi_j)) / ln 2, and with llr = a z + b the intercept b appears in both terms.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, SupportsFloat

import attrs
import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_ndtr

from lidframe.data.vectors import ArrayOrTensor
from lidframe.errors import InputError
from lidframe.registry import capabilities_of

if TYPE_CHECKING:
    import torch
    from typing_extensions import TypeIs

__all__ = [
    "AffineMap",
    "PiecewiseLinearMap",
    "ClampedQuadraticMap",
    "BetaMap",
    "CallbackMap",
    "LLRMap",
    "llr_map_of",
]


def _is_torch(values: object) -> TypeIs[torch.Tensor]:
    return type(values).__module__.startswith("torch")


def _as_float(value: SupportsFloat) -> float:
    """``float(value)``: the converter of the maps' scalar fields."""
    return float(value)


def _as_float_array(values: ArrayLike) -> np.ndarray:
    """``values`` as a float64 array: the converter of the knot fields."""
    return np.asarray(values, dtype=np.float64)


@attrs.frozen
class AffineMap:
    """``llr = slope * z + intercept`` (natural log).

    Attributes
    ----------
    slope : float
        Nats per unit score; >= 0 for a non-decreasing map.
    intercept : float
        Nats; cancels in closed-set LID under any prior (not in the open set).
    """

    slope: float = attrs.field(converter=_as_float)
    intercept: float = attrs.field(converter=_as_float, default=0.0)

    def __call__(self, z: ArrayOrTensor) -> ArrayOrTensor:
        """LLRs of *z* (numpy array or torch tensor), same type, shape and dtype family."""
        return z * self.slope + self.intercept

    def apply_into(self, z: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``z * slope + intercept`` written into *out* (which may be *z*): no temporary array.

        The same two roundings as :meth:`__call__` (a product, then a sum; never a fused
        multiply-add), so the result is bit for bit that of ``self(z)`` for float64 *z*.

        Parameters
        ----------
        z : ndarray, float64, any shape
            Z-scores (or raw scores).
        out : ndarray, float64, the shape of *z*
            Where the LLRs (nats) go; *z* itself for the map in place.

        Returns
        -------
        ndarray
            *out*.
        """
        np.multiply(z, self.slope, out=out)
        np.add(out, self.intercept, out=out)
        return out


@attrs.frozen(eq=False)
class PiecewiseLinearMap:
    """Linear interpolation between knots, constant beyond the end knots (``np.interp``).

    Attributes
    ----------
    knots_z : ndarray, shape (K,)
        Strictly increasing z-scores, K >= 1.
    knots_llr : ndarray, shape (K,)
        LLRs (nats) at the knots.
    """

    knots_z: np.ndarray = attrs.field(converter=_as_float_array)
    knots_llr: np.ndarray = attrs.field(converter=_as_float_array)

    def __attrs_post_init__(self) -> None:
        z, y = self.knots_z, self.knots_llr
        if z.ndim != 1 or z.shape != y.shape or z.size == 0:
            raise InputError(
                f"piecewise-linear map needs two equal-length 1-D knot arrays, got {z.shape} and {y.shape}"
            )
        if z.size > 1 and not (np.diff(z) > 0).all():
            raise InputError("piecewise-linear map knots must be strictly increasing in z")
        if not (np.isfinite(z).all() and np.isfinite(y).all()):
            raise InputError("piecewise-linear map knots must be finite")

    def __call__(self, z: ArrayOrTensor) -> ArrayOrTensor:
        if not _is_torch(z):
            return np.interp(z, self.knots_z, self.knots_llr)
        import torch

        knots_z = torch.as_tensor(self.knots_z, dtype=z.dtype, device=z.device)
        knots_llr = torch.as_tensor(self.knots_llr, dtype=z.dtype, device=z.device)
        if knots_z.numel() == 1:
            return torch.full_like(z, float(self.knots_llr[0]))
        # right-hand knot of each z's segment; z beyond an end lands on the end segment
        # and the clamped interpolation weight holds it at the end value
        upper = torch.searchsorted(knots_z, z.contiguous(), right=True).clamp_(1, knots_z.numel() - 1)
        z0, z1 = knots_z[upper - 1], knots_z[upper]
        y0, y1 = knots_llr[upper - 1], knots_llr[upper]
        weight = ((z - z0) / (z1 - z0)).clamp_(0.0, 1.0)
        return torch.lerp(y0, y1, weight)


@attrs.frozen
class ClampedQuadraticMap:
    """``llr = (quad * c + lin) * c + const`` with ``c = clip(z, lower, upper)``.

    The Gaussian backend with unequal variances: a parabola held constant beyond its
    vertex on the falling side (``lower``/``upper`` are -inf/+inf where unclipped).
    """

    quad: float = attrs.field(converter=_as_float)
    lin: float = attrs.field(converter=_as_float)
    const: float = attrs.field(converter=_as_float)
    lower: float = attrs.field(converter=_as_float, default=-math.inf)
    upper: float = attrs.field(converter=_as_float, default=math.inf)

    def __call__(self, z: ArrayOrTensor) -> ArrayOrTensor:
        if _is_torch(z):
            c = z.clamp(
                min=None if math.isinf(self.lower) else self.lower, max=None if math.isinf(self.upper) else self.upper
            )
        else:
            c = np.clip(z, self.lower, self.upper)
        return (c * self.quad + self.lin) * c + self.const


@attrs.frozen
class BetaMap:
    """Beta calibration ``llr = a ln Phi(z) - b ln Phi(-z) + c`` (nats), stable log-CDFs."""

    a: float = attrs.field(converter=_as_float)
    b: float = attrs.field(converter=_as_float)
    c: float = attrs.field(converter=_as_float)

    def __call__(self, z: ArrayOrTensor) -> ArrayOrTensor:
        if _is_torch(z):
            import torch

            return self.a * torch.special.log_ndtr(z) - self.b * torch.special.log_ndtr(-z) + self.c
        return self.a * log_ndtr(z) - self.b * log_ndtr(-z) + self.c


@attrs.frozen(eq=False)
class CallbackMap:
    """Any calibrator's ``llr``: called on float64 numpy copies (tensors go through the host).

    Attributes
    ----------
    function : callable
        ``llr(z: ndarray float64) -> array_like`` of the same shape, natural-log LLRs.
    """

    function: Callable[[np.ndarray], Any]

    def __call__(self, z: ArrayOrTensor) -> ArrayOrTensor:
        if not _is_torch(z):
            return np.asarray(self.function(np.asarray(z, dtype=np.float64)), dtype=np.float64)
        import torch

        llr = np.asarray(self.function(z.detach().to("cpu", torch.float64).numpy()), dtype=np.float64)
        return torch.from_numpy(llr).to(device=z.device, dtype=z.dtype)


#: What a calibrator's ``llr_map()`` returns: one of the records above.
LLRMap = AffineMap | PiecewiseLinearMap | ClampedQuadraticMap | BetaMap | CallbackMap


def llr_map_of(calibrator: Any) -> LLRMap:
    """The calibrator's closed-form map (``calibrator.llr_map()``), else a :class:`CallbackMap`.

    Parameters
    ----------
    calibrator : fitted calibrator
        Anything with ``llr(z) -> ndarray``; ``llr_map()`` is optional.

    Returns
    -------
    AffineMap, PiecewiseLinearMap, ClampedQuadraticMap, BetaMap or CallbackMap
    """
    method = capabilities_of("calibrator", calibrator).llr_map
    if callable(method):
        form = method()
        if form is not None:
            return form
    if not callable(getattr(calibrator, "llr", None)):
        raise InputError(f"{type(calibrator).__name__} has no llr() method; it is not a fitted calibrator")
    return CallbackMap(calibrator.llr)
