"""ScoreSet: an attacker's T x N similarity matrix with the ids that give it meaning.

Row *i* is one trial utterance (speaker ``trial_speakers[i]``, id ``trial_ids[i]``);
column *j* is one enrolled speaker ``enrolled[j]``.  A trial whose speaker is not
among the enrolled ids is an *outsider trial*: it has no mated column, so it is
excluded from LID (closed-set assumption) and counted in every result.

The module also holds the rules both kinds of set share: :func:`check_ids` (ids against
the matrix shape), :func:`check_true_index` (the one validation of true-speaker columns,
:data:`OUTSIDER` = -1 included, that every engine and calibrator applies) and
:class:`TrialBookkeeping` (the closed-set views that :class:`ScoreSet` and
:class:`~lidframe.data.embedset.EmbeddingSet` inherit).

Two file layouts are read and written:

``.npz``
    keys ``scores`` (T, N) float, ``enrolled`` (N,) str, ``trial_speakers`` (T,) str
    and optionally ``trial_ids`` (T,) str; stored without pickle.  A file ``lidframe
    score`` wrote also holds its provenance (:mod:`lidframe.data.provenance`), which
    loading leaves unread.
``.csv``
    the long layout of the published LID reference code, one row per
    (trial, enrolled speaker) pair: ``enroll_spk,trial_spk,trial_id,score``.
    Every trial must have exactly one row per enrolled speaker.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.data.fileio import StrPath, atomic_path, check_input_file, float_texts, open_text
from lidframe.data.npzfile import Kind, read_npz
from lidframe.data.provenance import PROVENANCE_KEY, ScoreProvenance, provenance_member
from lidframe.errors import InputError, preview, quote, shorten

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ScoreSet",
    "CSV_COLUMNS",
    "NPZ_KEYS",
    "OUTSIDER",
    "IMPOSTOR",
    "check_ids",
    "check_true_index",
    "TrialBookkeeping",
]

#: Column names of the long CSV layout (published LID reference code).
CSV_COLUMNS = ("enroll_spk", "trial_spk", "trial_id", "score")

#: Keys of a score-set ``.npz`` (``trial_ids`` optional) and what each array holds.
NPZ_KEYS = ("scores", "enrolled", "trial_speakers", "trial_ids")
_NPZ_KINDS: dict[str, Kind] = {"scores": "numbers", "enrolled": "ids", "trial_speakers": "ids", "trial_ids": "ids"}

#: ``true_index`` value of an outsider trial (its speaker is not enrolled).
OUTSIDER = -1
#: Deprecated: the old name of :data:`OUTSIDER` (an outsider trial was called an impostor
#: trial); it will be removed in the next release.
IMPOSTOR = OUTSIDER

# what a score-set file is, in messages about a path that is not one
_SCORE_SET_FILE = "a score-set file (.npz or .csv)"


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def as_real_array(value: ArrayLike, *, what: str, keep_float32: bool = False) -> np.ndarray:
    """*value* as a new read-only float64 array (float32 kept with *keep_float32*); *what* names it in errors.

    Complex input is refused (dropping the imaginary part would change the data), and
    anything numpy cannot turn into numbers is an :class:`~lidframe.errors.InputError`.
    """
    try:
        raw = np.asarray(value)
        if raw.dtype.kind == "c":
            raise TypeError(f"complex values (dtype {raw.dtype}) have no real ordering")
        dtype = np.float32 if keep_float32 and raw.dtype == np.float32 else np.float64
        array = np.array(raw, dtype=dtype, copy=True)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} must be a real numeric array: {_one_line(exc)}") from None
    return _readonly(array)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _as_scores(value: ArrayLike) -> np.ndarray:
    return as_real_array(value, what="scores (T, N)")


@overload
def as_ids(value: None) -> None: ...
@overload
def as_ids(value: ArrayLike) -> np.ndarray: ...
def as_ids(value: ArrayLike | None) -> np.ndarray | None:
    """*value* as a new read-only str array of ids (numbers are written as text); None stays None.

    The converter of the id fields of :class:`ScoreSet` and
    :class:`~lidframe.data.embedset.EmbeddingSet`.
    """
    if value is None:
        return None
    ids = np.asarray(value)
    if ids.dtype.kind not in "US":
        ids = np.asarray([str(x) for x in np.ravel(ids)]).reshape(ids.shape)
    return _readonly(np.array(ids, dtype=str, copy=True))


def _first_duplicate(ids: np.ndarray) -> Any:
    seen = set()
    for x in ids:
        if x in seen:
            return x
        seen.add(x)
    return None


def check_ids(
    enrolled: np.ndarray,
    trial_speakers: np.ndarray,
    trial_ids: np.ndarray | None,
    shape: tuple[int, int],
    what: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate the ids of a (T, N) set; return (enrolled, trial_speakers, trial_ids, true_index).

    *enrolled*, *trial_speakers* and *trial_ids* are read-only str arrays (``trial_ids``
    may be None: ``"0"``, ``"1"``, ... are made); *what* names the (T, N) data in errors.
    """
    n_trials, n_enrolled = shape
    if enrolled.ndim != 1 or enrolled.shape[0] != n_enrolled:
        raise InputError(f"enrolled has shape {enrolled.shape} but {what} has {n_enrolled} columns (shape {shape})")
    if trial_speakers.ndim != 1 or trial_speakers.shape[0] != n_trials:
        raise InputError(
            f"trial_speakers has shape {trial_speakers.shape} but {what} has {n_trials} rows (shape {shape})"
        )
    if trial_ids is None:
        trial_ids = _readonly(np.arange(n_trials).astype(str))
    elif trial_ids.ndim != 1 or trial_ids.shape[0] != n_trials:
        raise InputError(f"trial_ids has shape {trial_ids.shape} but {what} has {n_trials} rows (shape {shape})")
    if n_trials < 1:
        raise InputError("a score set needs at least one trial (T >= 1), got T = 0")
    if n_enrolled < 2:
        raise InputError(f"1-to-N linkage needs at least two enrolled speakers (N >= 2), got N = {n_enrolled}")
    dup = _first_duplicate(enrolled)
    if dup is not None:
        raise InputError(f"enrolled speaker id {quote(dup)} appears more than once; enrolled ids must be unique")
    dup = _first_duplicate(trial_ids)
    if dup is not None:
        raise InputError(f"trial id {quote(dup)} appears more than once; trial ids must be unique")
    column = {spk: j for j, spk in enumerate(enrolled)}
    true_index = np.fromiter((column.get(spk, -1) for spk in trial_speakers), dtype=np.intp, count=n_trials)
    return enrolled, trial_speakers, trial_ids, _readonly(true_index)


