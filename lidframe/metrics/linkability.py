"""Linkability D_sys (Gomez-Barrero et al., IEEE TIFS 2017), as the VoicePrivacy code bins it.

For a score s, with mated and non-mated score densities estimated by histograms,

    LR(s) = p(s | mated) / p(s | non-mated),   D(s) = max(0, 2 omega LR / (1 + omega LR) - 1)

(the posterior advantage of "linked" over "not linked" at prior ratio omega, clipped
at 0), and the global linkability is the mated-weighted mean of D:

    D_sys = integral p(s | mated) D(s) ds   in [0, 1].

Binning follows the VoicePrivacy Challenge evaluation code: ``min(floor(N_mated / 10),
100)`` equal-width bins spanning all scores (at least one bin here, where the original
would divide by zero).  A bin holding mated but no non-mated scores is taken as fully
linkable (D = 1).  Written for NumPy 2 (``np.histogram`` densities, no ``np.infty``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from lidframe.metrics.detection import _check_pair

__all__ = ["dsys", "linkability_bins"]


def linkability_bins(n_mated: int) -> int:
    """Number of histogram bins of the VoicePrivacy rule, min(floor(n_mated / 10), 100), >= 1."""
    return max(1, min(int(n_mated) // 10, 100))


def dsys(mated: ArrayLike, non_mated: ArrayLike, *, omega: float = 1.0, n_bins: int | None = None) -> float:
    """Global linkability D_sys of mated vs non-mated scores.

    Parameters
    ----------
    mated, non_mated : array_like
        Scores of mated and non-mated pairs.
    omega : float
        Prior ratio P(mated) / P(non-mated) (1 in the VoicePrivacy evaluation).
    n_bins : int, optional
        Histogram bins (default: :func:`linkability_bins` of the mated count).

    Returns
    -------
    float in [0, 1]
    """
    mated, non_mated = _check_pair(mated, non_mated)
    n_bins = linkability_bins(mated.size) if n_bins is None else int(n_bins)
    low = min(mated.min(), non_mated.min())
    high = max(mated.max(), non_mated.max())
    if high == low:  # all scores equal: nothing links
        return 0.0
    edges = np.linspace(low, high, n_bins + 1)
    density_mated = np.histogram(mated, bins=edges, density=True)[0]
    density_non_mated = np.histogram(non_mated, bins=edges, density=True)[0]
    ratio = np.divide(density_mated, density_non_mated, out=np.ones_like(density_mated), where=density_non_mated > 0)
    d = 2.0 * omega * ratio / (1.0 + omega * ratio) - 1.0
    d[omega * ratio <= 1.0] = 0.0
    d[(density_non_mated == 0) & (density_mated > 0)] = 1.0
    return float(np.sum(density_mated * d * np.diff(edges)))
