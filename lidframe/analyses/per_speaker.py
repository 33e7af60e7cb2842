"""Per-speaker disclosure: who leaks most.

An ALID over all trials can hide a few speakers whose every utterance is linked.
:func:`per_speaker` splits the per-trial LID of one evaluation by the true speaker of
each trial and reports, for every enrolled speaker,

* ``n_trials``   the speaker's closed-set eval trials;
* ``alid``       mean LID of those trials (bits);
* ``lid_max``    their largest LID (bits);
* ``pdr``        share of them with LID > 0;
* ``rank1_rate`` share of them whose true speaker the attacker ranks first
  (:attr:`lidframe.core.evaluation.Result.true_rank`);
* ``lid_ceiling`` the most one trial of this speaker can disclose, -log2 prior(speaker)
  bits (log2 N under the uniform prior);

so that the trial-weighted mean of the speakers' ALIDs is the overall ALID, and their
``n_trials`` add up to the closed-set trial count.

With ``scores=`` (the eval set evaluated) each enrolled speaker also gets its ``eer``: the
EER of its own pairs, its trials against the other enrolled speakers' trials scored against
it, on the attacker's calibrated LLRs (:mod:`lidframe.analyses.speaker_eer`; ``eer_note``
says so), and ``sort_by="eer"`` puts the lowest EER -- the speaker the attacker verifies
best -- first.

Intervals
---------
With ``bootstrap=`` each speaker gets intervals at ``bootstrap.level`` from **that
speaker's trials** alone (:mod:`lidframe.analyses.speaker_intervals`): of ``alid`` and
``lid_max`` by resampling its trials (each speaker from its own seed), of ``pdr`` the
Clopper-Pearson interval of k of n.  Where the evaluation's bootstrap refitted the
calibrator on resampled dev speakers (``Bootstrap(resample="dev+eval")`` with a dev set,
:attr:`~lidframe.core.result.Result.refit`), so do the speakers' intervals, on the same
dev resamples; else they hold it fixed, and ``bootstrap["resample"]`` says ``"eval"``.
With so few trials the ALID and LIDmax intervals fall short of their level (at nominal
95 % the BCa ALID interval covered 84 % of simulated speakers at 10 trials, 89 % at 20,
90 % at 30: ``bench/ci_coverage.py``, ``docs/statistics.md``); a speaker with a single
trial gets NaN ALID and LIDmax intervals.  ``interval_methods`` names each metric's
interval and ``interval_note`` says the above in one line (both in the JSON).

Speakers and trials that are not in the table's numbers
-------------------------------------------------------
In the closed set, outsider trials (speaker not enrolled, NaN LID) belong to no enrolled
speaker: they are left out and counted in ``n_outsider_trials``.  Enrolled speakers
without a closed-set trial stay in the table, after the others (in enrolment order),
with ``n_trials`` 0 and NaN metrics, and are counted in ``n_speakers_without_trials``.

Open set
--------
With an open-set prior (``result.outside`` = π_∅ > 0, :mod:`lidframe.core.openset`)
every trial has a LID, and the table has a row for every speaker of the eval trials:

* each enrolled speaker's row as above, over its open-set LIDs (identification
  disclosure; ``lid_ceiling`` -log2((1 - π_∅) prior(speaker))), with ``outsider`` False,
  ``membership_bits`` the mean membership disclosure of its trials,
  log2 p(enrolled | s) / (1 - π_∅) (bits), and ``misattribution_rate`` NaN;
* then one row per **outsider speaker** (a trial speaker who is not enrolled), flagged
  ``outsider`` True, most disclosed first: ``n_trials`` its trials, ``alid``, ``lid_max``
  and ``pdr`` of their LIDs -- their membership disclosure, what the attacker learned
  that this voice is not enrolled -- so ``membership_bits`` equals ``alid``;
  ``rank1_rate`` NaN (no true enrolled speaker to rank), ``lid_ceiling`` -log2 π_∅, and
  ``misattribution_rate`` the share of its trials whose top enrolled posterior exceeds
  0.5 (linked to an enrolled person who is not them).  With ``bootstrap=`` their
  intervals resample their own trials, seeded by the next children of the seed sequence.

The outsider rows come after the enrolled ones because their LID is another quantity
(membership, not identification disclosure).  ``n_outsider_trials`` then counts the
trials in the outsider rows, ``n_outsider_speakers`` those rows, ``outside`` is π_∅, and
``alid`` -- the trial-weighted mean of every row's -- is the summary's ALID over all
trials.  In the closed set the rows have no ``outsider``, ``membership_bits`` or
``misattribution_rate`` key and the record no ``outside`` or ``n_outsider_speakers``
(the table and its JSON are as they always were).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from lidframe.analyses.speaker_eer import evaluation_speaker_eers
from lidframe.analyses.speaker_intervals import PER_SPEAKER_CI_METRICS, SpeakerIntervals, speaker_interval_fields
from lidframe.core.result import Result
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.records import ABSENT_WHEN_NONE, RowRecord, TableRecord, as_rows
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError
from lidframe.stats.bootstrap import Bootstrap

__all__ = [
    "per_speaker",
    "PerSpeakerRow",
    "PerSpeakerResult",
    "PER_SPEAKER_METRICS",
    "PER_SPEAKER_CI_METRICS",
    "SORT_KEYS",
]

#: Per-speaker columns after ``speaker`` and ``n_trials`` (bits, or shares of trials).
PER_SPEAKER_METRICS = ("alid", "lid_max", "pdr", "rank1_rate", "lid_ceiling")
#: What :func:`per_speaker` can sort by, worst speaker first: ALID descending, or EER ascending.
SORT_KEYS = ("alid", "eer")


@attrs.frozen(eq=False, kw_only=True)
class PerSpeakerRow(RowRecord):
    """One enrolled speaker of :func:`per_speaker` (a row of :class:`PerSpeakerResult`).

    Also a read-only mapping of its fields (``row["alid"]``,
    :class:`~lidframe.data.records.RowRecord`); the ``<metric>_low`` / ``<metric>_high``
    keys are there only with intervals.  A speaker without trials has NaN metrics.

    Attributes
    ----------
    speaker : str
        The enrolled speaker's id.
    n_trials : int
        The speaker's closed-set eval trials.
    alid : float
        Mean LID of those trials (bits).
    alid_low, alid_high : float or None
        Interval of ``alid`` from resampling the speaker's trials (NaN with fewer than two
        trials; below its level with few trials, module docstring); None without ``bootstrap=``.
    lid_max : float
        Their largest LID (bits).
    lid_max_low, lid_max_high : float or None
        Interval of ``lid_max`` (percentile, biased low), as for ``alid``.
    pdr : float
        Share of them with LID > 0.
    pdr_low, pdr_high : float or None
        Clopper-Pearson interval of ``pdr`` (exact for a proportion; NaN without trials);
        None without ``bootstrap=``.
    rank1_rate : float
        Share of them whose true speaker the attacker ranks first (NaN for an outsider speaker).
    eer : float or None
        With ``scores=``: the EER of the speaker's own pairs (NaN without a trial, without
        another enrolled speaker's trial, and for an outsider speaker); None without.
    lid_ceiling : float
        -log2 prior(speaker) (bits): the most one trial of this speaker can disclose (open
        set: -log2((1 - π_∅) prior(speaker)), and -log2 π_∅ for an outsider speaker).
    outsider : bool or None
        Open set: whether the speaker is not enrolled (an outsider speaker's row); None in
        the closed set.
    membership_bits : float or None
        Open set: mean membership disclosure of the speaker's trials (bits; an outsider
        speaker's equals its ``alid``); None in the closed set.
    misattribution_rate : float or None
        Open set: share of an outsider speaker's trials whose top enrolled posterior
        exceeds 0.5 (NaN for an enrolled speaker); None in the closed set.
    """

    speaker: str
    n_trials: int
    alid: float
    alid_low: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    alid_high: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    lid_max: float
    lid_max_low: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    lid_max_high: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    pdr: float
    pdr_low: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    pdr_high: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    rank1_rate: float
    eer: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    lid_ceiling: float
    outsider: bool | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    membership_bits: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)
    misattribution_rate: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)


@attrs.frozen(eq=False)
class PerSpeakerResult(TableRecord):
    """Outcome of :func:`per_speaker`: one row per enrolled speaker, most disclosed first.

    ``to_dict()`` (JSON-able, the fields below) and ``to_frame()`` (the rows) come from
    :class:`~lidframe.data.records.TableRecord`.

    Attributes
    ----------
    rows : tuple of PerSpeakerRow
        One per enrolled speaker, sorted by ``alid`` descending (or, ``sorted_by`` ``"eer"``,
        by ``eer`` ascending, a NaN EER after the others; ties by speaker id), the speakers
        without trials last; in the open set then one per outsider speaker, sorted by
        ``alid`` (module docstring).
    n_enrolled : int
        N, the enrolled speakers (= ``len(rows)`` in the closed set).
    n_enrolled_trials : int
        Eval trials whose speaker is enrolled (= the sum of the rows' ``n_trials``; the
        summary's ``n_enrolled_trials``).
    n_outsider_trials : int
        Trials whose speaker is not enrolled: left out in the closed set, in the outsider
        rows in the open set.
    n_speakers_without_trials : int
        Enrolled speakers with no eval trial (the NaN rows after the other enrolled ones).
    alid : float
        The overall ALID (bits) of the evaluation, the trial-weighted mean of the rows'
        (over every trial in the open set).
    log2_n : float
        log2 N, the ceiling of LID under the uniform prior.
    calibrator, prior : str
        As in the evaluation's summary.
    bootstrap : dict or None
        The bootstrap settings used (``Bootstrap.to_dict()``: ``n_boot``, ``level``,
        ``method``, ``seed``, and ``unit`` = ``"trial"``), None without intervals.
    interval_methods : dict or None
        With intervals: metric -> how its interval is computed, ``{"alid": method,
        "lid_max": "percentile", "pdr": "clopper-pearson"}`` (``method`` the bootstrap's,
        ``"bca"`` or ``"percentile"``); None without (and then not a key of :meth:`to_dict`).
    interval_note : str or None
        With intervals: one line on what they hold (PDR's at least the level; ALID's and
        LIDmax's below it with few trials per speaker, with the coverage measured);
        None without (and then not a key of :meth:`to_dict`).
    outside : float or None
        Open set: π_∅, the prior mass of "nobody enrolled"; None in the closed set (and
        then not a key of :meth:`to_dict`).
    n_outsider_speakers : int or None
        Open set: the outsider rows; None in the closed set (not a key of :meth:`to_dict`).
    sorted_by : str or None
        With ``scores=``: the key of the rows' order, ``"alid"`` or ``"eer"``; None without
        (then sorted by ALID, and not a key of :meth:`to_dict`).
    eer_note : str or None
        With ``scores=``: what the rows' ``eer`` is, or why it was not computed; None without.
    """

    rows: tuple[PerSpeakerRow, ...] = attrs.field(converter=as_rows)
    n_enrolled: int
    n_enrolled_trials: int
    n_outsider_trials: int
    n_speakers_without_trials: int
    alid: float
    log2_n: float
    calibrator: str
    prior: str
    bootstrap: dict | None
    outside: float | None = None
    n_outsider_speakers: int | None = None
    interval_methods: dict | None = None
    interval_note: str | None = None
    sorted_by: str | None = None
    eer_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able record (:meth:`TableRecord.to_dict`), without the fields that are None and only sometimes there."""
        out = super().to_dict()
        for key in _ABSENT_WHEN_NONE:
            if out[key] is None:
                del out[key]
        return out


#: The fields of :class:`PerSpeakerResult` that only an open-set table (the first two), a
#: table with intervals (the next two) or one with EERs (the last two) has: not keys of its
#: ``to_dict()`` when None.
_ABSENT_WHEN_NONE = ("outside", "n_outsider_speakers", "interval_methods", "interval_note", "sorted_by", "eer_note")


def _speaker_columns(result: Result, closed: np.ndarray) -> np.ndarray:
    """Column in ``result.enrolled`` of each closed-set trial's speaker, shape (T_closed,)."""
    enrolled = np.asarray(result.enrolled)
    speakers = np.asarray(result.trial_speakers)[closed]
    order = np.argsort(enrolled, kind="stable")
    at = np.searchsorted(enrolled, speakers, sorter=order)
    at = np.minimum(at, enrolled.size - 1)
    columns = order[at]
    unmatched = np.flatnonzero(enrolled[columns] != speakers)
    if unmatched.size:
        trial = str(np.asarray(result.trial_ids)[closed][unmatched[0]])
        raise InputError(
            f"result: trial {trial!r} is marked closed-set but its speaker {str(speakers[unmatched[0]])!r} "
            "is not enrolled; the Result is inconsistent"
        )
    return columns


def per_speaker(
    result: Result,
    *,
    bootstrap: Bootstrap | None = None,
    scores: ScoreSet | EmbeddingSet | None = None,
    sort_by: str = "alid",
) -> PerSpeakerResult:
    """Disclosure per enrolled speaker of one evaluation (module docstring).

    Parameters
    ----------
    result : Result
        What :func:`lidframe.evaluate` (or ``evaluate_fitted``) returned.
    bootstrap : Bootstrap, optional
        Add per-speaker intervals at its level (:mod:`lidframe.analyses.speaker_intervals`:
        each speaker's trials resampled; the calibrator refitted on the dev resamples where
        *result*'s were, :attr:`~lidframe.core.result.Result.refit`).  None (default): none.
    scores : ScoreSet or EmbeddingSet, optional
        The eval set *result* evaluated: adds each enrolled speaker's ``eer``
        (:func:`lidframe.analyses.speaker_eer.evaluation_speaker_eers`).
    sort_by : {"alid", "eer"}, default "alid"
        The worst speakers first: highest ALID, or (with *scores*) lowest EER.

    Returns
    -------
    PerSpeakerResult

    Raises
    ------
    InputError
        If *result* is not a :class:`~lidframe.core.evaluation.Result`, *bootstrap* not a
        :class:`~lidframe.stats.bootstrap.Bootstrap`, *scores* not the set evaluated, or
        *sort_by* not a key of :data:`SORT_KEYS` (``"eer"`` without *scores*).

    Examples
    --------
    >>> from lidframe import evaluate
    >>> from lidframe.data.simulate import simulate_system
    >>> dev, ev = simulate_system(leakage=0.5, seed=0)
    >>> table = per_speaker(evaluate(dev, ev))
    >>> table.n_enrolled_trials == sum(row.n_trials for row in table.rows)
    True
    """
    options = _checked_options(result, bootstrap, scores, sort_by)
    eer, eer_note = (None, None) if scores is None else evaluation_speaker_eers(result, scores)
    sort_by = sort_by if eer is not None else "alid"  # EERs not computed (a note says why): by ALID
    enrolled = np.asarray(result.enrolled)
    is_outsider = np.asarray(result.is_outsider, dtype=bool)
    closed = np.flatnonzero(~is_outsider)
    open_set = result.outside > 0
    outsider_speakers, outsider_column = np.unique(np.asarray(result.trial_speakers)[is_outsider], return_inverse=True)
    intervals = _intervals(result, closed, outsider_column, outsider_speakers.size, options)
    fields = [{}] * (enrolled.size + outsider_speakers.size) if intervals is None else intervals.fields
    rows = _with_eer(_enrolled_rows(result, closed, fields[: enrolled.size]), eer)
    without = [r for r in rows if r.n_trials == 0]
    outsider_rows: list[PerSpeakerRow] = []
    if open_set:
        outsider_rows = _with_eer(
            _outsider_rows(result, is_outsider, outsider_speakers, outsider_column, fields[enrolled.size :]),
            None if eer is None else np.full(outsider_speakers.size, np.nan),  # no model of theirs to verify against
        )
    counted = np.asarray(result.lid, dtype=np.float64)[slice(None) if open_set else closed]
    return PerSpeakerResult(
        rows=_worst_first([r for r in rows if r.n_trials > 0], sort_by) + without + outsider_rows,
        n_enrolled=int(enrolled.size),
        n_enrolled_trials=int(closed.size),
        n_outsider_trials=int(is_outsider.sum()),
        n_speakers_without_trials=len(without),
        alid=float(counted.mean()) if counted.size else float("nan"),
        log2_n=math.log2(enrolled.size),
        calibrator=str(result.summary.calibrator),
        prior=str(result.summary.prior),
        bootstrap=None if intervals is None else intervals.bootstrap.to_dict(),
        outside=float(result.outside) if open_set else None,
        n_outsider_speakers=int(outsider_speakers.size) if open_set else None,
        interval_methods=None if intervals is None else intervals.methods,
        interval_note=None if intervals is None else intervals.note,
        sorted_by=None if scores is None else sort_by,
        eer_note=eer_note,
    )


def _with_eer(rows: list[PerSpeakerRow], eer: np.ndarray | None) -> list[PerSpeakerRow]:
    """*rows* with their ``eer`` (one per row, in order); as they are without (*eer* None)."""
    if eer is None:
        return rows
    return [attrs.evolve(row, eer=float(value)) for row, value in zip(rows, eer, strict=True)]


def _worst_first(rows: list[PerSpeakerRow], sort_by: str) -> list[PerSpeakerRow]:
    """*rows* worst first: ALID descending, or EER ascending with a NaN EER after the others; ties by speaker id."""
    if sort_by == "eer":
        return sorted(rows, key=_eer_key)
    return sorted(rows, key=lambda r: (-r.alid, r.speaker))


def _eer_key(row: PerSpeakerRow) -> tuple[bool, float, str]:
    """Sort key of :func:`_worst_first` by EER: a speaker with an EER before one without, then lowest EER first."""
    eer = math.nan if row.eer is None else row.eer
    return (math.isnan(eer), 0.0 if math.isnan(eer) else eer, row.speaker)


def _checked_options(
    result: Result, bootstrap: Bootstrap | None, scores: object = None, sort_by: str = "alid"
) -> Bootstrap | None:
    """The per-speaker intervals' bootstrap (*bootstrap*; None without), the inputs checked."""
    if not isinstance(result, Result):
        raise InputError(f"per_speaker needs the Result of lidframe.evaluate, got {type(result).__name__}")
    if sort_by not in SORT_KEYS:
        raise InputError(f"sort_by must be one of {', '.join(map(repr, SORT_KEYS))}, got {sort_by!r}")
    if sort_by == "eer" and scores is None:
        raise InputError("sort_by='eer' needs scores= (the eval set evaluated), from which the EERs come")
    if bootstrap is not None and not isinstance(bootstrap, Bootstrap):
        raise InputError(f"bootstrap must be None or a Bootstrap record, got {type(bootstrap).__name__}")
    return bootstrap


def _intervals(
    result: Result, closed: np.ndarray, outsider_column: np.ndarray, n_outsider_speakers: int, options: Bootstrap | None
) -> SpeakerIntervals | None:
    """The interval fields of every row: the enrolled speakers (columns) then, in the open set, the outsider ones.

    None without *options* (no intervals).
    """
    if options is None:
        return None
    n_enrolled = len(result.enrolled)
    speaker, trials = _speaker_columns(result, closed), closed
    if result.outside > 0:
        outsiders = np.flatnonzero(result.is_outsider)
        speaker = np.concatenate([speaker, n_enrolled + outsider_column]).astype(np.intp)
        trials = np.concatenate([closed, outsiders])
    return speaker_interval_fields(result, speaker, n_enrolled + n_outsider_speakers, trials, options)


def _enrolled_rows(result: Result, closed: np.ndarray, intervals: list[dict[str, Any]]) -> list[PerSpeakerRow]:
    """One row per enrolled speaker, from the *closed*-set trials (indices), in enrolment order (*intervals*: its fields).

    A speaker's ceiling is -log2 of its prior (in the open set, of its prior times the
    enrolled mass 1 - π_∅), and its open-set field its trials' mean membership disclosure.
    """
    enrolled = np.asarray(result.enrolled)
    lid = np.asarray(result.lid, dtype=np.float64)[closed]
    column = _speaker_columns(result, closed)
    open_set = result.outside > 0
    log_enrolled = math.log1p(-result.outside) if open_set else 0.0
    ceiling = -(np.asarray(result.log_prior, dtype=np.float64) + log_enrolled) / math.log(2.0)
    extra: dict[str, np.ndarray] = {}
    if open_set:
        assert result.membership_bits is not None
        extra["membership_bits"] = _column_means(np.asarray(result.membership_bits)[closed], column, enrolled.size)
    return _rows(
        enrolled,
        lid,
        np.asarray(result.true_rank)[closed] == 1,
        column,
        ceiling,
        intervals,
        outsider=False if open_set else None,
        extra=extra,
    )


def _outsider_rows(
    result: Result,
    is_outsider: np.ndarray,
    speakers: np.ndarray,
    column: np.ndarray,
    intervals: list[dict[str, Any]],
) -> list[PerSpeakerRow]:
    """Open set: one row per outsider speaker (*speakers*, *column* of each outsider trial), most disclosing first.

    An outsider's ceiling is -log2 π_∅, its LID is its membership disclosure, and its
    misattribution rate the share of its trials whose top enrolled posterior is over 0.5.
    """
    assert result.top_posterior is not None
    misattributed = (np.asarray(result.top_posterior)[is_outsider] > 0.5).astype(np.float64)
    outsider_lid = np.asarray(result.lid, dtype=np.float64)[is_outsider]
    n_speakers = speakers.size
    rows = _rows(
        speakers,
        outsider_lid,
        np.zeros(outsider_lid.size, dtype=bool),
        column,
        np.full(n_speakers, -math.log2(result.outside)),
        intervals,
        outsider=True,
        extra={
            "membership_bits": _column_means(outsider_lid, column, n_speakers),
            "misattribution_rate": _column_means(misattributed, column, n_speakers),
            "rank1_rate": np.full(n_speakers, np.nan),
        },
    )
    rows.sort(key=lambda r: (-r.alid, r.speaker))
    return rows


def _rows(
    speakers: np.ndarray,
    lid: np.ndarray,
    first: np.ndarray,
    column: np.ndarray,
    ceiling: np.ndarray,
    intervals: list[dict[str, Any]],
    *,
    outsider: bool | None,
    extra: dict[str, np.ndarray],
) -> list[PerSpeakerRow]:
    """One row per speaker (column) of the trials *lid* (bits), in column order (:func:`per_speaker`).

    *first*, *column*: per trial, ranked first and its speaker's column; *ceiling*: per
    speaker (bits); *intervals*: per speaker, its interval fields (empty without); *outsider* and *extra*
    (field -> value per speaker, overriding the measured ones) fill the open-set fields.
    """
    measured = {**_speaker_metrics(lid, first, column, speakers.size), **extra}
    n_trials = measured["n_trials"]
    rows = []
    for j in range(speakers.size):
        open_fields: dict[str, Any] = {}
        if outsider is not None:
            open_fields = {
                "outsider": outsider,
                "membership_bits": float(measured["membership_bits"][j]),
                "misattribution_rate": float(measured["misattribution_rate"][j]) if outsider else math.nan,
            }
        rows.append(
            PerSpeakerRow(
                speaker=str(speakers[j]),
                n_trials=int(n_trials[j]),
                alid=float(measured["alid"][j]),
                lid_max=float(measured["lid_max"][j]),
                pdr=float(measured["pdr"][j]),
                rank1_rate=float(measured["rank1_rate"][j]),
                lid_ceiling=float(ceiling[j]),
                **intervals[j],
                **open_fields,
            )
        )
    return rows


def _column_means(values: np.ndarray, column: np.ndarray, n_columns: int) -> np.ndarray:
    """Mean of *values* per column (NaN for a column without values), shape (n_columns,)."""
    counts = np.bincount(column, minlength=n_columns)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(column, weights=np.asarray(values, dtype=np.float64), minlength=n_columns) / counts


def _speaker_metrics(lid: np.ndarray, first: np.ndarray, column: np.ndarray, n_enrolled: int) -> dict[str, np.ndarray]:
    """Per enrolled column: ``n_trials`` and the ``alid``, ``lid_max``, ``pdr``, ``rank1_rate`` of its trials.

    *lid* (bits), *first* (ranked first?) and *column* (speaker column) are per closed-set
    trial, shape (T_closed,); each output has shape (n_enrolled,), NaN metrics for a column
    without trials.
    """
    n_trials = np.bincount(column, minlength=n_enrolled)
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 -> NaN for speakers without trials
        alid = np.bincount(column, weights=lid, minlength=n_enrolled) / n_trials
        pdr = np.bincount(column, weights=(lid > 0).astype(np.float64), minlength=n_enrolled) / n_trials
        rank1 = np.bincount(column, weights=first.astype(np.float64), minlength=n_enrolled) / n_trials
    lid_max = np.full(n_enrolled, -np.inf)
    np.maximum.at(lid_max, column, lid)
    lid_max[n_trials == 0] = np.nan
    return {"n_trials": n_trials, "alid": alid, "lid_max": lid_max, "pdr": pdr, "rank1_rate": rank1}
