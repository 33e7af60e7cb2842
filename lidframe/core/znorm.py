"""Row-wise z-normalisation of a trial's scores against all N enrolled speakers.

For trial row *i* with scores s_i1 .. s_iN::

    z_ij = (s_ij - mean_i) / std_i,   std_i = sqrt(sum_j (s_ij - mean_i)^2 / (N - ddof))

``ddof=1`` (sample standard deviation) is the published reference code's choice and
lidframe's default; ``ddof=0`` (population) reproduces the paper's worked example.  The
z-norm makes LID invariant to any per-row affine map with positive scale, and is
undefined for a row whose N scores are all equal: such rows raise an error naming them.
"""

from __future__ import annotations

import numpy as np

from lidframe.errors import InputError, preview

__all__ = ["row_znorm", "check_ddof"]

# A row whose standard deviation is below this many ulps of its largest magnitude is
# constant to float64 resolution: dividing by its std would amplify rounding noise.
_ZERO_STD_ULPS = 16.0


def check_ddof(ddof) -> int:
    """Return *ddof* as int if it is 0 or 1, else raise :class:`InputError`."""
    if isinstance(ddof, bool) or ddof not in (0, 1):
        raise InputError(f"znorm ddof must be 0 (population std) or 1 (sample std), got {ddof!r}")
    return int(ddof)


def row_znorm(scores, ddof: int = 1, *, row_names=None) -> np.ndarray:
    """Z-normalise each row of *scores* over its columns.

    Parameters
    ----------
    scores : array_like, shape (T, N)
        Raw similarities; N >= 2.
    ddof : {0, 1}
        Delta degrees of freedom of the row standard deviation.
    row_names : array_like of str, shape (T,), optional
        Names used in the error message for constant rows (e.g. trial ids).

    Returns
    -------
    z : ndarray, shape (T, N), float64
        A new array; each row has mean 0 and ``std(ddof=ddof)`` 1.

    Raises
    ------
    InputError
        If a row's scores are all equal (to float64 resolution): its z-norm is undefined.
    """
    ddof = check_ddof(ddof)
    z = np.array(scores, dtype=np.float64, copy=True)
    if z.ndim != 2 or z.shape[1] < 2:
        raise InputError(f"row_znorm needs a (T, N) array with N >= 2, got shape {z.shape}")
    scale = np.maximum(z.max(axis=1), -z.min(axis=1))  # max |s| per row, no temporary
    z -= z.mean(axis=1, keepdims=True)
    std = np.sqrt(np.einsum("ij,ij->i", z, z) / (z.shape[1] - ddof))
    constant = std <= _ZERO_STD_ULPS * np.finfo(np.float64).eps * scale
    if constant.any():
        rows = np.flatnonzero(constant)
        names = rows if row_names is None else np.asarray(row_names)[rows]
        label = "rows" if row_names is None else "trials"
        raise InputError(f"z-norm is undefined for {rows.size} {label} whose scores are all equal: {preview(names)}")
    z /= std[:, None]
    return z
