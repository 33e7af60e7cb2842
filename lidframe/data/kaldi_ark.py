"""Kaldi archives (``.ark``) and their scp indexes (``.scp``) of vectors, read without a shell.

Kaldi's "extended filenames" (rxfilenames) make a file name a program: ``cmd |`` runs
``cmd`` through ``/bin/sh`` and reads its output, ``-`` reads standard input, and
``path.ark:123[0:9]`` reads a slice of the object at byte 123.  kaldiio honours all of
them, so an scp line such as ``utt1 touch PWNED; cat x.ark |`` runs a command as soon as
the scp is loaded.  lidframe reads audit inputs from strangers, so it parses every scp
entry itself and accepts exactly two forms:

``utt_id PATH:OFFSET``
    the object at byte *OFFSET* of the archive *PATH* (what ``copy-vector``,
    ``ivector-extract`` and kaldiio's ``WriteHelper`` write), or
``utt_id PATH``
    a file holding one object.

Everything else -- a pipe (``|`` anywhere in the location), standard input (``-``), a
slice (``[...]``) -- is refused with one line naming the scp file, the line and the
utterance id, before any archive is opened.  Relative paths are taken from the current
folder, as Kaldi does.

The archive bytes are decoded here too, not by :func:`kaldiio.load_ark` or
:func:`kaldiio.load_scp`: those also unpickle any object stored with kaldiio's ``PKL``
marker (running code from the file) and trust the sizes in an object's header.  Only
Kaldi's own vector and matrix formats are accepted -- binary ``FV``/``DV``/``FM``/``DM``,
compressed ``CM``/``CM2``/``CM3`` and text ``[ ... ]`` -- and a header's sizes are checked
against the bytes the file holds before anything is allocated; the numbers themselves are
decoded by kaldiio's format readers (:func:`kaldiio.matio.read_matrix_or_vector`,
:func:`kaldiio.matio.read_ascii_mat`) on the already opened file.
"""

from __future__ import annotations

import os
import re
import stat
import struct
from pathlib import Path
from typing import IO

import attrs
import numpy as np

from lidframe.data.fileio import StrPath
from lidframe.data.kaldi import numbered_rows
from lidframe.errors import InputError, quote, shorten

__all__ = ["ArchiveEntry", "parse_rxfilename", "read_ark", "read_scp", "read_scp_vectors", "scp_archives"]

#: Longest utterance id read from an archive (a hostile file may hold no space for megabytes).
MAX_TOKEN_BYTES = 4096
_OFFSET = re.compile(r"^(?P<path>.+):(?P<offset>\d+)$")
_BINARY_SIZES = {"FV": 4, "DV": 8, "FM": 4, "DM": 8}
_COMPRESSED = ("CM", "CM2", "CM3")


@attrs.frozen
class ArchiveEntry:
    """Where one scp entry's object lies.

    Attributes
    ----------
    path : pathlib.Path
        The archive (or single-object file), as the scp names it (relative to the current folder).
    offset : int or None
        Byte offset of the object in *path*; None for a file holding one object.
    line : int
        The entry's line in its scp file (1-based), for messages.
    """

    path: Path
    offset: int | None
    line: int = 0


def parse_rxfilename(location: str, *, where: str, line: int = 0) -> ArchiveEntry:
    """The archive path and offset of one scp location, refusing every extended form.

    Parameters
    ----------
    location : str
        The scp line's second field (``PATH`` or ``PATH:OFFSET``).
    where : str
        What names the entry in a message (``"emb.scp: line 3 (utterance 'u1')"``).
    line : int
        The entry's line, kept in the result.

    Returns
    -------
    ArchiveEntry

    Raises
    ------
    InputError
        *location* is a pipe (``|`` anywhere), standard input (``-``), empty, or carries a
        slice (``[...]``).
    """
    text = location.strip()
    if "|" in text:
        raise InputError(
            f"{where}: {quote(text)} is a piped command; lidframe does not run shell commands "
            "(expected PATH or PATH:OFFSET; write the vectors to an archive first)"
        )
    if text in ("", "-"):
        raise InputError(f"{where}: {quote(text)} reads standard input; expected PATH or PATH:OFFSET")
    if text.endswith("]") and "[" in text:
        raise InputError(f"{where}: {quote(text)} selects a slice; expected PATH or PATH:OFFSET, without [...]")
    match = _OFFSET.match(text)
    if match:
        return ArchiveEntry(Path(match["path"]), int(match["offset"]), line)
    return ArchiveEntry(Path(text), None, line)


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


