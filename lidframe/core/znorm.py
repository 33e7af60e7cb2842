"""Row-wise z-normalisation of a trial's scores, and z-norm-then-calibrate.

For trial row *i* with scores s_i1 .. s_iN against the N enrolled speakers::

    z_ij = (s_ij - mean_i) / std_i,   std_i = sqrt(sum_j (s_ij - mean_i)^2 / (N - znorm_ddof))

``znorm_ddof=1`` (sample standard deviation) is the published reference code's choice
and lidframe's default; ``znorm_ddof=0`` (population) reproduces the paper's worked
example.  The z-norm makes LID invariant to any per-row affine map with positive scale,
and is undefined for a row whose N scores are all equal: such rows raise an error naming
them.

A calibrator reads z-scores unless its ``input_scale`` is ``"raw"``
(:func:`uses_znorm`).  :func:`calibrator_input` (what a calibrator is fitted on) and
:func:`calibrated_llr` (its LLRs of raw scores) are the one place that rule is applied;
every engine and analysis calls them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeAlias, cast

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError, preview
from lidframe.registry import CalibratorLike, capabilities_of

__all__ = [
    "row_znorm",
    "row_znorm_parts",
    "RowZNorm",
    "check_ddof",
    "uses_znorm",
    "calibrator_input",
    "calibrated_llr",
    "FittedCalibrator",
]

#: What turns z-scores into LLRs: a fitted calibrator (its ``llr`` is applied) or an
#: elementwise, non-decreasing map (a record of :mod:`lidframe.calibrators.maps`, a function).
FittedCalibrator: TypeAlias = CalibratorLike | Callable[[np.ndarray], Any]

# A row whose standard deviation is below this many ulps of its largest magnitude is
# constant to float64 resolution: dividing by its std would amplify rounding noise.
_ZERO_STD_ULPS = 16.0


def check_ddof(znorm_ddof: object) -> int:
    """Return *znorm_ddof* as int if it is 0 or 1, else raise :class:`InputError`."""
    if isinstance(znorm_ddof, bool) or znorm_ddof not in (0, 1):
        raise InputError(f"znorm_ddof must be 0 (population std) or 1 (sample std), got {znorm_ddof!r}")
    return int(znorm_ddof)


def row_znorm(
    scores: ArrayLike, znorm_ddof: int = 1, *, row_names: ArrayLike | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Z-normalise each row of *scores* over its columns.

    Parameters
    ----------
    scores : array_like, shape (T, N)
        Raw similarities; N >= 2.
    znorm_ddof : {0, 1}
        Delta degrees of freedom of the row standard deviation.
    row_names : array_like of str, shape (T,), optional
        Names used in the error message for constant rows (e.g. trial ids).
    out : ndarray, shape (T, N), float64, optional
        Where the z-scores go (a buffer the caller reuses; not *scores*); default a new array.

    Returns
    -------
    z : ndarray, shape (T, N), float64
        *out*, or a new array; each row has mean 0 and ``std(ddof=znorm_ddof)`` 1.

    Raises
    ------
    InputError
        If a row's scores are all equal (to float64 resolution): its z-norm is undefined.
    """
    return row_znorm_parts(scores, znorm_ddof, row_names=row_names, out=out).z


@attrs.frozen(eq=False)
class RowZNorm:
    """A row z-norm and the row statistics it was computed from (:func:`row_znorm_parts`).

    ``z = (scores - mean) / std[:, None]``, computed in that order (two roundings per value).

    Attributes
    ----------
    z : ndarray, shape (T, N), float64
        The z-scores.
    row_max : ndarray, shape (T,), float64
        Each row's largest score (NaN for a row holding a NaN).
    mean : ndarray, shape (T, 1), float64
        Each row's mean score.
    std : ndarray, shape (T,), float64
        Each row's standard deviation (``znorm_ddof`` as asked).
    """

    z: np.ndarray
    row_max: np.ndarray
    mean: np.ndarray
    std: np.ndarray


