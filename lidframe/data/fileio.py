"""Atomic file output, output-path checks, JSON writing and file digests.

Atomic output writes to a temporary file beside the target, then renames it: a reader
never sees a half-written file, and a failed run leaves no output behind.  The file gets
the permissions a plain ``open(path, "w")`` would give it (``0o666`` less the umask for a
new file, the old mode for a replaced one), not the ``0o600`` of a temporary file.  A
write that fails (a full disk, ENOSPC) is reported against the target's name, never the
temporary one's.  Inside :func:`staged_outputs` the renames wait until the whole block
has succeeded, so a run that writes several files writes all of them or none.

:func:`check_output_path` checks a target before any work starts (its folder exists and
is writable, and it is not itself a folder), :func:`check_output_dir` an output folder.
:func:`file_sha256` is the one content digest of a file (checkpoint hashes of the neural
attackers, input digests of the grid's cache keys).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, TypeAlias

from lidframe.errors import InputError

__all__ = [
    "StrPath",
    "atomic_path",
    "atomic_write",
    "check_output_dir",
    "check_output_path",
    "file_sha256",
    "json_clean",
    "staged_outputs",
    "write_json",
]

#: What a path parameter accepts: a ``str`` or any ``os.PathLike[str]`` (e.g. :class:`pathlib.Path`).
StrPath: TypeAlias = str | os.PathLike[str]

# the (temporary, target) renames waiting for the end of the innermost staged_outputs block
_staged: contextvars.ContextVar[list[tuple[Path, Path]] | None] = contextvars.ContextVar("_staged", default=None)


def _umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux ``/proc``)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: the classic set-and-restore
    os.umask(mask)
    return mask


def _output_mode(path: Path) -> int:
    """The mode ``open(path, "w")`` would leave: the existing file's, else ``0o666`` less the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _cannot_write(exc: OSError, target: Path) -> OSError:
    """An error with *exc*'s errno (so its OSError subclass) that names *target*, not the temporary file."""
    return OSError(exc.errno or errno.EIO, f"cannot write ({exc.strerror or exc})", str(target))


def check_output_path(path: StrPath, label: str = "output") -> Path:
    """*path* as a Path after checking, before any work, that a file can be written there.

    Parameters
    ----------
    path : str or os.PathLike
        The output file.
    label : str
        What names it in the message (a flag such as ``"--json"``).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    InputError
        The path names a folder (or ends with a separator), its folder does not exist
        or is not a folder, or its folder is not writable.
    """
    text = os.fspath(path)
    target = Path(text)
    if text.endswith((os.sep, "/")) or target.is_dir():
        raise InputError(f"{label} {text}: is a folder; expected a file name")
    folder = target.parent
    if not folder.exists():
        raise InputError(f"{label} {text}: folder {folder} does not exist")
    if not folder.is_dir():
        raise InputError(f"{label} {text}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{label} {text}: folder {folder} is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise InputError(f"{label} {text}: the file exists and is read-only")
    return target


def check_output_dir(path: StrPath, label: str = "output folder") -> Path:
    """*path* as a Path after checking, before any work, that a folder of outputs can be made or filled there.

    Parameters
    ----------
    path : str or os.PathLike
        The output folder.
    label : str
        What names it in the message (a flag such as ``"--out"``).

    Raises
    ------
    InputError
        *path* exists and is not a writable folder, or it does not exist and its parent
        is not an existing, writable folder.
    """
    folder = Path(path)
    if folder.exists():
        if not folder.is_dir():
            raise InputError(f"{label} {os.fspath(path)}: exists and is not a folder")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(f"{label} {os.fspath(path)}: folder is not writable")
        return folder
    parent = folder.parent
    if not parent.is_dir():
        raise InputError(f"{label} {os.fspath(path)}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{label} {os.fspath(path)}: folder {parent} is not writable")
    return folder


@contextlib.contextmanager
def staged_outputs() -> Iterator[None]:
    """Hold back the renames of every :func:`atomic_path` inside the block until it succeeds.

    On success the files are renamed into place in the order they were written; on any
    exception every temporary file is removed and no target is touched, so a command that
    writes several outputs writes all of them or none.
    """
    pending: list[tuple[Path, Path]] = []
    token = _staged.set(pending)
    try:
        yield
    except BaseException:
        for tmp, _ in pending:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    finally:
        _staged.reset(token)
    for done, (tmp, target) in enumerate(pending):
        try:
            os.replace(tmp, target)
        except OSError as exc:
            for left, _ in pending[done:]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(left)
            raise _cannot_write(exc, target) from exc


@contextlib.contextmanager
def atomic_path(path: StrPath, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it to *path* on success.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination.  Its parent folder must exist.
    suffix : str
        Suffix for the temporary name (some writers, e.g. ``numpy.savez``, append
        an extension unless the name already carries it).

    Notes
    -----
    The file gets the mode ``open(path, "w")`` would give it (module docstring); an
    :class:`OSError` about the temporary file (ENOSPC, EIO, ...) is re-raised naming
    *path*.  Inside :func:`staged_outputs` the rename waits for the end of that block.
    """
    path = Path(path)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix + ".tmp", dir=path.parent or ".")
    except OSError as exc:
        raise _cannot_write(exc, path) from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        try:
            yield tmp
            os.chmod(tmp, _output_mode(path))
        except OSError as exc:
            if exc.filename not in (None, tmp_name, tmp):  # about another file (an input read inside the block)
                raise
            raise _cannot_write(exc, path) from exc
        pending = _staged.get()
        if pending is None:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise _cannot_write(exc, path) from exc
        else:
            pending.append((tmp, path))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_write(path: StrPath, mode: str = "w", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file for writing; rename it to *path* when the block succeeds.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination.
    mode : {"w", "wb"}
        Text or binary.
    **open_kwargs
        Passed to :func:`open` (e.g. ``newline=""`` for CSV).
    """
    with atomic_path(path) as tmp, open(tmp, mode, **open_kwargs) as handle:
        yield handle


def json_clean(value: Any) -> Any:
    """Replace NaN by None, recursively through dicts, lists and tuples (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_clean(v) for v in value]
    return value


def write_json(path: StrPath, record: Any) -> None:
    """Write *record* as indented JSON (NaN as null), atomically."""
    with atomic_write(path) as handle:
        json.dump(json_clean(record), handle, indent=2)
        handle.write("\n")


def file_sha256(path: StrPath) -> str:
    """SHA-256 of the file's bytes, as 64 lowercase hex digits (read in 1 MiB blocks).

    Parameters
    ----------
    path : str or os.PathLike
        An existing file.

    Returns
    -------
    str
        ``hashlib.sha256(open(path, "rb").read()).hexdigest()``, without holding the
        whole file in memory.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
