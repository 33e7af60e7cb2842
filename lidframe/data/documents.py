"""Input files read whole -- JSON records, TOML specs -- through the one opener, with a size cap.

A reader that holds a whole file in memory (and then a parse of it, several times its
size) states the largest file it takes: :func:`read_capped` and :func:`read_json` open it
with :func:`lidframe.data.fileio.open_input` (a FIFO is never waited on, a device such as
``/dev/zero`` never read, a larger file refused naming both sizes) and never read more
than the cap, even from a file that grows while it is read.  A parse that fails is one
:class:`~lidframe.errors.InputError` line naming the file: not JSON (with the line and
column), nested too deep for Python's parser (``[[[[...`` 200,000 deep is a
``RecursionError`` inside :mod:`json` and :mod:`tomllib`), or too large for this
machine's memory.

:func:`read_toml` reads a TOML document (a grid spec, a verdict policy) the same way;
:func:`parse_failure` words such a failure for other parsers.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from lidframe.data.fileio import StrPath, open_input, open_text
from lidframe.errors import InputError, format_bytes, shorten

__all__ = ["parse_failure", "parse_json", "read_capped", "read_json"]


def _grew(path: Path, max_bytes: int, what: str) -> InputError:
    return InputError(f"{path}: grew past {format_bytes(max_bytes)} while it was read; expected {what}")


def read_capped(path: StrPath, what: str, *, max_bytes: int) -> bytes:
    """The bytes of an input file of at most *max_bytes* bytes.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        What was expected there, with its article, for messages.
    max_bytes : int
        The largest file taken (bytes).

    Raises
    ------
    InputError
        What :func:`~lidframe.data.fileio.open_input` refuses (missing, not a regular
        file, larger than *max_bytes*), or a file that grew past *max_bytes* while read.
    """
    target = Path(path)
    with open_input(target, what, max_bytes=max_bytes) as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise _grew(target, max_bytes, what)
    return raw


def parse_failure(path: StrPath, exc: BaseException, what: str) -> InputError | None:
    """The one line for a parser's *exc* on the file at *path*; None for an exception that is not a parse failure.

    A ``RecursionError`` (nesting deeper than the parser's recursion) and a ``MemoryError``
    are named as such; a ``ValueError`` (a syntax error, a number of more than 4300 digits)
    gives its first line, cut to 80 characters.
    """
    if isinstance(exc, RecursionError):
        return InputError(
            f"{path}: nested deeper than the parser can follow (lists or objects within each other); expected {what}"
        )
    if isinstance(exc, MemoryError):
        return InputError(f"{path}: too large to parse in this machine's memory; expected {what}")
    if isinstance(exc, ValueError):
        first = str(exc).strip().splitlines()
        return InputError(f"{path}: not valid ({shorten(first[0] if first else type(exc).__name__)}); expected {what}")
    return None


def read_json(path: StrPath, what: str, *, max_bytes: int) -> Any:
    """The JSON value in a UTF-8 input file of at most *max_bytes* bytes.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        What was expected there, with its article, for messages.
    max_bytes : int
        The largest file taken (bytes).

    Returns
    -------
    object
        What :func:`json.loads` gives (``NaN`` and ``Infinity`` read as floats: range
        checks are the caller's).

    Raises
    ------
    InputError
        One line naming *path*: what :func:`~lidframe.data.fileio.open_text` refuses
        (missing, not a regular file, larger than *max_bytes*, not UTF-8 text), or not
        JSON (the line and column), nested too deeply, or too large for memory.
    """
    target = Path(path)
    with open_text(target, what, max_bytes=max_bytes) as handle:
        text = handle.read(max_bytes + 1)  # characters: at most as many as bytes
    if len(text) > max_bytes:
        raise _grew(target, max_bytes, what)
    return parse_json(text, target, what)


def parse_json(text: str | bytes, where: StrPath, what: str) -> Any:
    """The JSON value of *text*, read whole already (a file :func:`read_json` opened, an archive member).

    Parameters
    ----------
    text : str or bytes
        The document; bytes must be UTF-8.
    where : str or os.PathLike
        What holds it (a file, ``"scores.npz: its provenance"``), first in messages.
    what : str
        What was expected there, with its article, for messages.

    Raises
    ------
    InputError
        One line naming *where*: not UTF-8, not JSON (the line and column), nested too
        deeply, or too large for memory.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{where}: byte {exc.start} is not UTF-8 text; expected {what}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); expected {what}"
        ) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise parse_failure(where, exc, what) or exc from None


def read_toml(path: StrPath, what: str, *, max_bytes: int) -> tuple[bytes, dict[str, Any]]:
    """The bytes of a UTF-8 TOML input file of at most *max_bytes* bytes, and its document.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        What was expected there, with its article, for messages.
    max_bytes : int
        The largest file taken (bytes).

    Raises
    ------
    InputError
        One line naming *path*: what :func:`read_capped` refuses, not valid TOML (the
        parser's message), not UTF-8, nested too deeply, too large for memory, or an
        integer of more than 4300 digits.
    """
    raw = read_capped(path, what, max_bytes=max_bytes)
    try:
        return raw, tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid TOML ({exc}); expected {what}") from None
    except (RecursionError, MemoryError, ValueError) as exc:  # ValueError: an integer of more than 4300 digits
        raise parse_failure(path, exc, what) or exc from None
