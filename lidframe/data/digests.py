"""Digests of input files, cached by their stat signature so that a large corpus is hashed once.

The digest of an input file is the SHA-256 of its bytes (:func:`lidframe.data.fileio.file_sha256`).
Hashing every audio file of a corpus on every run would cost as much as reading the
corpus, so a :class:`DigestCache` remembers, per absolute path, the file's *stat
signature* -- size, ``st_mtime_ns``, ``st_ctime_ns``, inode and device -- together with
its digest, and hashes a file again only when its signature changed.  Replacing a file
(even by one of the same size, or by renaming another file onto it) changes its inode or
its ctime, which no ordinary tool can set back.

Two safeguards keep a cached digest honest:

* a file whose signature changes while it is hashed is not cached (its digest is still
  returned, and the next lookup hashes it again);
* an entry of the cache file recorded less than :data:`RACY_SLACK_NS` after the file's
  last modification (``st_mtime_ns``) is not trusted ("racily clean", as git calls it):
  on a file system with coarse timestamps a second write of the same size within the
  same tick would leave the signature unchanged.  Such a file is hashed again, by the
  next run, until its entry was recorded long enough after its last write.  Within one
  :class:`DigestCache` object a file is hashed at most once per signature.

The persistent cache is an SQLite file (standard-library :mod:`sqlite3`); the grid keeps
it at ``OUT/cache/digests.sqlite``.  It is only a cache: a damaged one (not SQLite,
malformed) is replaced by an empty one (with one warning), never trusted.  A cache that
cannot be used for another reason -- locked by another process, read-only, its disk
full -- is one :class:`~lidframe.errors.InputError` naming the file and what to do
(:func:`sqlite_problem` tells which); a failed write leaves the file as it was (SQLite
rolls the transaction back) and removes a file it had only just created.
"""

from __future__ import annotations

import os
import sqlite3
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from lidframe.data import fileio
from lidframe.data.fileio import StrPath
from lidframe.errors import InputError

__all__ = ["DigestCache", "RACY_SLACK_NS", "BUSY_TIMEOUT_S", "stat_signature", "sqlite_problem"]

#: An entry must be recorded at least this long (ns) after the file's mtime to be trusted (2 s: FAT's tick).
RACY_SLACK_NS = 2_000_000_000
#: Seconds a connection waits for another process's lock on the cache file before giving up.
BUSY_TIMEOUT_S = 10.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS digests (
    path TEXT PRIMARY KEY,
    size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, inode INTEGER, device INTEGER,
    sha256 TEXT, recorded_ns INTEGER
)
"""

#: (size, mtime_ns, ctime_ns, inode, device) of a file.
Signature = tuple[int, int, int, int, int]


def sqlite_problem(exc: sqlite3.Error) -> str:
    """What an SQLite error says about its database file, in one word.

    Parameters
    ----------
    exc : sqlite3.Error
        Raised by :mod:`sqlite3` on a file database.

    Returns
    -------
    str
        ``"locked"`` (another process holds it), ``"read-only"``, ``"full"`` (its disk),
        ``"damaged"`` (not an SQLite file, or malformed) or ``"other"``.
    """
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).lower()
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text or "busy" in text:
        return "locked"
    if name.startswith("SQLITE_READONLY") or "readonly" in text or "read-only" in text:
        return "read-only"
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return "full"
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "not a database" in text or "malformed" in text:
        return "damaged"
    return "other"


def _cache_error(path: Path, exc: sqlite3.Error) -> InputError:
    """The one line for a cache file that cannot be used (not for a damaged one, which is rebuilt)."""
    text = " ".join(str(exc).split())
    problem = sqlite_problem(exc)
    if problem == "locked":
        why = "is locked by another process (a running lidframe grid or an SQLite tool); try again when it has finished"
    elif problem == "read-only":
        why = "is read-only; make it (and its folder) writable or use another --out folder"
    elif problem == "full":
        why = "cannot be written: the disk is full; free space and rerun"
    else:
        why = "cannot be read or written; move it away (it is only a cache) and rerun"
    return InputError(f"{path}: the digest cache {why} ({text})")


def stat_signature(path: StrPath) -> Signature:
    """``(size, mtime_ns, ctime_ns, inode, device)`` of *path* (symbolic links followed).

    Raises
    ------
    InputError
        When *path* is not an existing regular file.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except NotADirectoryError:
        raise InputError(f"no such file: {path} (a parent is not a folder)") from None
    if not os.path.isfile(path):
        raise InputError(f"{path}: not a regular file")
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)