def check_true_index(true_index: ArrayLike, n_trials: int, n_enrolled: int, *, allow_outsider: bool) -> np.ndarray:
    """Validate the true-speaker column of each trial; the one rule every engine and calibrator uses.

    The rule: ``true_index`` is an integer array of shape (T,) whose entries are columns
    ``0 <= j < N``; with ``allow_outsider=True`` an entry may also be :data:`OUTSIDER`
    (-1, a trial whose speaker is not enrolled: LID engines give it NaN).  Any other
    value (>= N, or negative other than -1, or -1 where outsiders are not allowed) is
    an error naming the first bad row.

    Parameters
    ----------
    true_index : array_like of int, shape (T,)
        Column of each trial's true speaker.
    n_trials, n_enrolled : int
        T and N.
    allow_outsider : bool
        Whether -1 (outsider trial) is accepted: True for the LID engines on score
        matrices (:mod:`lidframe.core.lid`), False for closed-set consumers (the
        streaming engine, a calibrator's ``fit_rows``, ``true_speaker_rank``).

    Returns
    -------
    ndarray of intp, shape (T,)
        The validated index (no copy when it already is intp).

    Raises
    ------
    InputError
        Wrong shape, a non-integer dtype, or a value outside the rule.
    """
    values = np.asarray(true_index)
    if values.shape != (n_trials,) or values.dtype.kind not in "iu":
        raise InputError(
            f"true_index must be an integer array of shape ({n_trials},), got shape {values.shape} dtype {values.dtype}"
        )
    low = OUTSIDER if allow_outsider else 0
    bad = (values < low) | (values >= n_enrolled)
    if bad.any():
        rows = np.flatnonzero(bad)
        i = int(rows[0])
        allowed = " or -1 (outsider trial)" if allow_outsider else " (outsider trials, -1, must be dropped first)"
        more = f"; {rows.size} bad rows: {preview(rows)}" if rows.size > 1 else ""
        raise InputError(
            f"true_index of row {i} is {values[i].item()}; expected a column in [0, {n_enrolled}){allowed}{more}"
        )
    return values.astype(np.intp, copy=False)


