"""The binary view from per-class histograms of pair LLRs: streaming, mergeable, with error bounds.

The exact binary view (:mod:`lidframe.metrics.binary_view`) sorts every pair's LLR, which
needs all T x N of them at once.  Here the pairs are counted instead, tile by tile, into
per-class histograms on a grid of B bins whose edges are fixed *before* the pass
(:class:`BinGrid`); the memory is O(B + one tile) whatever T x N is.  A
:class:`BinnedPairs` holds

* the mated and non-mated **counts** per bin (int64: partial counts from tiles, processes
  or machines add up exactly, :meth:`BinnedPairs.merge`);
* compensated float64 **sums** of log(1 + e^-llr) over mated and log(1 + e^llr) over
  non-mated pairs, so ``cllr`` is exact (to float64 rounding, ~1e-15 relative), not binned;
* the smallest and largest LLR seen, overall (so D_sys gets the exact histogram range)
  and per bin (``bin_low``, ``bin_high``: a bin of one tied value loses nothing, and the
  others bound where inside the bin their values lie).

A value outside the grid is counted in the first or last bin (never dropped); the bounds
below are computed from the counts actually in each bin, so they account for it.

:func:`binned_summary` runs the code of the exact view -- PAV, ROCCH, ZEBRA, linkability
(:mod:`lidframe.metrics.detection`, :mod:`~lidframe.metrics.zebra`,
:mod:`~lidframe.metrics.linkability`) -- on the bins, each bin acting as one run of tied
scores.  That is, every PAV-based number is the *exact* value for the LLRs quantised to
the grid (any monotone quantisation: rounding at an edge does not matter).

Error bounds
------------
Write a_k = (mated count of bin k) / N_mated and b_k = (non-mated count) / N_non_mated.
Quantising keeps the ROC points at the bin edges and drops those inside a bin: the
exact ROC inside bin k runs, as a staircase, through the box between the two kept
points at its edges (P_miss rises by a_k across it, P_fa falls by b_k).  So every
exact operating point is dominated by the box's best corner -- the one reached if all
the bin's non-mated pairs lay below all its mated ones -- and dominates nothing better.
:meth:`BinnedPairs.error_bounds` therefore computes the *best order*: the same runs with
each bin that holds both classes and more than one value (``bin_low < bin_high``) split
into its non-mated run followed by its mated run, and runs the exact PAV code on it.
For the hull metrics the binned value (the worst, tied order), the exact value and the
best order's value are ordered, so

``eer`` (ROCCH), ``min_cllr``, ``min_dcf``
    0 <= binned - exact <= binned - best;
``dece_bits``
    0 <= exact - binned <= best - binned;

the largest differences any pairs with these per-bin counts and ranges can have (data
with the best order inside each bin reach them).  A bin holding one class, or one value,
loses nothing.  They never exceed the closed forms that hold for any order (with A, B
the largest a_k, b_k over the bins that hold both classes and more than one value):
eer <= max_k min(a_k, b_k); minCllr, the integral over the posterior threshold c of the
hull's minimum cost [(1 - c) P_miss + c P_fa] / (c (1 - c)) / (2 ln 2), rises by at most
[A ln(1 + B / A) + B ln(1 + A / B)] / (2 ln 2) bits; D_ECE falls by at most the integral
over pi of f(pi A, (1 - pi) B) / ln 2, f(x, y) = x ln(1 + y/x) + y ln(1 + x/y) (the
midpoint rule over-estimates it: f is concave).  The reported bound is the smaller of the two.

``act_dcf``
    the counts on each side of the Bayes threshold t are exact but for the bin holding
    t (by the grid's own index), and for it too unless its values straddle t
    (``bin_low`` <= t < ``bin_high``); then its counts are split by linear
    interpolation over its range, and P_miss and P_fa may each be off by its share:
    |delta| <= the larger change of the cost over those two ranges.
``eer_threshold``
    the exact and the binned choice both lie on the step ROC between the two kept
    points around the sign change of P_fa - P_miss, i.e. inside one bin j; along it
    (P_fa + P_miss) / 2 moves by at most max(a_j, b_j) / 2, so |delta| <= that.
``dsys``
    the histogram range [min, max] and its bin count are exact; only a fine bin whose
    values straddle an interior edge of the D_sys histogram (``bin_low`` < edge <=
    ``bin_high``, the bin found by the grid's own index, so that every other fine bin
    lies wholly on one side) is split between its two sides, by linear interpolation
    over its range.  The mated-weighted local linkability g = p_mated D of a D_sys bin
    rises with p_mated and falls with p_non_mated, so its extremes over the counts the
    unknown splits allow are at corners; the exact D_sys lies between the value minus
    the summed falls and plus the summed rises (weights 1, 1/2 for the outer bins of the
    reference trapezoid), and in [0, 1]: the bound is the larger side, at most 1.
``max_abs_llr_log10``
    the ZEBRA value of the quantised LLRs: the PAV blocks at the two ends can only
    start at bin edges, so it can only be lower than the exact value (a lower bound),
    equal whenever no bin that mixes the classes sits at an extreme block boundary.
``cllr``
    exact (a sum; no binning).

A pair's mass is 1 / N_mated (or 1 / N_non_mated), so the bounds shrink with the bin
width only down to the mass of the pairs in the crowded bins.  Measured at the default
:data:`DEFAULT_BINS` = 2^16 bins over the LLR range of a 1-to-N evaluation of
T = N = 2,048 (the streaming engine's grid; ``tests/metrics/test_binned.py``,
``tests/core/test_streaming_binary.py``): eer <= 1.6e-4, minCllr <= 3.2e-4 bit,
D_ECE <= 2.5e-4 bit for affine, isotonic, beta and Gaussian maps, 1.2 to 15 times the actual
differences; dsys 1e-3 to 8e-3 against actual differences below 2e-5.  A map that piles
many pairs into a narrow LLR range (an isotonic map's flat steps) crowds its bins: the
order-free closed forms reached 4.5e-3 bit there, the best-order bounds 3e-4.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError
from lidframe.metrics.binary_view import BINARY_KEYS, DSYS_METHOD, check_operating_point, pav_summary
from lidframe.metrics.detection import OperatingPoint, eer_threshold_from_counts
from lidframe.metrics.linkability import integrate_dsys, linkability_bins, local_d, local_linkability_from_counts

__all__ = ["DEFAULT_BINS", "BinGrid", "BinnedPairs", "binned_summary"]

#: Bins of the grid the streaming engine uses for the binary view (see the error bounds).
DEFAULT_BINS = 1 << 16

# relative spacing tolerance under which edges count as equally spaced (np.linspace rounding)
_UNIFORM_RTOL = 1e-9


def _is_torch(values: object) -> bool:
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
        if _is_torch(values):
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
        if _is_torch(values):
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


def _as_grid(edges: ArrayLike | BinGrid) -> BinGrid:
    return edges if isinstance(edges, BinGrid) else BinGrid(edges)


@attrs.frozen
class _CompensatedSum:
    """A float64 sum with Neumaier's compensation: adding many partial sums loses ~1 ulp, not n."""

    total: float = 0.0
    compensation: float = 0.0

    def plus(self, value: float) -> _CompensatedSum:
        total = self.total + value
        if abs(self.total) >= abs(value):
            compensation = self.compensation + ((self.total - total) + value)
        else:
            compensation = self.compensation + ((value - total) + self.total)
        return _CompensatedSum(total, compensation)

    def merged(self, other: _CompensatedSum) -> _CompensatedSum:
        return self.plus(other.total).plus(other.compensation)

    @property
    def value(self) -> float:
        return self.total + self.compensation


