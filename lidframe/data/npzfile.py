"""Safe reading of ``.npz`` archives and ``.npy`` files: every array checked before it is read.

:func:`numpy.load` trusts what a file says about itself: a header that claims 36e9
floats makes it allocate them (``MemoryError``), a zip member that decompresses to
gigabytes of zeros (a *zip bomb*) is decompressed in full before anything looks at it,
and a damaged archive surfaces as a ``BadZipFile`` or ``EOFError`` deep inside numpy.
Every ``.npz`` / ``.npy`` lidframe reads (score sets, embedding sets, precomputed
embeddings) goes through this module instead, which reads each member's ``.npy``
header first (:func:`numpy.lib.format.read_magic`, ``read_array_header_*``) and
refuses, with one line naming the file, the member and the problem:

* a path that is not a regular file (missing, a folder, a FIFO, a device, a symlink
  loop: :func:`~lidframe.data.fileio.check_input_file`);
* a file that is not a zip archive or is empty; a zip directory that
  lists fewer or more members than its end record declares (a member would be lost);
* a member whose name is not ``KEY.npy``, that appears twice, or that is not a ``.npy``
  array (no magic string, unreadable header);
* an array of Python objects (dtype ``object``: reading it would unpickle, which
  lidframe never does);
* a header whose shape x itemsize does not match the member's size in the zip
  directory (truncated, padded or forged: no allocation from a header's word alone);
* a deflated member that claims more than deflate can give (about 1032 bytes per
  compressed byte), or a stored member whose two sizes differ;
* arrays that together exceed this machine's physical memory
  (:func:`memory_limit_bytes`);
* an archive that expands to more than :data:`BOMB_MIN_BYTES` *and* more than
  :data:`MAX_EXPANSION` times its size on disk (real score and embedding data are
  dense numbers, which deflate leaves within a few times their size);
* a bad CRC-32 or a damaged deflate stream, found while reading.

The keys an archive must and may hold are checked too (:func:`read_npz`): a missing key
is named with the keys found, and an unexpected key is refused rather than ignored.
"""

from __future__ import annotations

import contextlib
import math
import os
import zipfile
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal

import attrs
import numpy as np
from numpy.lib import format as npy_format

from lidframe.data.fileio import StrPath, open_input
from lidframe.errors import InputError, format_bytes, preview, quote

__all__ = [
    "BOMB_MIN_BYTES",
    "MAX_EXPANSION",
    "ArrayHeader",
    "memory_limit_bytes",
    "npz_headers",
    "npz_keys",
    "read_npz",
    "read_npy",
    "format_bytes",
]

#: An archive expanding to more than this many bytes ...
BOMB_MIN_BYTES = 1 << 30
#: ... and to more than this many times its size on disk is refused as a suspected zip bomb.
MAX_EXPANSION = 100
# deflate's largest possible expansion is 1032:1 (258-byte matches coded in 2 bits);
# a deflated member claiming more than this (plus some slack for tiny members) is forged
_DEFLATE_MAX_RATIO = 1032
_DEFLATE_SLACK_BYTES = 1 << 16
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError, RuntimeError)

#: What a key's array may hold: ``"numbers"`` (real integers or floats) or ``"ids"`` (strings or integers).
Kind = Literal["numbers", "ids"]
_KINDS: dict[str, tuple[str, str]] = {
    "numbers": ("iuf", "real numbers (integer or float)"),
    "ids": ("USiu", "ids (unicode strings, or integers)"),
}


def memory_limit_bytes() -> int | None:
    """This machine's physical memory in bytes (None where the OS does not say).

    No array set larger than this can be held, so :func:`read_npz` and :func:`read_npy`
    refuse one before allocating it.
    """
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not POSIX, or the name is unknown
        return None
    return int(pages) * int(page_size) if pages > 0 and page_size > 0 else None


