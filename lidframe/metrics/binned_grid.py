"""Fixed bin edges for the binned binary view (:class:`BinGrid`): equal in the values, or in asinh of them.

The edges are fixed *before* a pass over the pairs, so that counts made on them by tiles,
processes or machines merge exactly (:class:`~lidframe.metrics.binned.BinnedPairs`).
:meth:`BinGrid.index` maps a value to its bin monotonically, for numpy arrays and torch
tensors alike (importing this module does not import torch).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError

__all__ = ["DEFAULT_BINS", "BinGrid", "is_torch"]

#: Bins of the grid the streaming engine uses for the binary view (see :mod:`lidframe.metrics.binned_bounds`).
DEFAULT_BINS = 1 << 16

# relative spacing tolerance under which edges count as equally spaced (np.linspace rounding)
_UNIFORM_RTOL = 1e-9


def is_torch(values: object) -> bool:
    """Whether *values* is a torch tensor (told apart without importing torch)."""
    return type(values).__module__.startswith("torch")


def _as_edges(edges: ArrayLike) -> np.ndarray:
    edges = np.array(edges, dtype=np.float64)
    if edges.ndim != 1 or edges.size < 2:
        raise InputError(f"bin edges must be a 1-D array of at least 2 values, got shape {edges.shape}")
    if not np.isfinite(edges).all():
        raise InputError("bin edges must be finite")
    if not (np.diff(edges) > 0).all():
        raise InputError("bin edges must be strictly increasing")
    edges.setflags(write=False)
    return edges


def _optional_float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


@attrs.frozen(eq=False)
class BinGrid:
    """Fixed bin edges and the (monotone) map of a value to its bin.

    Attributes
    ----------
    edges : ndarray, shape (B + 1,), float64
        Strictly increasing, finite.  Bin k is [edges[k], edges[k + 1]); a value below
        ``edges[0]`` goes to bin 0, one at or above ``edges[-1]`` to bin B - 1.
    center, scale : float or None
        Set by :meth:`asinh` (None otherwise): the edges are equally spaced in
        u = asinh((x - center) / scale), and :meth:`index` finds a value's bin in u (one
        asinh, a multiply and a floor), so a value within rounding of an edge may land
        in the bin next to it; the map stays monotone.
    """

    edges: np.ndarray = attrs.field(converter=_as_edges)
    center: float | None = attrs.field(default=None, kw_only=True, converter=_optional_float)
    scale: float | None = attrs.field(default=None, kw_only=True, converter=_optional_float)

    def __attrs_post_init__(self) -> None:
        if (self.center is None) != (self.scale is None):
            raise InputError("an asinh bin grid needs both center and scale")
        if self.scale is not None and not (math.isfinite(self.scale) and self.scale > 0):
            raise InputError(f"an asinh bin grid needs a positive, finite scale, got {self.scale}")
        if self.center is not None and not math.isfinite(self.center):
            raise InputError(f"an asinh bin grid needs a finite center, got {self.center}")

    @classmethod
    def uniform(cls, low: float, high: float, n_bins: int = DEFAULT_BINS) -> BinGrid:
        """*n_bins* equal bins over [low, high] (``high <= low`` gives the bins of [low, low + 1])."""
        n_bins = int(n_bins)
        if n_bins < 1:
            raise InputError(f"a bin grid needs at least one bin, got {n_bins}")
        low, high = float(low), float(high)
        if not (math.isfinite(low) and math.isfinite(high)):
            raise InputError(f"a bin grid needs a finite range, got [{low}, {high}]")
        if not high > low:
            high = low + 1.0
        return cls(np.linspace(low, high, n_bins + 1))

    @classmethod
    def asinh(
        cls, low: float, high: float, n_bins: int = DEFAULT_BINS, *, center: float = 0.0, scale: float = 1.0
    ) -> BinGrid:
        """*n_bins* bins over [low, high], equal in u = asinh((x - center) / scale).

        A bin at x is about ``du * sqrt(scale^2 + (x - center)^2)`` wide, with
        du = (u(high) - u(low)) / n_bins: ``du * scale`` near the center and a fixed
        *relative* width du far from it.  du grows only with the logarithm of the range,
        so values far out (outliers) widen the bins where the bulk lies hardly at all:
        the grid the calibrators' pooled fit uses (:func:`lidframe.calibrators.base.group_pairs`).
        ``high <= low`` gives the bins of [low, low + scale].

        Parameters
        ----------
        low, high : float
            Finite range, in the values' units.
        n_bins : int
        center : float
            Where the bins are narrowest (a location of the values, e.g. their median).
        scale : float
            Positive: the width over which the bins stay of one size (a spread of the values).
        """
        n_bins = int(n_bins)
        if n_bins < 1:
            raise InputError(f"a bin grid needs at least one bin, got {n_bins}")
        low, high, center, scale = float(low), float(high), float(center), float(scale)
        if not all(math.isfinite(v) for v in (low, high, center, scale)) or not scale > 0:
            raise InputError(
                f"an asinh bin grid needs a finite range, center and a positive scale, got "
                f"[{low}, {high}], center {center}, scale {scale}"
            )
        if not high > low:
            high = low + scale
        u = np.linspace(math.asinh((low - center) / scale), math.asinh((high - center) / scale), n_bins + 1)
        edges = center + scale * np.sinh(u)
        edges[0], edges[-1] = low, high
        # equal steps in u can round to equal edges where the bins are finer than float64 resolves
        edges = np.maximum.accumulate(edges)
        if not (np.diff(edges) > 0).all():
            raise InputError(
                f"{n_bins} asinh bins over [{low}, {high}] (scale {scale}) are finer than float64 resolves"
            )
        return cls(edges, center=center, scale=scale)

    @property
    def n_bins(self) -> int:
        """B, the number of bins."""
        return self.edges.size - 1

    @property
    def is_uniform(self) -> bool:
        """Equally spaced edges: the bin of a value is then one multiply and a floor (else a binary search)."""
        widths = np.diff(self.edges)
        return bool(np.all(np.abs(widths - widths.mean()) <= _UNIFORM_RTOL * widths.mean()))

    def index(self, values: Any) -> Any:
        """Bin of each value, a monotone non-decreasing map (numpy array or torch tensor in, same kind out).

        Parameters
        ----------
        values : ndarray or torch.Tensor, any shape, no NaN
            Values in the grid's units.

        Returns
        -------
        ndarray of intp or torch.Tensor of int64, same shape
            In [0, B); values outside the grid go to the end bins.
        """
        last = self.n_bins - 1
        low = float(self.edges[0])
        if self.center is not None and self.scale is not None:
            return self._asinh_index(values, last)
        if is_torch(values):
            import torch

            if self.is_uniform:
                scale = self.n_bins / (float(self.edges[-1]) - low)
                return ((values - low) * scale).floor_().clamp_(0, last).long()
            edges = torch.tensor(np.array(self.edges), dtype=values.dtype, device=values.device)
            return (torch.searchsorted(edges, values.contiguous(), right=True) - 1).clamp_(0, last)
        values = np.asarray(values)
        if self.is_uniform:
            scale = self.n_bins / (float(self.edges[-1]) - low)
            position = values - low  # a fresh array, worked on in place
            position *= scale
            np.floor(position, out=position)
            np.clip(position, 0, last, out=position)
            return position.astype(np.intp)
        index = np.searchsorted(self.edges, values, side="right") - 1
        return np.clip(index, 0, last, out=index)

    def _asinh_index(self, values: Any, last: int) -> Any:
        """:meth:`index` of an :meth:`asinh` grid: floor of the position in u (monotone: each step is)."""
        assert self.center is not None and self.scale is not None
        u_low = math.asinh((float(self.edges[0]) - self.center) / self.scale)
        u_high = math.asinh((float(self.edges[-1]) - self.center) / self.scale)
        per_u = self.n_bins / (u_high - u_low)
        if is_torch(values):
            position = _torch_asinh((values - self.center) / self.scale)
            return ((position - u_low) * per_u).floor_().clamp_(0, last).long()
        position = np.asarray(values, dtype=np.float64) - self.center  # a fresh array, worked on in place
        position /= self.scale
        np.arcsinh(position, out=position)
        position -= u_low
        position *= per_u
        np.floor(position, out=position)
        np.clip(position, 0, last, out=position)
        return position.astype(np.intp)


def _torch_asinh(values: Any) -> Any:
    """torch.asinh of a tensor (imported lazily: ``import lidframe`` does not load torch)."""
    import torch

    return torch.asinh(values)
