"""The grid output folder's lock, ``OUT/.lock``.

:func:`folder_lock` takes an exclusive ``fcntl.flock`` on ``OUT/.lock`` for the whole
run and writes the holder's pid into it; a second ``lidframe grid`` on the same folder
stops at once, naming that pid.  The kernel drops the lock when its holder exits, even
by SIGKILL, so a stale lock file never blocks a later run.  A run that made the folder
and stops before its store exists removes the lock file and the (then empty) folder
while it still holds the lock, so it never removes what another run made; a run that
locks a lock file removed meanwhile stops and asks to be run again.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

from lidframe.errors import InputError

__all__ = ["folder_lock"]

#: The store (:mod:`lidframe.grid.store`) whose presence keeps a folder that a failed run made.
_STORE = "results.sqlite"


@contextlib.contextmanager
def folder_lock(out_dir: str | os.PathLike[str], *, made: bool = False) -> Iterator[None]:
    """Hold the exclusive lock of a grid output folder (``OUT/.lock``, module docstring).

    Parameters
    ----------
    out_dir : str or os.PathLike
        The output folder (it must exist).
    made : bool
        The caller has just created the folder.  If the lock is taken and the block then
        fails before the folder holds a store, the lock file and the folder (when nothing
        else is in it) are removed, still holding the lock: a run that stops leaves no
        folder behind, and never removes what another run made (a run that does not get
        the lock removes nothing).

    Raises
    ------
    InputError
        When another process holds it (naming its pid), when the lock file cannot be made
        or written (a full disk), or when the lock file was removed (by a run that stopped
        on a folder it had made) between opening and locking it: run again.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no flock
        warnings.warn(
            f"{out_dir}: cannot lock the output folder on this platform; do not run two grids on it at once",
            stacklevel=3,
        )
        yield
        return
    out = Path(out_dir)
    path = out / ".lock"
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a full disk (no room for one more file), a read-only folder
        if made:  # empty: this run made it a moment ago
            with contextlib.suppress(OSError):
                out.rmdir()
        raise InputError(f"{path}: cannot create the lock file ({exc.strerror or exc})") from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
            raise InputError(
                f"{out_dir}: another lidframe grid (pid {holder or 'unknown'}) is running on this folder; "
                "wait for it to finish or use another --out folder"
            ) from None
        if not _same_file(descriptor, path):
            raise InputError(
                f"{out_dir}: the lock file was removed while this grid took it (another lidframe grid stopped on "
                "this folder, which it had made); run it again"
            )
        try:
            try:
                os.ftruncate(descriptor, 0)
                os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
            except OSError as exc:  # a full disk, an I/O error
                raise InputError(f"{path}: cannot write the lock file ({exc.strerror or exc})") from None
            yield
        except BaseException:
            if made and not (out / _STORE).exists():  # nothing stored: the folder this run made goes again
                with contextlib.suppress(OSError):
                    path.unlink()
                with contextlib.suppress(OSError):
                    out.rmdir()  # only if empty: whatever else is in it stays
            raise
    finally:
        os.close(descriptor)  # releases the lock


def _same_file(descriptor: int, path: Path) -> bool:
    """Whether *path* still names the file open as *descriptor* (not removed, nor replaced)."""
    try:
        named = os.stat(path)
    except OSError:
        return False
    opened = os.fstat(descriptor)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)
