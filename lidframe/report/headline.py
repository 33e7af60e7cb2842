"""The numbers every section of a report reads: a system's :class:`Headline` and its reading sentence.

:class:`Headline` holds what a reader looks at first, read from a
:class:`~lidframe.core.evaluation.Result`'s summary (a :class:`~lidframe.core.summary.Summary`,
by its attributes; or a mapping of its keys, its JSON form), with the
:class:`~lidframe.stats.interval.Interval` of each metric that has one; :func:`reading_sentence` says in one
sentence what the LID tail means, computed from the per-trial LIDs.  The page model
(:mod:`lidframe.report.model`) and every section (:mod:`lidframe.report.sections`) read
these records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from lidframe.core.devsize import small_dev_warning
from lidframe.core.summary import Summary
from lidframe.errors import InputError
from lidframe.stats.interval import Interval

__all__ = [
    "INTERVAL_KEYS",
    "Headline",
    "reading_sentence",
    "NEAR_CEILING_BITS",
    "share_text",
    "float_or_nan",
    "int_or_none",
]


#: Headline metrics that carry a bootstrap interval when the summary has one (``summary["intervals"]``).
INTERVAL_KEYS = ("alid", "pdr", "lid_pos", "lid_neg", "lid_q99", "lid_max", "eer", "cllr")


def float_or_nan(value: Any) -> float:
    """A summary value as a float: None (JSON's NaN) and missing values become NaN."""
    return float("nan") if value is None else float(value)


def int_or_none(value: Any) -> int | None:
    """A summary value as an int, or None."""
    return None if value is None else int(value)


@attrs.frozen
class Headline:
    """The numbers a reader looks at first, for one system (bits unless said otherwise).

    Attributes
    ----------
    n_enrolled : int
        N: how many speakers are enrolled, the candidates the attacker ranks.
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
        The normalised detection cost at the best threshold and at the Bayes threshold of
        the LLRs (the binary view's operating point); NaN when not computed (a summary
        without them reads as not computed).
    interval_covers : str or None
        What the intervals cover (:meth:`~lidframe.stats.bootstrap.Bootstrap.covers`: the
        calibrator refitted on resampled dev speakers, or held fixed); None without intervals.
    n_dev_enrolled, n_dev_mated_pairs : int or None
        The dev set's enrolled speakers and mated pairs (its trials of enrolled speakers),
        which the calibrator was fitted on; None when the source does not say.
    dece_bits, max_abs_llr_log10 : float
        ZEBRA's D_ECE (bits) and max ``|LLR|`` (log10) of the pairs; NaN when not computed.
    zebra_tag : str
        The tag of max ``|LLR|`` (``"0"``, ``"A"`` to ``"F"``, :func:`lidframe.metrics.zebra.zebra_tag`);
        ``""`` when not computed.
    operating_point : tuple of (str, float) or None
        Where minDCF and actDCF were measured: ``(("p_target", ..), ("c_miss", ..), ("c_fa", ..))``,
        the summary's binary operating point; None without the binary view.
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
    interval_covers: str | None = None
    n_dev_enrolled: int | None = None
    n_dev_mated_pairs: int | None = None
    dece_bits: float = math.nan
    max_abs_llr_log10: float = math.nan
    zebra_tag: str = ""
    operating_point: tuple[tuple[str, float], ...] | None = None

    @property
    def dev_warning(self) -> str | None:
        """The warning for a dev set too small to calibrate on (:func:`~lidframe.core.devsize.small_dev_warning`), or None."""
        return small_dev_warning(self.n_dev_enrolled, self.n_dev_mated_pairs)

    @classmethod
    def from_summary(cls, summary: Summary | Mapping[str, Any], *, where: str = "summary") -> Headline:
        """The headline of a :class:`~lidframe.core.evaluation.Result` summary (or its JSON form).

        Parameters
        ----------
        summary : Summary or mapping
            ``Result.summary`` or a grid cell's (a :class:`~lidframe.core.summary.Summary`,
            read by its attributes), or a mapping of its keys -- ``Result.to_dict()`` (NaN
            written as None), a DP audit row's numbers -- which needs at least
            ``n_enrolled``, ``alid``, ``lid_q99`` and ``lid_max``.
        where : str
            Names the summary in an error message (a system, a grid cell).

        Raises
        ------
        InputError
            A required key is missing from a mapping.
        """
        if not isinstance(summary, Summary):
            summary = Summary.from_dict(summary, earlier=True)
        return cls._of_summary(summary, where=where)

    @classmethod
    def _of_summary(cls, summary: Summary, *, where: str) -> Headline:
        """The headline of a :class:`~lidframe.core.summary.Summary`, read by its attributes (a metric not computed NaN).

        A count may be None in a summary read from a store row no lidframe wrote
        (:meth:`Summary.from_dict <lidframe.core.summary.Summary.from_dict>`, ``earlier``): without N it is refused.
        """
        if summary.n_enrolled is None:
            raise InputError(f"{where}: not a lidframe evaluate summary (no n_enrolled)")
        found = summary.intervals or {}
        intervals = {key: i for key, i in found.items() if key in INTERVAL_KEYS}
        settings = summary.bootstrap if intervals else None
        binary = summary.binary
        nan = math.nan
        return cls(
            n_enrolled=int(summary.n_enrolled),
            log2_n=float(summary.log2_n),
            n_enrolled_trials=int_or_none(summary.n_enrolled_trials),
            n_outsider_trials=int_or_none(summary.n_outsider_trials),
            alid=float(summary.alid),
            pdr=float(summary.pdr),
            lid_pos=float(summary.lid_pos),
            lid_neg=float(summary.lid_neg),
            lid_q99=float(summary.lid_q99),
            lid_max=float(summary.lid_max),
            eer=nan if binary is None else float(binary.eer),
            cllr=nan if binary is None else float(binary.cllr),
            rank1_rate=float(summary.rank1_rate),
            intervals=intervals,
            interval_level=None if settings is None else float(settings.level),
            interval_unit=str(settings.unit) if settings is not None and settings.unit else None,
            min_cllr=nan if binary is None else float(binary.min_cllr),
            dsys=nan if binary is None else float(binary.dsys),
            min_dcf=nan if binary is None else float(binary.min_dcf),
            act_dcf=nan if binary is None else float(binary.act_dcf),
            interval_covers=None if settings is None else settings.covers(brief=True),
            n_dev_enrolled=int_or_none(summary.n_dev_enrolled),
            n_dev_mated_pairs=int_or_none(summary.n_dev_enrolled_trials),
            dece_bits=nan if binary is None else float(binary.dece_bits),
            max_abs_llr_log10=nan if binary is None else float(binary.max_abs_llr_log10),
            zebra_tag="" if binary is None or binary.zebra_tag is None else str(binary.zebra_tag),
            operating_point=None if binary is None else tuple(binary.operating_point.to_dict().items()),
        )


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

    The sentence follows the interval of the 99th percentile where the headline has one:
    it is given beside the percentile (``"more than 4.67 bits (95 % interval 3.90 to 4.80)
    of a possible 4.86"``), and "practically certain" is said only where its lower end
    lies within :data:`NEAR_CEILING_BITS` of the ceiling too; a lower end below that is
    named instead (``"..., but the 95 % interval of the 99th percentile reaches down to
    3.10 bits: the data do not show the attacker practically certain of their speaker"``),
    and without an interval the sentence says that none supports the claim beyond these
    trials.

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
            f"of the {ceiling_name} {ceiling_bits:.2f} bits{_certainty(headline, ceiling_bits)}."
        )
    if q99 > 0:
        above = int(np.count_nonzero(lid > q99))
        shown = _bits_of_ceiling(q99, ceiling_bits, ceiling_name)
        interval = headline.intervals.get("lid_q99")
        if interval is not None and not math.isnan(interval.low):
            value, rest = shown.split(" bits ", 1)
            shown = f"{value} bits ({_level_text(headline)}interval {interval.low:.2f} to {interval.high:.2f}) {rest}"
        return f"{share_text(above / total)} of trials ({above} of {total}) disclose more than {shown}."
    positive = int(np.count_nonzero(lid > 0))
    return (
        f"{share_text(positive / total)} of trials ({positive} of {total}) disclose anything (LID > 0); "
        f"the largest disclosure is {_bits_of_ceiling(headline.lid_max, ceiling_bits, ceiling_name)}."
    )


def _level_text(headline: Headline) -> str:
    """``"95 % "`` of the headline's intervals, or ``""`` where the source does not say."""
    level = headline.interval_level
    return "" if level is None or math.isnan(level) else f"{100 * level:g} % "


def _certainty(headline: Headline, ceiling_bits: float) -> str:
    """The end of the near-ceiling reading: "practically certain" only where the 99th percentile's interval supports it.

    The claim stands where the lower end of the interval of ``lid_q99`` lies within
    :data:`NEAR_CEILING_BITS` of the ceiling too; where it lies lower, the sentence says how
    low, and without an interval that nothing beyond these trials supports it.
    """
    interval = headline.intervals.get("lid_q99")
    if interval is None or math.isnan(interval.low):
        return (
            ": on these trials the attacker is practically certain of their speaker, but no confidence interval "
            "was computed to show it beyond them"
        )
    level = _level_text(headline)
    if ceiling_bits - interval.low < NEAR_CEILING_BITS:
        return (
            f": the attacker is practically certain of their speaker (the {level}interval of the 99th percentile "
            f"starts within {NEAR_CEILING_BITS:g} bit of it too)"
        )
    return (
        f", but the {level}interval of the 99th percentile reaches down to {interval.low:.2f} bits: the data do "
        "not show the attacker practically certain of their speaker"
    )
