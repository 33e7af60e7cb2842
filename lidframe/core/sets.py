"""Sets as :func:`lidframe.evaluate` and the analyses take them: a score set, an embedding set or a path.

:func:`as_set` reads a set given as a path, :func:`as_scoreset` also scores an embedding
set in full, and :func:`naming_set` begins the message of an error raised while working
on a set with which set it was (dev or eval) and which file it came from.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TypeAlias

from lidframe.data.embedset import EmbeddingSet, load_set
from lidframe.data.fileio import StrPath
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError

__all__ = ["SetLike", "as_scoreset", "as_set", "naming_set", "set_label"]

#: What :func:`evaluate` and the analyses accept as a set: a score set, an embedding set, or the path of either.
SetLike: TypeAlias = ScoreSet | EmbeddingSet | StrPath


def as_set(obj: SetLike, role: str) -> ScoreSet | EmbeddingSet:
    """*obj* if it is a ScoreSet or EmbeddingSet, else load either from a path; *role* names it in errors."""
    if isinstance(obj, (ScoreSet, EmbeddingSet)):
        return obj
    if isinstance(obj, (str, Path)):
        return load_set(obj)
    raise InputError(
        f"{role} must be a ScoreSet, an EmbeddingSet or the path of a .npz/.csv set, got {type(obj).__name__}"
    )


def set_label(data: ScoreSet | EmbeddingSet, role: str) -> str:
    """``'/data/eval.npz (eval)'`` for a set read from a file, ``'eval'`` for one built in memory."""
    return role if data.source is None else f"{data.source} ({role})"


@contextlib.contextmanager
def naming_set(data: ScoreSet | EmbeddingSet, role: str) -> Iterator[None]:
    """Begin the message of an :class:`InputError` raised in the block with :func:`set_label`.

    Z-norm, calibration and prior errors name a trial or a speaker; this adds which set
    (dev or eval) and which file it was read from, e.g. ``/data/eval.npz (eval): z-norm is
    undefined for 1 trials whose scores are all equal: 'u7'``.
    """
    try:
        yield
    except InputError as exc:
        raise InputError(f"{set_label(data, role)}: {exc}") from None


def as_scoreset(obj: SetLike, role: str) -> ScoreSet:
    """Like :func:`as_set`, with an embedding set turned into its (materialised) cosine ScoreSet."""
    obj = as_set(obj, role)
    if isinstance(obj, EmbeddingSet):
        with naming_set(obj, role):
            return obj.to_scoreset()
    return obj
