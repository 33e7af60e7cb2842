"""Row-vector helpers shared by every cosine scorer: unit-length rows, zero rows named.

Attackers (:class:`~lidframe.attackers.EmbeddingAttacker`), embedding sets
(:meth:`~lidframe.data.embedset.EmbeddingSet.to_scoreset`), the streaming engine
(:mod:`lidframe.core.streaming`) and the simulator all scale rows to unit L2 norm with
:func:`unit_rows`, so the cosine of two vectors is computed by one rule everywhere.
Works on numpy arrays and torch tensors alike; this module does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError, preview

if TYPE_CHECKING:
    import torch

__all__ = ["ArrayOrTensor", "unit_rows", "check_nonzero_rows"]

#: A numpy array or a torch tensor; a function typed ``(x: ArrayOrTensor) -> ArrayOrTensor``
#: gives back the kind it was given (:func:`unit_rows`, the calibrators' LLR maps).
ArrayOrTensor = TypeVar("ArrayOrTensor", np.ndarray, "torch.Tensor")


def _to_numpy(values: Any) -> np.ndarray:
    return values.detach().cpu().numpy() if hasattr(values, "detach") else np.asarray(values)


def _raise_zero_rows(zero: Any, what: str, ids: ArrayLike | None) -> None:
    rows = np.flatnonzero(_to_numpy(zero))
    named = f"{what} rows: {preview(rows)}" if ids is None else f"{what}: {preview(np.asarray(ids)[rows])}"
    raise InputError(f"cosine scoring needs non-zero vectors; zero {named}")


def unit_rows(matrix: ArrayOrTensor, *, what: str, ids: ArrayLike | None = None) -> ArrayOrTensor:
    """Rows of *matrix* scaled to unit L2 norm.

    Parameters
    ----------
    matrix : ndarray or torch.Tensor, shape (n, d), float
        One vector per row.
    what : str
        What the rows are (``"trial embeddings"``), for the error message.
    ids : array_like of str, shape (n,), optional
        Row names for the error message; without them the row indices are named.

    Returns
    -------
    ndarray or torch.Tensor, shape (n, d)
        ``matrix / ||row||_2``, same type, dtype and device as *matrix*.  The norm is
        ``sqrt(sum(row * row))`` (as :func:`numpy.linalg.norm`), bit for bit.

    Raises
    ------
    InputError
        Some rows have norm 0 (all zero, or so small that their squares underflow);
        the one-line message names them by id (or by row index).
    """
    norms = (matrix * matrix).sum(1) ** 0.5  # axis 1 (positional: numpy and torch spell the keyword differently)
    zero = norms == 0
    if bool(zero.any()):
        _raise_zero_rows(zero, what, ids)
    return matrix / norms[:, None]


def check_nonzero_rows(matrix: np.ndarray, *, what: str, ids: ArrayLike | None = None) -> None:
    """Raise :class:`~lidframe.errors.InputError` naming the all-zero rows of *matrix*.

    A cheap construction-time check (no (n, d) temporary); :func:`unit_rows` applies
    the stricter rule (norm 0) when the rows are scaled.

    Parameters
    ----------
    matrix : ndarray, shape (n, d)
    what : str
        What the rows are, for the message.
    ids : array_like of str, shape (n,), optional
        Row names for the message; without them the row indices are named.
    """
    zero = ~np.asarray(matrix).any(axis=1)
    if zero.any():
        _raise_zero_rows(zero, what, ids)