@attrs.frozen
class ArrayHeader:
    """What a ``.npy`` header declares, checked against the bytes that hold it.

    Attributes
    ----------
    key : str
        The array's name (the zip member name without ``.npy``; the file name for a ``.npy``).
    shape : tuple of int
    dtype : numpy.dtype
    data_offset : int
        Bytes of magic string and header before the data.
    data_bytes : int
        ``prod(shape) * dtype.itemsize``: what the array takes in memory.
    """

    key: str
    shape: tuple[int, ...]
    dtype: np.dtype
    data_offset: int
    data_bytes: int

    def describe(self) -> str:
        """``'a (3, 4) float64 array (96 bytes)'``."""
        return f"a {self.shape} {self.dtype} array ({format_bytes(self.data_bytes)})"


def _read_header(handle: IO[bytes], key: str, where: str) -> ArrayHeader:
    """Magic string and header of the ``.npy`` stream *handle* (positioned at its start)."""
    readers: dict[tuple[int, int], Callable[[IO[bytes]], tuple[Any, bool, Any]]] = {
        (1, 0): npy_format.read_array_header_1_0,
        (2, 0): npy_format.read_array_header_2_0,
    }
    private_reader = getattr(npy_format, "_read_array_header", None)  # version 3.0 (utf-8 header) has no public one
    try:
        version = npy_format.read_magic(handle)
        reader = readers.get(version)
        if reader is None and version == (3, 0) and private_reader is not None:
            shape, _, dtype = private_reader(handle, version)
        elif reader is None:
            raise ValueError(f"unknown .npy format version {version}")
        else:
            shape, _, dtype = reader(handle)
    except (zipfile.BadZipFile, zlib.error):
        raise  # damage to the archive, not a wrong kind of member: the caller words it
    except _READ_ERRORS as exc:
        raise InputError(f"{where}: not a .npy array ({_first_line(exc)})") from None
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise InputError(
            f"{where}: holds Python objects (dtype {dtype}); lidframe does not unpickle data: "
            "store ids as unicode strings (numpy.array(ids, dtype=str)) and numbers as a numeric dtype"
        )
    shape = tuple(int(n) for n in shape)
    return ArrayHeader(key, shape, dtype, int(handle.tell()), math.prod(shape) * dtype.itemsize)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@contextlib.contextmanager
def _open_archive(path: Path) -> Iterator[zipfile.ZipFile]:
    """The archive at *path*, read from the one opener's handle (a FIFO is never waited on)."""
    with open_input(path, "a .npz file") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            raise InputError(f"{path}: empty file; expected a .npz archive")
        try:
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError) as exc:
            raise InputError(f"{path}: not a .npz archive ({_first_line(exc)})") from None
        with archive:
            yield archive


def _check_member_sizes(path: Path, info: zipfile.ZipInfo) -> None:
    where = f"{path}: member {quote(info.filename)}"
    if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
        raise InputError(
            f"{where} is stored uncompressed but its sizes differ ({info.file_size} vs {info.compress_size} bytes); "
            "the archive is corrupt"
        )
    if info.compress_type == zipfile.ZIP_DEFLATED and (
        info.file_size > _DEFLATE_MAX_RATIO * info.compress_size + _DEFLATE_SLACK_BYTES
    ):
        raise InputError(
            f"{where} claims {format_bytes(info.file_size)} from {format_bytes(info.compress_size)} deflated, "
            f"more than deflate can give ({_DEFLATE_MAX_RATIO}:1); the archive is forged or corrupt"
        )


def _directory_entries(handle: IO[bytes]) -> int | None:
    """The number of entries the end-of-central-directory record declares (None where it cannot be read).

    :mod:`zipfile` reads the central directory by its size and ignores this count, so a
    damaged size would silently drop members; comparing the two catches that.
    """
    end_record = getattr(zipfile, "_EndRecData", None)  # zipfile's own EOCD (and zip64) parser
    total = getattr(zipfile, "_ECD_ENTRIES_TOTAL", None)
    if end_record is None or total is None:  # pragma: no cover - every CPython since 2.x has both
        return None
    record = end_record(handle)
    return None if not record else int(record[total])