def row_znorm_parts(
    scores: ArrayLike, znorm_ddof: int = 1, *, row_names: ArrayLike | None = None, out: np.ndarray | None = None
) -> RowZNorm:
    """:func:`row_znorm`, with the row maxima, means and standard deviations it computed on the way.

    The engine maps a row's maximum score through the same roundings as its z-scores to get
    the row's largest LLR without another pass (:func:`lidframe.core.lid.lid_from_scores`).
    Parameters, errors: as :func:`row_znorm`.
    """
    znorm_ddof = check_ddof(znorm_ddof)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[1] < 2:
        raise InputError(f"row_znorm needs a (T, N) array with N >= 2, got shape {scores.shape}")
    if out is not None and np.may_share_memory(out, scores):  # (the scores are read again after z is written)
        raise ValueError("row_znorm_parts: out must not share memory with scores")
    row_max = scores.max(axis=1)
    mean = scores.mean(axis=1, keepdims=True)
    # z: the new array, or the caller's buffer (no copy of the scores first: one pass less)
    z = np.subtract(scores, mean, out=out)
    std = np.sqrt(row_sum_of_squares(z) / (z.shape[1] - znorm_ddof))
    # rows of equal scores (constant_std): the largest |score| of a row is read only where its std and
    # mean leave the answer open (surely_varying), instead of a pass for every row's smallest score
    constant = np.zeros(std.shape, dtype=bool)
    open_rows = np.flatnonzero(~surely_varying(std, mean[:, 0], scores.shape[1]))
    if open_rows.size:
        scale = np.maximum(row_max[open_rows], -scores[open_rows].min(axis=1))
        constant[open_rows] = constant_std(std[open_rows], scale)
    if constant.any():
        rows = np.flatnonzero(constant)
        names = rows if row_names is None else np.asarray(row_names)[rows]
        label = "rows" if row_names is None else "trials"
        raise InputError(f"z-norm is undefined for {rows.size} {label} whose scores are all equal: {preview(names)}")
    z /= std[:, None]
    return RowZNorm(z=z, row_max=row_max, mean=mean, std=std)


def row_sum_of_squares(z: np.ndarray) -> np.ndarray:
    """Each row's sum of squares, summed as NumPy's ``einsum("ij,ij->i", z, z)`` sums the rows of a larger array.

    ``einsum`` sums a lone row of more than 8,192 values (an array of shape (1, N)) in
    another order than the same row among others, so a tile or block of one row would get
    other last bits than the row has in any larger one; a lone row is summed as one of two
    copies of itself instead.  For rows stored one after the other (C order), the engines'
    numbers do not depend on how the trials are tiled.

    Parameters
    ----------
    z : ndarray, shape (T, N), float64

    Returns
    -------
    ndarray, shape (T,), float64
    """
    if z.shape[0] == 1:
        twice = np.concatenate([z, z])
        return np.einsum("ij,ij->i", twice, twice)[:1]
    return np.einsum("ij,ij->i", z, z)