class TrialBookkeeping:
    """The closed-set views shared by score and embedding sets (from their ``_true_index``).

    ``is_impostor`` and ``n_impostor_trials``, the old names of :attr:`is_outsider` and
    :attr:`n_outsider_trials`, still read for one release, with a :class:`FutureWarning`.
    """

    # set by each subclass (an attrs field filled in ``__attrs_post_init__``); declared for the type checker
    _true_index: np.ndarray

    @property
    def true_index(self) -> np.ndarray:
        """(T,) int: column of each trial's true speaker, -1 for outsider trials."""
        return self._true_index

    @property
    def is_outsider(self) -> np.ndarray:
        """(T,) bool: True where the trial's speaker is not enrolled."""
        return self._true_index < 0

    @property
    def n_outsider_trials(self) -> int:
        """Number of trials whose speaker is not enrolled."""
        return int(np.count_nonzero(self._true_index < 0))

    @property
    def is_impostor(self) -> np.ndarray:
        """Deprecated: :attr:`is_outsider` (a FutureWarning; removed in the next release)."""
        name = type(self).__name__
        warnings.warn(
            f"{name}.is_impostor is now {name}.is_outsider; the old name will be removed in the next release",
            FutureWarning,
            stacklevel=2,
        )
        return self.is_outsider

    @property
    def n_impostor_trials(self) -> int:
        """Deprecated: :attr:`n_outsider_trials` (a FutureWarning; removed in the next release)."""
        name = type(self).__name__
        warnings.warn(
            f"{name}.n_impostor_trials is now {name}.n_outsider_trials; the old name will be removed in the next "
            "release",
            FutureWarning,
            stacklevel=2,
        )
        return self.n_outsider_trials