def _members(path: Path, archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    members: dict[str, zipfile.ZipInfo] = {}
    declared = None if archive.fp is None else _directory_entries(archive.fp)
    if declared is not None and declared != len(archive.infolist()):
        raise InputError(
            f"{path}: its directory declares {declared} members but lists {len(archive.infolist())}; "
            "the archive is corrupt"
        )
    for info in archive.infolist():
        if info.is_dir():
            continue
        if not info.filename.endswith(".npy"):
            raise InputError(
                f"{path}: member {quote(info.filename)} is not a .npy array; a .npz archive holds KEY.npy members only"
            )
        key = info.filename[: -len(".npy")]
        if key in members:
            raise InputError(f"{path}: member {quote(info.filename)} appears twice; the archive is ambiguous")
        _check_member_sizes(path, info)
        members[key] = info
    return members


def _header_of(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> ArrayHeader:
    where = f"{path}: member {quote(info.filename)}"
    try:
        with archive.open(info) as handle:
            header = _read_header(handle, info.filename[: -len(".npy")], where)
    except InputError:
        raise
    except _READ_ERRORS as exc:
        raise InputError(f"{where}: {_first_line(exc)}; the archive is corrupt") from None
    stored = info.file_size - header.data_offset
    if stored != header.data_bytes:
        problem = "truncated or corrupt" if stored < header.data_bytes else "it has bytes after the array"
        raise InputError(
            f"{where}: its header declares {header.describe()} but the member holds "
            f"{format_bytes(max(stored, 0))} of data ({problem})"
        )
    return header


def _check_total(path: Path, headers: Iterable[ArrayHeader], on_disk: int) -> None:
    headers = list(headers)
    total = sum(h.data_bytes for h in headers)
    limit = memory_limit_bytes()
    if limit is not None and total > limit:
        biggest = max(headers, key=lambda h: h.data_bytes)
        raise InputError(
            f"{path}: its arrays take {format_bytes(total)} (largest: {quote(biggest.key)}, {biggest.describe()}), "
            f"more than this machine's {format_bytes(limit)} of memory"
        )
    if total > BOMB_MIN_BYTES and total > MAX_EXPANSION * max(on_disk, 1):
        raise InputError(
            f"{path}: {format_bytes(on_disk)} on disk expand to {format_bytes(total)} ({total / max(on_disk, 1):.0f}x); "
            f"refused as a suspected zip bomb (score and embedding data stay within {MAX_EXPANSION}x)"
        )


def npz_headers(path: StrPath) -> dict[str, ArrayHeader]:
    """The checked header of every array of a ``.npz`` archive, by key; no array data is read.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npz`` archive (:func:`numpy.savez` or :func:`numpy.savez_compressed`).

    Returns
    -------
    dict of str to ArrayHeader
        In archive order.

    Raises
    ------
    InputError
        For any of the problems in the module docstring that the zip directory and the
        headers show (the CRC and the deflate stream are checked by :func:`read_npz`).
    """
    path = Path(path)
    with _open_archive(path) as archive:
        members = _members(path, archive)
        return {key: _header_of(path, archive, info) for key, info in members.items()}


def npz_keys(path: StrPath) -> list[str]:
    """The array names of a ``.npz`` archive, from its zip directory (checked as by :func:`read_npz`; no member is opened)."""
    path = Path(path)
    with _open_archive(path) as archive:
        return list(_members(path, archive))


def _check_kind(where: str, array_header: ArrayHeader, kind: Kind) -> None:
    allowed, text = _KINDS[kind]
    if array_header.dtype.kind not in allowed:
        raise InputError(f"{where} has dtype {array_header.dtype}; expected {text}")


def _read_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    where = f"{path}: member {quote(info.filename)}"
    try:
        with archive.open(info) as handle:
            array = npy_format.read_array(handle, allow_pickle=False)
            if handle.read(1):  # also completes the CRC check of the member
                raise InputError(f"{where}: has bytes after the array; the archive is corrupt")
    except InputError:
        raise
    except _READ_ERRORS as exc:
        raise InputError(f"{where}: {_first_line(exc)}; the archive is corrupt") from None
    return array


def read_npz(
    path: StrPath,
    required: Sequence[str] | None = None,
    optional: Sequence[str] = (),
    *,
    kinds: Mapping[str, Kind] | None = None,
    what: str = "archive",
    only: Collection[str] | None = None,
) -> dict[str, np.ndarray]:
    """Read the arrays of a ``.npz`` archive after checking every header (module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        The archive.
    required : sequence of str, optional
        Keys that must be present.  None: read every array, whatever its key.
    optional : sequence of str
        Keys that may be present; with *required* given, any other key is refused
        (lidframe does not ignore data it was given).
    kinds : mapping of str to {"numbers", "ids"}, optional
        What each key's array must hold: real numbers (integer or float dtype) or ids
        (unicode/bytes strings or integers).
    what : str
        What the archive is (``"score set"``), for messages.
    only : collection of str, optional
        Read only the arrays of these keys (present ones; every header is still checked);
        None: every array.

    Returns
    -------
    dict of str to numpy.ndarray
        The arrays (freshly read, writable), by key.

    Raises
    ------
    InputError
        One line naming the file (and the member) and what is wrong.
    """
    path = Path(path)
    with _open_archive(path) as archive:
        members = _members(path, archive)
        if required is not None:
            expected = [*required, *optional]
            missing = [k for k in required if k not in members]
            if missing:
                raise InputError(
                    f"{path}: missing key(s) {', '.join(missing)} of a {what}; expected {', '.join(required)}"
                    + (f" [, {', '.join(optional)}]" if optional else "")
                    + f" (found {preview(members) if members else 'no arrays'})"
                )
            extra = [k for k in members if k not in expected]
            if extra:
                raise InputError(
                    f"{path}: unexpected key(s) {preview(extra)} in a {what}; expected only {', '.join(expected)}"
                )
        headers = {key: _header_of(path, archive, info) for key, info in members.items()}
        for key, kind in (kinds or {}).items():
            if key in headers:
                _check_kind(f"{path}: {key}", headers[key], kind)
        _check_total(path, headers.values(), path.stat().st_size)
        return {key: _read_member(path, archive, info) for key, info in members.items() if only is None or key in only}


def read_npy(path: StrPath, *, kind: Kind | None = None, what: str = "array") -> np.ndarray:
    """Read one ``.npy`` file after checking its header against the file's size.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    kind : {"numbers", "ids"}, optional
        What the array must hold.
    what : str
        What the array is, for messages.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    InputError
        Not a file, not a ``.npy`` array, an object array, a header that does not match
        the file size, more than this machine's memory, or a read error.
    """
    path = Path(path)
    try:
        with open_input(path, "a .npy file") as handle:
            size = os.fstat(handle.fileno()).st_size
            header = _read_header(handle, path.stem, f"{path} ({what})")
            stored = size - header.data_offset
            if stored != header.data_bytes:
                problem = "truncated or corrupt" if stored < header.data_bytes else "it has bytes after the array"
                raise InputError(
                    f"{path}: its header declares {header.describe()} but the file holds "
                    f"{format_bytes(max(stored, 0))} of data ({problem})"
                )
            if kind is not None:
                _check_kind(f"{path} ({what})", header, kind)
            _check_total(path, [header], size)
            handle.seek(0)
            return npy_format.read_array(handle, allow_pickle=False)
    except InputError:
        raise
    except _READ_ERRORS as exc:
        raise InputError(f"{path}: cannot be read as a .npy array ({_first_line(exc)})") from None
