"""The law's criteria of two or more evaluations side by side, from the ``summary.json`` each wrote.

``lidframe evaluate --json S.json`` writes a ``legal`` block beside the summary
(:class:`~lidframe.analyses.legal_criteria.LegalCriteria`): linkability pi_link(N') and
singling out pi_sing(N), each with its interval and chance level, or the reason the eval
set did not allow it.  :func:`read_summary_criteria` reads that block back from a file
(:class:`SummaryCriteria`), and :func:`compare_legal` sets every pair of summaries side by
side (:class:`LegalComparison`, one :class:`LegalComparisonRow` per pair, criterion and
point):

pi_link
    at every N' both curves have (N' = 2 among them), and at N' = N when the two N differ
    (each side's own N: its rank-1 rate, against its own chance 1/N);
pi_sing
    at each side's N.

``diff`` is A - B only where both sides are computed at the same point (the same N', the
same N and L); elsewhere it is NaN, and each number is read against its own chance level.
The two summaries hold no per-trial values, so no paired interval or test of the
difference is possible here: each side's interval is its own (a paired comparison of LID
needs the per-trial tables, :func:`lidframe.analyses.compare.compare_systems`).

A side without a criterion is a row with NaN numbers and the reason in ``absent_a`` /
``absent_b``: the reason its block gives (singling out on a set with a speaker heard
once), or that the summary has no legal block at all (one written before lidframe
computed it) -- never an error, never a number made up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import attrs

from lidframe.analyses.legal import LinkabilityPoint, SinglingOut
from lidframe.analyses.legal_criteria import LegalCriteria
from lidframe.core.summary import Summary
from lidframe.data.documents import read_json
from lidframe.data.fileio import StrPath
from lidframe.data.records import RowRecord, TableRecord, as_rows
from lidframe.errors import InputError

__all__ = [
    "MAX_SUMMARY_BYTES",
    "SummaryCriteria",
    "read_summary_criteria",
    "LegalComparisonRow",
    "LegalComparison",
    "compare_legal",
]

#: The largest summary file :func:`read_summary_criteria` reads (bytes, 256 MB): a summary
#: is some kilobytes, its calibrator's fitted record (an isotonic step function) at most a few megabytes.
MAX_SUMMARY_BYTES = 256_000_000

_WHAT = "a summary (the JSON of lidframe evaluate --json)"
_KEYS = {"linkability": "pi_link", "singling_out": "pi_sing"}


@attrs.frozen(eq=False, kw_only=True)
class SummaryCriteria:
    """The legal criteria one ``summary.json`` holds, or why it holds none.

    Attributes
    ----------
    path : str
        The file read.
    n_enrolled : int
        N of its evaluation.
    legal : LegalCriteria or None
        Its ``legal`` block; None where it has none.
    missing : str or None
        Why it has no legal block (None where it has one).
    """

    path: str
    n_enrolled: int
    legal: LegalCriteria | None
    missing: str | None = None

    def absent(self, criterion: str) -> str | None:
        """Why *criterion* (``"linkability"``, ``"singling_out"``) is not in this summary; None when it is."""
        if self.legal is None:
            return self.missing or "no legal block"
        return self.legal.absent.get(criterion)


def _in_unit(path: Path, what: str, value: float, *, nan: bool) -> None:
    """Refuse *value* outside [0, 1] (a NaN only where *nan*), naming the file and the number."""
    if (math.isnan(value) and not nan) or (not math.isnan(value) and not 0.0 <= value <= 1.0):
        kind = "a share in [0, 1] or null" if nan else "a share in [0, 1]"
        raise InputError(f"{path}: the legal block's {what} is {value!r}; expected {kind}")


def _check_block(path: Path, legal: LegalCriteria) -> None:
    """Refuse a legal block whose numbers are not shares, or whose N' or N lie outside what its N allows."""
    curve, single = legal.linkability, legal.singling_out
    for p in () if curve is None else curve.points:
        where = f"pi_link at N'={p.n_prime}"
        if not 2 <= p.n_prime <= legal.n_enrolled:
            raise InputError(
                f"{path}: the legal block has a point at N'={p.n_prime}; expected N' in 2..{legal.n_enrolled}"
            )
        for name, value, nan in (("", p.pi_link, False), (" low", p.low, True), (" high", p.high, True)):
            _in_unit(path, where + name, value, nan=nan)
        _in_unit(path, f"chance at N'={p.n_prime}", p.chance, nan=False)
    if single is not None:
        if single.n < 2 or single.l < 1 or single.draws < 1:
            raise InputError(
                f"{path}: the legal block's singling out has n={single.n}, l={single.l}, draws={single.draws}; "
                "expected n >= 2, l >= 1 and draws >= 1"
            )
        for name, value, nan in (("pi_sing", single.pi_sing, False), ("pi_sing low", single.low, True),
                                 ("pi_sing high", single.high, True), ("pi_sing chance", single.chance, False)):  # fmt: skip
            _in_unit(path, name, value, nan=nan)


