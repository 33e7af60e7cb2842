"""What an audit report shows, as attrs records: independent of HTML, built by :mod:`lidframe.report.build`.

A :class:`Report` holds one :class:`ReportSystem` per evaluated *cell* (a system under
one calibrator and one prior: a grid has many per system), the :class:`Provenance` of
the run, and, for a DP audit, the audit record.  Every number the page prints comes
from these records: :class:`Headline` from a :class:`~lidframe.core.evaluation.Result`'s
summary, the reading sentence (:func:`reading_sentence`) from the per-trial LIDs, and,
in the open set (the prior's ``outside`` > 0, :mod:`lidframe.core.openset`), the
:class:`OpenSetHeadline` from the summary's ``open_set`` and the :class:`OpenSetPerTrial`
from the per-trial arrays.  A report of an attack up the VoicePrivacy threat-model
ladder (:mod:`lidframe.data.scenario`) also holds a :class:`Ladder`: one
:class:`LadderEntry` per evaluated row (which attacker scored which speech with which
model), each with its Result's numbers (:class:`LadderCell`).  Given what each system's
anonymisation costs the speech, it holds a :class:`SystemUtility` per system: its
:class:`lidframe.utility.Utility` record and the rows (attackers, rungs) it belongs to.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs
import numpy as np

from lidframe.data.fileio import StrPath, file_sha256, json_clean
from lidframe.data.scenario import ANONYMISED, ORIGINAL, SCENARIOS, check_scenario
from lidframe.errors import InputError, preview, quote

if TYPE_CHECKING:
    from lidframe.utility import Utility

__all__ = [
    "INTERVAL_KEYS",
    "Interval",
    "Headline",
    "LIDGroup",
    "OpenSetHeadline",
    "OpenSetPerTrial",
    "open_set_estimates",
    "ReportSystem",
    "InputFile",
    "SystemSettings",
    "Environment",
    "ENVIRONMENT_PACKAGES",
    "AttackerSettings",
    "WorstCase",
    "WorstCaseEntry",
    "WORST_CASE_METRICS",
    "Provenance",
    "LadderEntry",
    "LadderCell",
    "LadderRung",
    "Ladder",
    "Report",
    "SystemUtility",
    "reading_sentence",
    "NEAR_CEILING_BITS",
    "share_text",
]

#: Headline metrics that carry a bootstrap interval when the summary has one (``summary["intervals"]``).
INTERVAL_KEYS = ("alid", "pdr", "lid_pos", "lid_neg", "lid_q99", "lid_max", "eer", "cllr")


def _float(value: Any) -> float:
    """A summary value as a float: None (JSON's NaN) and missing values become NaN."""
    return float("nan") if value is None else float(value)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


@attrs.frozen
class Interval:
    """A confidence interval [low, high] of one metric (same unit as the metric)."""

    low: float
    high: float


@attrs.frozen
class Headline:
    """The numbers a reader looks at first, for one system (bits unless said otherwise).

    Attributes
    ----------
    n_enrolled : int
        N, the enrolled speakers the attacker searches.
    log2_n : float
        log2 N, the most a trial can disclose under a uniform prior.
    n_enrolled_trials : int or None
        Eval trials whose speaker is enrolled (with a LID); None when the source does not say.
    n_outsider_trials : int or None
        Eval trials whose speaker is not enrolled (no LID).
    alid, lid_pos, lid_neg, lid_q99, lid_max : float
        ALID, LID+, LID-, the 99th percentile and the maximum of per-trial LID.
    pdr : float
        Share of trials with LID > 0 (a fraction); NaN when not computed.
    eer : float
        Pairwise equal error rate on the ROC convex hull (a fraction); NaN when not computed.
    cllr : float
        Binary Cllr (bits); NaN when not computed.
    rank1_rate : float
        Share of trials whose true speaker has the top score; NaN when not computed.
    intervals : dict
        metric -> :class:`Interval`, for the metrics of :data:`INTERVAL_KEYS` the source has intervals for.
    interval_level : float or None
        Their confidence level (0.95), None without intervals.
    interval_unit : {"speaker", "trial"} or None
        What their bootstrap resampled, where the source says; None without intervals.
    min_cllr : float
        Binary Cllr after PAV, the discrimination part of Cllr (bits); NaN when not computed.
    dsys : float
        Linkability D_sys of the pairs, in [0, 1]; NaN when not computed.
    min_dcf, act_dcf : float
        The normalised detection cost at its best threshold and at the Bayes threshold of
        the LLRs (the binary view's operating point); NaN when not computed (a summary
        without them reads as not computed).
    """

    n_enrolled: int
    log2_n: float
    n_enrolled_trials: int | None
    n_outsider_trials: int | None
    alid: float
    pdr: float
    lid_pos: float
    lid_neg: float
    lid_q99: float
    lid_max: float
    eer: float
    cllr: float
    rank1_rate: float
    intervals: dict[str, Interval] = attrs.field(factory=dict)
    interval_level: float | None = None
    interval_unit: str | None = None
    min_cllr: float = math.nan
    dsys: float = math.nan
    min_dcf: float = math.nan
    act_dcf: float = math.nan

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any], *, where: str = "summary") -> Headline:
        """The headline of a :class:`~lidframe.core.evaluation.Result` summary (or its JSON form).

        Parameters
        ----------
        summary : mapping
            ``Result.summary`` or ``Result.to_dict()`` (NaN written as None); needs at least
            ``n_enrolled`` and ``alid``.
        where : str
            Names the summary in an error message (a system, a grid cell).

        Raises
        ------
        InputError
            A required key is missing.
        """
        missing = [k for k in ("n_enrolled", "alid", "lid_q99", "lid_max") if k not in summary]
        if missing:
            raise InputError(f"{where}: not a lidframe evaluate summary (no {', '.join(missing)})")
        n_enrolled = int(summary["n_enrolled"])
        intervals = {}
        for key, bounds in (summary.get("intervals") or {}).items():
            if key in INTERVAL_KEYS and bounds is not None:
                intervals[key] = Interval(_float(bounds[0]), _float(bounds[1]))
        settings = summary.get("bootstrap") or {}
        return cls(
            n_enrolled=n_enrolled,
            log2_n=_float(summary.get("log2_n", math.log2(n_enrolled))),
            n_enrolled_trials=_int_or_none(summary.get("n_enrolled_trials")),
            n_outsider_trials=_int_or_none(summary.get("n_outsider_trials")),
            alid=_float(summary["alid"]),
            pdr=_float(summary.get("pdr")),
            lid_pos=_float(summary.get("lid_pos")),
            lid_neg=_float(summary.get("lid_neg")),
            lid_q99=_float(summary["lid_q99"]),
            lid_max=_float(summary["lid_max"]),
            eer=_float(summary.get("eer")),
            cllr=_float(summary.get("cllr")),
            rank1_rate=_float(summary.get("rank1_rate")),
            intervals=intervals,
            interval_level=_float(settings["level"]) if intervals and "level" in settings else None,
            interval_unit=str(settings["unit"]) if intervals and settings.get("unit") else None,
            min_cllr=_float(summary.get("min_cllr")),
            dsys=_float(summary.get("dsys")),
            min_dcf=_float(summary.get("min_dcf")),
            act_dcf=_float(summary.get("act_dcf")),
        )


