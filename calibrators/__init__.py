"""Calibrators: maps from row-z-normed attacker scores to natural-log likelihood ratios.

Every calibrator follows the interface in :mod:`lidframe.calibrators.base`
(scikit-learn conventions).  Built-in, with their registry names:

=================  =============  ==========================================
class              name           shape of the LLR map
=================  =============  ==========================================
Logistic           logistic       affine, fitted on dev pairs (reference)
Isotonic           isotonic       any monotone (PAV), interpolated
Beta               beta           beta calibration on Phi(z)
GaussianBackend    gaussian       ratio of two fitted normal densities
Temperature        temperature    slope fitted on the 1-to-N task (rows)
Identity           identity       scores already are LLRs (no z-norm)
=================  =============  ==========================================
"""

from lidframe.calibrators.base import Calibrator
from lidframe.calibrators.beta import Beta
from lidframe.calibrators.gaussian import GaussianBackend
from lidframe.calibrators.identity import Identity
from lidframe.calibrators.isotonic import Isotonic
from lidframe.calibrators.logistic import Logistic
from lidframe.calibrators.temperature import Temperature

__all__ = ["Calibrator", "Logistic", "Isotonic", "Beta", "GaussianBackend", "Temperature", "Identity"]
