"""The closed forms the streaming engine rests on: cosine z-scores without the (T, N) matrix, and the pairs' LLR grid.

With unit trial rows x_i and enrolled rows e_j, the cosine scores s_ij = x_i . e_j of a
row have mean x_i . e_bar and variance x_i^T Sigma x_i (Sigma the covariance of the
enrolled rows, ``ddof`` as the z-norm's), so the z-scores are dot products of the trial
rows, rescaled, with the centred enrolled rows (:func:`closed_form_znorm`; the maths:
:mod:`lidframe.core.streaming`).  The same statistics bound every pair's ``|z|`` before the
pass (:func:`pair_z_bound`), which fixes the LLR grid the binned binary view counts on
(:func:`llr_grid`, :func:`tile_binned_pairs`).  The functions take numpy arrays or torch
tensors alike where their first argument is a tile's or a set's rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from lidframe.calibrators.maps import llr_map_of
from lidframe.core.znorm import FittedCalibrator
from lidframe.data.vectors import unit_rows
from lidframe.errors import InputError, preview
from lidframe.metrics.binned import BinnedPairs
from lidframe.metrics.binned_grid import BinGrid

__all__ = [
    "as_llr_map",
    "check_embeddings",
    "closed_form_znorm",
    "llr_grid",
    "pair_z_bound",
    "tile_binned_pairs",
    "with_intercept",
]

#: A score-to-LLR map (:mod:`lidframe.calibrators.maps`): numpy arrays or torch tensors in, the same kind out.
LLRMapLike = Callable[[Any], Any]

# a row whose cosine scores have a standard deviation below this is constant to
# float64 resolution (cosines are bounded by 1 in magnitude)
_ZERO_STD = 16.0 * np.finfo(np.float64).eps


def to_numpy(values: Any) -> np.ndarray:
    """A torch tensor's values as a numpy array (copied to the host), or an array as one."""
    return values.detach().cpu().numpy() if hasattr(values, "detach") else np.asarray(values)


def closed_form_znorm(trial_unit: Any, enrol_unit: Any, ddof: int, znorm: bool, row_names: Any) -> tuple[Any, Any]:
    """(keys (N, d), row_scale (T,)) in float64: z_ij = row_scale_i * trial_unit_i . keys_j."""
    if not znorm:
        return enrol_unit, trial_unit[:, 0] * 0.0 + 1.0  # ones, as a numpy array or a tensor
    n_enrolled = enrol_unit.shape[0]
    keys = enrol_unit - enrol_unit.mean(axis=0)
    covariance = (keys.T @ keys) / (n_enrolled - ddof)
    variance = ((trial_unit @ covariance) * trial_unit).sum(axis=1)
    std = variance.clip(min=0.0) ** 0.5
    constant = std <= _ZERO_STD
    if bool(constant.any()):
        rows = np.flatnonzero(to_numpy(constant))
        names = rows if row_names is None else np.asarray(row_names)[rows]
        raise InputError(f"z-norm is undefined for {rows.size} trials whose scores are all equal: {preview(names)}")
    return keys, 1.0 / std


def pair_z_bound(keys: Any, row_scale: Any, n_enrolled: int, ddof: int, znorm: bool) -> float:
    """An upper bound of ``|z_ij|`` over every pair, before the pass.

    Cauchy-Schwarz: z_ij = row_scale_i x_i . k_j with ``|x_i| = 1``, so
    ``|z_ij| <= max_i row_scale_i * max_j |k_j|``; with the z-norm also Samuelson's inequality: a value of a
    row standardised with ``ddof`` is at most sqrt((N - 1) (N - ddof) / N) from the mean.
    """
    key_norm = float(to_numpy((keys * keys).sum(axis=1)).max()) ** 0.5
    bound = float(to_numpy(row_scale).max()) * key_norm
    if znorm:
        bound = min(bound, math.sqrt((n_enrolled - 1) * (n_enrolled - ddof) / n_enrolled))
    return bound


def llr_grid(llr_map: Callable[[np.ndarray], ArrayLike], z_bound: float, n_bins: int) -> BinGrid:
    """Equal LLR bins covering map([-z_bound, z_bound]), fixed before the pass.

    Parameters
    ----------
    llr_map : callable
        Non-decreasing score-to-LLR map (:mod:`lidframe.calibrators.maps`), intercept included.
    z_bound : float
        Bound of ``|z|`` over every pair (:func:`pair_z_bound`).
    n_bins : int

    Returns
    -------
    BinGrid
        Every pair's LLR lies inside it (to rounding; anything outside is counted in an end bin).
    """
    ends = np.asarray(llr_map(np.array([-z_bound, z_bound], dtype=np.float64)), dtype=np.float64)
    if not np.isfinite(ends).all():
        raise InputError(
            f"the calibrator maps z = +-{z_bound:.3g} to LLRs {ends.tolist()}; binary metrics need finite LLRs"
        )
    low, high = float(ends.min()), float(ends.max())
    margin = 1e-9 * max(high - low, abs(low), abs(high), 1.0)  # rounding of the products
    return BinGrid.uniform(low - margin, high + margin, n_bins)


def check_embeddings(trial_emb: ArrayLike, enrol_emb: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Unit trial (T, d) and enrolled (N, d) rows, float64; an InputError for bad shapes, N < 2 or NaN/inf rows."""
    trial_emb = np.asarray(trial_emb, dtype=np.float64)
    enrol_emb = np.asarray(enrol_emb, dtype=np.float64)
    if trial_emb.ndim != 2 or enrol_emb.ndim != 2 or trial_emb.shape[1] != enrol_emb.shape[1]:
        raise InputError(
            f"trial (T, d) and enrolled (N, d) embeddings needed, got {trial_emb.shape} and {enrol_emb.shape}"
        )
    if enrol_emb.shape[0] < 2:
        raise InputError(f"LID needs N >= 2 enrolled speakers, got {enrol_emb.shape[0]}")
    for what, values in (("trial", trial_emb), ("enrolled", enrol_emb)):
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            raise InputError(f"{what} embeddings hold NaN or inf in rows {preview(np.flatnonzero(bad))}")
    return unit_rows(trial_emb, what="trial"), unit_rows(enrol_emb, what="enrolled")


def as_llr_map(calibrator: FittedCalibrator) -> LLRMapLike:
    """The closed-form map of a fitted calibrator (or the map itself)."""
    return calibrator if callable(calibrator) and not hasattr(calibrator, "llr") else llr_map_of(calibrator)


def tile_binned_pairs(
    binary_bins: int | BinGrid | None, llr_map: LLRMapLike, keys: Any, row_scale: Any, ddof: int, znorm: bool
) -> BinnedPairs | None:
    """An empty BinnedPairs on a grid that holds every pair's LLR, or None without *binary_bins*.

    *binary_bins* is a number of bins (the grid is fixed here from these rows) or a
    :class:`BinGrid` fixed by the caller (the blocks of :mod:`lidframe.core.cluster`).
    """
    if binary_bins is None:
        return None
    if isinstance(binary_bins, BinGrid):
        return BinnedPairs(binary_bins)
    z_bound = pair_z_bound(keys, row_scale, keys.shape[0], ddof, znorm)
    return BinnedPairs(llr_grid(llr_map, z_bound, binary_bins))


def with_intercept(llr: Any, llr_map: Any, folded: bool) -> Any:
    """The tile's LLRs with the intercept that the LID path leaves out of a folded affine map."""
    return llr + llr_map.intercept if folded and llr_map.intercept != 0 else llr
