"""Progress of a long grid step: a tqdm bar on stderr when asked for and tqdm is installed."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

__all__ = ["progress_bar"]


@contextlib.contextmanager
def progress_bar(total: int, desc: str, unit: str, *, enabled: bool) -> Iterator[Callable[[int], object]]:
    """Yield ``advance(n)``, which moves a tqdm bar of *total* steps on by *n*.

    Parameters
    ----------
    total : int
        Steps of the whole task.
    desc, unit : str
        The bar's label and the name of one step.
    enabled : bool
        Show the bar; without it (or without tqdm) ``advance`` does nothing.
    """

    def nothing(n: int = 1) -> None:
        return None

    bar = None
    if enabled:
        try:
            from tqdm import tqdm
        except ImportError:  # tqdm is optional: no bar
            bar = None
        else:
            bar = tqdm(total=total, desc=desc, unit=unit)
    try:
        yield bar.update if bar is not None else nothing
    finally:
        if bar is not None:
            bar.close()
