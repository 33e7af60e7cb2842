"""``read_utility()``: a utility record read back from the JSON of ``lidframe utility --json``, checked key by key.

What ``lidframe evaluate --report --utility FILE`` and a grid's ``utility =`` key show on
the audit report, so every value is checked for its type and its range before anything
is shown: counts are integers >= 0 (``rho_f0_utterances`` at most ``utterances``), the
word error rate a finite number >= 0 (a fraction; it may exceed 1), ρ_F0 a correlation in
[-1, 1], an interval's level in (0, 1) and its ends in order.  A null WER or ρ_F0 (none
defined) reads as NaN, as :func:`lidframe.utility.utility` leaves it.

The file is read by :func:`lidframe.data.documents.read_json`: through the one opener (a
FIFO or a device is refused, never read), at most :data:`MAX_UTILITY_BYTES`, and JSON
nested too deeply is one line, not a ``RecursionError``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import attrs

from lidframe.data.documents import read_json
from lidframe.data.fileio import StrPath
from lidframe.errors import InputError, quote, shorten
from lidframe.stats.bootstrap import Interval
from lidframe.utility.evaluate import Utility, UtteranceUtility

__all__ = ["MAX_UTILITY_BYTES", "read_utility"]

#: The largest utility file :func:`read_utility` reads (bytes, 1 GB): a row is some 300-500
#: bytes, so about two million utterances.
MAX_UTILITY_BYTES = 1_000_000_000

_WHAT = "a utility file (the JSON of lidframe utility --json)"


@attrs.frozen
class _Range:
    """What one number of the record must be: its type, its bounds (inclusive), whether null (NaN) is allowed."""

    integer: bool
    low: float
    high: float
    words: str
    nullable: bool = False


_COUNT = _Range(True, 0, math.inf, "an integer >= 0")
_WER = _Range(
    False, 0, math.inf, "a word error rate: a finite number >= 0 (errors over reference words), or null", True
)
_RHO = _Range(False, -1, 1, "a correlation: a number in [-1, 1], or null", True)
_LEVEL = _Range(False, math.nextafter(0, 1), math.nextafter(1, 0), "a confidence level: a number in (0, 1)")
#: The intervals a utility record holds, and the range of each one's estimate and ends.
_INTERVALS = {"wer": _WER, "rho_f0": _RHO}


def _checked(path: Path, key: str, value: Any, kind: _Range) -> Any:
    """*value* of *key* checked to be a number of *kind* (an int for counts); null or NaN read as NaN where allowed."""
    if kind.nullable and (value is None or (isinstance(value, float) and math.isnan(value))):
        return math.nan
    number = not isinstance(value, bool) and isinstance(value, int if kind.integer else (int, float))
    # an int is finite however large (a float conversion of 10**400 would overflow)
    if not number or (isinstance(value, float) and not math.isfinite(value)) or not kind.low <= value <= kind.high:
        raise InputError(f"{path}: key {quote(key)} must be {kind.words}, got {shorten(repr(value))}")
    return value


def _text(path: Path, key: str, value: Any, *, nullable: bool = False) -> Any:
    """*value* of *key* checked to be a string (or None where *nullable*)."""
    if isinstance(value, str) or (nullable and value is None):
        return value
    kind = "a string or null" if nullable else "a string"
    raise InputError(f"{path}: key {quote(key)} must be {kind}, got {shorten(repr(value))}")


def read_utility(path: StrPath) -> Utility:
    """The :class:`~lidframe.utility.Utility` written as JSON by ``lidframe utility --json`` (or ``json.dump(u.to_dict())``).

    Parameters
    ----------
    path : str or os.PathLike
        The JSON file.

    Returns
    -------
    Utility

    Raises
    ------
    InputError
        One line naming the file: missing, not a regular file (a FIFO, a device), larger
        than :data:`MAX_UTILITY_BYTES`, not JSON or nested too deeply, not an object; or
        the first key that is missing, of the wrong type or out of its range (module
        docstring).
    """
    path = Path(path)
    record = read_json(path, _WHAT, max_bytes=MAX_UTILITY_BYTES)
    if not isinstance(record, dict):
        raise InputError(f"{path}: expected a JSON object (lidframe utility --json), got {type(record).__name__}")

    def field(key: str) -> Any:
        if key not in record:
            raise InputError(f"{path}: no key {quote(key)}; expected the JSON of lidframe utility --json")
        return record[key]

    counts = {
        key: _checked(path, key, field(key), _COUNT)
        for key in ("substitutions", "deletions", "insertions", "reference_words", "rho_f0_utterances", "utterances")
    }
    counts["resampled"] = _checked(path, "resampled", record.get("resampled", 0), _COUNT)
    if counts["rho_f0_utterances"] > counts["utterances"]:
        raise InputError(
            f"{path}: key 'rho_f0_utterances' is {counts['rho_f0_utterances']}, more than the "
            f"{counts['utterances']} utterances; expected at most as many"
        )
    wer = _checked(path, "wer", field("wer"), _WER)
    rho, reference = field("rho_f0"), _text(path, "reference", record.get("reference"), nullable=True)
    bootstrap = record.get("bootstrap")
    if bootstrap is not None and not isinstance(bootstrap, dict):
        raise InputError(f"{path}: key 'bootstrap' must be an object or null, got {shorten(repr(bootstrap))}")
    return Utility(
        wer=float(wer),
        **counts,
        rho_f0=None if rho is None and reference is None else float(_checked(path, "rho_f0", rho, _RHO)),
        recogniser=_text(path, "recogniser", field("recogniser")),
        normalisation=_text(path, "normalisation", field("normalisation")),
        data=_text(path, "data", field("data")),
        reference=reference,
        speakers=_checked(path, "speakers", record.get("speakers", 0), _COUNT),
        bootstrap=bootstrap,
        intervals=None if record.get("intervals") is None else _read_intervals(path, record["intervals"]),
        rows=_read_rows(path, field("rows")),
    )


def _read_intervals(path: Path, raw: Any) -> dict[str, Interval]:
    """The record's ``intervals``: ``wer`` and ``rho_f0`` -> :class:`Interval`, each in its metric's range, in order."""
    if not isinstance(raw, dict):
        raise InputError(f"{path}: key 'intervals' must be an object of intervals")
    intervals = {}
    for metric, value in raw.items():
        if metric not in _INTERVALS:
            raise InputError(
                f"{path}: interval {quote(metric)} is not one of {', '.join(map(repr, _INTERVALS))}; "
                "expected the JSON of lidframe utility --json"
            )
        keys = ("estimate", "low", "high", "level", "method")
        if not isinstance(value, dict) or any(k not in value for k in keys):
            raise InputError(f"{path}: interval {quote(metric)} must have the keys {', '.join(keys)}")
        estimate, low, high = (
            float(_checked(path, f"intervals.{metric}.{k}", value[k], _INTERVALS[metric]))
            for k in ("estimate", "low", "high")
        )
        if low > high:  # False where either is NaN
            raise InputError(f"{path}: interval {quote(metric)} runs from {low} down to {high}; expected low <= high")
        level = float(_checked(path, f"intervals.{metric}.level", value["level"], _LEVEL))
        method = _text(path, f"intervals.{metric}.method", value["method"])
        intervals[metric] = Interval(estimate, low, high, level, method)
    return intervals


#: Each key of an utterance's row: its check (a count, a string, or ρ_F0), and whether a row must have it.
_ROW_KEYS: dict[str, tuple[_Range | None, bool]] = {
    "utt_id": (None, True),
    "reference": (None, True),
    "hypothesis": (None, True),
    "substitutions": (_COUNT, True),
    "deletions": (_COUNT, True),
    "insertions": (_COUNT, True),
    "reference_words": (_COUNT, True),
    "rho_f0": (_RHO, False),
    "rho_f0_note": (None, False),
    "plain_errors": (_COUNT, False),
}


def _read_rows(path: Path, rows_raw: Any) -> list[UtteranceUtility]:
    """The record's ``rows``: one :class:`UtteranceUtility` per utterance, each key checked (a null ρ_F0 read as NaN)."""
    if not isinstance(rows_raw, list):
        raise InputError(f"{path}: key 'rows' must be a list of utterances")
    rows = []
    for k, row in enumerate(rows_raw):
        if not isinstance(row, dict):
            raise InputError(f"{path}: rows[{k}] must be an object")
        values: dict[str, Any] = {}
        for name, (kind, required) in _ROW_KEYS.items():
            if name not in row:
                if required:
                    raise InputError(f"{path}: rows[{k}] has no key {quote(name)}; expected an utterance's row")
                continue
            where = f"rows[{k}].{name}"
            if kind is not None:
                values[name] = _checked(path, where, row[name], kind)
            else:
                values[name] = _text(path, where, row[name], nullable=not required)
        rows.append(UtteranceUtility(**values))
    return rows
