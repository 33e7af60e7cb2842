"""Calibrators: maps from row-z-normed attacker scores to natural-log likelihood ratios.

Every calibrator follows the interface in :mod:`lidframe.calibrators.base`
(scikit-learn conventions).  Built-in: :class:`Logistic` (registry name ``logistic``).
"""

from lidframe.calibrators.base import Calibrator
from lidframe.calibrators.logistic import Logistic

__all__ = ["Calibrator", "Logistic"]
