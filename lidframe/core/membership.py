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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from lidframe.core.openset import check_outside_value, log_normaliser
from lidframe.data.records import as_rows
from lidframe.errors import InputError
from lidframe.metrics.aggregates import nan_for_none
from lidframe.metrics.membership import detection_roc, thinned_roc, tpr_at_fpr
from lidframe.stats.bootstrap import check_level
from lidframe.stats.interval import Interval
from lidframe.stats.proportion import CLOPPER_PEARSON, clopper_pearson_interval

__all__ = ["MEMBERSHIP_FPRS", "MembershipPoint", "MembershipDetection", "membership_detection"]

#: The false-positive rates at which the membership attack's TPR is reported.
MEMBERSHIP_FPRS = (0.01, 0.001)

#: What the detection's score is, in its record.
_SCORE = "E = log LR of enrolled against nobody (nats); p(enrolled | s) increases with it"


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
    def from_dict(cls, stored: Mapping[str, Any], *, level: float) -> MembershipPoint:
        """The point :meth:`to_dict` wrote; its intervals at *level* (the detection's)."""

        def interval(key: str) -> Interval:
            found = Interval.from_columns(stored, key, level=level, method=CLOPPER_PEARSON)
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
    """

    n_members: int
    n_outsiders: int
    level: float
    points: tuple[MembershipPoint, ...] = attrs.field(converter=as_rows)
    roc_fpr: tuple[float, ...] = attrs.field(converter=as_rows)
    roc_tpr: tuple[float, ...] = attrs.field(converter=as_rows)

    def point(self, max_fpr: float) -> MembershipPoint:
        """The point of the budget *max_fpr* (a KeyError naming the budgets there are when it has none)."""
        for p in self.points:
            if p.max_fpr == max_fpr:
                return p
        raise KeyError(f"no point at FPR {max_fpr!r}; the budgets are {[p.max_fpr for p in self.points]}")

    def to_dict(self) -> dict[str, Any]:
        """Sizes, level, the intervals' method, what the score is, the points and the ROC (NaN kept, as a summary's view)."""
        return {
            "n_members": self.n_members,
            "n_outsiders": self.n_outsiders,
            "level": self.level,
            "method": CLOPPER_PEARSON,
            "score": _SCORE,
            "points": [p.to_dict() for p in self.points],
            "roc": {"fpr": list(self.roc_fpr), "tpr": list(self.roc_tpr)},
        }

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> MembershipDetection:
        """The record :meth:`to_dict` wrote (a None number read as NaN)."""
        level = nan_for_none(stored["level"])
        return cls(
            n_members=int(stored["n_members"]),
            n_outsiders=int(stored["n_outsiders"]),
            level=level,
            points=[MembershipPoint.from_dict(p, level=level) for p in stored["points"]],
            roc_fpr=[nan_for_none(x) for x in stored["roc"]["fpr"]],
            roc_tpr=[nan_for_none(x) for x in stored["roc"]["tpr"]],
        )


def membership_detection(
    log_evidence: ArrayLike,
    is_outsider: ArrayLike,
    outside: float,
    *,
    max_fprs: Sequence[float] = MEMBERSHIP_FPRS,
    level: float = 0.95,
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

    Returns
    -------
    MembershipDetection

    Raises
    ------
    InputError
        No enrolled or no outsider trial, arrays of other shapes, a non-finite E, π_∅ = 0,
        a bad budget or level.

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
    points = [_point(members, outsiders, budget, outside, level) for budget in max_fprs]
    fpr, tpr = thinned_roc(true_positives, false_positives, members.size, outsiders.size)
    return MembershipDetection(
        n_members=int(members.size),
        n_outsiders=int(outsiders.size),
        level=level,
        points=points,
        roc_fpr=[float(x) for x in fpr],
        roc_tpr=[float(x) for x in tpr],
    )


def _point(members: np.ndarray, outsiders: np.ndarray, budget: float, outside: float, level: float) -> MembershipPoint:
    """The :class:`MembershipPoint` of the FPR *budget* (:func:`lidframe.metrics.membership.tpr_at_fpr`)."""
    true_positives, false_positives, threshold = tpr_at_fpr(members, outsiders, budget)
    posterior = math.nan
    if math.isinf(threshold):
        threshold = math.nan  # flags no trial: no threshold to state (JSON has no infinity)
    else:
        log_z = float(log_normaliser(np.array([threshold]), outside)[0])
        posterior = min(math.exp(math.log1p(-outside) + threshold - log_z), 1.0)
    return MembershipPoint(
        max_fpr=float(budget),
        tpr=clopper_pearson_interval(true_positives, members.size, level=level),
        fpr=clopper_pearson_interval(false_positives, outsiders.size, level=level),
        true_positives=true_positives,
        false_positives=false_positives,
        threshold_llr=threshold,
        threshold_posterior=posterior,
        resolved=outsiders.size * budget >= 1.0,
    )