#: (group, its key in the summary's ``open_set``, the interval of its ALID) of :class:`OpenSetHeadline`, in order.
OPEN_SET_GROUPS = (
    ("enrolled", "enrolled", "alid_enrolled"),
    ("outsider", "outsider", "alid_outsider"),
    ("membership of enrolled", "membership_enrolled", "membership_enrolled"),
)


def open_set_estimates(open_set: Mapping[str, Any]) -> dict[str, float]:
    """The estimate of each open-set metric with a bootstrap interval, from a summary's ``open_set``.

    Parameters
    ----------
    open_set : mapping
        ``summary["open_set"]`` (:meth:`lidframe.core.summary.OpenSetView.to_dict`, or its
        JSON form).

    Returns
    -------
    dict
        The keys of :data:`lidframe.core.summary.OPEN_SET_INTERVALS` -> value (bits, or a
        share of outsider trials; NaN when the group is empty): ``alid_enrolled``,
        ``alid_outsider``, ``membership_enrolled`` (the groups' ALID),
        ``misattribution_rate`` and ``misattribution_rate_at_threshold``.
    """
    estimates = {}
    for _, key, interval_key in OPEN_SET_GROUPS:
        group = open_set.get(key) or {}
        estimates[interval_key] = _float(group.get("alid"))
    for key in ("misattribution_rate", "misattribution_rate_at_threshold"):
        estimates[key] = _float(open_set.get(key))
    return estimates


@attrs.frozen
class LIDGroup:
    """The LID aggregates of one group of trials (a row of the page's open-set table).

    Attributes
    ----------
    name : str
        ``"all trials"``, ``"enrolled"``, ``"outsider"`` or ``"membership of enrolled"``.
    n_trials : int
        Trials in the group.
    alid, pdr, lid_pos, lid_neg, lid_max : float
        Mean, share > 0, mean over > 0, mean over <= 0 and maximum of the group's LID
        (bits; PDR a fraction; NaN where a side is empty).
    interval : Interval or None
        Bootstrap interval of ``alid``, None without one.
    """

    name: str
    n_trials: int
    alid: float
    pdr: float
    lid_pos: float
    lid_neg: float
    lid_max: float
    interval: Interval | None = None

    @classmethod
    def of(cls, name: str, values: Mapping[str, Any], n_trials: int, interval: Interval | None) -> LIDGroup:
        """The group *name* from a mapping with ``alid, pdr, lid_pos, lid_neg, lid_max`` (NaN as None)."""
        return cls(
            name=name,
            n_trials=int(n_trials),
            alid=_float(values.get("alid")),
            pdr=_float(values.get("pdr")),
            lid_pos=_float(values.get("lid_pos")),
            lid_neg=_float(values.get("lid_neg")),
            lid_max=_float(values.get("lid_max")),
            interval=interval,
        )


@attrs.frozen
class OpenSetHeadline:
    """What an open-set evaluation adds to a system's numbers (``summary["open_set"]``).

    Attributes
    ----------
    outside : float
        π_∅, the attacker's prior mass of "nobody enrolled".
    outside_source : {"given", "auto"}
        ``"auto"``: the dev set's share of outsider trials (the attacker's belief).
    groups : tuple of LIDGroup
        ``all trials`` (the summary's top-level aggregates), ``enrolled`` (identification
        disclosure), ``outsider`` (membership disclosure; absent without outsider trials)
        and ``membership of enrolled`` (log2 p(enrolled | s) / (1 - π_∅) of the enrolled trials).
    n_outsider_trials : int
    misattribution_rate : float
        Share of outsider trials whose top enrolled posterior exceeds 0.5 (NaN without
        outsider trials).
    misattribution_threshold : float
    misattribution_rate_at_threshold : float
        Share of outsider trials whose top enrolled posterior exceeds the threshold.
    intervals : dict
        metric -> :class:`Interval` for ``misattribution_rate`` and
        ``misattribution_rate_at_threshold`` where the summary has them (the groups carry
        their ALID's).
    """

    outside: float
    outside_source: str
    groups: tuple[LIDGroup, ...]
    n_outsider_trials: int
    misattribution_rate: float
    misattribution_threshold: float
    misattribution_rate_at_threshold: float
    intervals: dict[str, Interval] = attrs.field(factory=dict)

    def group(self, name: str) -> LIDGroup | None:
        """The group called *name*, or None."""
        return next((g for g in self.groups if g.name == name), None)

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any]) -> OpenSetHeadline | None:
        """The open-set numbers of an evaluate summary (or its JSON form); None in the closed set.

        A summary written before the open set (no ``open_set`` key) reads as closed.
        """
        open_set = summary.get("open_set")
        if not open_set:
            return None
        found = summary.get("intervals") or {}

        def interval(key: str) -> Interval | None:
            bounds = found.get(key)
            return None if bounds is None else Interval(_float(bounds[0]), _float(bounds[1]))

        n_enrolled_trials = int(summary.get("n_enrolled_trials") or 0)
        n_outsider_trials = int(summary.get("n_outsider_trials") or 0)
        groups = [LIDGroup.of("all trials", summary, n_enrolled_trials + n_outsider_trials, interval("alid"))]
        for name, key, interval_key in OPEN_SET_GROUPS:
            values = open_set.get(key)
            if values:
                groups.append(LIDGroup.of(name, values, values.get("n_trials") or 0, interval(interval_key)))
        rates = ("misattribution_rate", "misattribution_rate_at_threshold")
        return cls(
            outside=_float(open_set.get("outside")),
            outside_source=str(open_set.get("outside_source", "given")),
            groups=tuple(groups),
            n_outsider_trials=n_outsider_trials,
            misattribution_rate=_float(open_set.get("misattribution_rate")),
            misattribution_threshold=_float(open_set.get("misattribution_threshold")),
            misattribution_rate_at_threshold=_float(open_set.get("misattribution_rate_at_threshold")),
            intervals={key: i for key in rates if (i := interval(key)) is not None},
        )