def constant_std(std: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Rows whose standard deviation *std* is at most :data:`_ZERO_STD_ULPS` ulps of *scale*, their largest |score|.

    Such a row is constant to float64 resolution: its z-norm is undefined.
    """
    return std <= _zero_std(scale)


def _zero_std(scale: np.ndarray) -> np.ndarray:
    """The largest std that :func:`constant_std` calls zero for rows whose largest |score| is *scale*."""
    return _ZERO_STD_ULPS * np.finfo(np.float64).eps * scale


# Below this, the squares summed into a row's std may have lost more than half their value to
# underflow, and :func:`surely_varying` does not decide.
_NORMAL_STD = 2.0**-500


def surely_varying(std: np.ndarray, mean: np.ndarray, n_enrolled: int) -> np.ndarray:
    """Rows that :func:`constant_std` finds not constant whatever their largest |score|, decided without it.

    ``2 (|mean| + sqrt(N) std)`` bounds a row's largest |score| from above: for any centre m,
    ``max_j |s_j| <= |m| + sqrt(sum_j (s_j - m)^2)``, and the computed std of the row (the
    sum of squares of the rounded ``s_j - mean``) is within a factor 2 of
    ``sqrt(sum_j (s_j - mean)^2 / (N - ddof))`` as long as no square underflows away
    (``std > 2^-500``) or overflows (then the bound is inf or NaN and decides nothing).  A row
    whose std exceeds :data:`_ZERO_STD_ULPS` ulps of that bound exceeds them of its largest
    |score| too.  False (undecided) is always safe: the caller then computes the largest |score|.

    Parameters
    ----------
    std, mean : ndarray, shape (T,), float64
        The row statistics of :func:`row_znorm_parts`, as computed.
    n_enrolled : int
        N, the scores per row.
    """
    with np.errstate(over="ignore"):  # an overflow makes the bound inf: undecided, silently
        bound = 2.0 * (np.abs(mean) + math.sqrt(n_enrolled) * std)
    return (std > _NORMAL_STD) & (std > _zero_std(bound))  # (False where the bound is NaN)


def uses_znorm(calibrator: object) -> bool:
    """Whether *calibrator* reads row z-scores (its ``input_scale`` is ``"znorm"``, the default).

    Parameters
    ----------
    calibrator : calibrator, map or callable
        Anything with an optional ``input_scale`` attribute, ``"znorm"`` or ``"raw"``.

    Raises
    ------
    InputError
        If ``input_scale`` is neither.
    """
    return capabilities_of("calibrator", calibrator).input_scale == "znorm"


def calibrator_input(
    scores: ArrayLike, calibrator: object, *, znorm_ddof: int = 1, row_names: ArrayLike | None = None
) -> np.ndarray:
    """The scores as *calibrator* reads them: row z-scores, or the raw scores for ``input_scale="raw"``.

    Parameters
    ----------
    scores : array_like, shape (T, N)
        Raw attacker similarities.
    calibrator : calibrator or callable
        Its ``input_scale`` decides (:func:`uses_znorm`).
    znorm_ddof : {0, 1}
        Delta degrees of freedom of the row z-norm.
    row_names : array_like of str, shape (T,), optional
        Trial ids, to name constant rows in errors.

    Returns
    -------
    ndarray, shape (T, N), float64
        A new array of z-scores, or *scores* as float64 (not copied when already so).
    """
    if uses_znorm(calibrator):
        return row_znorm(scores, znorm_ddof, row_names=row_names)
    check_ddof(znorm_ddof)
    return np.asarray(scores, dtype=np.float64)


def calibrated_llr(
    scores: ArrayLike, calibrator: FittedCalibrator, *, znorm_ddof: int = 1, row_names: ArrayLike | None = None
) -> np.ndarray:
    """Natural-log LLRs of raw scores: :func:`calibrator_input`, then the calibrator's map.

    Parameters
    ----------
    scores : array_like, shape (T, N)
        Raw attacker similarities.
    calibrator : fitted calibrator or callable
        A fitted calibrator (its ``llr`` method is applied) or an elementwise,
        non-decreasing map from z-scores to LLRs (e.g. a record of
        :mod:`lidframe.calibrators.maps`, or a function).
    znorm_ddof : {0, 1}
        Delta degrees of freedom of the row z-norm.
    row_names : array_like of str, shape (T,), optional
        Trial ids, to name constant rows in errors.

    Returns
    -------
    ndarray, shape (T, N), float64
        LLRs in nats.

    Raises
    ------
    InputError
        A constant row (z-norm undefined), a bad ``input_scale``, or a map that
        returns another shape.
    """
    z = calibrator_input(scores, calibrator, znorm_ddof=znorm_ddof, row_names=row_names)
    llr_of = getattr(calibrator, "llr", None)
    llr = np.asarray(
        llr_of(z) if callable(llr_of) else cast(Callable[[np.ndarray], Any], calibrator)(z), dtype=np.float64
    )
    if llr.shape != z.shape:
        raise InputError(f"the calibrator's llr() returned shape {llr.shape} for input shape {z.shape}")
    return llr
