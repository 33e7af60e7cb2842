"""Open set: how well the attacker tells enrolled voices from outsiders at low false-positive rates.

The open-set posterior (:mod:`lidframe.core.openset`) gives every trial its membership
posterior p(enrolled | s) = (1 - π_∅) e^{E} / Z, increasing in E, the log likelihood ratio
of "enrolled" against "nobody" (``log_evidence``, nats).  Flagging a trial as enrolled when
E reaches a threshold -- equivalently when p(enrolled | s) does -- is a membership
inference attack on the database, and :func:`membership_detection` measures it the way
membership-inference work does (:mod:`lidframe.metrics.membership`): its TPR at FPR 1 % and
0.1 % (:data:`MEMBERSHIP_FPRS`), not an average over the ROC, with the ROC itself as data
for a figure on a log FPR axis.

Each operating point (:class:`MembershipPoint`) holds the TPR and the FPR actually reached
with their Clopper-Pearson intervals (:func:`lidframe.stats.proportion.clopper_pearson_interval`,
k flagged of n trials), the threshold as E and as the posterior, and whether the sample can
resolve the target at all (#outsiders x target >= 1).  The intervals treat trials as
independent: trials of one speaker are not, so with many trials per speaker they are
narrower than a speaker-level interval would be; and the threshold is chosen on the same
trials, so the FPR reached on new outsiders can exceed the target (its interval says by
how much it could).

**The calibrator's uncertainty.**  E comes from the calibrated LLRs, so it moves with the
calibrator fitted on the dev set.  Where the evaluation's bootstrap refitted the
calibrator on resampled dev speakers (``Bootstrap(resample="dev+eval")``,
:mod:`lidframe.core.refit`), the detection does too, on the same B dev resamples
(``refitted``): under refitted calibrator b the trials' E are E_b, the detector is chosen
on them as above (the threshold of the most members flagged within the budget), and it
flags k_b of the n enrolled trials and f_b of the outsiders.  Each rate's interval is then
the Clopper-Pearson interval averaged over the refits
(:func:`~lidframe.stats.proportion.clopper_pearson_mixture`)::

    low  solves  mean_b P(Beta(k_b, n - k_b + 1) <= low)  = (1 - level) / 2
    high solves  mean_b P(Beta(k_b + 1, n - k_b) >  high) = (1 - level) / 2

as a per-speaker PDR's (:mod:`lidframe.analyses.speaker_intervals`); the estimates, counts
and threshold stay those of the calibrator fitted on the whole dev set.  With every
k_b = k it is the plain interval.  The record says which (``resample``: ``"dev+eval"``
refitted, ``"eval"`` held fixed; ``note``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.core.openset import check_outside_value, log_normaliser
from lidframe.data.records import as_rows
from lidframe.errors import InputError
from lidframe.metrics.aggregates import nan_for_none
from lidframe.metrics.membership import detection_roc, thinned_roc, tprs_at_fprs
from lidframe.stats.bootstrap import check_level
from lidframe.stats.interval import Interval
from lidframe.stats.proportion import (
    CLOPPER_PEARSON,
    CLOPPER_PEARSON_MIXTURE,
    clopper_pearson_interval,
    clopper_pearson_mixture,
)

__all__ = ["MEMBERSHIP_FPRS", "MembershipPoint", "MembershipDetection", "membership_detection"]

#: The false-positive rates at which the membership attack's TPR is reported.
MEMBERSHIP_FPRS = (0.01, 0.001)

#: What the detection's score is, in its record.
_SCORE = "E = log LR of enrolled against nobody (nats); p(enrolled | s) increases with it"

#: What the intervals cover, by ``resample`` (:attr:`MembershipDetection.note`).
_NOTES = {
    "eval": (
        "Clopper-Pearson intervals of k flagged of n trials (trials taken as independent), the threshold chosen on "
        "the same trials; the calibrator is held fixed: they leave out its uncertainty"
    ),
    "dev+eval": (
        "Clopper-Pearson intervals of k flagged of n trials (trials taken as independent), the threshold chosen on "
        "the same trials, their tails averaged over the calibrator refitted on each resample of the dev speakers "
        "(those of the headline's intervals): they include the calibrator's uncertainty"
    ),
}


@attrs.frozen(kw_only=True)
class MembershipPoint:
    """The best membership detector with an FPR at most ``max_fpr`` (:func:`membership_detection`).

    Attributes
    ----------
    max_fpr : float
        The FPR budget (0.01, 0.001).
    tpr : Interval
        Share of enrolled trials flagged, with its Clopper-Pearson interval.
    fpr : Interval
        Share of outsider trials flagged (at most ``max_fpr``), with its Clopper-Pearson interval.
    true_positives, false_positives : int
        Enrolled and outsider trials flagged.
    threshold_llr : float
        Flag a trial when E >= this (nats); NaN where the detector flags no trial.
    threshold_posterior : float
        The same threshold as p(enrolled | s) (it can round to 1 where E is large); NaN likewise.
    resolved : bool
        Whether #outsiders x ``max_fpr`` >= 1: with fewer outsider trials the only FPR within
        the budget is 0, and ``tpr`` is the TPR at FPR 0 of this sample.
    """

    max_fpr: float
    tpr: Interval
    fpr: Interval
    true_positives: int
    false_positives: int
    threshold_llr: float
    threshold_posterior: float
    resolved: bool

    def to_dict(self) -> dict[str, Any]:
        """``{max_fpr, membership_tpr, membership_tpr_low, ..., membership_fpr, ..., true_positives, ...}`` (NaN kept).

        The rates' keys, and their ends', are the metric catalogue's (:mod:`lidframe.metrics.catalogue`).
        """
        return {
            "max_fpr": self.max_fpr,
            "membership_tpr": self.tpr.estimate,
            **self.tpr.columns("membership_tpr"),
            "membership_fpr": self.fpr.estimate,
            **self.fpr.columns("membership_fpr"),
            "true_positives": self.true_positives,
            "false_positives": self.false_positives,
            "threshold_llr": self.threshold_llr,
            "threshold_posterior": self.threshold_posterior,
            "resolved": self.resolved,
        }

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any], *, level: float, method: str = CLOPPER_PEARSON) -> MembershipPoint:
        """The point :meth:`to_dict` wrote; its intervals at *level* by *method* (the detection's)."""

        def interval(key: str) -> Interval:
            found = Interval.from_columns(stored, key, level=level, method=method)
            return found if found is not None else Interval(nan_for_none(stored[key]), math.nan, math.nan, level)

        return cls(
            max_fpr=nan_for_none(stored["max_fpr"]),
            tpr=interval("membership_tpr"),
            fpr=interval("membership_fpr"),
            true_positives=int(stored["true_positives"]),
            false_positives=int(stored["false_positives"]),
            threshold_llr=nan_for_none(stored["threshold_llr"]),
            threshold_posterior=nan_for_none(stored["threshold_posterior"]),
            resolved=bool(stored["resolved"]),
        )


@attrs.frozen(kw_only=True)
class MembershipDetection:
    """Enrolled-against-outsider detection from the membership posterior: TPR at low FPRs, and the ROC.

    Attributes
    ----------
    n_members : int
        Enrolled trials (the positives).
    n_outsiders : int
        Outsider trials (the negatives).
    level : float
        The intervals' level.
    points : tuple of MembershipPoint
        One per FPR budget, in the order asked (default :data:`MEMBERSHIP_FPRS`).
    roc_fpr, roc_tpr : tuple of float
        The step ROC (:func:`lidframe.metrics.membership.thinned_roc`): ascending FPR from
        0 to 1 and the best TPR at each, at most about 200 points.
    resample : {"eval", "dev+eval"}, default "eval"
        ``"dev+eval"``: the intervals average the Clopper-Pearson tails over the calibrator
        refitted on each dev resample (module docstring); ``"eval"``: the calibrator held fixed.
    """

    n_members: int
    n_outsiders: int
    level: float
    points: tuple[MembershipPoint, ...] = attrs.field(converter=as_rows)
    roc_fpr: tuple[float, ...] = attrs.field(converter=as_rows)
    roc_tpr: tuple[float, ...] = attrs.field(converter=as_rows)
    resample: str = attrs.field(default="eval", validator=attrs.validators.in_(tuple(_NOTES)))

    @property
    def method(self) -> str:
        """The intervals' method: Clopper-Pearson, or its average over the refitted calibrators."""
        return CLOPPER_PEARSON_MIXTURE if self.resample == "dev+eval" else CLOPPER_PEARSON

    @property
    def note(self) -> str:
        """One line on what the intervals cover (the calibrator refitted or held fixed)."""
        return _NOTES[self.resample]

    def point(self, max_fpr: float) -> MembershipPoint:
        """The point of the budget *max_fpr* (a KeyError naming the budgets there are when it has none)."""
        for p in self.points:
            if p.max_fpr == max_fpr:
                return p
        raise KeyError(f"no point at FPR {max_fpr!r}; the budgets are {[p.max_fpr for p in self.points]}")

    def to_dict(self) -> dict[str, Any]:
        """Sizes, level, the intervals' method and coverage, what the score is, the points and the ROC (NaN kept)."""
        return {
            "n_members": self.n_members,
            "n_outsiders": self.n_outsiders,
            "level": self.level,
            "method": self.method,
            "resample": self.resample,
            "note": self.note,
            "score": _SCORE,
            "points": [p.to_dict() for p in self.points],
            "roc": {"fpr": list(self.roc_fpr), "tpr": list(self.roc_tpr)},
        }

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> MembershipDetection:
        """The record :meth:`to_dict` wrote (a None number read as NaN; without ``resample``, before 0.3.0: ``"eval"``)."""
        level = nan_for_none(stored["level"])
        resample = str(stored.get("resample", "eval"))
        method = CLOPPER_PEARSON_MIXTURE if resample == "dev+eval" else CLOPPER_PEARSON
        return cls(
            n_members=int(stored["n_members"]),
            n_outsiders=int(stored["n_outsiders"]),
            level=level,
            points=[MembershipPoint.from_dict(p, level=level, method=method) for p in stored["points"]],
            roc_fpr=[nan_for_none(x) for x in stored["roc"]["fpr"]],
            roc_tpr=[nan_for_none(x) for x in stored["roc"]["tpr"]],
            resample=resample,
        )


def membership_detection(
    log_evidence: ArrayLike,
    is_outsider: ArrayLike,
    outside: float,
    *,
    max_fprs: Sequence[float] = MEMBERSHIP_FPRS,
    level: float = 0.95,
    refitted: Iterable[ArrayLike] | None = None,
) -> MembershipDetection:
    """TPR at each FPR budget, and the ROC, of flagging trials as enrolled by their membership posterior.

    Parameters
    ----------
    log_evidence : array_like, shape (T,)
        E of every trial (nats; :class:`lidframe.core.openset.OpenSetStats`).
    is_outsider : array_like of bool, shape (T,)
        Trials whose speaker is not enrolled (the negatives).
    outside : float
        π_∅ in (0, 1), to state the thresholds as posteriors.
    max_fprs : sequence of float, default (0.01, 0.001)
        The FPR budgets, each in [0, 1].
    level : float, default 0.95
        Level of the Clopper-Pearson intervals.
    refitted : iterable of array_like, each shape (T,), optional
        E of every trial under each of B calibrators refitted on dev resamples
        (:func:`lidframe.core.refit.refitted_log_evidence`), read one at a time: the
        intervals average the Clopper-Pearson tails over them (module docstring) and the
        record says ``resample="dev+eval"``.  None (default): the calibrator held fixed.

    Returns
    -------
    MembershipDetection

    Raises
    ------
    InputError
        No enrolled or no outsider trial, arrays of other shapes, a non-finite E, π_∅ = 0,
        a bad budget or level, an empty *refitted*.

    Examples
    --------
    >>> found = membership_detection([3.0, 2.0, 1.0, -1.0, 1.5], [False, False, False, True, True], 0.5)
    >>> p = found.point(0.01)
    >>> p.true_positives, p.false_positives, p.threshold_llr, p.resolved
    (2, 0, 2.0, False)
    """
    evidence = np.asarray(log_evidence, dtype=np.float64).ravel()
    outsider = np.asarray(is_outsider, dtype=bool).ravel()
    if evidence.shape != outsider.shape:
        raise InputError(f"membership detection: {evidence.size} log evidences for {outsider.size} outsider flags")
    outside = check_outside_value(outside)
    if outside == 0.0:
        raise InputError("membership detection needs the open set's posterior: outside (pi_0) must be > 0")
    level = check_level(level)
    members, outsiders = evidence[~outsider], evidence[outsider]
    _, true_positives, false_positives = detection_roc(members, outsiders)
    found = tprs_at_fprs(members, outsiders, max_fprs)
    counts = None if refitted is None else _refitted_counts(refitted, outsider, max_fprs)
    points = [
        _point(found[i], members.size, outsiders.size, budget, outside, level, None if counts is None else counts[:, i])
        for i, budget in enumerate(max_fprs)
    ]
    fpr, tpr = thinned_roc(true_positives, false_positives, members.size, outsiders.size)
    return MembershipDetection(
        n_members=int(members.size),
        n_outsiders=int(outsiders.size),
        level=level,
        points=points,
        roc_fpr=[float(x) for x in fpr],
        roc_tpr=[float(x) for x in tpr],
        resample="eval" if counts is None else "dev+eval",
    )


def _refitted_counts(refitted: Iterable[ArrayLike], outsider: np.ndarray, max_fprs: Sequence[float]) -> np.ndarray:
    """(B, budgets, 2) members and outsiders flagged at each budget under each refitted calibrator's E."""
    counts = []
    for evidence in refitted:
        e = np.asarray(evidence, dtype=np.float64).ravel()
        if e.shape != outsider.shape:
            raise InputError(f"membership detection: {e.size} refitted log evidences for {outsider.size} trials")
        counts.append([(tp, fp) for tp, fp, _ in tprs_at_fprs(e[~outsider], e[outsider], max_fprs)])
    if not counts:
        raise InputError("membership detection: no refitted calibrator's log evidence to average the intervals over")
    return np.asarray(counts, dtype=np.int64)


def _rate(flagged: int, of: int, refits: np.ndarray | None, level: float) -> Interval:
    """flagged/of with its Clopper-Pearson interval, averaged over the refits' counts (B,) where given."""
    if refits is None:
        return clopper_pearson_interval(flagged, of, level=level)
    low, high = clopper_pearson_mixture(refits[None, :], [of], level=level)
    return Interval(flagged / of, float(low[0]), float(high[0]), level, CLOPPER_PEARSON_MIXTURE)


def _point(
    found: tuple[int, int, float],
    n_members: int,
    n_outsiders: int,
    budget: float,
    outside: float,
    level: float,
    refits: np.ndarray | None,
) -> MembershipPoint:
    """The :class:`MembershipPoint` of the FPR *budget* from its detector *found* (tp, fp, threshold), refits (B, 2) or None."""
    true_positives, false_positives, threshold = found
    posterior = math.nan
    if math.isinf(threshold):
        threshold = math.nan  # flags no trial: no threshold to state (JSON has no infinity)
    else:
        log_z = float(log_normaliser(np.array([threshold]), outside)[0])
        posterior = min(math.exp(math.log1p(-outside) + threshold - log_z), 1.0)
    return MembershipPoint(
        max_fpr=float(budget),
        tpr=_rate(true_positives, n_members, None if refits is None else refits[:, 0], level),
        fpr=_rate(false_positives, n_outsiders, None if refits is None else refits[:, 1], level),
        true_positives=true_positives,
        false_positives=false_positives,
        threshold_llr=threshold,
        threshold_posterior=posterior,
        resolved=n_outsiders * budget >= 1.0,
    )