def _to_numpy(values: Any) -> np.ndarray:
    return values.detach().cpu().numpy() if _is_torch(values) else np.asarray(values)


def _host_view(values: Any) -> Any:
    """A CPU torch tensor as a numpy view (no copy; numpy's bincount is the faster one there); else as is."""
    if _is_torch(values) and values.device.type == "cpu":
        return values.detach().numpy()
    return values


def _softplus_sum(values: Any, *, negate: bool = False, zero_at: tuple[Any, Any] | None = None) -> float:
    """sum(log(1 + e^(+-values))) in float64, optionally leaving out the entries at (rows, cols)."""
    if _is_torch(values):
        import torch

        terms = torch.logaddexp(
            -values if negate else values, torch.zeros((), dtype=values.dtype, device=values.device)
        )
        if zero_at is not None:
            terms[zero_at] = 0.0
        return float(terms.sum(dtype=torch.float64))
    terms = np.logaddexp(0.0, -values if negate else values)
    if zero_at is not None:
        terms[zero_at] = 0.0
    return float(terms.sum(dtype=np.float64))


def _bincount(index: Any, n_bins: int, weights: Any = None) -> np.ndarray:
    """Counts (int64) or, with *weights*, float64 sums per bin, as a numpy array."""
    if _is_torch(index):
        import torch

        flat_weights = None if weights is None else weights.reshape(-1).to(torch.float64)
        counts = _to_numpy(torch.bincount(index.reshape(-1), weights=flat_weights, minlength=n_bins))
    else:
        flat_weights = None if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)
        counts = np.bincount(index.reshape(-1), weights=flat_weights, minlength=n_bins)
    return counts.astype(np.int64 if weights is None else np.float64)


