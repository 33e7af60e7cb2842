"""Progress over the tiles of a pass: the tile starts, with a tqdm bar where asked for and installed.

Importing this module does not import tqdm; a pass asks for a bar with ``progress=True``
(:attr:`lidframe.core.engine.Engine.progress`) and runs without one where tqdm is missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["tile_bar", "tile_starts"]


def tile_bar(n_trials: int, tile_rows: int, progress: bool, label: str) -> Any:
    """A tqdm bar over the tiles (updated by the caller), or None without *progress* or tqdm."""
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(desc=label, unit="tile", total=len(range(0, n_trials, tile_rows)))


def tile_starts(n_trials: int, tile_rows: int, progress: bool, label: str) -> Iterable[int]:
    """The first row of each tile of *tile_rows* rows, through a tqdm bar with *progress* (where tqdm is installed)."""
    starts = range(0, n_trials, tile_rows)
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return starts
        return tqdm(starts, desc=label, unit="tile", total=len(starts))
    return starts
