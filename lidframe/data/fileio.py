"""Atomic file output, JSON writing and file digests.

Atomic output writes to a temporary file beside the target, then renames it: a reader
never sees a half-written file, and a failed run leaves no output behind.
:func:`file_sha256` is the one content digest of a file (checkpoint hashes of the neural
attackers, input digests of the grid's cache keys).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, TypeAlias

__all__ = ["StrPath", "atomic_path", "atomic_write", "file_sha256", "json_clean", "write_json"]

#: What a path parameter accepts: a ``str`` or any ``os.PathLike[str]`` (e.g. :class:`pathlib.Path`).
StrPath: TypeAlias = str | os.PathLike[str]


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
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix + ".tmp", dir=path.parent or ".")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
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
