"""Exceptions that lidframe raises for bad user input.

Every user-facing check raises :class:`InputError` (a :class:`ValueError`) with a
one-line message that names the file, row, trial or id at fault and says what was
expected.  The command-line interface prints that line and exits with status 2.
:func:`preview` and :func:`mismatch` spell out the ids at fault in those messages.

Unfitted calibrators raise scikit-learn's :class:`~sklearn.exceptions.NotFittedError`
(re-exported here), so code written against scikit-learn conventions catches it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from sklearn.exceptions import NotFittedError

__all__ = ["InputError", "NotFittedError", "preview", "mismatch"]


class InputError(ValueError):
    """Bad user input: the message is one line naming the offending item."""


def preview(items: Iterable[object], limit: int = 5) -> str:
    """Return ``'a', 'b', 'c' (+N more)`` for the first *limit* items.

    Parameters
    ----------
    items : iterable
        Identifiers (anything with a ``str``).
    limit : int
        How many to spell out.
    """
    shown = list(items)
    head = ", ".join(repr(str(x)) for x in shown[:limit])
    rest = len(shown) - limit
    return head + (f" (+{rest} more)" if rest > 0 else "")


def mismatch(first_label: str, first: Collection[object], second_label: str, second: Collection[object]) -> str:
    """``"<first_label> 'a', 'b'; <second_label> 'c'"`` for two id lists, leaving out an empty one."""
    parts = [f"{label} {preview(items)}" for label, items in ((first_label, first), (second_label, second)) if items]
    return "; ".join(parts)
