"""The equal error rate of each enrolled speaker, over that speaker's own pairs.

A speaker-verification trial list (VoicePrivacy's ``trials`` files: ``enrolled-speaker
trial-utterance target|nontarget``) pairs every trial utterance with enrolled speakers'
models.  **Enrolled speaker j's EER** is the EER of the pairs whose *enrolment side* is j:

* mated:     j's own trials scored against j (column j of the rows whose speaker is j);
* non-mated: the trials of every *other enrolled* speaker scored against j (column j of
  the other enrolled rows).

In a T x N score matrix that is column j, split by whether the row's speaker is j.  Trials
whose speaker is not enrolled (outsider trials) are left out, as they are from the
summary's pooled EER (:mod:`lidframe.metrics.binary_view`): the speakers' pairs split the
pooled EER's pairs exactly, each pair in the column of the model it was scored against.
The EER is :func:`lidframe.metrics.detection.eer_rocch` (ROC convex hull); NaN for a
speaker without a mated or without a non-mated pair.

VoicePrivacy's 2026 evaluation config names a per-speaker EER (``compute_per_speaker_eer``)
that its code does not compute; grouping the trial list's lines by their enrolment speaker
is the reading that splits its pooled EER in the same way.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lidframe.errors import InputError
from lidframe.metrics.detection import eer_rocch

__all__ = ["speaker_eers"]


def speaker_eers(scores: ArrayLike, true_index: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each enrolled speaker's EER over its own pairs (module docstring).

    Parameters
    ----------
    scores : array_like, shape (T, N)
        Scores or LLRs of every (trial, enrolled speaker) pair (higher: more likely mated).
    true_index : array_like of int, shape (T,)
        Column of each trial's speaker; negative for an outsider trial (left out).

    Returns
    -------
    eer : ndarray, shape (N,)
        Speaker j's EER (fraction, ROC convex hull); NaN without mated or non-mated pairs.
    n_mated : ndarray of int64, shape (N,)
        j's own trials.
    n_non_mated : ndarray of int64, shape (N,)
        The other enrolled speakers' trials, scored against j.

    Examples
    --------
    >>> eer, n_mated, n_non_mated = speaker_eers([[2.0, 0.0], [1.0, 3.0], [0.5, 1.0]], [0, 1, 1])
    >>> eer.tolist(), n_mated.tolist(), n_non_mated.tolist()
    ([0.0, 0.0], [1, 2], [2, 1])
    """
    matrix = np.asarray(scores, dtype=np.float64)
    columns = np.asarray(true_index)
    if matrix.ndim != 2 or columns.shape != (matrix.shape[0],):
        raise InputError(
            f"per-speaker EER needs (T, N) scores and T true columns, got {matrix.shape} and {columns.shape}"
        )
    if not np.issubdtype(columns.dtype, np.integer) or (columns >= matrix.shape[1]).any():
        raise InputError(f"true columns must be whole numbers below N = {matrix.shape[1]} (negative: outsider)")
    enrolled = columns >= 0
    matrix, columns = matrix[enrolled], columns[enrolled]
    n_enrolled = matrix.shape[1]
    n_mated = np.bincount(columns, minlength=n_enrolled).astype(np.int64)
    n_non_mated = columns.size - n_mated
    eer = np.full(n_enrolled, np.nan)
    for j in np.flatnonzero((n_mated > 0) & (n_non_mated > 0)):
        own = columns == j
        eer[j] = eer_rocch(matrix[own, j], matrix[~own, j])
    return eer, n_mated, n_non_mated
