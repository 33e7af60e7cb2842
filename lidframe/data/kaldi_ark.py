"""Kaldi archives (``.ark``) and their scp indexes (``.scp``) of vectors, read without a shell.

Kaldi's "extended filenames" make a file name a program (``cmd |`` runs ``cmd`` through
``/bin/sh``), and kaldiio honours them, so an scp line such as ``utt1 touch PWNED; cat
x.ark |`` runs a command as soon as the scp is loaded.  lidframe reads audit inputs from
strangers, so every scp entry is parsed here by the one rule of
:func:`lidframe.data.kaldi.parse_rxfilename`, which accepts exactly

``utt_id PATH:OFFSET``
    the object at byte *OFFSET* of the archive *PATH* (what ``copy-vector``,
    ``ivector-extract`` and kaldiio's ``WriteHelper`` write), or
``utt_id PATH``
    a file holding one object,

and refuses everything else (a pipe, ``-``, a slice) in one line naming the scp file, the
line and the utterance id, before any archive is opened.  Relative paths are taken from
the current folder, as Kaldi does.

The archive bytes are decoded here too, not by :func:`kaldiio.load_ark` or
:func:`kaldiio.load_scp`: those unpickle any object stored with kaldiio's ``PKL`` marker
(running code from the file) and trust the sizes in an object's header.  Only Kaldi's own
vector and matrix formats are read: binary ``FV``/``DV``/``FM``/``DM`` (decoded here) and
``CM``/``CM2``/``CM3`` (compressed; decoded by kaldiio's
:func:`kaldiio.matio.read_matrix_or_vector`, which this needs), and text ``[ ... ]``
(decoded here: kaldiio's text reader takes the first number's type for all of them, and
Kaldi writes ``1`` for 1.0).  Decoded arrays are float64 and writable.  Memory is bounded by the files, whatever they claim:

* a binary header's sizes are checked against the bytes left in the file before
  anything is allocated;
* a text object is read up to its ``]`` and at most :data:`MAX_TEXT_BYTES`;
* an object named by several scp entries is decoded once, and all the decoded objects
  together may take at most :data:`DECODED_PER_STORED_BYTE` times the size of the
  archives they come from (8: a ``CM3`` value takes one byte, its float64 eight), each
  file counted once whatever names the scp gives it, so scp entries pointing into the
  middle of one large object cannot multiply it;
* a text object is parsed by numpy, not into a Python object per value;
* one archive is open at a time (an scp of one-object files needs one descriptor).
"""

from __future__ import annotations

import os
import struct
import warnings
from pathlib import Path
from typing import IO

import numpy as np

from lidframe.data.fileio import StrPath, open_input
from lidframe.data.kaldi import ArchiveEntry, numbered_rows, parse_rxfilename
from lidframe.errors import InputError, quote, shorten

__all__ = ["read_ark", "read_scp", "read_scp_vectors", "scp_archives"]

#: Longest utterance id read from an archive (a hostile file may hold no space for megabytes).
MAX_TOKEN_BYTES = 4096
#: Longest text object (``[ ... ]``) read: 16 MiB of digits is millions of values.
MAX_TEXT_BYTES = 16 << 20
#: How many bytes of float64 the decoded objects may take per byte of their archives.
DECODED_PER_STORED_BYTE = 8
_BINARY_DTYPES = {"FV": "<f4", "DV": "<f8", "FM": "<f4", "DM": "<f8"}
_COMPRESSED = ("CM", "CM2", "CM3")