def read_summary_criteria(path: StrPath) -> SummaryCriteria:
    """The legal criteria of the ``summary.json`` at *path* (``lidframe evaluate --json``), or why it has none.

    Parameters
    ----------
    path : str or os.PathLike
        The JSON file.

    Returns
    -------
    SummaryCriteria
        A summary without a ``legal`` block (or with ``"legal": null``) is read, its
        :attr:`~SummaryCriteria.missing` saying so and which lidframe wrote it.

    Raises
    ------
    InputError
        One line naming the file: missing, not a regular file, larger than
        :data:`MAX_SUMMARY_BYTES`, not JSON, not a summary lidframe wrote, or a legal block
        that is not one as lidframe writes it (a key missing, a number that is not a share
        in [0, 1], an N' outside 2..N).
    """
    target = Path(path)
    record = read_json(target, _WHAT, max_bytes=MAX_SUMMARY_BYTES)
    if not isinstance(record, dict):
        raise InputError(f"{target}: expected a JSON object (lidframe evaluate --json), got {type(record).__name__}")
    try:
        summary = Summary.from_dict(record, earlier=True)
    except (InputError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{target}: not a summary lidframe wrote ({str(exc).removeprefix(f'{target}: ')})") from None
    n = summary.n_enrolled
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"{target}: not a summary lidframe wrote (n_enrolled is {n!r}; expected a positive integer)")
    block = record.get("legal")
    if block is None:
        version = record.get("lidframe_version") or "unknown"
        missing = (
            f"{target} has no legal block (written by lidframe {version} before it computed the legal criteria, or "
            "not by lidframe evaluate --json); lidframe evaluate --json on the same sets computes them"
        )
        return SummaryCriteria(path=str(target), n_enrolled=summary.n_enrolled, legal=None, missing=missing)
    if not isinstance(block, dict):
        raise InputError(f"{target}: its legal block is a {type(block).__name__}; expected an object or null")
    legal = LegalCriteria.from_dict(block, where=f"{target}: legal block")
    _check_block(target, legal)
    return SummaryCriteria(path=str(target), n_enrolled=summary.n_enrolled, legal=legal)


@attrs.frozen(eq=False, kw_only=True)
class LegalComparisonRow(RowRecord):
    """One criterion at one point of two summaries A and B (a row of :class:`LegalComparison`).

    Also a read-only mapping of its fields (:class:`~lidframe.data.records.RowRecord`).
    Shares of trials (pi_link) or of predicates (pi_sing); NaN where a side does not have it.

    Attributes
    ----------
    a, b : str
        The two summaries' names (A is the earlier one in the input).
    criterion : {"pi_link", "pi_sing"}
    at : str
        Where: ``"N'=2"``, ``"N'=8"`` (both curves have it), ``"N'=N"`` (each side's own
        N, where the two differ) or ``"N"`` (pi_sing at each side's N).
    at_a, at_b : int or None
        That point's N' (or N) on each side; None where the side does not have it.
    value_a, low_a, high_a, chance_a : float
        A's estimate, its interval (NaN without one) and its chance level.
    value_b, low_b, high_b, chance_b : float
        B's.
    diff : float
        ``value_a - value_b`` where both are computed at the same N' (same N and L for
        pi_sing), NaN elsewhere.
    absent_a, absent_b : str
        Why A (B) does not have it; ``""`` where it does.
    """

    a: str
    b: str
    criterion: str
    at: str
    at_a: int | None
    at_b: int | None
    value_a: float
    low_a: float
    high_a: float
    chance_a: float
    value_b: float
    low_b: float
    high_b: float
    chance_b: float
    diff: float
    absent_a: str
    absent_b: str


@attrs.frozen(eq=False)
class LegalComparison(TableRecord):
    """Outcome of :func:`compare_legal`: one row per (pair of summaries, criterion, point), pairs in input order.

    ``to_dict()`` (JSON-able: ``rows``; NaN as None) and ``to_frame()`` come from
    :class:`~lidframe.data.records.TableRecord`.
    """

    rows: tuple[LegalComparisonRow, ...] = attrs.field(converter=as_rows)


_NAN4 = (math.nan, math.nan, math.nan, math.nan)
#: What one side holds of a criterion at one point.
_Record = LinkabilityPoint | SinglingOut


def _numbers(record: _Record | None) -> tuple[float, float, float, float]:
    """(estimate, low, high, chance) of a linkability point or a singling-out record; NaN for None."""
    if record is None:
        return _NAN4
    value = record.pi_link if isinstance(record, LinkabilityPoint) else record.pi_sing
    return (value, record.low, record.high, record.chance)


def _link_points(side: SummaryCriteria) -> dict[int, LinkabilityPoint]:
    curve = None if side.legal is None else side.legal.linkability
    return {} if curve is None else {p.n_prime: p for p in curve.points}


