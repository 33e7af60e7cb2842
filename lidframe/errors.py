"""Exceptions that lidframe raises for bad user input.

Every user-facing check raises :class:`InputError` (a :class:`ValueError`) with a
one-line message that names the file, row, trial or id at fault and says what was
expected.  The command-line interface prints that line and exits with status 2.
:func:`preview` and :func:`mismatch` spell out the ids at fault in those messages, and
:func:`shorten` / :func:`quote` cut a value taken from a file to :data:`SHOWN_CHARS`
characters (a hostile 5 MB field must not become a 5 MB message line); :func:`format_bytes`
says a size.

Unfitted calibrators raise scikit-learn's :class:`~sklearn.exceptions.NotFittedError`
(re-exported here), so code written against scikit-learn conventions catches it.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable

from sklearn.exceptions import NotFittedError

__all__ = [
    "SHOWN_CHARS",
    "InputError",
    "NotFittedError",
    "format_bytes",
    "preview",
    "mismatch",
    "quote",
    "quote_path",
    "shorten",
]

#: How many characters of one value a message shows; the rest is counted, not echoed.
SHOWN_CHARS = 80


class InputError(ValueError):
    """Bad user input: the message is one line naming the offending item."""


def shorten(value: object, limit: int = SHOWN_CHARS) -> str:
    """``str(value)``, cut to its first *limit* characters with ``... (+N more characters)`` after them.

    Parameters
    ----------
    value : object
        Anything with a ``str`` (an id, a field of a file).
    limit : int
        How many characters to keep.

    Examples
    --------
    >>> shorten("x" * 100, 5)
    'xxxxx... (+95 more characters)'
    """
    text = str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... (+{len(text) - limit} more characters)"


def quote(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(str(value))``, with a value longer than *limit* characters cut as :func:`shorten` cuts it.

    Examples
    --------
    >>> quote("spk-1")
    "'spk-1'"
    >>> quote("x" * 100, 5)
    "'xxxxx'... (+95 more characters)"
    """
    text = str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... (+{len(text) - limit} more characters)"


def quote_path(path: object) -> str:
    """``repr`` of a file or folder path, never cut: a path a message names must be found again.

    A path is bounded by the system (4,096 bytes on Linux), and the file name at its end is the
    part a user needs, which :func:`quote` would cut first.

    Examples
    --------
    >>> quote_path("/tmp/" + "d" * 90 + "/cohort.npz")[-12:]
    "/cohort.npz'"
    """
    return repr(os.fspath(path) if isinstance(path, os.PathLike) else str(path))


def preview(items: Iterable[object], limit: int = 5) -> str:
    """Return ``'a', 'b', 'c' (+N more)`` for the first *limit* items, each cut by :func:`quote`.

    Parameters
    ----------
    items : iterable
        Identifiers (anything with a ``str``).
    limit : int
        How many to spell out.
    """
    shown = list(items)
    head = ", ".join(quote(x) for x in shown[:limit])
    rest = len(shown) - limit
    return head + (f" (+{rest} more)" if rest > 0 else "")


def mismatch(first_label: str, first: Collection[object], second_label: str, second: Collection[object]) -> str:
    """``"<first_label> 'a', 'b'; <second_label> 'c'"`` for two id lists, leaving out an empty one."""
    parts = [f"{label} {preview(items)}" for label, items in ((first_label, first), (second_label, second)) if items]
    return "; ".join(parts)


def format_bytes(n_bytes: int) -> str:
    """``1234567`` -> ``'1.2 MB'`` (decimal units, for messages)."""
    value = float(n_bytes)
    for unit in ("bytes", "kB", "MB", "GB", "TB", "PB"):
        if value < 1000 or unit == "PB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")  # pragma: no cover