def read_scp(path: StrPath) -> dict[str, ArchiveEntry]:
    """``{utt_id: ArchiveEntry}`` of an scp index, every location checked (module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        The ``.scp`` file: lines ``utt_id PATH[:OFFSET]``.

    Raises
    ------
    InputError
        The file cannot be read as an scp, a location is not a plain ``PATH[:OFFSET]``, or
        an utterance id appears twice -- naming the file, the line and the id.
    """
    path = Path(path)
    entries: dict[str, ArchiveEntry] = {}
    for number, (utt_id, location) in numbered_rows(path, columns=2, what="scp"):
        where = f"{path}: line {number} (utterance {quote(utt_id)})"
        if utt_id in entries:
            raise InputError(f"{where}: the utterance id appears twice")
        entries[utt_id] = parse_rxfilename(location, where=where, line=number)
    return entries


def scp_archives(path: StrPath) -> list[Path]:
    """The distinct archives an scp index points at, in order of first use (its input files).

    Raises
    ------
    InputError
        As :func:`read_scp`: a piped or otherwise extended entry is refused here too, so a
        grid spec naming such an scp is refused when the spec is validated.
    """
    return list(dict.fromkeys(entry.path for entry in read_scp(path).values()))


class _Budget:
    """The float64 bytes the decoded objects may still take (module docstring)."""

    def __init__(self, stored_bytes: int):
        self.left = DECODED_PER_STORED_BYTE * stored_bytes + (1 << 20)

    def take(self, n_values: int, where: str) -> None:
        needed = 8 * n_values
        if needed > self.left:
            raise InputError(
                f"{where}: its objects would take more than {DECODED_PER_STORED_BYTE} times the archive's size "
                "once decoded (entries pointing into one object, or overlapping objects); not a Kaldi archive"
            )
        self.left -= needed


def _open_archive(path: Path, where: str | None) -> tuple[IO[bytes], int]:
    """*path* opened for reading (:func:`~lidframe.data.fileio.open_input`: a regular file) and its size."""
    try:
        handle = open_input(path, "a Kaldi archive")
    except InputError as exc:
        raise InputError(f"{where}: {exc}" if where else str(exc)) from None
    return handle, os.fstat(handle.fileno()).st_size


def _read_binary(handle: IO[bytes], size: int, where: str, budget: _Budget) -> np.ndarray:
    """The binary vector or matrix at the handle's position (after ``\\0B``), its sizes checked first."""
    start = handle.tell()
    head = handle.read(2 + 4 + 20)
    kind = head[2:].split(b" ", 1)[0].decode("ascii", errors="replace")
    body = head[2 + len(kind) + 1 :]
    header = 2 + len(kind) + 1
    if kind in _BINARY_DTYPES:
        matrix = kind.endswith("M")
        layout = "<xixi" if matrix else "<xi"  # each size is marked by a byte \4
        if len(body) < struct.calcsize(layout) or body[0:1] != b"\4" or (matrix and body[5:6] != b"\4"):
            raise InputError(f"{where}: a cut or malformed {kind} header; expected a Kaldi vector or matrix")
        dims = struct.unpack_from(layout, body)
        itemsize = np.dtype(_BINARY_DTYPES[kind]).itemsize
        header += struct.calcsize(layout)
    elif kind in _COMPRESSED:
        if len(body) < 16:
            raise InputError(f"{where}: a cut {kind} header; expected a Kaldi compressed matrix")
        dims = struct.unpack_from("<ii", body, 8)  # after the float minimum and range
        itemsize = {"CM": 1, "CM2": 2, "CM3": 1}[kind]
        header += 16 + (8 * dims[1] if kind == "CM" else 0)  # CM: a header of 8 bytes per column
    else:
        raise InputError(
            f"{where}: binary object of type {quote(kind)}; expected a Kaldi vector or matrix "
            "(FV, DV, FM, DM, CM, CM2, CM3)"
        )
    if min(dims) < 0:
        raise InputError(f"{where}: {kind} header gives negative dimensions {dims}")
    n_values = int(np.prod(dims, dtype=np.int64))
    if start + header + n_values * itemsize > size:
        raise InputError(
            f"{where}: {kind} header claims {dims} values ({n_values * itemsize} bytes) but the file holds "
            f"{max(size - start - header, 0)} more bytes"
        )
    budget.take(n_values, where)
    if kind in _BINARY_DTYPES:
        handle.seek(start + header)
        stored = np.frombuffer(handle.read(n_values * itemsize), dtype=_BINARY_DTYPES[kind])
        return np.array(stored, dtype=np.float64).reshape(dims)  # a writable float64 copy
    try:
        from kaldiio.matio import read_matrix_or_vector
    except ImportError:
        raise InputError(
            f"{where}: a compressed matrix ({kind}); reading it needs kaldiio (pip install kaldiio)"
        ) from None
    handle.seek(start)
    return read_matrix_or_vector(handle)