def _link_places(a: SummaryCriteria, b: SummaryCriteria) -> list[tuple[str, int | None, int | None]]:
    """(at, N' of A, N' of B) of the pi_link rows of a pair: the N' both have, and N'=N where the two N differ.

    Where a side has no curve: N' = 2 and N' = N (each side's N), None on the side without it.
    """
    points_a, points_b = _link_points(a), _link_points(b)
    if points_a and points_b:
        both: list[tuple[str, int | None, int | None]] = [
            (f"N'={k}", k, k) for k in sorted(set(points_a) & set(points_b))
        ]
        if a.n_enrolled != b.n_enrolled and a.n_enrolled in points_a and b.n_enrolled in points_b:
            both.append(("N'=N", a.n_enrolled, b.n_enrolled))
        return both
    places = [("N'=2", 2, 2)]
    if max(a.n_enrolled, b.n_enrolled) > 2:
        places.append(("N'=N", a.n_enrolled, b.n_enrolled))
    return [(at, k_a if k_a in points_a else None, k_b if k_b in points_b else None) for at, k_a, k_b in places]


def _row(
    names: tuple[str, str],
    criterion: str,
    at: str,
    sides: tuple[SummaryCriteria, SummaryCriteria],
    found: tuple[tuple[int | None, _Record | None], tuple[int | None, _Record | None]],
    same: bool,
) -> LegalComparisonRow:
    """The row of *criterion* at *at*: each side's (N' or N, record or None), A - B where *same* and both have it.

    A side without its record gets NaN numbers and the reason (:meth:`SummaryCriteria.absent`).
    """
    (at_a, record_a), (at_b, record_b) = found
    va, la, ha, ca = _numbers(record_a)
    vb, lb, hb, cb = _numbers(record_b)
    key = "linkability" if criterion == "pi_link" else "singling_out"
    absent = [
        ("" if r is not None else (s.absent(key) or f"no point at {at}")) for s, r in zip(sides, (record_a, record_b))
    ]
    diff = va - vb if same and record_a is not None and record_b is not None else math.nan
    return LegalComparisonRow(
        a=names[0], b=names[1], criterion=criterion, at=at, at_a=at_a, at_b=at_b,
        value_a=va, low_a=la, high_a=ha, chance_a=ca, value_b=vb, low_b=lb, high_b=hb, chance_b=cb,
        diff=diff, absent_a=absent[0], absent_b=absent[1],
    )  # fmt: skip


def _pair_rows(names: tuple[str, str], a: SummaryCriteria, b: SummaryCriteria) -> list[LegalComparisonRow]:
    """The rows of one pair: pi_link at its places (:func:`_link_places`), then pi_sing."""
    rows = []
    points_a, points_b = _link_points(a), _link_points(b)
    for at, k_a, k_b in _link_places(a, b):
        found = ((k_a, points_a.get(k_a) if k_a else None), (k_b, points_b.get(k_b) if k_b else None))
        rows.append(_row(names, "pi_link", at, (a, b), found, same=k_a == k_b))
    single_a = None if a.legal is None else a.legal.singling_out
    single_b = None if b.legal is None else b.legal.singling_out
    same = single_a is not None and single_b is not None and (single_a.n, single_a.l) == (single_b.n, single_b.l)
    found_s = (
        (None if single_a is None else single_a.n, single_a),
        (None if single_b is None else single_b.n, single_b),
    )
    rows.append(_row(names, "pi_sing", "N", (a, b), found_s, same=same))
    return rows


def compare_legal(summaries: Mapping[str, SummaryCriteria]) -> LegalComparison:
    """Every pair of *summaries* side by side on linkability and singling out (module docstring).

    Parameters
    ----------
    summaries : mapping of str to SummaryCriteria
        name -> :func:`read_summary_criteria` of its file (at least two), in the order the pairs take.

    Returns
    -------
    LegalComparison
        Per pair (A the earlier): pi_link at every N' both curves have and at each side's
        N where the two differ, then pi_sing; a side without a criterion has NaN numbers
        and its reason.

    Raises
    ------
    InputError
        Fewer than two summaries, or a value that is not a :class:`SummaryCriteria`.

    Examples
    --------
    >>> from lidframe.analyses.legal import LinkabilityCurve, LinkabilityPoint
    >>> def side(pi):
    ...     curve = LinkabilityCurve(points=[LinkabilityPoint(n_prime=2, pi_link=pi, low=float("nan"),
    ...                              high=float("nan"), chance=0.5)], n_enrolled=2, n_trials=10)
    ...     legal = LegalCriteria(linkability=curve, singling_out=None, absent={"singling_out": "one trial each"},
    ...                           n_enrolled=2, n_trials=10, seed=0)
    ...     return SummaryCriteria(path="s.json", n_enrolled=2, legal=legal)
    >>> link, single = compare_legal({"a": side(0.75), "b": side(0.5)}).rows
    >>> link.at, link.diff, single.absent_a
    ("N'=2", 0.25, 'one trial each')
    """
    summaries = dict(summaries)
    if len(summaries) < 2:
        raise InputError("comparing legal criteria needs at least two summaries")
    for name, side in summaries.items():
        if not isinstance(side, SummaryCriteria):
            raise InputError(f"summary {name!r} is a {type(side).__name__}, not a SummaryCriteria")
    names = list(summaries)
    rows = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            rows.extend(_pair_rows((first, second), summaries[first], summaries[second]))
    return LegalComparison(rows)