@attrs.frozen(eq=False)
class ScoreSet(TrialBookkeeping):
    """Similarity scores of T trial utterances against N enrolled speakers.

    Parameters
    ----------
    scores : array_like, shape (T, N)
        Attacker similarities (higher = more alike); stored as read-only float64.
    enrolled : array_like of str, shape (N,)
        Enrolled speaker ids, unique, N >= 2.
    trial_speakers : array_like of str, shape (T,)
        True speaker of each trial.  Ids not in ``enrolled`` mark outsider trials.
    trial_ids : array_like of str, shape (T,), optional
        Unique trial (utterance) ids; ``"0"``, ``"1"``, ... when omitted.
    source : str, optional (keyword only)
        The file the set was read from (set by :meth:`load`), named in error messages of
        later steps (z-norm, calibration, priors); None for a set built in memory.

    Raises
    ------
    InputError
        On shape mismatches, N < 2, T < 1, non-finite scores (naming the trial and the
        enrolled column), duplicate enrolled ids or duplicate trial ids.

    Examples
    --------
    >>> s = ScoreSet([[0.9, 0.1], [0.2, 0.8]], ["a", "b"], ["a", "b"])
    >>> s.true_index.tolist()
    [0, 1]
    """

    scores: np.ndarray = attrs.field(converter=_as_scores)
    enrolled: np.ndarray = attrs.field(converter=as_ids)
    trial_speakers: np.ndarray = attrs.field(converter=as_ids)
    trial_ids: np.ndarray = attrs.field(default=None, converter=as_ids)  # None: "0", "1", ... are made
    source: str | None = attrs.field(default=None, kw_only=True)
    _true_index: np.ndarray = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        s = self.scores
        if s.ndim != 2:
            raise InputError(f"scores must be a 2-D (T, N) array, got shape {s.shape}")
        _n_trials, _n_enrolled = s.shape
        ids = check_ids(self.enrolled, self.trial_speakers, self.trial_ids, s.shape, "scores")
        object.__setattr__(self, "trial_ids", ids[2])
        finite = np.isfinite(s)
        if not finite.all():
            i, j = np.argwhere(~finite)[0]
            count = int((~finite).sum())
            raise InputError(
                f"score of trial {quote(self.trial_ids[i])} (row {i}) against enrolled "
                f"{quote(self.enrolled[j])} (column {j}) is {s[i, j]}; scores must be finite"
                + (f" ({count} non-finite scores in all)" if count > 1 else "")
            )
        object.__setattr__(self, "_true_index", ids[3])

    # ------------------------------------------------------------------ views
    @property
    def n_trials(self) -> int:
        """T, the number of trials (rows), outsider trials included."""
        return self.scores.shape[0]

    @property
    def n_enrolled(self) -> int:
        """N, the number of enrolled speakers (columns)."""
        return self.scores.shape[1]

    def mated_mask(self) -> np.ndarray:
        """(T, N) bool: True at each trial's true-speaker column (none on outsider rows)."""
        mask = np.zeros(self.scores.shape, dtype=bool)
        rows = np.flatnonzero(self._true_index >= 0)
        mask[rows, self._true_index[rows]] = True
        return mask

    def subset(self, rows: ArrayLike) -> ScoreSet:
        """Return the score set restricted to *rows* (index array or boolean mask)."""
        rows = np.asarray(rows)
        return ScoreSet(
            self.scores[rows], self.enrolled, self.trial_speakers[rows], self.trial_ids[rows], source=self.source
        )

    def closed_set(self) -> ScoreSet:
        """Return the score set without outsider trials."""
        return self.subset(self._true_index >= 0)

    def equals(self, other: ScoreSet) -> bool:
        """Exact equality of scores and all ids."""
        return (
            isinstance(other, ScoreSet)
            and np.array_equal(self.scores, other.scores)
            and np.array_equal(self.enrolled, other.enrolled)
            and np.array_equal(self.trial_speakers, other.trial_speakers)
            and np.array_equal(self.trial_ids, other.trial_ids)
        )

    # --------------------------------------------------------------------- io
    @classmethod
    def load(cls, path: StrPath) -> ScoreSet:
        """Read a score set from ``.npz`` or long ``.csv`` (chosen by suffix).

        A ``.csv`` is UTF-8 text (a byte-order mark and CRLF line ends are read; other
        encodings and compressed files are refused by name,
        :func:`~lidframe.data.fileio.open_text`).

        Raises
        ------
        InputError
            Naming the file and what is wrong with it (not a regular file, missing key or
            column, bad row, duplicate or missing (enroll, trial) pair, ...).
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".npz", ".csv"):
            if os.path.lexists(path):  # a folder, a FIFO or a device (/dev/zero) is named as what it is
                check_input_file(path, _SCORE_SET_FILE)
            raise InputError(f"{path}: unknown score-set format {quote(path.suffix)}; expected .npz or .csv")
        check_input_file(path, _SCORE_SET_FILE)
        try:
            if suffix == ".npz":
                return _load_npz(path)
            return _load_csv(path)
        except InputError as exc:
            message = str(exc)
            raise InputError(message if message.startswith(str(path)) else f"{path}: {message}") from None

    def save(self, path: StrPath, *, provenance: ScoreProvenance | None = None) -> None:
        """Write the score set to ``.npz`` or long ``.csv`` (chosen by suffix), atomically.

        A ``.csv`` writes each score as the shortest decimal text that reads back as the same
        float64 (:func:`~lidframe.data.fileio.float_texts`): :meth:`load` gives the same bits.
        An ``.npz`` also holds *provenance*, where given (:mod:`lidframe.data.provenance`);
        a ``.csv`` has no room for it (a warning says it is left out).
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".npz":
            arrays = {key: getattr(self, key) for key in NPZ_KEYS}
            if provenance is not None:
                arrays[PROVENANCE_KEY] = provenance_member(provenance, where=path)
            with atomic_path(path, suffix=".npz") as tmp, open(tmp, "wb") as handle:
                np.savez(handle, **arrays)
        elif suffix == ".csv":
            if provenance is not None:
                warnings.warn(f"{path}: a .csv score file holds no provenance; write .npz to keep it", stacklevel=2)
            frame = self.to_frame()
            frame["score"] = float_texts(self.scores.ravel().tolist())  # shortest text that reads back exactly
            with atomic_path(path) as tmp:
                frame.to_csv(tmp, index=False)
        else:
            raise InputError(f"{path}: unknown score-set format {path.suffix!r}; expected .npz or .csv")

    def to_frame(self) -> pd.DataFrame:
        """Return the long layout as a :class:`pandas.DataFrame` (T*N rows, trial-major)."""
        import pandas as pd

        n_trials, n_enrolled = self.scores.shape
        return pd.DataFrame(
            {
                "enroll_spk": np.tile(self.enrolled, n_trials),
                "trial_spk": np.repeat(self.trial_speakers, n_enrolled),
                "trial_id": np.repeat(self.trial_ids, n_enrolled),
                "score": self.scores.ravel(),
            }
        )

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, source: str | None = None, lines: ArrayLike | None = None) -> ScoreSet:
        """Build a score set from the long layout (``enroll_spk, trial_spk, trial_id, score``).

        Trials and enrolled speakers keep their order of first appearance.  Messages begin
        with *source* (the file the frame was read from, kept as the set's ``source``;
        ``table`` when None), name rows by their line in that file and cut long values
        (:func:`~lidframe.errors.quote`).

        Parameters
        ----------
        frame : pandas.DataFrame
            One row per (trial, enrolled speaker) pair.
        source : str, optional
            The file the frame was read from.
        lines : array_like of int, shape (len(frame),), optional
            The file line of each row, for messages.  Default: a CSV with a header, so
            row *r* is on line *r* + 2 (the header is line 1).  A reader of a file without
            a header, or one that skips blank lines, passes its own.
        """
        where = source or "table"
        line_of = np.arange(2, len(frame) + 2) if lines is None else np.asarray(lines, dtype=np.int64)
        if line_of.shape != (len(frame),):
            raise ValueError(f"lines has shape {line_of.shape}; expected one line number per row ({len(frame)},)")
        _check_long_columns(frame, where, line_of)
        scores = _long_scores(frame, where, line_of)
        layout = _LongLayout.of(frame, where, line_of)
        matrix = np.empty(layout.n_trials * layout.n_enrolled, dtype=np.float64)
        matrix[layout.pair] = scores
        return cls(
            matrix.reshape(layout.n_trials, layout.n_enrolled),
            np.asarray(layout.enrolled, dtype=str),
            np.asarray(layout.trial_speakers, dtype=str),
            np.asarray(layout.trial_ids, dtype=str),
            source=source,
        )