class DigestCache:
    """SHA-256 digests of files, remembered by (absolute path, stat signature).

    Parameters
    ----------
    path : str or os.PathLike, optional
        The SQLite file that keeps the digests between runs (created with its folder
        when first written).  None keeps them in memory, for this object only.

    Raises
    ------
    InputError
        *path* exists and is not a regular file (a FIFO would block SQLite's open).

    Attributes
    ----------
    hashed : int
        Number of files this object has read and hashed (cache misses).
    looked_up : int
        Number of :meth:`digest` calls.

    Notes
    -----
    Use it as a context manager, or call :meth:`close`, so that new digests are written.
    One process at a time should write a given cache file (the grid holds its output
    folder's lock while it does).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "a.txt").write_text("abc")
    3
    >>> with DigestCache(folder / "digests.sqlite") as cache:
    ...     cache.digest(folder / "a.txt")[:12]
    'ba7816bf8f01'
    """

    def __init__(self, path: StrPath | None = None):
        self.path = None if path is None else Path(path)
        self.hashed = 0
        self.looked_up = 0
        self._entries: dict[str, tuple[Signature, str, int]] = {}
        self._new: dict[str, tuple[Signature, str, int]] = {}
        self._damaged = False  # the file is not a readable cache: replaced on the next save
        if self.path is not None and self.path.exists():
            # sqlite opens by name, blocking: a FIFO planted here would hang it (a device, be read)
            fileio.check_input_file(self.path, "a digest cache (SQLite, kept by lidframe grid)")
            self._entries = self._read(self.path)

    def _read(self, path: Path) -> dict[str, tuple[Signature, str, int]]:
        """The entries of the cache file; {} (and one warning) for a damaged one.

        Raises
        ------
        InputError
            When the file cannot be read for another reason (locked, unreadable).
        """
        try:
            connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
            try:
                rows = connection.execute(
                    "SELECT path, size, mtime_ns, ctime_ns, inode, device, sha256, recorded_ns FROM digests"
                ).fetchall()
            finally:
                connection.close()
        except sqlite3.Error as exc:
            if sqlite_problem(exc) not in ("damaged", "other"):
                raise _cache_error(path, exc) from None
            warnings.warn(f"{path}: unreadable digest cache ({exc}); rebuilding it", stacklevel=3)
            self._damaged = True
            return {}
        return {row[0]: ((row[1], row[2], row[3], row[4], row[5]), row[6], row[7]) for row in rows}

    def digest(self, path: StrPath) -> str:
        """SHA-256 (64 hex digits) of the file's bytes, hashed only if its signature changed.

        Parameters
        ----------
        path : str or os.PathLike
            An existing file; relative paths are taken from the working directory.

        Returns
        -------
        str
            ``file_sha256(path)``.

        Raises
        ------
        InputError
            When *path* is not an existing regular file.
        """
        self.looked_up += 1
        key = os.path.abspath(path)
        signature = stat_signature(key)
        new = self._new.get(key)
        if new is not None and new[0] == signature:  # hashed by this object: one digest per file per run
            return new[1]
        entry = self._entries.get(key)
        if entry is not None and entry[0] == signature and self._trusted(signature, entry[2]):
            return entry[1]
        try:
            sha256 = fileio.file_sha256(key)
        except OSError as exc:
            raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        self.hashed += 1
        recorded = time.time_ns()
        if stat_signature(key) == signature:  # unchanged while it was read: safe to remember
            self._new[key] = (signature, sha256, recorded)
        return sha256

    @staticmethod
    def _trusted(signature: Signature, recorded_ns: int) -> bool:
        return recorded_ns - signature[1] >= RACY_SLACK_NS

    def save(self) -> None:
        """Write the digests found since the last save into the cache file (no-op in memory).

        Raises
        ------
        InputError
            When the file cannot be written: locked by another process, read-only, its
            disk full (:func:`sqlite_problem`); the file is left as it was.
        """
        if self.path is None or not self._new:
            return
        rows = [(p, *sig, sha, rec) for p, (sig, sha, rec) in self._new.items()]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"{self.path.parent}: cannot create the digest cache folder ({exc.strerror or exc})"
            ) from None
        if self._damaged:  # warned about when it was read: start it afresh
            self.path.unlink(missing_ok=True)
            self._damaged = False
        try:
            self._write(rows)
        except sqlite3.Error as exc:
            if sqlite_problem(exc) != "damaged":
                raise _cache_error(self.path, exc) from None
            # damaged since it was read (or not SQLite from the start): start it afresh
            warnings.warn(f"{self.path}: unreadable digest cache ({exc}); rebuilding it", stacklevel=2)
            self.path.unlink(missing_ok=True)
            self._entries = {}
            try:
                self._write(rows)
            except sqlite3.Error as again:
                raise _cache_error(self.path, again) from None
        self._entries.update(self._new)
        self._new = {}

    def _write(self, rows: Sequence[tuple[object, ...]]) -> None:
        """Insert *rows* in one transaction; a file this call created is removed again if it fails."""
        assert self.path is not None
        created = not self.path.exists()
        try:
            connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
            try:
                with connection:
                    connection.execute(_SCHEMA)
                    connection.executemany("INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            finally:
                connection.close()
        except sqlite3.Error:
            if created:  # nothing of it is worth keeping: no empty or partial cache file is left behind
                for leftover in (self.path, self.path.with_name(self.path.name + "-journal")):
                    leftover.unlink(missing_ok=True)
            raise

    def close(self) -> None:
        """Save (see :meth:`save`)."""
        self.save()

    def __enter__(self) -> DigestCache:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if kind is None:  # a block that failed changes nothing on disk
            self.close()
