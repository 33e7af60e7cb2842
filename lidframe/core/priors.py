"""Priors over the N enrolled speakers: who the attacker expects a trial to come from.

A prior is any object with the method of :class:`lidframe.registry.PriorLike` (the
contract of priors, written there once): ``log_prior(enrolled)``, natural-log
probabilities of the enrolled speakers.  LID measures the
information an attacker gains *beyond* its prior, LID_i = log2(p_i,true / prior_true),
so the prior both sets the ceiling (LID <= -log2 prior_true) and the baseline.

Open set
--------
Every prior also has ``outside`` = π_∅, the prior mass of "this voice is nobody
enrolled" (:mod:`lidframe.core.openset`): ``Uniform(outside=0.2)``,
``WatchList(ids, weight, outside=0.2)``, ``Explicit(mapping, outside=0.2)``, spec strings
``"uniform?outside=0.2"``.  ``log_prior`` stays the prior *given* enrolment (it sums to 1);
enrolled speaker j then has prior (1 - π_∅) exp(log_prior_j).  The default 0 is the closed
set of the LID paper.  ``outside="auto"`` asks :func:`lidframe.evaluate` to estimate π_∅
as the share of outsider trials in the dev set: the attacker's belief, not a fact about
the eval set.

Built-ins
---------
``Uniform()``
    prior 1/N: the attacker has no idea beforehand (the paper's setting).
``WatchList(ids, weight)``
    each watch-listed speaker is *weight* times as likely a priori as each other speaker.
``Explicit(mapping)``
    any prior given as ``{speaker id: probability}``.

One rule holds for every prior that names speakers: each id it names must be enrolled.
A watch-listed id or an explicit prior's id that is not among the enrolled speakers is
an error, never a warning (:func:`check_named_ids`): prior mass put on a speaker who
cannot be a trial's answer would change every posterior, and so every LID, silently.

Watch-list and prior-table files are UTF-8 text, read by
:func:`lidframe.data.fileio.open_text` (a byte-order mark and CRLF line ends are read;
compressed files and UTF-16/32 are refused by name).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal, SupportsFloat

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.fileio import StrPath, open_text, read_text
from lidframe.errors import InputError, preview, quote, shorten
from lidframe.registry.capabilities import NO_RANGES, InputFiles, check_outside
from lidframe.registry.ranges import Range

__all__ = ["Prior", "Uniform", "WatchList", "Explicit", "check_named_ids", "read_id_list", "read_prior_table"]


def _enrolled_ids(enrolled: ArrayLike) -> np.ndarray:
    ids = np.asarray(enrolled, dtype=str)
    if ids.ndim != 1 or ids.size < 1:
        raise InputError(f"enrolled must be a non-empty 1-D array of ids, got shape {ids.shape}")
    return ids


def check_named_ids(kind: str, named: Iterable[str], enrolled: np.ndarray) -> None:
    """The one rule of priors that name speakers: every id *named* is among the *enrolled* ids.

    Parameters
    ----------
    kind : str
        What names them (``"watch-list"``, ``"explicit prior"``), for the message.
    named : iterable of str
        The ids the prior names.
    enrolled : ndarray of str
        The enrolled ids.

    Raises
    ------
    InputError
        Naming the ids that are not enrolled (the first few, and how many).
    """
    known = set(enrolled.tolist())
    unknown = [x for x in named if x not in known]
    if unknown:
        raise InputError(
            f"{kind} ids not among the {enrolled.size} enrolled speakers: {preview(unknown)}; a prior names "
            "enrolled speakers only (mass on any other would change every posterior)"
        )


def outside_field() -> Any:
    """The ``outside`` field every built-in prior has: keyword-only, default 0 (closed set), checked.

    A number in [0, 1) or ``"auto"`` (:func:`lidframe.registry.contracts.check_outside`).
    """
    return attrs.field(default=0.0, converter=check_outside, kw_only=True)


def _with_outside(name: str, outside: float | str) -> str:
    """*name* with ``(outside=...)`` appended when the prior has open-set mass."""
    if outside == 0.0:
        return name
    text = outside if isinstance(outside, str) else f"{outside:g}"
    if name.endswith(")"):
        return f"{name[:-1]}, outside={text})"
    return f"{name}(outside={text})"


class Prior:
    """Base class of priors; their contract is :class:`lidframe.registry.PriorLike`.

    Subclasses implement :meth:`log_prior` and :meth:`describe`; the built-ins also have
    ``outside`` (:func:`outside_field`).  Capabilities: :class:`lidframe.registry.PriorCapabilities`.
    """

    #: The prior mass π_∅ of "nobody enrolled" (the open set): 0 (the closed set) unless a
    #: subclass says otherwise; the built-ins take it as a field (:func:`outside_field`).
    outside: float | str = 0.0
    #: The files a spec of it reads besides those its parameters name (a classmethod
    #: ``input_files(params)``); None: only those.
    input_files: InputFiles | None = None
    #: The values each numeric option takes, ``{option: Range(...)}``, checked when a spec is read; none declared.
    option_ranges: ClassVar[Mapping[str, Range]] = NO_RANGES

    def log_prior(self, enrolled: ArrayLike) -> np.ndarray:  # pragma: no cover - interface
        """See :meth:`lidframe.registry.PriorLike.log_prior`."""
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        """A short human-readable name with parameters, for tables and JSON."""
        raise NotImplementedError


@attrs.frozen
class Uniform(Prior):
    """Uniform prior 1/N over the enrolled speakers.

    Examples
    --------
    >>> np.exp(Uniform().log_prior(["a", "b", "c", "d"])).tolist()
    [0.25, 0.25, 0.25, 0.25]

    Parameters
    ----------
    outside : float or "auto", default 0
        Prior mass of "nobody enrolled" (module docstring, "Open set").
    """

    outside: float | str = outside_field()

    def log_prior(self, enrolled: ArrayLike) -> np.ndarray:
        ids = _enrolled_ids(enrolled)
        return np.full(ids.size, -math.log(ids.size))

    def describe(self) -> str:
        return _with_outside("uniform", self.outside)


def _as_id_tuple(ids: str | Iterable[object]) -> tuple[str, ...]:
    if isinstance(ids, str):
        ids = [ids]
    return tuple(str(x) for x in ids)


def _as_float(value: SupportsFloat | str) -> float:
    """``float(value)``, an :class:`InputError` for what is not a number: the converter of :attr:`WatchList.weight`."""
    if isinstance(value, bool):
        raise InputError(f"watch-list weight must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"watch-list weight must be a number, got {quote(value)}") from None


@attrs.frozen
class WatchList(Prior):
    """Watch-list prior: listed speakers are *weight* times as likely as the others.

    With K listed among N enrolled, a listed speaker has prior ``weight / (K weight + N - K)``
    and every other one ``1 / (K weight + N - K)``.

    Parameters
    ----------
    ids : sequence of str
        Watch-listed speaker ids; each must be enrolled.
    weight : float
        Prior mass of a listed speaker relative to an unlisted one; > 0 and finite
        (> 1 up-weights the watch list, < 1 down-weights it).
    outside : float or "auto", default 0
        Prior mass of "nobody enrolled" (module docstring, "Open set").

    Examples
    --------
    >>> np.exp(WatchList(["a"], 3.0).log_prior(["a", "b", "c"])).round(2).tolist()
    [0.6, 0.2, 0.2]
    """

    ids: tuple[str, ...] = attrs.field(converter=_as_id_tuple)
    weight: float = attrs.field(converter=_as_float)
    outside: float | str = outside_field()

    def __attrs_post_init__(self) -> None:
        if not self.ids:
            raise InputError("a watch list needs at least one speaker id")
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise InputError(f"watch-list weight must be positive and finite, got {self.weight}")
        if len(set(self.ids)) != len(self.ids):
            dup = next(x for x in self.ids if self.ids.count(x) > 1)
            raise InputError(f"watch-list id {quote(dup)} appears more than once")

    @classmethod
    def from_params(
        cls,
        *,
        ids: str | Sequence[str] | None = None,
        file: StrPath | None = None,
        weight: float = 10.0,
        outside: float | Literal["auto"] = 0.0,
    ) -> WatchList:
        """Build from spec parameters: ``watchlist?file=ids.txt&weight=5`` or ``?ids=a,b``.

        Parameters
        ----------
        ids : str or sequence of str, optional
            Comma-separated speaker ids, or a sequence of them; kept as text (``007``
            stays ``"007"``).
        file : path, optional
            One id per line (see :func:`read_id_list`).
        weight : float
            Relative prior mass of a listed speaker (default 10).
        outside : float or "auto"
            Prior mass of "nobody enrolled" (default 0).
        """
        if (ids is None) == (file is None):
            raise InputError("a watch-list prior needs exactly one of ids=a,b,... or file=PATH")
        if file is None:
            listed = [str(x) for x in ids] if isinstance(ids, (list, tuple)) else str(ids).split(",")
            listed = [x.strip() for x in listed]
            if not all(listed):
                raise InputError(
                    f"watch-list ids={shorten(repr(ids))}: an empty id; expected comma-separated speaker ids"
                )
            return cls(listed, weight, outside=outside)
        listed = read_id_list(file)
        try:
            return cls(listed, weight, outside=outside)
        except InputError as exc:
            raise InputError(f"{file}: {exc}") from None

    def log_prior(self, enrolled: ArrayLike) -> np.ndarray:
        ids = _enrolled_ids(enrolled)
        check_named_ids("watch-list", self.ids, ids)
        listed = np.isin(ids, np.asarray(self.ids, dtype=str))
        mass = np.where(listed, self.weight, 1.0)
        return np.log(mass) - math.log(mass.sum())

    def describe(self) -> str:
        return _with_outside(f"watchlist({len(self.ids)} ids, weight={self.weight:g})", self.outside)


def _as_mapping(mapping: Mapping[Any, SupportsFloat]) -> dict[str, float]:
    if not isinstance(mapping, Mapping):
        raise InputError(f"an explicit prior needs a mapping {{speaker id: probability}}, got {type(mapping).__name__}")
    out = {}
    for key, value in mapping.items():
        try:
            out[str(key)] = float(value)
        except (TypeError, ValueError):
            raise InputError(f"explicit prior of {quote(key)} is {quote(value)}; expected a number") from None
    return out


@attrs.frozen
class Explicit(Prior):
    """A prior given speaker by speaker.

    Parameters
    ----------
    mapping : mapping of str to float
        Prior probability of each enrolled id; must cover every enrolled speaker and name
        no other (the watch list's rule, :func:`check_named_ids`), all values positive
        and finite.  Values are renormalised, with a :class:`UserWarning` when they do not
        already sum to 1 (within 1e-9).
    outside : float or "auto", default 0
        Prior mass of "nobody enrolled" (module docstring, "Open set"); the mapping then
        gives the prior given enrolment (shared out over 1 - outside).

    Examples
    --------
    >>> np.exp(Explicit({"a": 0.5, "b": 0.25, "c": 0.25}).log_prior(["c", "a", "b"])).tolist()
    [0.25, 0.5, 0.25]
    """

    mapping: dict[str, float] = attrs.field(converter=_as_mapping, eq=False)
    outside: float | str = outside_field()

    def __attrs_post_init__(self) -> None:
        for key, value in self.mapping.items():
            if not (math.isfinite(value) and value > 0):
                raise InputError(f"explicit prior of {quote(key)} is {value}; expected a positive finite probability")

    @classmethod
    def from_params(cls, *, file: StrPath | None = None, outside: float | Literal["auto"] = 0.0) -> Explicit:
        """Build from spec parameters: ``explicit?file=prior.csv`` (CSV ``enroll_spk,prior``), ``&outside=0.2``."""
        if file is None:
            raise InputError("an explicit prior needs file=PRIOR.csv (columns enroll_spk,prior)")
        return cls(read_prior_table(file), outside=outside)

    def log_prior(self, enrolled: ArrayLike) -> np.ndarray:
        ids = _enrolled_ids(enrolled)
        missing = [x for x in ids.tolist() if x not in self.mapping]
        if missing:
            raise InputError(f"explicit prior has no probability for enrolled speakers {preview(missing)}")
        check_named_ids("explicit prior", self.mapping, ids)
        mass = np.array([self.mapping[x] for x in ids.tolist()], dtype=np.float64)
        total = mass.sum()
        if abs(total - 1.0) > 1e-9:
            warnings.warn(f"explicit prior sums to {total:.12g}, not 1; renormalising", UserWarning, stacklevel=2)
        return np.log(mass) - math.log(total)

    def describe(self) -> str:
        return _with_outside(f"explicit({len(self.mapping)} ids)", self.outside)


def read_id_list(path: StrPath) -> list[str]:
    """Read speaker ids, one per line (blank lines and ``#`` comments ignored).

    The file is UTF-8 text (:func:`~lidframe.data.fileio.open_text`: a byte-order mark
    and CRLF line ends are read).

    Raises
    ------
    InputError
        If the file is not a readable UTF-8 text file, holds no id, a line holds more than
        one word, or an id repeats (naming the file and line).
    """
    try:
        lines = read_text(path, "an id-list file (one speaker id per line)").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read id list ({exc.strerror or exc})") from None
    ids: list[str] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if len(text.split()) > 1 or "," in text:
            raise InputError(f"{path}: line {number} holds {quote(text)}; expected one speaker id per line")
        if text in first_line:
            raise InputError(f"{path}: line {number} repeats id {quote(text)} (first on line {first_line[text]})")
        first_line[text] = number
        ids.append(text)
    if not ids:
        raise InputError(f"{path}: no speaker ids (expected one id per line)")
    return ids


def read_prior_table(path: StrPath) -> dict[str, float]:
    """Read a CSV with columns ``enroll_spk,prior`` into ``{speaker id: probability}``.

    The file is UTF-8 text (:func:`~lidframe.data.fileio.open_text`: a byte-order mark
    and CRLF line ends are read).

    Raises
    ------
    InputError
        Naming the file (and line) of a file that is not readable UTF-8 text, a missing or
        unexpected column, an empty id, a value that is not a positive finite number, or
        a repeated id.
    """
    import pandas as pd

    try:
        with open_text(path, "a prior-table file (CSV enroll_spk,prior)") as handle:
            frame = pd.read_csv(handle, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: empty file; expected a header enroll_spk,prior and one row per speaker") from None
    except (OSError, pd.errors.ParserError) as exc:
        raise InputError(f"{path}: cannot read prior table ({shorten(str(exc).splitlines()[0])})") from None
    missing = [c for c in ("enroll_spk", "prior") if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}; expected enroll_spk,prior")
    extra = [str(c) for c in frame.columns if c not in ("enroll_spk", "prior")]
    if extra:
        raise InputError(f"{path}: unexpected column(s) {preview(extra)}; expected exactly enroll_spk,prior")
    if len(frame) == 0:
        raise InputError(f"{path}: no data rows; expected one row per enrolled speaker")
    speakers = frame["enroll_spk"].str.strip()
    if speakers.eq("").any():
        r = int(speakers.eq("").to_numpy().argmax())
        raise InputError(f"{path}: line {r + 2} has an empty enroll_spk")
    values = pd.to_numeric(frame["prior"].str.strip(), errors="coerce").to_numpy(dtype=np.float64)
    bad = ~(np.isfinite(values) & (values > 0))
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{path}: line {r + 2} gives speaker {quote(speakers.iat[r])} prior {quote(frame['prior'].iat[r])}; "
            "expected a positive finite number"
        )
    dup = speakers.duplicated()
    if dup.any():
        r = int(dup.to_numpy().argmax())
        raise InputError(f"{path}: line {r + 2} repeats speaker {quote(speakers.iat[r])}")
    return dict(zip(speakers, values.tolist()))