def _check_long_columns(frame: pd.DataFrame, where: str, line_of: np.ndarray) -> None:
    """Refuse a long-layout frame without exactly :data:`CSV_COLUMNS`, without rows, or with an empty id."""
    missing = [c for c in CSV_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{where}: missing column(s) {', '.join(missing)}; expected columns {','.join(CSV_COLUMNS)}")
    extra = [str(c) for c in frame.columns if c not in CSV_COLUMNS]
    if extra:
        raise InputError(
            f"{where}: unexpected column(s) {preview(extra)}; expected exactly the columns "
            f"{','.join(CSV_COLUMNS)} (lidframe does not ignore data it was given)"
        )
    if len(frame) == 0:
        raise InputError(f"{where}: no data rows")
    for column in CSV_COLUMNS[:3]:
        empty = frame[column].astype(str).str.strip().eq("").to_numpy()
        if empty.any():
            r = int(np.flatnonzero(empty)[0])
            raise InputError(f"{where}: line {line_of[r]} has an empty {column}; every row needs all four fields")


def _long_scores(frame: pd.DataFrame, where: str, line_of: np.ndarray) -> np.ndarray:
    """The ``score`` column as float64, shape (rows,); a row whose score is not a finite number is refused."""
    import pandas as pd

    raw = frame["score"]
    scores = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(scores)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{where}: line {line_of[r]} (trial {quote(frame['trial_id'].iat[r])}, enrolled "
            f"{quote(frame['enroll_spk'].iat[r])}) has score {quote(raw.iat[r])}; expected a finite number"
        )
    return scores


@attrs.frozen(eq=False)
class _LongLayout:
    """Where each row of a long-layout frame goes in the (T, N) matrix, and the ids of its rows and columns.

    Trials and enrolled speakers keep their order of first appearance; ``pair`` (rows,) is
    each row's flat index ``trial * N + enrolled`` into the matrix.
    """

    trial_ids: np.ndarray
    enrolled: np.ndarray
    trial_speakers: np.ndarray
    pair: np.ndarray

    @property
    def n_trials(self) -> int:
        return len(self.trial_ids)

    @property
    def n_enrolled(self) -> int:
        return len(self.enrolled)

    @classmethod
    def of(cls, frame: pd.DataFrame, where: str, line_of: np.ndarray) -> _LongLayout:
        """The layout of *frame*; a trial with two speakers, or a pair missing or given twice, is refused."""
        import pandas as pd

        trial_codes, trial_ids = pd.factorize(frame["trial_id"], sort=False)
        enroll_codes, enrolled = pd.factorize(frame["enroll_spk"], sort=False)
        n_trials, n_enrolled = len(trial_ids), len(enrolled)
        # one speaker per trial id
        trial_spk_col = frame["trial_spk"].to_numpy()
        _, first_row = np.unique(trial_codes, return_index=True)
        trial_speakers = trial_spk_col[first_row]
        clash = trial_spk_col != trial_speakers[trial_codes]
        if clash.any():
            r = int(np.flatnonzero(clash)[0])
            t = trial_codes[r]
            raise InputError(
                f"{where}: line {line_of[r]} gives trial {quote(trial_ids[t])} speaker {quote(trial_spk_col[r])}, "
                f"but line {line_of[first_row[t]]} gave {quote(trial_speakers[t])}; a trial has one speaker"
            )
        pair = trial_codes.astype(np.int64) * n_enrolled + enroll_codes
        counts = np.bincount(pair, minlength=n_trials * n_enrolled)
        if (counts > 1).any():
            p = int(np.flatnonzero(counts > 1)[0])
            rows = line_of[np.flatnonzero(pair == p)[:2]]
            raise InputError(
                f"{where}: duplicate pair (enroll_spk {quote(enrolled[p % n_enrolled])}, trial_id "
                f"{quote(trial_ids[p // n_enrolled])}) at lines {rows[0]} and {rows[1]}; each pair must appear once"
            )
        if (counts == 0).any():
            holes = np.flatnonzero(counts == 0)
            p = int(holes[0])
            raise InputError(
                f"{where}: missing pair (enroll_spk {quote(enrolled[p % n_enrolled])}, trial_id "
                f"{quote(trial_ids[p // n_enrolled])}); every trial needs a score against all {n_enrolled} enrolled "
                f"speakers ({holes.size} pairs missing)"
            )
        return cls(trial_ids=trial_ids, enrolled=enrolled, trial_speakers=trial_speakers, pair=pair)


def _load_npz(path: Path) -> ScoreSet:
    optional = (*NPZ_KEYS[3:], PROVENANCE_KEY)
    fields = read_npz(path, NPZ_KEYS[:3], optional, kinds=_NPZ_KINDS, what="score set", only=NPZ_KEYS)
    return ScoreSet(**fields, source=str(path))


def _load_csv(path: Path) -> ScoreSet:
    import pandas as pd

    try:
        with open_text(path, _SCORE_SET_FILE) as handle:
            frame = pd.read_csv(handle, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: empty file; expected a header {','.join(CSV_COLUMNS)} and data rows") from None
    except pd.errors.ParserError as exc:
        raise InputError(f"{path}: not a readable CSV ({shorten(str(exc).splitlines()[0])})") from None
    return ScoreSet.from_frame(frame, source=str(path))