def _min_max(values: Any) -> tuple[float, float]:
    if values.numel() if _is_torch(values) else values.size:
        low, high = float(values.min()), float(values.max())
        if math.isnan(low) or math.isnan(high):
            raise InputError("binary metrics need LLRs without NaN; check the calibrator")
        return low, high
    return math.inf, -math.inf


@attrs.define(eq=False)
class BinnedPairs:
    """Per-class histograms of pair LLRs on fixed edges, plus the exact sums behind Cllr.

    Parameters
    ----------
    edges : array_like, shape (B + 1,), or BinGrid
        Strictly increasing bin edges (natural-log LLR units), fixed before the pass.
    value_sums : bool, default False
        Also keep the sum of the values per bin and class (``mated_sums``,
        ``non_mated_sums``), whose ratios to the counts are the per-bin means: what a
        calibrator fits on when the "values" are dev z-scores
        (:func:`lidframe.core.dev_pairs.dev_pair_groups`).
    cllr_sums : bool, default True
        Keep the exact sums behind :meth:`cllr` (two softplus per pair); False skips them
        where the values are not LLRs.

    Attributes
    ----------
    grid : BinGrid
    mated_counts, non_mated_counts : ndarray of int64, shape (B,)
        Pairs per bin.
    mated_sums, non_mated_sums : ndarray of float64, shape (B,), or None
        Sums of the values per bin (with ``value_sums``).
    low, high : float
        Smallest and largest LLR added (any class); +inf / -inf while empty.
    bin_low, bin_high : ndarray of float64, shape (B,)
        Smallest and largest value added to each bin (any class); +inf / -inf where
        empty.  A bin whose two are equal holds one tied value and loses nothing to the
        binning; the others bound where inside the bin its pairs can lie.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> pairs = BinnedPairs(np.linspace(-10.0, 10.0, 4097))
    >>> for _ in range(3):  # three tiles of (trial, enrolled) LLRs, true speaker in column 0
    ...     tile = rng.normal(size=(100, 50)); tile[:, 0] += 3.0
    ...     pairs.add_tile(tile, np.zeros(100, dtype=int))
    >>> pairs.n_mated, pairs.n_non_mated
    (300, 14700)
    >>> sorted(binned_summary(pairs)) == sorted(BINARY_KEYS)
    True
    """

    grid: BinGrid = attrs.field(converter=_as_grid)
    value_sums: bool = attrs.field(default=False, kw_only=True)
    cllr_sums: bool = attrs.field(default=True, kw_only=True)
    mated_counts: np.ndarray = attrs.field(default=None, kw_only=True)
    non_mated_counts: np.ndarray = attrs.field(default=None, kw_only=True)
    mated_sums: np.ndarray | None = attrs.field(default=None, kw_only=True)
    non_mated_sums: np.ndarray | None = attrs.field(default=None, kw_only=True)
    low: float = attrs.field(default=math.inf, kw_only=True)
    high: float = attrs.field(default=-math.inf, kw_only=True)
    bin_low: np.ndarray = attrs.field(default=None, kw_only=True)
    bin_high: np.ndarray = attrs.field(default=None, kw_only=True)
    _mated_softplus: _CompensatedSum = attrs.field(factory=_CompensatedSum, alias="mated_softplus", kw_only=True)
    _non_mated_softplus: _CompensatedSum = attrs.field(
        factory=_CompensatedSum, alias="non_mated_softplus", kw_only=True
    )

    def __attrs_post_init__(self) -> None:
        for name in ("mated_counts", "non_mated_counts"):
            if getattr(self, name) is None:
                setattr(self, name, np.zeros(self.grid.n_bins, dtype=np.int64))
        if self.bin_low is None:
            self.bin_low = np.full(self.grid.n_bins, math.inf)
        if self.bin_high is None:
            self.bin_high = np.full(self.grid.n_bins, -math.inf)
        if self.value_sums:
            for name in ("mated_sums", "non_mated_sums"):
                if getattr(self, name) is None:
                    setattr(self, name, np.zeros(self.grid.n_bins, dtype=np.float64))

    @property
    def n_mated(self) -> int:
        """Mated pairs added."""
        return int(self.mated_counts.sum())

    @property
    def n_non_mated(self) -> int:
        """Non-mated pairs added."""
        return int(self.non_mated_counts.sum())

    def _note_range(self, low: float, high: float) -> None:
        self.low, self.high = min(self.low, low), max(self.high, high)

    def _note_bin_ranges(self, index: Any, values: Any) -> None:
        """Fold the values' per-bin minimum and maximum into ``bin_low`` / ``bin_high``."""
        if _is_torch(values):
            import torch

            flat_index, flat_values = index.reshape(-1), values.reshape(-1).to(torch.float64)
            ends = []
            for start, reduce in ((math.inf, "amin"), (-math.inf, "amax")):
                out = torch.full((self.grid.n_bins,), start, dtype=torch.float64, device=values.device)
                ends.append(_to_numpy(out.scatter_reduce_(0, flat_index, flat_values, reduce=reduce)))
            np.minimum(self.bin_low, ends[0], out=self.bin_low)
            np.maximum(self.bin_high, ends[1], out=self.bin_high)
            return
        flat_index, flat_values = np.ravel(index), np.ravel(values)
        np.minimum.at(self.bin_low, flat_index, flat_values)
        np.maximum.at(self.bin_high, flat_index, flat_values)

    def add(self, mated_llr: Any, non_mated_llr: Any) -> BinnedPairs:
        """Count 1-D arrays (numpy or torch) of mated and non-mated LLRs; returns self.

        Parameters
        ----------
        mated_llr : ndarray or torch.Tensor, shape (n_mated,)
        non_mated_llr : ndarray or torch.Tensor, shape (n_non_mated,)
        """
        mated_llr, non_mated_llr = _host_view(mated_llr), _host_view(non_mated_llr)
        for values in (mated_llr, non_mated_llr):
            self._note_range(*_min_max(values))
        n_bins = self.grid.n_bins
        mated_index, non_mated_index = self.grid.index(mated_llr), self.grid.index(non_mated_llr)
        self._note_bin_ranges(mated_index, mated_llr)
        self._note_bin_ranges(non_mated_index, non_mated_llr)
        self.mated_counts += _bincount(mated_index, n_bins)
        self.non_mated_counts += _bincount(non_mated_index, n_bins)
        if self.mated_sums is not None and self.non_mated_sums is not None:
            self.mated_sums += _bincount(mated_index, n_bins, mated_llr)
            self.non_mated_sums += _bincount(non_mated_index, n_bins, non_mated_llr)
        if self.cllr_sums:
            self._mated_softplus = self._mated_softplus.plus(_softplus_sum(mated_llr, negate=True))
            self._non_mated_softplus = self._non_mated_softplus.plus(_softplus_sum(non_mated_llr))
        return self

    def add_tile(self, llr: Any, true_cols: Any) -> BinnedPairs:
        """Count a (rows, N) tile of LLRs whose mated pair of row i is column ``true_cols[i]``; returns self.

        Parameters
        ----------
        llr : ndarray or torch.Tensor, shape (rows, N)
            LLRs of every (trial, enrolled) pair of the tile; not modified.
        true_cols : ndarray or torch.Tensor of int, shape (rows,)
            Column of each row's true speaker, in [0, N).  The other N - 1 columns are
            non-mated pairs.
        """
        llr, true_cols = _host_view(llr), _host_view(true_cols)
        if llr.ndim != 2 or tuple(true_cols.shape) != (llr.shape[0],):
            raise InputError(
                f"a tile needs (rows, N) LLRs and one true column per row, got {tuple(llr.shape)} "
                f"and {tuple(true_cols.shape)}"
            )
        self._note_range(*_min_max(llr))
        rows: Any
        if _is_torch(llr):
            import torch

            rows = torch.arange(llr.shape[0], device=llr.device)
        else:
            rows = np.arange(llr.shape[0])
        index = self.grid.index(llr)
        n_bins = self.grid.n_bins
        self._note_bin_ranges(index, llr)
        mated_index = index[rows, true_cols]
        all_counts = _bincount(index, n_bins)
        mated_counts = _bincount(mated_index, n_bins)
        self.mated_counts += mated_counts
        self.non_mated_counts += all_counts - mated_counts  # exact integers
        mated = llr[rows, true_cols]
        if self.mated_sums is not None and self.non_mated_sums is not None:
            mated_sums = _bincount(mated_index, n_bins, mated)
            self.mated_sums += mated_sums
            self.non_mated_sums += _bincount(index, n_bins, llr) - mated_sums
        del index
        if self.cllr_sums:
            self._mated_softplus = self._mated_softplus.plus(_softplus_sum(mated, negate=True))
            self._non_mated_softplus = self._non_mated_softplus.plus(_softplus_sum(llr, zero_at=(rows, true_cols)))
        return self

    def merge(self, other: BinnedPairs) -> BinnedPairs:
        """A new BinnedPairs holding both (same edges); counts add exactly, sums to float64 rounding."""
        if not isinstance(other, BinnedPairs):
            raise InputError(f"can only merge BinnedPairs, got {type(other).__name__}")
        if self.grid.edges.shape != other.grid.edges.shape or not np.array_equal(self.grid.edges, other.grid.edges):
            raise InputError("can only merge BinnedPairs counted on the same bin edges")
        if (self.value_sums, self.cllr_sums) != (other.value_sums, other.cllr_sums):
            raise InputError("can only merge BinnedPairs that keep the same sums (value_sums, cllr_sums)")
        sums = {}
        if self.mated_sums is not None and other.mated_sums is not None:
            sums = {"mated_sums": self.mated_sums + other.mated_sums}
        if self.non_mated_sums is not None and other.non_mated_sums is not None:
            sums["non_mated_sums"] = self.non_mated_sums + other.non_mated_sums
        return BinnedPairs(
            self.grid,
            value_sums=self.value_sums,
            cllr_sums=self.cllr_sums,
            **sums,
            mated_counts=self.mated_counts + other.mated_counts,
            non_mated_counts=self.non_mated_counts + other.non_mated_counts,
            low=min(self.low, other.low),
            high=max(self.high, other.high),
            bin_low=np.minimum(self.bin_low, other.bin_low),
            bin_high=np.maximum(self.bin_high, other.bin_high),
            mated_softplus=self._mated_softplus.merged(other._mated_softplus),
            non_mated_softplus=self._non_mated_softplus.merged(other._non_mated_softplus),
        )

    def _check_both_classes(self) -> tuple[int, int]:
        n_mated, n_non_mated = self.n_mated, self.n_non_mated
        if n_mated == 0 or n_non_mated == 0:
            raise InputError(f"binary metrics need mated and non-mated scores, got {n_mated} and {n_non_mated}")
        return n_mated, n_non_mated

    def cllr(self) -> float:
        """Cllr (bits) of the LLRs added, from the exact sums (not the bins)."""
        n_mated, n_non_mated = self._check_both_classes()
        if not self.cllr_sums:
            raise InputError("these BinnedPairs were counted without the Cllr sums (cllr_sums=False)")
        miss = self._mated_softplus.value / n_mated
        fa = self._non_mated_softplus.value / n_non_mated
        return float((miss + fa) / (2 * math.log(2.0)))

    def error_bounds(self, *, operating_point: OperatingPoint | None = None) -> dict[str, float]:
        """Bounds on |binned - exact| for the counts at hand (see the module docstring).

        Parameters
        ----------
        operating_point : OperatingPoint, optional
            Of ``min_dcf`` and ``act_dcf`` (default ``OperatingPoint()``).

        Returns
        -------
        dict
            ``eer``, ``min_cllr`` (bits), ``min_dcf``, ``act_dcf``, ``dece_bits``,
            ``eer_threshold`` and ``dsys``: eer, min_cllr and min_dcf can only be higher
            than the exact values, dece_bits only lower, by at most the bound; act_dcf,
            eer_threshold and dsys either way.  eer, min_cllr, min_dcf and dece_bits are
            the largest differences any pairs with these per-bin counts and ranges can have
            (the best order inside every bin that holds more than one value).
        """
        point = check_operating_point(operating_point)
        n_mated, n_non_mated = self._check_both_classes()
        nonempty = (self.mated_counts + self.non_mated_counts) > 0
        mated = self.mated_counts[nonempty].astype(np.float64)
        non_mated = self.non_mated_counts[nonempty].astype(np.float64)
        binned = pav_summary(np.arange(mated.size, dtype=np.float64), mated, non_mated, operating_point=point)
        best = pav_summary(
            *_best_order(mated, non_mated, self.bin_low[nonempty] == self.bin_high[nonempty]), operating_point=point
        )
        # the closed forms of the module docstring (any order, ties not used): never below the above
        mixed = (mated > 0) & (non_mated > 0) & (self.bin_low[nonempty] < self.bin_high[nonempty])
        share_mated, share_non_mated = mated / n_mated, non_mated / n_non_mated
        if mixed.any():
            eer = float(np.minimum(share_mated, share_non_mated)[mixed].max())
            worst_mated, worst_non_mated = float(share_mated[mixed].max()), float(share_non_mated[mixed].max())
        else:
            eer = worst_mated = worst_non_mated = 0.0
        min_cllr = _hull_cost_rise(worst_mated, worst_non_mated) / (2 * math.log(2.0))
        priors = (np.arange(4096) + 0.5) / 4096  # midpoint rule: an over-estimate, the integrand is concave
        dece = float(np.mean([_hull_cost_rise(p * worst_mated, (1 - p) * worst_non_mated) for p in priors]))
        return {
            "eer": min(eer, max(float(binned["eer"]) - float(best["eer"]), 0.0)),
            "min_cllr": min(min_cllr, max(float(binned["min_cllr"]) - float(best["min_cllr"]), 0.0)),
            "min_dcf": max(float(binned["min_dcf"]) - float(best["min_dcf"]), 0.0),
            "act_dcf": _act_dcf_of_bins(self, point)[1],
            "dece_bits": min(dece / math.log(2.0), max(float(best["dece_bits"]) - float(binned["dece_bits"]), 0.0)),
            "eer_threshold": _eer_threshold_bound(self.mated_counts, self.non_mated_counts),
            "dsys": _dsys_of_bins(self)[1],
        }