def _open_archive(path: Path, where: str) -> tuple[IO[bytes], int]:
    """*path* opened for reading and its size, after checking that it is a regular file."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{where}: archive {path} does not exist") from None
    except OSError as exc:
        raise InputError(f"{where}: cannot read archive {path} ({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device, FIFO or socket)"
        raise InputError(f"{where}: archive {path} is {kind}; expected a Kaldi archive file")
    try:
        return open(path, "rb"), info.st_size
    except OSError as exc:
        raise InputError(f"{where}: cannot read archive {path} ({exc.strerror or type(exc).__name__})") from None


def _check_binary_header(handle: IO[bytes], size: int, where: str) -> None:
    """Refuse a binary object whose header claims more data than the file holds (the position is kept)."""
    start = handle.tell()
    head = handle.read(2 + 4 + 20)
    handle.seek(start)
    kind = head[2:].split(b" ", 1)[0].decode("ascii", errors="replace")
    body = head[2 + len(kind) + 1 :]
    if kind in _BINARY_SIZES:
        matrix = kind.endswith("M")
        layout = "<xixi" if matrix else "<xi"
        if len(body) < struct.calcsize(layout) or body[0:1] != b"\4" or (matrix and body[5:6] != b"\4"):
            raise InputError(f"{where}: a cut or malformed {kind} header; expected a Kaldi vector or matrix")
        dims = struct.unpack_from(layout, body)
        needed = int(np.prod(dims, dtype=np.int64)) * _BINARY_SIZES[kind]
        header = 2 + len(kind) + 1 + struct.calcsize(layout)
    elif kind in _COMPRESSED:
        if len(body) < 16:
            raise InputError(f"{where}: a cut {kind} header; expected a Kaldi compressed matrix")
        dims = struct.unpack_from("<ii", body, 8)
        rows, cols = dims
        needed = {"CM": cols * 8 + rows * cols, "CM2": 2 * rows * cols, "CM3": rows * cols}[kind]
        header = 2 + len(kind) + 1 + 16
    else:
        raise InputError(
            f"{where}: binary object of type {kind!r}; expected a Kaldi vector or matrix (FV, DV, FM, DM, CM, CM2, CM3)"
        )
    if min(dims) < 0:
        raise InputError(f"{where}: {kind} header gives negative dimensions {dims}")
    if start + header + needed > size:
        raise InputError(
            f"{where}: {kind} header claims {dims} values ({needed} bytes) but the file holds "
            f"{max(size - start - header, 0)} more bytes"
        )


def _read_object(handle: IO[bytes], size: int, where: str) -> np.ndarray:
    """The vector or matrix at the handle's position, as float64 (module docstring: the accepted formats)."""
    from kaldiio.matio import read_matrix_or_vector

    start = handle.tell()
    flag = handle.read(5)
    handle.seek(start)
    if flag[:2] == b"\0B":
        _check_binary_header(handle, size, where)
        reader = read_matrix_or_vector
    elif flag.lstrip(b" \n\t\r")[:1] == b"[":
        reader = _read_text_object
    elif not flag:
        raise InputError(f"{where}: no object at byte {start} (the file ends there)")
    else:
        raise InputError(
            f"{where}: object at byte {start} starts with {flag!r}; expected a Kaldi binary (\\0B) or "
            "text ([ ... ]) vector or matrix (pickled, NumPy and audio objects are not read)"
        )
    try:
        array = reader(handle)
    except Exception as exc:  # kaldiio raises assertions, struct and value errors on malformed bytes
        raise InputError(f"{where}: malformed object at byte {start} ({_why(exc)})") from None
    return np.asarray(array, dtype=np.float64)


def _read_text_object(handle: IO[bytes]) -> np.ndarray:
    """A text vector ``[ 1 2.5 ]`` or matrix ``[ 1 2 \\n 3 4 ]`` (Kaldi's ``ark,t``), up to its ``]``.

    Written here because kaldiio's text reader takes the first number's type for all of
    them (``[ 1 2.5 ]`` fails: Kaldi writes whole numbers without a decimal point).
    """
    start, text = handle.tell(), bytearray()
    while b"]" not in text:
        block = handle.read(1 << 16)
        if not block:
            raise ValueError("the text object has no closing ']'")
        text += block
    end = text.index(b"]")
    handle.seek(start + end + 1)
    body = text[:end].decode("ascii").strip()[1:]
    rows = [line.split() for line in body.splitlines() if line.split()]
    values = [[float(v) for v in row] for row in rows]
    if len({len(row) for row in values}) > 1:
        raise ValueError(f"text matrix rows of different lengths {sorted({len(row) for row in values})}")
    array = np.array(values, dtype=np.float64)
    return array[0] if len(values) == 1 else array


def _why(exc: BaseException) -> str:
    """An exception as a short phrase: its message (cut), or its type where the message is empty."""
    text = " ".join(str(exc).split())
    return shorten(text, 100) if text else type(exc).__name__


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
    """``{utt_id: vector}`` of every object of a Kaldi archive, in file order.

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
    handle, size = _open_archive(path, str(path))
    table: dict[str, np.ndarray] = {}
    with handle:
        while True:
            utt_id = _read_token(handle, str(path))
            if utt_id is None:
                break
            where = f"{path}: utterance {quote(utt_id)}"
            if utt_id in table:
                raise InputError(f"{where}: the utterance id appears twice")
            table[utt_id] = _read_object(handle, size, where)
    if not table:
        raise InputError(f"{path}: empty Kaldi archive; expected 'utt_id' followed by a vector per utterance")
    return table


def read_scp_vectors(path: StrPath) -> dict[str, np.ndarray]:
    """``{utt_id: array}`` of every entry of an scp index, in scp order.

    Every location is checked (:func:`read_scp`) before any archive is opened; each
    archive is opened once and read at the entries' offsets.

    Raises
    ------
    InputError
        As :func:`read_scp` and :func:`read_ark`, naming the scp line of the entry at fault.
    """
    path = Path(path)
    entries = read_scp(path)
    handles: dict[Path, tuple[IO[bytes], int]] = {}
    table: dict[str, np.ndarray] = {}
    try:
        for utt_id, entry in entries.items():
            where = f"{path}: line {entry.line} (utterance {quote(utt_id)})"
            if entry.path not in handles:
                handles[entry.path] = _open_archive(entry.path, where)
            handle, size = handles[entry.path]
            offset = entry.offset or 0
            if offset >= size:
                raise InputError(f"{where}: offset {offset} is past the end of {entry.path} ({size} bytes)")
            handle.seek(offset)
            table[utt_id] = _read_object(handle, size, f"{where}, {entry.path}")
    finally:
        for handle, _ in handles.values():
            handle.close()
    return table
