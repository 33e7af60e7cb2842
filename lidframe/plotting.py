"""Matplotlib access for lidframe's plots: imported only when a plot is asked for."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.fileio import StrPath, atomic_path
from lidframe.errors import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["pyplot", "save_figure", "save_lid_ccdf"]


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or a clear error without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plotting needs matplotlib: pip install 'lidframe[plot]'") from None
    return plt


def save_figure(fig: Figure, path: StrPath) -> None:
    """Save *fig* to *path* (format from the suffix: png, pdf, svg, ...) atomically, then close it."""
    target = Path(path)
    with atomic_path(target, suffix=target.suffix) as tmp:
        fig.savefig(tmp, format=target.suffix.lstrip(".") or "png")
    pyplot().close(fig)


def save_lid_ccdf(
    lids: Mapping[str, ArrayLike],
    path: StrPath,
    *,
    title: str,
    log2_n: float | None = None,
    guides: bool = False,
) -> None:
    """Plot P(LID > x) per curve (log-scale y) and save it to *path* atomically.

    Parameters
    ----------
    lids : mapping of str to array_like
        label -> 1-D array of LID values (bits), one step curve each.
    path : str or os.PathLike
        Output file; the format follows the suffix.
    title : str
    log2_n : float, optional
        Draw the log2 N ceiling.
    guides : bool
        Also draw vertical guides at 0 and 1 bit.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for label, lid in lids.items():
        x = np.sort(np.asarray(lid, dtype=np.float64))
        ccdf = 1.0 - np.arange(1, x.size + 1) / x.size
        keep = ccdf > 0
        ax.step(x[keep], ccdf[keep], where="post", label=label)
    if guides:
        ax.axvline(0.0, color="0.6", lw=0.8)
        ax.axvline(1.0, color="0.6", lw=0.8, ls="--")
    if log2_n is not None:
        ax.axvline(log2_n, color="0.3", lw=0.8, ls=":", label=f"log2 N = {log2_n:.2f}")
    ax.set_yscale("log")
    ax.set_xlabel("LID (bits)")
    ax.set_ylabel("share of trials with LID > x")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