def _best_order(
    mated: np.ndarray, non_mated: np.ndarray, one_value: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ordered runs of the best arrangement: in each bin of several values, its non-mated pairs below its mated ones.

    Every ROC point of the exact pairs lies in the box of its bin between the two kept
    points at the bin's edges, so it is dominated by the box's best corner, which this
    arrangement reaches; a bin of one value (``one_value``) is a run of ties either way.

    Returns
    -------
    values, n_mated, n_non_mated : ndarray, shape (K,)
        Runs for :func:`~lidframe.metrics.binary_view.pav_summary` (only their order matters).
    """
    split = ~one_value & (mated > 0) & (non_mated > 0)
    first_mated = np.where(split, 0.0, mated)  # the bin's run, or its non-mated half
    runs_mated = np.stack([first_mated, mated - first_mated], axis=1).ravel()
    runs_non_mated = np.stack([non_mated, np.zeros_like(non_mated)], axis=1).ravel()
    keep = (runs_mated + runs_non_mated) > 0
    return np.arange(int(keep.sum()), dtype=np.float64), runs_mated[keep], runs_non_mated[keep]


def _hull_cost_rise(a: float, b: float) -> float:
    """Integral over c in (0, 1) of min((1 - c) a, c b) / (c (1 - c)) = a ln(1 + b/a) + b ln(1 + a/b) (nats)."""
    if a <= 0.0 or b <= 0.0:
        return 0.0
    return a * math.log1p(b / a) + b * math.log1p(a / b)


def _eer_threshold_bound(mated_counts: np.ndarray, non_mated_counts: np.ndarray) -> float:
    """max(a_j, b_j) / 2 of the bin j ending at the first kept threshold with P_fa - P_miss <= 0."""
    nonempty = (mated_counts + non_mated_counts) > 0
    mated, non_mated = mated_counts[nonempty], non_mated_counts[nonempty]
    gap = (1.0 - np.cumsum(non_mated) / non_mated.sum()) - np.cumsum(mated) / mated.sum()
    j = int(np.argmax(gap <= 0))  # the last threshold has gap -1
    return float(max(mated[j] / mated.sum(), non_mated[j] / non_mated.sum()) / 2)


def _act_dcf_of_bins(pairs: BinnedPairs, point: OperatingPoint) -> tuple[float, float]:
    """(actDCF, bound on |binned - exact|): the counts at or below the Bayes threshold t of *point*.

    Only the bin holding t (by the grid's own index) can have values on both sides; its
    range settles it unless bin_low <= t < bin_high, where its counts are split by linear
    interpolation over the range and P_miss and P_fa may each be off by the bin's share.
    """
    n_mated, n_non_mated = pairs._check_both_classes()
    t = point.threshold
    k = int(pairs.grid.index(np.array([t]))[0])
    lowest, highest = float(pairs.bin_low[k]), float(pairs.bin_high[k])
    straddle = lowest <= t < highest
    frac = (t - lowest) / (highest - lowest) if straddle else (1.0 if t >= highest else 0.0)
    below_mated = float(pairs.mated_counts[:k].sum()) + frac * float(pairs.mated_counts[k])
    below_non_mated = float(pairs.non_mated_counts[:k].sum()) + frac * float(pairs.non_mated_counts[k])
    p_miss, p_fa = below_mated / n_mated, 1.0 - below_non_mated / n_non_mated
    value = float(point.cost(p_miss, p_fa))
    if not straddle:
        return value, 0.0
    miss_low = float(pairs.mated_counts[:k].sum()) / n_mated
    fa_low = 1.0 - float(pairs.non_mated_counts[: k + 1].sum()) / n_non_mated
    lowest_cost = float(point.cost(miss_low, fa_low))
    highest_cost = float(
        point.cost(miss_low + pairs.mated_counts[k] / n_mated, fa_low + pairs.non_mated_counts[k] / n_non_mated)
    )
    return value, max(highest_cost - value, value - lowest_cost, 0.0)


def _split_counts(pairs: BinnedPairs, coarse_edges: np.ndarray) -> tuple[np.ndarray, ...]:
    """Counts per coarse bin, by linear interpolation inside the fine bin holding each coarse edge.

    The fine bin of an edge x is the one the grid's own (monotone) index puts x in: every
    value in a lower bin is then below x and every value in a higher bin above it (also
    when rounding puts values at a nominal edge into the neighbouring bin), so that bin
    is the only one whose split can be unknown.  Its range of values [bin_low, bin_high]
    settles it when x lies outside the range (x <= bin_low: every value on the upper
    side, as a value at an edge belongs to the bin above it; x > bin_high: every value
    below); otherwise its counts are split by interpolation over that range.

    Returns
    -------
    coarse_mated, coarse_non_mated : ndarray, shape (C,)
        Estimated mated and non-mated counts per coarse bin.
    slack_mated, slack_non_mated : ndarray, shape (C,)
        How far each estimate can be off: the counts of the fine bins whose values
        straddle one of its interior edges.
    """
    interior = coarse_edges[1:-1]
    holder = pairs.grid.index(interior)
    lowest, highest = pairs.bin_low[holder], pairs.bin_high[holder]
    straddle = (lowest < interior) & (interior <= highest)
    width = np.where(straddle, highest - lowest, 1.0)
    frac = np.where(straddle, (interior - lowest) / width, np.where(interior > highest, 1.0, 0.0))
    frac = np.clip(frac, 0.0, 1.0)
    out = []
    for counts in (pairs.mated_counts, pairs.non_mated_counts):
        cumulative = np.r_[0, np.cumsum(counts)].astype(np.float64)
        at_edges = np.r_[0.0, cumulative[holder] + frac * counts[holder], cumulative[-1]]
        # no slack at the exact outer edges, nor where the holder's values lie on one side
        edge_slack = np.r_[0.0, np.where(straddle, counts[holder], 0), 0.0].astype(np.float64)
        out.append((np.diff(at_edges), edge_slack[:-1] + edge_slack[1:]))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def _dsys_of_bins(pairs: BinnedPairs, method: str = DSYS_METHOD) -> tuple[float, float]:
    """(D_sys, bound on |binned - exact|) on the exact range and bin count of :func:`~lidframe.metrics.linkability.dsys`.

    The bound: each coarse bin's term w_b g_b, g = p_mated D (omega = 1), is monotone
    (up in p_mated, down in p_non_mated), so over the box of counts its slack allows its
    largest rise and fall are at corners; the exact value lies within the summed falls
    below and the summed rises above, and in [0, 1], and the bound is the larger side.
    """
    n_mated, n_non_mated = pairs._check_both_classes()
    low, high = pairs.low, pairs.high
    if low == high:  # all scores equal: nothing links (as dsys)
        return 0.0, 0.0
    if not (math.isfinite(low) and math.isfinite(high)):
        raise InputError("linkability needs finite scores (got an infinite one)")
    edges = np.linspace(low, high, linkability_bins(n_mated) + 1)
    mated, non_mated, slack_mated, slack_non_mated = _split_counts(pairs, edges)
    density_mated, d = local_linkability_from_counts(edges, mated, non_mated, 1.0)
    value = integrate_dsys(edges, density_mated, d, method)
    weight = np.ones(edges.size - 1)
    if method == "reference":
        weight[0] = weight[-1] = 0.5

    def term(share_mated: np.ndarray, share_non_mated: np.ndarray) -> np.ndarray:
        share_mated, share_non_mated = np.clip(share_mated, 0.0, None), np.clip(share_non_mated, 0.0, None)
        return share_mated * local_d(share_mated, share_non_mated, 1.0)

    middle = term(mated / n_mated, non_mated / n_non_mated)
    highest = term((mated + slack_mated) / n_mated, (non_mated - slack_non_mated) / n_non_mated)
    lowest = term((mated - slack_mated) / n_mated, (non_mated + slack_non_mated) / n_non_mated)
    rise = float(np.sum(weight * np.maximum(highest - middle, 0.0)))
    fall = float(np.sum(weight * np.maximum(middle - lowest, 0.0)))
    # the exact D_sys lies in [value - fall, value + rise] and in [0, 1]
    return value, max(min(rise, 1.0 - value), min(fall, value), 0.0)


def binned_summary(pairs: BinnedPairs, *, operating_point: OperatingPoint | None = None) -> dict:
    """All binary-view metrics from binned pair LLRs (keys :data:`~lidframe.metrics.binary_view.BINARY_KEYS`).

    Parameters
    ----------
    pairs : BinnedPairs
        Counts of at least one mated and one non-mated pair.
    operating_point : OperatingPoint, optional
        Of ``min_dcf`` and ``act_dcf`` (default ``OperatingPoint()``).

    Returns
    -------
    dict
        As :func:`lidframe.metrics.binary_view.binary_summary` of the same LLRs, within
        :meth:`BinnedPairs.error_bounds` (``cllr`` exact; ``max_abs_llr_log10`` a lower
        bound, see the module docstring).
    """
    point = check_operating_point(operating_point)
    pairs._check_both_classes()
    nonempty = (pairs.mated_counts + pairs.non_mated_counts) > 0
    n_mated = pairs.mated_counts[nonempty].astype(np.float64)
    n_non_mated = pairs.non_mated_counts[nonempty].astype(np.float64)
    out: dict[str, float | str] = dict(
        pav_summary(pairs.grid.edges[1:][nonempty], n_mated, n_non_mated, operating_point=point)
    )
    out.update(
        cllr=pairs.cllr(),
        act_dcf=_act_dcf_of_bins(pairs, point)[0],
        eer_threshold=eer_threshold_from_counts(n_mated, n_non_mated),
        dsys=_dsys_of_bins(pairs)[0],
        dsys_method=DSYS_METHOD,
    )
    return {k: out[k] for k in BINARY_KEYS}