def _read_text(handle: IO[bytes], where: str, budget: _Budget) -> np.ndarray:
    """A text vector ``[ 1 2.5 ]`` or matrix ``[ 1 2 \\n 3 4 ]`` (Kaldi's ``ark,t``), up to its ``]``."""
    start, text = handle.tell(), bytearray()
    while True:
        block = handle.read(1 << 16)
        end = block.find(b"]")
        if end >= 0:
            text += block[:end]
            break
        if not block:
            raise ValueError("the text object has no closing ']'")
        text += block
        if len(text) > MAX_TEXT_BYTES:
            raise InputError(f"{where}: a text object longer than {MAX_TEXT_BYTES >> 20} MiB; not a Kaldi vector")
    handle.seek(start + len(text) + 1)
    body = bytes(text).lstrip()[1:]  # after its '['
    rows = [row for row in body.split(b"\n") if row.strip()]
    counts = [_count_tokens(row) for row in rows]
    budget.take(sum(counts), where)
    if len(set(counts)) > 1:
        raise ValueError(f"text matrix rows of different lengths {sorted(set(counts))}")
    with warnings.catch_warnings():  # numpy's C parser (no Python object per value); a bad token is an error
        warnings.simplefilter("error")
        values = np.fromstring(body.decode("ascii"), dtype=np.float64, sep=" ")
    if values.size != sum(counts):
        raise ValueError(f"{sum(counts) - values.size} of its {sum(counts)} values are not numbers")
    return values if len(rows) <= 1 else values.reshape(len(rows), -1)


def _count_tokens(row: bytes) -> int:
    """How many whitespace-separated tokens *row* holds (counted in numpy: no Python object per token)."""
    blank = np.isin(np.frombuffer(row, dtype=np.uint8), np.frombuffer(b" \t\r\v\f", dtype=np.uint8))
    return int(np.count_nonzero(~blank[1:] & blank[:-1]) + (blank.size > 0 and not blank[0]))


def _read_object(handle: IO[bytes], size: int, where: str, budget: _Budget) -> np.ndarray:
    """The vector or matrix at the handle's position, as float64 (module docstring: the accepted formats)."""
    start = handle.tell()
    flag = handle.read(5)
    handle.seek(start)
    try:
        if flag[:2] == b"\0B":
            array = _read_binary(handle, size, where, budget)
        elif flag.lstrip(b" \n\t\r")[:1] == b"[":
            array = _read_text(handle, where, budget)
        elif not flag:
            raise InputError(f"{where}: no object at byte {start} (the file ends there)")
        else:
            raise InputError(
                f"{where}: object at byte {start} starts with {flag!r}; expected a Kaldi binary (\\0B) or "
                "text ([ ... ]) vector or matrix (pickled, NumPy and audio objects are not read)"
            )
    except InputError:
        raise
    # hostile input: whatever a decoder raises on malformed bytes (struct, value and unicode errors,
    # numpy's warnings made errors, kaldiio's assertions) becomes one InputError naming the object
    except Exception as exc:  # noqa: BLE001
        why = " ".join(str(exc).split())
        raise InputError(
            f"{where}: malformed object at byte {start} ({shorten(why, 100) if why else type(exc).__name__})"
        ) from None
    return np.asarray(array, dtype=np.float64)


