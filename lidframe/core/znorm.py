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

from collections.abc import Callable
from typing import Any, TypeAlias, cast

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError, preview
from lidframe.registry import CalibratorLike

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
    row_max = scores.max(axis=1)
    scale = np.maximum(row_max, -scores.min(axis=1))  # max |s| per row, no temporary
    mean = scores.mean(axis=1, keepdims=True)
    # z: the new array, or the caller's buffer (no copy of the scores first: one pass less)
    z = np.subtract(scores, mean, out=out)
    std = np.sqrt(np.einsum("ij,ij->i", z, z) / (z.shape[1] - znorm_ddof))
    constant = std <= _ZERO_STD_ULPS * np.finfo(np.float64).eps * scale
    if constant.any():
        rows = np.flatnonzero(constant)
        names = rows if row_names is None else np.asarray(row_names)[rows]
        label = "rows" if row_names is None else "trials"
        raise InputError(f"z-norm is undefined for {rows.size} {label} whose scores are all equal: {preview(names)}")
    z /= std[:, None]
    return RowZNorm(z=z, row_max=row_max, mean=mean, std=std)


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
    scale = getattr(calibrator, "input_scale", "znorm")
    if scale not in ("znorm", "raw"):
        raise InputError(f"{type(calibrator).__name__}.input_scale must be 'znorm' or 'raw', got {scale!r}")
    return scale == "znorm"


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
