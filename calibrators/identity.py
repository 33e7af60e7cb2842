"""Identity calibration: the attacker's scores already are natural-log LLRs.

For attackers whose back end outputs calibrated log-likelihood ratios (a PLDA model,
a calibrated neural scorer), any recalibration would only distort them.  ``Identity``
sets ``input_scale = "raw"``, so ``evaluate`` skips the row z-norm and uses the scores
as LLRs unchanged.  (The per-row invariance of LID to affine score transforms then no
longer holds: the scores' scale is their meaning.)
"""

from __future__ import annotations

from typing import Self

from numpy.typing import ArrayLike

from .base import Calibrator, check_fit_input
from .maps import AffineMap

__all__ = ["Identity"]


class Identity(Calibrator):
    """``llr(s) = s``: raw scores taken as natural-log LLRs (no z-norm, nothing fitted).

    ``fit`` only validates the dev data (so bad input is reported as for every other
    calibrator) and records its size.

    Attributes
    ----------
    n_fit_ : int
        Number of dev pairs seen by ``fit``.
    """

    name = "identity"
    input_scale = "raw"
    _fitted_attributes = ("n_fit_",)

    def __init__(self) -> None:
        pass

    def fit(self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Self:
        """Validate the dev pairs; nothing to learn.  Returns self."""
        scores, labels, sample_weight = check_fit_input(scores, labels, sample_weight)
        self.n_fit_ = int(scores.size)
        return self

    def llr_map(self) -> AffineMap:
        """The identity ``llr = s`` on raw scores (:meth:`llr` returns a float64 copy)."""
        self._check_fitted()
        return AffineMap(1.0, 0.0)
