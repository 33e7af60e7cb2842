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

Each writes its fitted map once, as ``llr_map()`` returning a closed-form record of
:mod:`lidframe.calibrators.maps`; ``llr()`` is derived from it (the base class applies
the record), and the streaming engine applies the same record to its tiles.
"""

from .base import Calibrator
from .beta import Beta
from .gaussian import GaussianBackend
from .identity import Identity
from .isotonic import Isotonic
from .logistic import Logistic
from .temperature import Temperature

__all__ = ["Calibrator", "Logistic", "Isotonic", "Beta", "GaussianBackend", "Temperature", "Identity"]
