"""What an LID engine returns (:class:`EngineResult`), and which engine ran (:class:`EngineUsed`).

The one record the engines of :mod:`lidframe.core.dispatch` return and
:func:`lidframe.core.summarise.summarise` reads: it sits below both, so that the
dispatch and the summary each import it and neither imports the other.
"""

from __future__ import annotations

import attrs
import numpy as np

from lidframe.core.openset import OpenSetStats
from lidframe.metrics.binned import BinnedPairs

__all__ = ["EngineResult", "EngineUsed"]


@attrs.frozen(kw_only=True)
class EngineUsed:
    """Which LID engine ran on an eval embedding set.

    Attributes
    ----------
    kernel : str
        ``"dense"`` (the cosine matrix materialised, for the exact binary view), or the
        streaming path ``"numpy"``, ``"torch"`` or ``"triton"`` (distinct values joined
        by ``","`` when the blocks of a cluster ran different paths).
    device : str
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
    precision : str
        ``"float64"``, ``"float32"`` or ``"bfloat16"``.
    """

    kernel: str
    device: str
    precision: str

    def to_dict(self) -> dict[str, str]:
        """``{"kernel": .., "device": .., "precision": ..}``."""
        return {"kernel": self.kernel, "device": self.device, "precision": self.precision}


@attrs.frozen(eq=False, kw_only=True)
class EngineResult:
    """What an engine returns for the T trials it ran (N enrolled speakers), T_c of them enrolled.

    Attributes
    ----------
    lid_bits : ndarray, shape (T,), float64
        Closed-set LID in bits, in trial order; NaN for an outsider trial (open set).
    true_rank : ndarray of int64, shape (T,)
        Rank of the true speaker (1 = first); 0 for an outsider trial.
    pair_llr : tuple of ndarray, or None
        ``(mated (T_c,), non_mated (T_c (N - 1),))``: every enrolled trial's pair LLRs,
        in trial order, for the exact binary view; None otherwise.
    binned_pairs : BinnedPairs or None
        Per-class histograms of every pair's LLR, for the binned binary view; None otherwise.
    engine : EngineUsed or None
        The engine that ran on an embedding set; None for a score set.
    scheduler : str or None
        Address of the dask scheduler that ran the blocks; None in one process.
    n_blocks : int or None
        Blocks of trial rows run on the cluster; None in one process.
    open_stats : OpenSetStats or None
        Every trial's log evidence and log top posterior (open set); None otherwise.
    """

    lid_bits: np.ndarray
    true_rank: np.ndarray
    pair_llr: tuple[np.ndarray, np.ndarray] | None = None
    binned_pairs: BinnedPairs | None = None
    engine: EngineUsed | None = None
    scheduler: str | None = None
    n_blocks: int | None = None
    open_stats: OpenSetStats | None = None