def _optional_flags(value: Any) -> np.ndarray:
    return np.asarray(value, dtype=bool).ravel()


def _optional_values(value: Any) -> np.ndarray | None:
    return None if value is None else np.asarray(value, dtype=np.float64).ravel()


@attrs.frozen(eq=False)
class OpenSetPerTrial:
    """The per-trial arrays the open-set figure draws, aligned with :attr:`ReportSystem.lid_bits`.

    Attributes
    ----------
    outsider : ndarray of bool, shape (T,)
        Trials whose speaker is not enrolled.
    top_posterior : ndarray, shape (T,), or None
        max_j p(j | s), the posterior of the attacker's best enrolled guess; None when the
        source did not keep it.
    """

    outsider: np.ndarray = attrs.field(converter=_optional_flags)
    top_posterior: np.ndarray | None = attrs.field(default=None, converter=_optional_values)


def share_text(fraction: float) -> str:
    """A share as a percentage with two significant digits below 10 % (``'1 %'``, ``'0.17 %'``, ``'84 %'``)."""
    percent = 100.0 * fraction
    if percent == 0 or percent >= 10:
        return f"{percent:.0f} %"
    return f"{float(f'{percent:.2g}'):g} %"


#: Bits closer than this to the ceiling are read as reaching it ("within 0.001 bit of the possible ...").
NEAR_CEILING_BITS = 0.001


def _bits_of_ceiling(value: float, ceiling: float, ceiling_name: str) -> str:
    """``'4.67 bits of a possible 4.86'``, with 3 decimals where 2 would print both alike, or
    ``'at the possible maximum, 4.86 bits'`` when *value* practically reaches *ceiling*."""
    if ceiling - value < NEAR_CEILING_BITS:
        return f"at the {ceiling_name} maximum, {ceiling:.2f} bits"
    d = 2 if f"{value:.2f}" != f"{ceiling:.2f}" else 3
    return f"{value:.{d}f} bits of a {ceiling_name} {ceiling:.{d}f}"


def reading_sentence(
    headline: Headline, lid_bits: np.ndarray | None, ceiling_bits: float, *, ceiling_name: str = "possible"
) -> str:
    """The one-sentence reading of a system's LID tail, computed from its numbers.

    With the per-trial LIDs: ``"1 % of trials (6 of 580) disclose more than 4.67 bits of
    a possible 4.86."``, where 4.67 is the 99th percentile of LID (``lid_q99``), the
    share counts the trials strictly above it, and 4.86 is the ceiling (log2 N under a
    uniform prior).  Bits are printed with 2 decimals (3 where the value and the ceiling
    would print alike).  A 99th percentile less than :data:`NEAR_CEILING_BITS` below the
    ceiling is not "exceeded": the sentence counts the trials within that of the
    ceiling instead (``"1.2 % of trials (7 of 580) disclose within 0.001 bit of the
    possible 4.86 bits: ..."``).  When the 99th percentile is not positive, the sentence
    counts the trials that disclose anything (LID > 0) and gives the largest disclosure
    instead (``"0 % of trials (0 of 60) disclose anything ..."``).  Without per-trial
    LIDs (a DP audit keeps only aggregates) it states the 99th percentile itself.

    Parameters
    ----------
    headline : Headline
    lid_bits : ndarray, shape (T,), or None
        LID of the closed-set trials (bits).
    ceiling_bits : float
        The most a trial could disclose: max over trials of -log2 prior(true speaker).
    ceiling_name : str
        Word before the ceiling (``"possible"``).
    """
    q99 = headline.lid_q99
    if lid_bits is None:
        return f"The 99th percentile of LID is {_bits_of_ceiling(q99, ceiling_bits, ceiling_name)}."
    lid = np.asarray(lid_bits, dtype=np.float64)
    total = lid.size
    if q99 > 0 and ceiling_bits - q99 < NEAR_CEILING_BITS:
        near = int(np.count_nonzero(lid > ceiling_bits - NEAR_CEILING_BITS))
        return (
            f"{share_text(near / total)} of trials ({near} of {total}) disclose within {NEAR_CEILING_BITS:g} bit "
            f"of the {ceiling_name} {ceiling_bits:.2f} bits: the attacker is practically certain of their speaker."
        )
    if q99 > 0:
        above = int(np.count_nonzero(lid > q99))
        return (
            f"{share_text(above / total)} of trials ({above} of {total}) disclose more than "
            f"{_bits_of_ceiling(q99, ceiling_bits, ceiling_name)}."
        )
    positive = int(np.count_nonzero(lid > 0))
    return (
        f"{share_text(positive / total)} of trials ({positive} of {total}) disclose anything (LID > 0); "
        f"the largest disclosure is {_bits_of_ceiling(headline.lid_max, ceiling_bits, ceiling_name)}."
    )


