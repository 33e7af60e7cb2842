"""The binary view from per-class histograms of pair LLRs: streaming, mergeable, with error bounds.

The exact binary view (:mod:`lidframe.metrics.binary_view`) sorts every pair's LLR, which
needs all T x N of them at once.  Here the pairs are counted instead, tile by tile, into
per-class histograms on a grid of B bins whose edges are fixed *before* the pass
(:class:`~lidframe.metrics.binned_grid.BinGrid`); the memory is O(B + one tile) whatever T x N is.  A
:class:`BinnedPairs` holds

* the mated and non-mated **counts** per bin (int64: partial counts from tiles, processes
  or machines add up exactly, :meth:`BinnedPairs.merge`);
* compensated float64 **sums** of log(1 + e^-llr) over mated and log(1 + e^llr) over
  non-mated pairs, so ``cllr`` is exact (to float64 rounding, ~1e-15 relative), not binned;
* the smallest and largest LLR seen, overall (so D_sys gets the exact histogram range)
  and per bin (``bin_low``, ``bin_high``: a bin of one tied value loses nothing, and the
  others bound where inside the bin their values lie).

A value outside the grid is counted in the first or last bin (never dropped); the error
bounds are computed from the counts actually in each bin, so they account for it.

:func:`binned_summary` runs the code of the exact view -- PAV, ROCCH, ZEBRA, linkability
(:mod:`lidframe.metrics.detection`, :mod:`~lidframe.metrics.zebra`,
:mod:`~lidframe.metrics.linkability`) -- on the bins, each bin acting as one run of tied
scores.  That is, every PAV-based number is the *exact* value for the LLRs quantised to
the grid (any monotone quantisation: rounding at an edge does not matter).

Error bounds
------------
:meth:`BinnedPairs.error_bounds` bounds ``|binned - exact|`` per metric for the counts at hand:
the largest differences any pairs with these per-bin counts and ranges can have, derived
and measured in :mod:`lidframe.metrics.binned_bounds`.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError
from lidframe.metrics.binary_view import BINARY_KEYS, DSYS_METHOD, check_operating_point, pav_summary
from lidframe.metrics.binned_bounds import act_dcf_of_bins, bin_error_bounds, class_sizes, dsys_of_bins
from lidframe.metrics.binned_grid import DEFAULT_BINS, BinGrid, is_torch
from lidframe.metrics.detection import OperatingPoint, eer_threshold_from_counts

__all__ = ["DEFAULT_BINS", "BinGrid", "BinnedPairs", "binned_summary"]


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
    return values.detach().cpu().numpy() if is_torch(values) else np.asarray(values)


def _host_view(values: Any) -> Any:
    """A CPU torch tensor as a numpy view (no copy; numpy's bincount is the faster one there); else as is."""
    if is_torch(values) and values.device.type == "cpu":
        return values.detach().numpy()
    return values


def _softplus_sum(values: Any, *, negate: bool = False, zero_at: tuple[Any, Any] | None = None) -> float:
    """sum(log(1 + e^(+-values))) in float64, optionally leaving out the entries at (rows, cols)."""
    if is_torch(values):
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
    if is_torch(index):
        import torch

        flat_weights = None if weights is None else weights.reshape(-1).to(torch.float64)
        counts = _to_numpy(torch.bincount(index.reshape(-1), weights=flat_weights, minlength=n_bins))
    else:
        flat_weights = None if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)
        counts = np.bincount(index.reshape(-1), weights=flat_weights, minlength=n_bins)
    return counts.astype(np.int64 if weights is None else np.float64)


def _min_max(values: Any) -> tuple[float, float]:
    if values.numel() if is_torch(values) else values.size:
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
    ...     _ = pairs.add_tile(tile, np.zeros(100, dtype=int))  # returns the record itself
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
        if is_torch(values):
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
        if is_torch(llr):
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

    def cllr(self) -> float:
        """Cllr (bits) of the LLRs added, from the exact sums (not the bins)."""
        n_mated, n_non_mated = class_sizes(self)
        if not self.cllr_sums:
            raise InputError("these BinnedPairs were counted without the Cllr sums (cllr_sums=False)")
        miss = self._mated_softplus.value / n_mated
        fa = self._non_mated_softplus.value / n_non_mated
        return float((miss + fa) / (2 * math.log(2.0)))

    def error_bounds(self, *, operating_point: OperatingPoint | None = None) -> dict[str, float]:
        """Bounds on ``|binned - exact|`` for the counts at hand (:mod:`lidframe.metrics.binned_bounds`).

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
            (the best order inside every bin that holds more than one value).  act_dcf's
            is about 99 times the non-mated share of the bin that straddles the Bayes
            threshold (at P_target = 0.01): on a coarse grid up to 95, valid but useless.
        """
        return bin_error_bounds(self, check_operating_point(operating_point))


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
        bound, :mod:`lidframe.metrics.binned_bounds`).
    """
    point = check_operating_point(operating_point)
    class_sizes(pairs)
    nonempty = (pairs.mated_counts + pairs.non_mated_counts) > 0
    n_mated = pairs.mated_counts[nonempty].astype(np.float64)
    n_non_mated = pairs.non_mated_counts[nonempty].astype(np.float64)
    out: dict[str, float | str] = dict(
        pav_summary(pairs.grid.edges[1:][nonempty], n_mated, n_non_mated, operating_point=point)
    )
    out.update(
        cllr=pairs.cllr(),
        act_dcf=act_dcf_of_bins(pairs, point)[0],
        eer_threshold=eer_threshold_from_counts(n_mated, n_non_mated),
        dsys=dsys_of_bins(pairs)[0],
        dsys_method=DSYS_METHOD,
    )
    return {k: out[k] for k in BINARY_KEYS}