def _read_token(handle: IO[bytes], where: str) -> str | None:
    """The next utterance id of an archive (up to its space), or None at the end of the file."""
    token = bytearray()
    while True:
        char = handle.read(1)
        if char in (b"", b" "):
            break
        if not token and char in b"\n\r\t":  # the line break after a text object
            continue
        token += char
        if len(token) > MAX_TOKEN_BYTES:
            raise InputError(f"{where}: an utterance id longer than {MAX_TOKEN_BYTES} bytes; not a Kaldi archive")
    if not token:
        if char == b" ":
            raise InputError(f"{where}: an empty utterance id at byte {handle.tell() - 1}; not a Kaldi archive")
        return None
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{where}: an utterance id that is not UTF-8 text; not a Kaldi archive") from None


def read_ark(path: StrPath) -> dict[str, np.ndarray]:
    """``{utt_id: array}`` of every object of a Kaldi archive, in file order.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.ark`` file (binary or text), read directly: the name is never interpreted.

    Returns
    -------
    dict of str to numpy.ndarray
        Float64 arrays as stored (vectors (d,), matrices (rows, cols)).

    Raises
    ------
    InputError
        Not a regular file, an object of another kind (pickle, NumPy, audio), a header
        larger than the file, a repeated utterance id -- naming the file and the id.
    """
    path = Path(path)
    handle, size = _open_archive(path, None)
    budget = _Budget(size)
    table: dict[str, np.ndarray] = {}
    with handle:
        while True:
            utt_id = _read_token(handle, str(path))
            if utt_id is None:
                break
            where = f"{path}: utterance {quote(utt_id)}"
            if utt_id in table:
                raise InputError(f"{where}: the utterance id appears twice")
            table[utt_id] = _read_object(handle, size, where, budget)
    if not table:
        raise InputError(f"{path}: empty Kaldi archive; expected 'utt_id' followed by a vector per utterance")
    return table


def read_scp_vectors(path: StrPath) -> dict[str, np.ndarray]:
    """``{utt_id: array}`` of every entry of an scp index, in scp order.

    Every location is checked (:func:`read_scp`) before any archive is opened; each
    archive is opened once, and an object named by several entries is decoded once.

    Raises
    ------
    InputError
        As :func:`read_scp` and :func:`read_ark`, naming the scp line of the entry at fault.
    """
    path = Path(path)
    entries = read_scp(path)
    by_archive: dict[Path, list[tuple[str, ArchiveEntry]]] = {}
    for utt_id, entry in entries.items():
        by_archive.setdefault(entry.path, []).append((utt_id, entry))
    budget = _Budget(0)
    seen: set[tuple[int, int]] = set()
    decoded: dict[tuple[int, int, int], np.ndarray] = {}
    found: dict[str, np.ndarray] = {}
    for archive, named in by_archive.items():  # one archive open at a time, each read at its offsets in order
        where_first = f"{path}: line {named[0][1].line} (utterance {quote(named[0][0])})"
        handle, size = _open_archive(archive, where_first)
        with handle:
            info = os.fstat(handle.fileno())
            file_key = (info.st_dev, info.st_ino)  # one file under several names counts once
            if file_key not in seen:
                seen.add(file_key)
                budget.left += DECODED_PER_STORED_BYTE * size
            for utt_id, entry in sorted(named, key=lambda item: item[1].offset or 0):
                where = f"{path}: line {entry.line} (utterance {quote(utt_id)})"
                offset = entry.offset or 0
                if (*file_key, offset) not in decoded:
                    if offset >= size:
                        raise InputError(f"{where}: offset {offset} is past the end of {archive} ({size} bytes)")
                    handle.seek(offset)
                    decoded[(*file_key, offset)] = _read_object(handle, size, f"{where}, {archive}", budget)
                found[utt_id] = decoded[(*file_key, offset)]
    return {utt_id: found[utt_id] for utt_id in entries}