def _optional_lids(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    lid = np.asarray(value, dtype=np.float64).ravel()
    if lid.size == 0 or np.isnan(lid).any():
        raise InputError(
            "a report system's lid_bits must be the LIDs of the trials that have one (the enrolled trials; every "
            "trial in the open set): non-empty, without NaN"
        )
    return lid


@attrs.frozen(eq=False)
class ReportSystem:
    """One evaluated cell of the report: a system under one calibrator and one prior.

    Attributes
    ----------
    label : str
        Unique row label in the page (``"anon-weak"``, or ``"anon-weak · isotonic · uniform"`` in a grid).
    name : str
        The system: its cells share a colour in the figures and a section of the page.
    calibrator, prior : str
        Calibrator and prior as the summary describes them (spec with non-default parameters).
    headline : Headline
    lid_bits : ndarray, shape (T,), or None
        LID of the eval trials that have one (bits): the enrolled trials in the closed set,
        every trial in the open set; None when the source keeps only aggregates.
    lid_ceiling_bits : float
        max over those trials of -log2 prior(true speaker): log2 N under a uniform prior
        (in the open set the prior of an enrolled speaker is (1 - π_∅) times its prior
        given enrolment, and an outsider trial's is π_∅).
    attacker : str or None
    seed : int or None
        Grid seed of the cell.
    sensitivity : SensitivityResult or None
        :func:`lidframe.analyses.sensitivity.sensitivity` of the same dev/eval pair.
    per_speaker : record or None
        :func:`lidframe.analyses.per_speaker.per_speaker` of the result (rows with
        ``speaker, n_trials, alid, lid_max, pdr, rank1_rate`` and, bootstrapped,
        ``alid_low, alid_high``).
    open_set : OpenSetHeadline or None
        The open-set numbers (:meth:`OpenSetHeadline.from_summary`); None in the closed set.
    open_trials : OpenSetPerTrial or None
        Open set: which trials of :attr:`lid_bits` are outsider trials, and their top
        enrolled posterior (for the open-set figure); None in the closed set or when the
        source did not keep them.
    no_intervals : str or None
        Why the headline has no intervals, when it has none for a reason worth saying
        (``"the eval set has 7 speakers, too few for a speaker bootstrap"``); the card says it.
    system : str or None
        The system under audit when :attr:`name` says more (a grid cell's name adds its
        attacker); None: :attr:`name` is the system.  "N systems" counts these.
    """

    label: str
    name: str
    calibrator: str
    prior: str
    headline: Headline
    lid_bits: np.ndarray | None = attrs.field(converter=_optional_lids)
    lid_ceiling_bits: float
    attacker: str | None = None
    seed: int | None = None
    sensitivity: Any = None
    per_speaker: Any = None
    open_set: OpenSetHeadline | None = None
    open_trials: OpenSetPerTrial | None = attrs.field(default=None)
    no_intervals: str | None = None
    system: str | None = None

    @open_trials.validator
    def _check_open_trials(self, attribute: Any, value: OpenSetPerTrial | None) -> None:
        if value is None:
            return
        sizes = {value.outsider.size, *(() if value.top_posterior is None else (value.top_posterior.size,))}
        if self.lid_bits is None or sizes != {self.lid_bits.size}:
            raise InputError(
                f"report system {self.label!r}: the open-set trial arrays must align with its lid_bits "
                f"({None if self.lid_bits is None else self.lid_bits.size} trials), got sizes {sorted(sizes)}"
            )

    @property
    def reading(self) -> str:
        """The one-sentence reading (:func:`reading_sentence`)."""
        return reading_sentence(self.headline, self.lid_bits, self.lid_ceiling_bits)

    @property
    def worst_case(self) -> WorstCase | None:
        """The attacker's worst case over the calibrators and priors of its sensitivity record; None without one."""
        return None if self.sensitivity is None else WorstCase.of(self.sensitivity)


#: The metrics of a system's worst-case headline, (key, title, unit), in order: the attacker's best
#: calibrator and prior for each (:mod:`lidframe.analyses.sensitivity`, all "max" metrics).
WORST_CASE_METRICS = (
    ("alid", "ALID", "bits"),
    ("lid_q99", "LID q99", "bits"),
    ("lid_max", "LIDmax", "bits"),
    ("pdr", "PDR", "share"),
)


@attrs.frozen
class WorstCaseEntry:
    """One metric of the worst case: its most attacker-favourable value and where it is reached.

    Attributes
    ----------
    metric : str
        A key of :data:`WORST_CASE_METRICS`.
    value : float
        Bits, or a fraction for PDR; NaN when no calibrator computed it.
    calibrator : str or None
        The calibrator (as given to the analysis) that reaches it; None when none did.
    prior : str or None
        The prior (as given) that reaches it.
    """

    metric: str
    value: float
    calibrator: str | None
    prior: str | None


@attrs.frozen
class WorstCase:
    """A system's worst case across calibrators and priors: the headline of its sensitivity analysis.

    Attributes
    ----------
    entries : tuple of WorstCaseEntry
        One per metric of :data:`WORST_CASE_METRICS`, in that order.
    calibrators, priors : tuple of str
        The calibrators and priors the analysis compared (as given, in order).
    """

    entries: tuple[WorstCaseEntry, ...]
    calibrators: tuple[str, ...]
    priors: tuple[str, ...]

    def entry(self, metric: str) -> WorstCaseEntry | None:
        """The entry of *metric*, or None."""
        return next((e for e in self.entries if e.metric == metric), None)

    @classmethod
    def of(cls, record: Any) -> WorstCase:
        """The worst case of a :class:`~lidframe.analyses.sensitivity.SensitivityResult` (or its ``to_dict()``)."""
        found = record.to_dict() if hasattr(record, "to_dict") else record
        rows, worst = found.get("rows") or [], found.get("worst_case") or {}
        entries = []
        for key, _, _ in WORST_CASE_METRICS:
            entry = worst.get(key) or {}
            calibrator = entry.get("calibrator")
            entries.append(
                WorstCaseEntry(
                    metric=key,
                    value=_float(entry.get("value")),
                    calibrator=None if calibrator is None else str(calibrator),
                    prior=None if entry.get("prior") is None else str(entry["prior"]),
                )
            )
        return cls(
            entries=tuple(entries),
            calibrators=tuple(dict.fromkeys(str(r["calibrator"]) for r in rows)),
            priors=tuple(dict.fromkeys(str(r["prior"]) for r in rows if r.get("prior") is not None)),
        )


@attrs.frozen
class InputFile:
    """A file the reported numbers were computed from, with its SHA-256 digest.

    Attributes
    ----------
    role : str
        What it is (``"anon-weak dev"``, ``"grid store"``).
    path : str
    sha256 : str
        64 hex digits (:func:`lidframe.data.fileio.file_sha256`).
    size_bytes : int
    """

    role: str
    path: str
    sha256: str
    size_bytes: int

    @classmethod
    def of(cls, role: str, path: StrPath) -> InputFile:
        """Digest the file at *path* now.

        Raises
        ------
        InputError
            The file does not exist or is not a file.
        """
        target = Path(path)
        if not target.is_file():
            raise InputError(f"{path} ({role}): no such file; the report records the digest of every input file")
        return cls(role=role, path=str(path), sha256=file_sha256(target), size_bytes=target.stat().st_size)


@attrs.frozen
class SystemSettings:
    """How one cell was computed: the settings and sizes behind its numbers.

    Attributes
    ----------
    label : str
        The :attr:`ReportSystem.label` it belongs to.
    calibrator : str
        Calibrator spec with non-default parameters.
    calibrator_fit : dict or None
        The fitted calibrator's record (class, parameters, fitted values; JSON-able).
    prior : str
    znorm_ddof : int or None
        Row z-norm degrees of freedom (None: the calibrator reads raw scores).
    n_dev_enrolled_trials, n_dev_enrolled, n_dev_outsider_trials : int or None
        Dev trials whose speaker is enrolled, enrolled speakers, outsider trials.
    n_eval_enrolled_trials, n_eval_enrolled, n_eval_outsider_trials : int or None
        The same of the eval set.
    binary_metrics : str or None
        ``"computed"`` or ``"skipped: <why>"``.
    bootstrap : dict or None
        The bootstrap settings of the intervals (``Bootstrap.to_dict()``).
    """

    label: str
    calibrator: str
    calibrator_fit: dict | None
    prior: str
    znorm_ddof: int | None
    n_dev_enrolled_trials: int | None
    n_dev_enrolled: int | None
    n_dev_outsider_trials: int | None
    n_eval_enrolled_trials: int | None
    n_eval_enrolled: int | None
    n_eval_outsider_trials: int | None
    binary_metrics: str | None
    bootstrap: dict | None

    @classmethod
    def from_summary(cls, label: str, summary: Mapping[str, Any], calibrator_fit: dict | None = None) -> SystemSettings:
        """The settings recorded in an evaluate summary (``Result.summary`` or its JSON form)."""
        return cls(
            label=label,
            calibrator=str(summary.get("calibrator", "?")),
            calibrator_fit=json_clean(calibrator_fit) if calibrator_fit else None,
            prior=str(summary.get("prior", "?")),
            znorm_ddof=_int_or_none(summary.get("znorm_ddof")),
            n_dev_enrolled_trials=_int_or_none(summary.get("n_dev_enrolled_trials")),
            n_dev_enrolled=_int_or_none(summary.get("n_dev_enrolled")),
            n_dev_outsider_trials=_int_or_none(summary.get("n_dev_outsider_trials")),
            n_eval_enrolled_trials=_int_or_none(summary.get("n_enrolled_trials")),
            n_eval_enrolled=_int_or_none(summary.get("n_enrolled")),
            n_eval_outsider_trials=_int_or_none(summary.get("n_outsider_trials")),
            binary_metrics=summary.get("binary_metrics"),
            bootstrap=json_clean(summary["bootstrap"]) if summary.get("bootstrap") else None,
        )


def _settings_tuple(items: Iterable[SystemSettings]) -> tuple[SystemSettings, ...]:
    return tuple(items)


def _inputs_tuple(items: Iterable[InputFile]) -> tuple[InputFile, ...]:
    return tuple(items)


def _pairs_tuple(items: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in items)


def _notes_tuple(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(note) for note in items)


#: The packages whose versions every report states: the numbers' stack (torch read from its metadata, never imported).
ENVIRONMENT_PACKAGES = ("numpy", "scipy", "scikit-learn", "torch")
#: What the page says of a package of :data:`ENVIRONMENT_PACKAGES` that is not installed.
NOT_INSTALLED = "not installed"


@attrs.frozen
class Environment:
    """The software that computed a report: lidframe's code, and the packages under it.

    Attributes
    ----------
    lidframe_version : str
        The installed lidframe version (``"0+unknown"`` in a source tree that is not installed).
    source_digest : str
        SHA-256 (64 hex digits) of the lidframe code this process loaded: the ``lidframe``
        package and the ``lidframe.attackers`` / ``lidframe.calibrators`` folders
        (:func:`lidframe._version.tree_digest`; the ``src.`` part of
        :func:`lidframe._version.code_version` is its first 16 digits).
    git_commit : str or None
        The commit (40 hex digits) of the git checkout lidframe runs from; None when it
        does not run from one (an installed wheel) or git cannot say.
    git_modified : bool or None
        Whether that checkout's tracked files differ from the commit (uncommitted
        changes: then the source digest, not the commit, names the code); None without a commit.
    python : str
        The Python version (``"3.11.7"``).
    packages : tuple of (str, str)
        (distribution, version) of each of :data:`ENVIRONMENT_PACKAGES`, the version
        :data:`NOT_INSTALLED` for one that is not; read with :mod:`importlib.metadata`, so
        nothing is imported.
    """

    lidframe_version: str
    source_digest: str
    git_commit: str | None
    git_modified: bool | None
    python: str
    packages: tuple[tuple[str, str], ...] = attrs.field(converter=_pairs_tuple, factory=tuple)


def _spec_value(value: str) -> str:
    return value if value else '""'


@attrs.frozen
class AttackerSettings:
    """An attacker behind a report's scores: its name, its settings, and the files they name (its checkpoint).

    Attributes
    ----------
    name : str
        The attacker, as the run names it (``"ecapa"``, ``"ge2e"``, a name of one's own).
    settings : tuple of (str, str)
        (setting, value as text), in order: a small table on the page.
    files : tuple of InputFile
        The files its settings name (a checkpoint, an embedding file), each with its
        SHA-256 digest; the role of each is its setting.

    Examples
    --------
    >>> AttackerSettings.from_spec("my-ecapa?device=cpu&batch_size=16").settings
    (('device', 'cpu'), ('batch_size', '16'))
    """

    name: str
    settings: tuple[tuple[str, str], ...] = attrs.field(converter=_pairs_tuple, factory=tuple)
    files: tuple[InputFile, ...] = attrs.field(converter=_inputs_tuple, factory=tuple)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError(f"an attacker needs a non-empty name, got {self.name!r:.80}")

    @classmethod
    def of(
        cls, name: str, settings: Mapping[str, Any] | None = None, files: Mapping[str, StrPath] | None = None
    ) -> AttackerSettings:
        """An attacker with its *settings* (name -> value, shown as text) and *files* (setting -> path, digested now).

        Raises
        ------
        InputError
            An empty name, or a file that does not exist.
        """
        shown = [(str(k), _setting_text(v)) for k, v in (settings or {}).items()]
        digested = [InputFile.of(str(role), path) for role, path in (files or {}).items()]
        return cls(name=name, settings=shown, files=digested)

    @classmethod
    def from_spec(cls, spec: str) -> AttackerSettings:
        """The attacker of a spec ``NAME?key=value&...`` (``lidframe score --attacker``'s words), without building it.

        Its parameters are its settings, in order; each value that names an existing file
        (``checkpoint=model.ckpt``) is also digested.  The name need not be a registered
        attacker: the scores may come from elsewhere.

        Raises
        ------
        InputError
            A malformed spec (``NAME?key=value&key=value``).
        """
        from lidframe.registry.coercion import split_query

        name, pairs = split_query(spec)
        if not name.strip():
            raise InputError(f"attacker {quote(spec)}: give its name before any ?key=value")
        files = {key: value for key, value in pairs if value and Path(value).is_file()}
        return cls.of(name.strip(), {key: _spec_value(value) for key, value in pairs}, files)


def _setting_text(value: Any) -> str:
    """A setting as the page shows it: numbers as they are, lists comma-separated, yes/no, none."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_setting_text(v) for v in value)
    return str(value)


def _attackers_tuple(items: Iterable[AttackerSettings]) -> tuple[AttackerSettings, ...]:
    items = tuple(items)
    for item in items:
        if not isinstance(item, AttackerSettings):
            raise InputError(f"attackers must be AttackerSettings records, got a {type(item).__name__}")
    return items


@attrs.frozen
class Provenance:
    """Where the numbers of a report come from.

    Attributes
    ----------
    lidframe_version : str
        Version that computed the numbers (the summaries' ``lidframe_version``).
    report_version : str
        Version that wrote the report.
    created : str
        ISO 8601 date and time (UTC) the report was built.
    systems : tuple of SystemSettings
        Calibrator and prior with parameters, z-norm ddof, dev and eval sizes, per cell.
    inputs : tuple of InputFile
        Input files with their SHA-256 digests.
    settings : tuple of (str, str)
        Further settings of the run (mechanism, ...), as name and text.
    command : str or None
        The full command line that made the report, shell-quoted (``lidframe evaluate
        --dev dev.npz ...``); None when not known.
    working_folder : str or None
        The folder it ran in (what the command line's relative paths are relative to).
    environment : Environment or None
        lidframe's version, source digest and git commit, Python's and the packages' versions.
    attackers : tuple of AttackerSettings
        The attackers behind the scores, with their settings and checkpoint digests.
    engines : tuple of (str, str)
        (speech engine, its version) of the synthesis behind the audio (the real-voice demo).
    """

    lidframe_version: str
    report_version: str
    created: str
    systems: tuple[SystemSettings, ...] = attrs.field(converter=_settings_tuple)
    inputs: tuple[InputFile, ...] = attrs.field(converter=_inputs_tuple, factory=tuple)
    settings: tuple[tuple[str, str], ...] = attrs.field(converter=_pairs_tuple, factory=tuple)
    command: str | None = None
    working_folder: str | None = None
    environment: Environment | None = None
    attackers: tuple[AttackerSettings, ...] = attrs.field(converter=_attackers_tuple, factory=tuple)
    engines: tuple[tuple[str, str], ...] = attrs.field(converter=_pairs_tuple, factory=tuple)


# ------------------------------------------------------------------ the threat-model ladder
#: The rung name of the ladder's reference entries: the plain speech, nothing anonymised (no scenario).
REFERENCE = "reference"


def _where(label: object) -> str:
    return f"ladder entry {quote(label) if isinstance(label, str) else repr(label)}"


@attrs.frozen
class LadderEntry:
    """One evaluated row of the threat-model ladder: which attacker scored which speech of which system, and how.

    The real-voice demo's rows are these records (``lidframe.cli.voice_demo.demo_rows``).

    Attributes
    ----------
    label : str
        The label of its Result (a key of the results given to
        :func:`lidframe.report.report_from_results`).
    system : str
        The system under audit: an anonymiser, or the plain speech.
    attacker : str
        The attacker that scored (``"ge2e"``, ``"ecapa"``, ``"random"``).
    scenario : str or None
        Its rung, one of :data:`lidframe.data.scenario.SCENARIOS`; None for a reference
        entry (plain speech: nothing anonymised).
    enrolment, trials : {"original", "anonymised"}
        The speech the attacker enrolled and the speech of the trials it linked: the
        rung's sides; both ``"original"`` for a reference entry.
    model : str
        What the attacker's model is, in words.

    Raises
    ------
    InputError
        A field that is not a non-empty string, a side that is not ``original`` or
        ``anonymised``, an unknown scenario, or sides that contradict the scenario (or,
        without a scenario, are not both ``original``); the message names the label.
    """

    label: str
    system: str
    attacker: str
    scenario: str | None
    enrolment: str
    trials: str
    model: str

    def __attrs_post_init__(self) -> None:
        where = _where(self.label)
        for name in ("label", "system", "attacker", "enrolment", "trials", "model"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"{where}: {name} must be a non-empty string, got {value!r:.80}")
        for name in ("enrolment", "trials"):
            if getattr(self, name) not in (ORIGINAL, ANONYMISED):
                raise InputError(f"{where}: {name} {quote(getattr(self, name))}; expected {ORIGINAL} or {ANONYMISED}")
        if self.scenario is None:
            if (self.enrolment, self.trials) != (ORIGINAL, ORIGINAL):
                raise InputError(
                    f"{where}: no scenario, so a reference entry on plain speech (enrolment and trials {ORIGINAL}), "
                    f"but enrolment is {self.enrolment} and trials {self.trials}; give its scenario"
                )
            return
        rung = check_scenario(self.scenario, key=f"{where}: scenario")
        if (self.enrolment, self.trials) != (rung.enrolment, rung.trials):
            raise InputError(
                f"{where}: enrolment {self.enrolment} and trials {self.trials} contradict its scenario {rung.name} "
                f"({rung.code}: enrolment {rung.enrolment}, trials {rung.trials})"
            )

    @property
    def rung(self) -> str:
        """Its scenario, or :data:`REFERENCE` without one."""
        return REFERENCE if self.scenario is None else self.scenario

    @property
    def code(self) -> str:
        """The VoicePrivacy code of its sides: ``"o-a"``, ``"a-a"``, or ``"o-o"`` for a reference entry."""
        return f"{self.enrolment[0]}-{self.trials[0]}"


@attrs.frozen
class LadderCell:
    """One entry of the ladder with its Result's numbers.

    Attributes
    ----------
    entry : LadderEntry
    alid : float
        ALID (bits).
    alid_interval : Interval or None
        Its bootstrap interval (bits), None without one.
    lid_max : float
        LIDmax (bits).
    lid_max_interval : Interval or None
        Its bootstrap interval (bits): a percentile interval of a maximum, biased low (a
        resample never exceeds the observed maximum; :mod:`lidframe.stats.bootstrap`).
    eer : float
        Pairwise EER (a fraction); NaN when not computed.
    n_enrolled : int
        N, the enrolled speakers searched.
    log2_n : float
        log2 N (bits), the ceiling of ALID under a uniform prior.
    interval_level : float or None
        The intervals' confidence level (0.95); None without intervals.
    """

    entry: LadderEntry
    alid: float
    alid_interval: Interval | None
    lid_max: float
    lid_max_interval: Interval | None
    eer: float
    n_enrolled: int
    log2_n: float
    interval_level: float | None = None

    @property
    def label(self) -> str:
        """The label of its entry and Result."""
        return self.entry.label

    @classmethod
    def from_summary(cls, entry: LadderEntry, summary: Mapping[str, Any]) -> LadderCell:
        """*entry* with the numbers of its Result's summary (``Result.summary`` or its JSON form).

        Raises
        ------
        InputError
            The summary lacks the keys of :meth:`Headline.from_summary`.
        """
        headline = Headline.from_summary(summary, where=_where(entry.label))
        return cls(
            entry=entry,
            alid=headline.alid,
            alid_interval=headline.intervals.get("alid"),
            lid_max=headline.lid_max,
            lid_max_interval=headline.intervals.get("lid_max"),
            eer=headline.eer,
            n_enrolled=headline.n_enrolled,
            log2_n=headline.log2_n,
            interval_level=headline.interval_level,
        )


@attrs.frozen
class LadderRung:
    """One row of the ladder's rung table: a rung, its two sides, and each attacker's model there.

    Attributes
    ----------
    name : str
        A scenario of :data:`lidframe.data.scenario.SCENARIOS`, or :data:`REFERENCE`.
    code : str
        ``"o-a"``, ``"a-a"``, or ``"o-o"`` for the reference (enrolment side, trial side).
    enrolment, trials : {"original", "anonymised"}
        The speech enrolled and the speech of the trials.
    model : str or None
        The rung's model (:attr:`lidframe.data.scenario.Scenario.model`); None for the reference.
    models : tuple of (str, str)
        (attacker, what its model is) of the rung's entries, in order of first appearance.
    """

    name: str
    code: str
    enrolment: str
    trials: str
    model: str | None
    models: tuple[tuple[str, str], ...]


def _ladder_cells(cells: Iterable[LadderCell]) -> tuple[LadderCell, ...]:
    """The cells, checked: at least one on a rung, labels unique, one cell per system, attacker and rung."""
    cells = tuple(cells)
    if not any(c.entry.scenario is not None for c in cells):
        raise InputError(
            f"the ladder needs at least one entry with a scenario (one of {', '.join(SCENARIOS)}); "
            "entries without one are only its reference"
        )
    labels: set[str] = set()
    keys: dict[tuple[str, str, str], str] = {}
    for cell in cells:
        entry = cell.entry
        if entry.label in labels:
            raise InputError(f"{_where(entry.label)} appears twice; each needs its own label")
        labels.add(entry.label)
        key = (entry.system, entry.attacker, entry.rung)
        if key in keys:
            raise InputError(
                f"{_where(entry.label)}: the same system ({quote(entry.system)}), attacker ({quote(entry.attacker)}) "
                f"and rung ({entry.rung}) as ladder entry {quote(keys[key])}; give one entry per system, attacker and rung"
            )
        keys[key] = entry.label
    return cells


@attrs.frozen(eq=False)
class Ladder:
    """The threat-model ladder of a report: each entry's numbers, by system, attacker and rung.

    Attributes
    ----------
    cells : tuple of LadderCell
        One per entry, in the order given: at least one on a rung (with a scenario); labels
        unique; one per (system, attacker, rung).
    """

    cells: tuple[LadderCell, ...] = attrs.field(converter=_ladder_cells)

    def labels(self) -> list[str]:
        """The entries' labels, in order."""
        return [c.label for c in self.cells]

    def on_rungs(self) -> list[LadderCell]:
        """The cells with a scenario, in order."""
        return [c for c in self.cells if c.entry.scenario is not None]

    def references(self) -> list[LadderCell]:
        """The cells without a scenario (plain speech: the reference), in order."""
        return [c for c in self.cells if c.entry.scenario is None]

    def systems(self) -> list[str]:
        """The anonymised systems (those with an entry on a rung), in order of first appearance."""
        return list(dict.fromkeys(c.entry.system for c in self.on_rungs()))

    def attackers(self) -> list[str]:
        """The attackers with an entry on a rung, in order of first appearance among all entries."""
        on_rungs = {c.entry.attacker for c in self.on_rungs()}
        return [a for a in dict.fromkeys(c.entry.attacker for c in self.cells) if a in on_rungs]

    def rung_names(self) -> list[str]:
        """The rungs with an entry, in ladder order (:data:`lidframe.data.scenario.SCENARIOS`)."""
        found = {c.entry.scenario for c in self.on_rungs()}
        return [name for name in SCENARIOS if name in found]

    def columns(self) -> list[tuple[str, str]]:
        """(attacker, rung) of every pair with an entry: by attacker (:meth:`attackers`), rungs in ladder order."""
        found = {(c.entry.attacker, c.entry.scenario) for c in self.on_rungs()}
        return [(a, r) for a in self.attackers() for r in self.rung_names() if (a, r) in found]

    def cell(self, system: str, attacker: str, scenario: str | None) -> LadderCell | None:
        """The cell of *system* and *attacker* at rung *scenario* (None: the reference), or None."""
        return next(
            (
                c
                for c in self.cells
                if (c.entry.system, c.entry.attacker, c.entry.scenario) == (system, attacker, scenario)
            ),
            None,
        )

    def rungs(self) -> list[LadderRung]:
        """The rung table: each rung with an entry, in ladder order, then the reference when there is one."""
        out = []
        for name in [*self.rung_names(), *([REFERENCE] if self.references() else [])]:
            cells = [c for c in self.cells if c.entry.rung == name]
            models = tuple(dict.fromkeys((c.entry.attacker, c.entry.model) for c in cells))
            first = cells[0].entry
            model = None if name == REFERENCE else SCENARIOS[name].model
            out.append(LadderRung(name, first.code, first.enrolment, first.trials, model, models))
        return out

    def log2_n_values(self) -> list[float]:
        """The distinct log2 N of the cells (bits), ascending: one value when every entry searched N speakers alike."""
        return sorted({round(c.log2_n, 12) for c in self.cells})


#: The kinds of report, after the command that writes them.
ReportKind = Literal["evaluate", "sensitivity", "grid", "dp-audit"]


# ------------------------------------------------------------------ utility beside privacy
def _labels_tuple(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(item) for item in items)


def _utility_tuple(items: Iterable[SystemUtility]) -> tuple[SystemUtility, ...]:
    return tuple(items)


@attrs.frozen(eq=False)
class SystemUtility:
    """What a system's anonymisation costs the speech, and the report's rows (its attackers, rungs) it belongs to.

    Attributes
    ----------
    system : str
        The system, as the builder's caller names it (``report_from_results``'s
        ``systems=`` values, or a label that is its own system; a grid's system).
    utility : Utility
        :func:`lidframe.utility.utility` of the system's speech (WER, ρ_F0 and their
        intervals).
    labels : tuple of str
        The labels of the report's rows of this system (each a point of the
        privacy-utility chart), in page order; at least one.
    """

    system: str
    utility: Utility
    labels: tuple[str, ...] = attrs.field(converter=_labels_tuple)


def _check_systems(systems: Iterable[ReportSystem]) -> tuple[ReportSystem, ...]:
    systems = tuple(systems)
    if not systems:
        raise InputError("a report needs at least one system")
    seen: set[str] = set()
    for system in systems:
        if system.label in seen:
            raise InputError(f"report system {system.label!r} appears twice; each needs its own label")
        seen.add(system.label)
    return systems


@attrs.frozen(eq=False)
class Report:
    """Everything one ``report.html`` shows.

    Attributes
    ----------
    title : str
    kind : {"evaluate", "sensitivity", "grid", "dp-audit"}
        What computed the numbers: the layout of the page follows it (a sensitivity
        report is laid out as an evaluate report).
    systems : tuple of ReportSystem
        One per cell, in the order given; labels unique.
    provenance : Provenance
    dp_audit : DPAuditResult or None
        The :func:`lidframe.privacy.audit.dp_audit` record of a DP-audit report.
    notes : tuple of str
        Sentences shown under the title (what the run was, caveats).
    ladder : Ladder or None
        The threat-model ladder (the page's section "Threat-model ladder"); every one of
        its labels is a system's label.  None: no such section.
    utility : tuple of SystemUtility
        Each system's utility (the page's section "Privacy and utility"), in page order;
        every label of each is a system's label, and no label belongs to two.  Empty: the
        section says why there is none.
    utility_note : str or None
        A sentence of the caller's on the speech the utility was measured on (the voice
        set, what ρ_F0 is against), shown with the table and the chart.
    """

    title: str
    kind: ReportKind
    systems: tuple[ReportSystem, ...] = attrs.field(converter=_check_systems)
    provenance: Provenance
    dp_audit: Any = None
    notes: tuple[str, ...] = attrs.field(converter=_notes_tuple, factory=tuple)
    ladder: Ladder | None = attrs.field(default=None)
    utility: tuple[SystemUtility, ...] = attrs.field(converter=_utility_tuple, factory=tuple)
    utility_note: str | None = None

    @utility.validator
    def _check_utility(self, attribute: Any, value: tuple[SystemUtility, ...]) -> None:
        labels = [s.label for s in self.systems]
        owner: dict[str, str] = {}
        for entry in value:
            if not isinstance(entry, SystemUtility):
                raise InputError(f"a report's utility must be SystemUtility records, got a {type(entry).__name__}")
            if not entry.labels:
                raise InputError(f"utility of {quote(entry.system)}: no row of the report belongs to it")
            for label in entry.labels:
                if label not in labels:
                    raise InputError(
                        f"utility of {quote(entry.system)}: {quote(label)} is not a system of the report "
                        f"(its labels: {preview(labels)})"
                    )
                if label in owner:
                    raise InputError(
                        f"utility: row {quote(label)} belongs to both {quote(owner[label])} and {quote(entry.system)}"
                    )
                owner[label] = entry.system

    @ladder.validator
    def _check_ladder(self, attribute: Any, value: Ladder | None) -> None:
        if value is None:
            return
        labels = [s.label for s in self.systems]
        missing = [label for label in value.labels() if label not in labels]
        if missing:
            raise InputError(f"{_where(missing[0])}: not a system of the report (its labels: {preview(labels)})")

    def system_names(self) -> list[str]:
        """The names of the page's systems (:attr:`ReportSystem.name`: a section each), in order of first appearance."""
        return list(dict.fromkeys(s.name for s in self.systems))

    def audited_systems(self) -> list[str]:
        """The systems under audit, in order: each cell's :attr:`ReportSystem.system` (or its name), once.

        What the page's "N systems" counts: not its rows (a system's calibrators, a grid's
        cells) and not its attackers.
        """
        return list(dict.fromkeys(s.system or s.name for s in self.systems))
