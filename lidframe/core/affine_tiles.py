"""An affine calibrator in place, tile by tile: the fast path of the dense engine (:func:`lidframe.core.lid.lid_from_scores`).

An :class:`~lidframe.calibrators.maps.AffineMap`, or a calibrator whose ``llr`` is its
affine ``llr_map()`` (logistic, temperature, identity, Gaussian with equal variances:
:func:`affine_form`), runs in place in each thread's reused tile buffer, rounding as
``z * slope + intercept`` does (:func:`affine_tile_llr`), and each row's largest LLR comes
from its largest score (:func:`affine_peak`) instead of another pass over the tile: the
numbers are those of the expression, bit for bit (``tests/core/test_affine_in_place.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lidframe.calibrators.base import Calibrator
from lidframe.calibrators.maps import AffineMap
from lidframe.core.znorm import row_znorm_parts

__all__ = ["affine_form", "affine_peak", "affine_tile_llr"]


def affine_form(calibrator: object) -> AffineMap | None:
    """The :class:`AffineMap` whose ``z * slope + intercept`` is exactly what *calibrator* gives for float64 z.

    That is the map itself, or a :class:`~lidframe.calibrators.base.Calibrator` that keeps
    the base ``llr`` (the fitted ``llr_map()`` applied) and whose ``llr_map()`` is affine.
    None for anything else, and where ``llr_map()`` raises (not fitted, ...): the generic
    path then raises the same error at the same point as it always has.
    """
    if type(calibrator) is AffineMap:
        return calibrator
    if not isinstance(calibrator, Calibrator) or type(calibrator).llr is not Calibrator.llr:
        return None
    try:
        form = calibrator.llr_map()
    except Exception:  # noqa: BLE001 -- whatever llr_map() raises, the generic path raises it, in its own order
        return None
    return form if type(form) is AffineMap else None


def affine_peak(
    row_max: np.ndarray, mean: np.ndarray, std: np.ndarray, affine: AffineMap, llr: np.ndarray
) -> np.ndarray | None:
    """Each row's largest LLR, bit for bit ``llr.max(axis=1)``, from the row's largest score, without a pass.

    ``llr = ((s - mean) / std) * slope + intercept`` rounds each step; with ``std > 0`` and
    ``slope > 0`` every step is non-decreasing in s (rounding is monotone), so the largest
    LLR of a row is its largest score taken through the same steps.  That settles the value,
    and so the bits of a finite non-zero one; a zero (whose sign the maximum of a row of
    +0.0 and -0.0 leaves open) or a non-finite value (a NaN score, an overflow) is found by
    ``max`` over the tile instead (laid out as it is).  None where the slope is not > 0.
    """
    if not affine.slope > 0:
        return None
    peak = np.subtract(row_max, mean[:, 0])
    np.divide(peak, std, out=peak)
    affine.apply_into(peak, out=peak)
    unsure = ~np.isfinite(peak) | (peak == 0)
    if unsure.any():  # (rare) over the tile as it is laid out, as the maximum without this shortcut runs
        peak[unsure] = llr.max(axis=1)[unsure]
    return peak


def affine_tile_llr(
    tile_scores: np.ndarray,
    affine: AffineMap,
    znorm: bool,
    znorm_ddof: int,
    names: Any,
    buffer: np.ndarray,
    c_order: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(LLRs, each row's largest LLR or None) of a tile of scores under an affine map, in *buffer* where it can.

    With the z-norm the map runs in place on the z-scores, in *buffer* for scores stored row by row
    (others get a new tile laid out as theirs, as ``scores - mean`` makes it, for the row sums of
    squares follow the layout, and so do their last bits), and the peak comes from each row's
    largest score (:func:`affine_peak`).  On raw scores the map writes into *buffer* (scores
    stored row by row) or makes a new tile laid out as theirs, as the expression does.
    """
    if znorm:
        parts = row_znorm_parts(tile_scores, znorm_ddof, row_names=names, out=buffer if c_order else None)
        llr = affine.apply_into(parts.z, out=parts.z)
        return llr, affine_peak(parts.row_max, parts.mean, parts.std, affine, llr)
    if c_order:
        return affine.apply_into(tile_scores, out=buffer), None
    return affine(tile_scores), None
