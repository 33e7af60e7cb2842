"""The embedding cache of the neural attackers: one ``<key>.npz`` per embedding, and what it does when damaged.

:class:`~lidframe.attackers.neural.NeuralAttacker` stores each embedding it computes as
``<cache_dir>/<key>.npz`` (the key hashes the audio samples, the weights and the
configuration) and reads it back instead of running the model.  The cache only saves
time: an entry that is not exactly what was written is never trusted, and a cache that
cannot be written never changes a result.  The policy, case by case:

* **a valid entry** -- an ``.npz`` holding exactly one array, ``embedding``, float32, of
  shape ``(dim,)``, all finite -- is a hit;
* **a corrupt entry** (not a zip, truncated, garbage, other members, another shape or
  dtype, NaN/inf, unreadable) is a miss: the embedding is recomputed and the entry
  replaced atomically (temporary file and rename, :func:`lidframe.data.fileio.atomic_path`);
* **an entry path that is not a file** (a folder named ``<key>.npz``) is refused
  (:class:`~lidframe.errors.InputError`): it is not lidframe's to delete;
* **a cache folder that is a file**, or that cannot be created because a file is in its
  path, is refused (:class:`~lidframe.errors.InputError`): the path given is wrong;
* **a folder that cannot be written** (permission denied, read-only file system, disk
  full) is used read-only: its valid entries are hits, misses are computed and not
  stored; the run succeeds.

Whatever was ignored or not stored is reported by :meth:`EmbeddingCache.report`, which
the attacker turns into one :class:`CacheWarning` per ``embed``/``enrol``/``score`` call
(naming the folder and the counts), not one per entry.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

from lidframe.data.fileio import StrPath, atomic_path
from lidframe.data.npzfile import read_npz
from lidframe.errors import InputError

__all__ = ["CacheWarning", "EmbeddingCache", "read_entry"]

#: The one array an entry holds.
MEMBER = "embedding"


class CacheWarning(UserWarning):
    """Embedding-cache entries were ignored (corrupt) or could not be stored (read-only folder)."""


def read_entry(path: StrPath, dim: int) -> np.ndarray | None:
    """The embedding stored at *path*, or None when the entry is not a valid one.

    Parameters
    ----------
    path : str or os.PathLike
        A cache entry (``<key>.npz``), which exists and is a regular file.
    dim : int
        The expected embedding length.

    Returns
    -------
    numpy.ndarray (dim,) float32, or None
        None for anything but an ``.npz`` of exactly one member ``embedding`` that is a
        finite float32 array of shape ``(dim,)``.  Never raises for bad content: every
        failure of reading it (corrupt zip, bad ``.npy`` header, pickled data, CRC or
        decompression errors, permission denied) makes it a miss.
    """
    try:  # the data wing's checked reader: headers before data, no pickles, exactly this member
        embedding = read_npz(path, (MEMBER,), what="embedding-cache entry")[MEMBER]
    except (InputError, OSError):  # damaged, foreign or unreadable: a miss, not a crash
        return None
    if embedding.dtype != np.float32 or embedding.shape != (dim,) or not np.isfinite(embedding).all():
        return None
    return embedding


def _reason(exc: OSError) -> str:
    """The OS's words for *exc* ("Permission denied"), whoever wrapped it."""
    return os.strerror(exc.errno) if exc.errno else str(exc)


def _file_in_the_way(folder: Path) -> Path | None:
    """The nearest existing ancestor of *folder* when it is not a folder (None: *folder* can be made)."""
    for ancestor in folder.parents:
        if ancestor.exists():
            return None if ancestor.is_dir() else ancestor
    return None


class EmbeddingCache:
    """One run's view of an embedding cache folder (module docstring for the policy).

    Parameters
    ----------
    folder : str or os.PathLike
        The cache folder; created (with its parents) when the first embedding is stored.

    Raises
    ------
    InputError
        *folder* is a file (or a link to nothing), or a file is in its path.

    Attributes
    ----------
    folder : Path
    bad : set of str
        Keys whose entries were corrupt (ignored) in this run.
    replaced : set of str
        Bad keys whose entries were rewritten.
    unstored : int
        Embeddings computed and not stored (the folder could not be written).
    write_error : str or None
        Why the folder could not be written (the first failure), None while it can.
    """

    def __init__(self, folder: StrPath):
        self.folder = Path(folder)
        self.bad: set[str] = set()
        self.replaced: set[str] = set()
        self.unstored = 0
        self.write_error: str | None = None
        if self.folder.is_symlink() and not self.folder.exists():
            raise InputError(f"{self.folder}: the embedding cache folder is a link to nothing; give a folder")
        if self.folder.exists() and not self.folder.is_dir():
            raise InputError(f"{self.folder}: the embedding cache folder is a file; give a folder for the cache")
        blocker = _file_in_the_way(self.folder)
        if blocker is not None:
            raise InputError(f"{self.folder}: cannot create the embedding cache folder: {blocker} is a file")

    def path(self, key: str) -> Path:
        """Where the entry of *key* lives."""
        return self.folder / f"{key}.npz"

    def get(self, key: str, dim: int) -> np.ndarray | None:
        """The cached embedding (dim,) float32 of *key*, or None (a miss; a corrupt entry is counted in ``bad``).

        Raises
        ------
        InputError
            The entry's path exists and is not a regular file.
        """
        path = self.path(key)
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            return None
        except OSError:  # e.g. the folder is not searchable: nothing can be read from it
            self.bad.add(key)
            return None
        if not stat.S_ISREG(mode):
            raise InputError(f"{path}: embedding cache entry is not a file (expected an .npz written by lidframe)")
        embedding = read_entry(path, dim)
        if embedding is None:
            self.bad.add(key)
        return embedding

    def put(self, key: str, embedding: np.ndarray) -> None:
        """Store *embedding* (dim,) float32 as the entry of *key*, atomically; count it in ``unstored`` if the folder cannot be written."""
        if self.write_error is not None:
            self.unstored += 1
            return
        try:  # the folder is made on the first store: a run refused before it leaves none behind
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # permission denied, read-only file system: compute, do not store
            self.write_error = f"cannot create it: {_reason(exc)}"
            self.unstored += 1
            return
        try:
            with atomic_path(self.path(key), suffix=".npz") as tmp, open(tmp, "wb") as handle:
                np.savez(handle, embedding=np.asarray(embedding, dtype=np.float32))  # the one MEMBER
        except OSError as exc:  # permission denied, read-only file system, disk full
            self.write_error = _reason(exc)
            self.unstored += 1
            return
        if key in self.bad:
            self.replaced.add(key)

    def report(self) -> str | None:
        """One line on what this run ignored or could not store; None when nothing."""
        parts = []
        if self.bad:
            count = len(self.bad)
            part = f"{count} corrupt or unreadable entr{'y' if count == 1 else 'ies'} ignored and recomputed"
            if len(self.replaced) == count:
                part += " (replaced)"
            else:
                part += f" ({len(self.replaced)} replaced)"
            parts.append(part)
        if self.unstored:
            parts.append(
                f"{self.unstored} new embedding{'' if self.unstored == 1 else 's'} not stored "
                f"({self.write_error}): the folder is used read-only"
            )
        return f"embedding cache {self.folder}: " + "; ".join(parts) if parts else None
