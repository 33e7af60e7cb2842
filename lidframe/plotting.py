"""Matplotlib access for lidframe's plots: imported only when a plot is asked for."""

from __future__ import annotations

from pathlib import Path

from lidframe.errors import InputError
from lidframe.fileio import atomic_path

__all__ = ["pyplot", "save_figure"]


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or a clear error without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plotting needs matplotlib: pip install 'lidframe[plot]'") from None
    return plt


def save_figure(fig, path) -> None:
    """Save *fig* to *path* (format from the suffix: png, pdf, svg, ...) atomically, then close it."""
    path = Path(path)
    with atomic_path(path, suffix=path.suffix) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png")
    pyplot().close(fig)
