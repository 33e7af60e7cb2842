"""The open set's records: what an open-set evaluation adds to a system's numbers.

In the open set (the prior's ``outside`` > 0, :mod:`lidframe.core.openset`) the attacker
also weighs "nobody enrolled": :class:`OpenSetHeadline` holds the summary's
``open_set`` (the groups of trials, :class:`LIDGroup` each, and the misattribution
rates), :class:`OpenSetPerTrial` the per-trial arrays its figure draws.  The open-set
section of the page (:mod:`lidframe.report.sections.open_set`) shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import numpy as np

from lidframe.core.summary import Summary
from lidframe.report.headline import float_or_nan
from lidframe.stats.interval import Interval

if TYPE_CHECKING:
    from lidframe.core.membership import MembershipDetection
    from lidframe.metrics.aggregates import LIDAggregates

__all__ = ["OPEN_SET_GROUPS", "open_set_estimates", "Aggregates", "LIDGroup", "OpenSetHeadline", "OpenSetPerTrial"]


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
        estimates[interval_key] = float_or_nan(group.get("alid"))
    for key in ("misattribution_rate", "misattribution_rate_at_threshold"):
        estimates[key] = float_or_nan(open_set.get(key))
    return estimates


class Aggregates(Protocol):
    """What :meth:`LIDGroup.of_record` reads: a :class:`~lidframe.core.summary.Summary`, a ``LIDAggregates``."""

    @property
    def alid(self) -> float: ...
    @property
    def pdr(self) -> float: ...
    @property
    def lid_pos(self) -> float: ...
    @property
    def lid_neg(self) -> float: ...
    @property
    def lid_max(self) -> float: ...


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
    def of_record(cls, name: str, record: Aggregates, n_trials: int, interval: Interval | None) -> LIDGroup:
        """The group *name* from a record's attributes (a :class:`~lidframe.core.summary.Summary`, a ``LIDAggregates``)."""
        return cls(
            name=name,
            n_trials=int(n_trials),
            alid=float(record.alid),
            pdr=float(record.pdr),
            lid_pos=float(record.lid_pos),
            lid_neg=float(record.lid_neg),
            lid_max=float(record.lid_max),
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
    membership : MembershipDetection or None
        Enrolled-against-outsider detection by the membership posterior (the summary's
        ``open_set.membership_detection``: TPR at FPR 1 % and 0.1 % with Clopper-Pearson
        intervals, and the ROC); None without outsider trials, or from a summary written
        before it existed.
    beside : str or None
        The prior of an open-set evaluation made beside the cell's closed-set one (the
        demos': the cell's headline and every other section stay closed-set, this record
        and :class:`OpenSetPerTrial` come from the second evaluation); None where the
        cell's own evaluation is the open set's.
    """

    outside: float
    outside_source: str
    groups: tuple[LIDGroup, ...]
    n_outsider_trials: int
    misattribution_rate: float
    misattribution_threshold: float
    misattribution_rate_at_threshold: float
    intervals: dict[str, Interval] = attrs.field(factory=dict)
    membership: MembershipDetection | None = None
    beside: str | None = None

    def group(self, name: str) -> LIDGroup | None:
        """The group called *name*, or None."""
        return next((g for g in self.groups if g.name == name), None)

    @classmethod
    def from_summary(cls, summary: Summary | Mapping[str, Any]) -> OpenSetHeadline | None:
        """The open-set numbers of an evaluate summary (or its JSON form); None in the closed set.

        A :class:`~lidframe.core.summary.Summary` is read by its attributes (its
        ``open_set``, a :class:`~lidframe.core.summary.OpenSetView`); a mapping of its keys
        by them, and one written before the open set (no ``open_set`` key) reads as closed.
        """
        if not isinstance(summary, Summary):
            summary = Summary.from_dict(summary, earlier=True)
        return cls._of_summary(summary)

    @classmethod
    def _of_summary(cls, summary: Summary) -> OpenSetHeadline | None:
        """The open-set numbers of a :class:`~lidframe.core.summary.Summary`, read by its attributes; None in the closed set."""
        open_set = summary.open_set
        if open_set is None:
            return None
        found = summary.intervals or {}

        def interval(key: str) -> Interval | None:
            return found.get(key)

        n_trials = summary.n_enrolled_trials + summary.n_outsider_trials
        groups = [LIDGroup.of_record("all trials", summary, n_trials, interval("alid"))]
        for name, key, interval_key in OPEN_SET_GROUPS:
            group: LIDAggregates | None = getattr(open_set, key)
            if group is not None:
                groups.append(LIDGroup.of_record(name, group, group.n_trials, interval(interval_key)))
        rates = ("misattribution_rate", "misattribution_rate_at_threshold")
        return cls(
            outside=float(open_set.outside),
            outside_source=open_set.outside_source,
            groups=tuple(groups),
            n_outsider_trials=int(summary.n_outsider_trials),
            misattribution_rate=float(open_set.misattribution_rate),
            misattribution_threshold=float(open_set.misattribution_threshold),
            misattribution_rate_at_threshold=float(open_set.misattribution_rate_at_threshold),
            intervals={key: i for key in rates if (i := interval(key)) is not None},
            membership=open_set.membership_detection,
        )


def _optional_flags(value: Any) -> np.ndarray:
    return np.asarray(value, dtype=bool).ravel()


def _optional_values(value: Any) -> np.ndarray | None:
    return None if value is None else np.asarray(value, dtype=np.float64).ravel()


@attrs.frozen(eq=False)
class OpenSetPerTrial:
    """The per-trial arrays the open-set figure draws, aligned with its LIDs (:attr:`lid_bits`).

    Attributes
    ----------
    outsider : ndarray of bool, shape (T,)
        Trials whose speaker is not enrolled.
    top_posterior : ndarray, shape (T,), or None
        max_j p(j | s), the posterior of the attacker's best enrolled guess; None when the
        source did not keep it.
    lid : ndarray, shape (T,), or None
        Every trial's LID (bits) in an open-set evaluation made beside the cell's
        closed-set one (:attr:`OpenSetHeadline.beside`); None: the cell's
        :attr:`ReportSystem.lid_bits` are the open set's.
    """

    outsider: np.ndarray = attrs.field(converter=_optional_flags)
    top_posterior: np.ndarray | None = attrs.field(default=None, converter=_optional_values)
    lid: np.ndarray | None = attrs.field(default=None, converter=_optional_values)

    def lid_bits(self, system_lid: np.ndarray | None) -> np.ndarray | None:
        """The LIDs these arrays align with: :attr:`lid`, or else the cell's *system_lid*."""
        return system_lid if self.lid is None else self.lid
