"""The worst case across attackers: per audited system, the attacker that discloses most, and its verdict.

A run that attacks one system with several attackers -- the rungs of the threat-model
ladder (docs/scenarios.md), a grid's attackers, a fusion of attackers, the real-voice
demo's GE2E and ECAPA -- measures one disclosure per (system, attacker) pair.  A system
is only as private as its worst case.  :func:`worst_attackers` picks it for each system
*s*, once by the average disclosure and once by the tail, each with its interval::

    worst_m(s) = argmax over a in A(s) of m(s, a),      m in {ALID, LID q99}

where A(s) are the attackers of *s* whose estimate of m was computed (NaN: no
candidate).  Of several attackers with the same largest estimate the first given is
picked, and the others are named as tied with it.

**Separation.**  The pick is set beside its runner-up, the attacker with the next
largest estimate (:attr:`WorstPick.separation`):

``"alone"``
    the system has one candidate: there is nothing to separate;
``"tied"``
    the runner-up's estimate equals the pick's;
``"separated"``
    both have intervals and they do not overlap (the pick's lower bound lies above the
    runner-up's upper bound): the worst case is clearly this attacker;
``"overlapping"``
    both have intervals and they overlap: the data do not tell the two apart, and either
    may be the worst case;
``"no interval"``
    one of the two has no interval (no bootstrap): the pick rests on the estimates alone.

Two 95 % intervals that do not overlap is a conservative criterion (a difference can be
significant while its intervals overlap); a paired comparison of the two attackers'
per-trial LIDs (``lidframe compare``) is the sharper test where both scored the same trials.

**Verdict.**  :func:`judge_worst` judges a system's worst case under a verdict policy
(:mod:`lidframe.analyses.verdict`): for each limit, the judgement of the attacker that
comes out worst on it -- a fail before an undecided before a pass, and within one outcome
the attacker whose deciding bound discloses most -- so that the system's outcome, the
:func:`~lidframe.analyses.verdict.overall_outcome` of those judgements, fails where any
attacker makes any limit fail, and passes only where every attacker passes every limit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs

from lidframe.analyses.verdict import Judgement, Verdict, overall_outcome
from lidframe.data.fileio import json_clean
from lidframe.errors import InputError, quote
from lidframe.stats.interval import Interval

if TYPE_CHECKING:
    from lidframe.core.summary import Summary

__all__ = [
    "WORST_CASE_METRICS",
    "Separation",
    "AttackScore",
    "WorstPick",
    "SystemWorstCase",
    "WorstVerdict",
    "worst_attackers",
    "judge_worst",
    "worst_case_json",
]

#: The metrics the worst case is picked by (catalogue keys): the average disclosure and the tail.
WORST_CASE_METRICS = ("alid", "lid_q99")

Separation = Literal["alone", "tied", "separated", "overlapping", "no interval"]

#: How each outcome ranks when the worst attacker of a limit is picked: a fail is worst.
_OUTCOME_RANK = {"fail": 2, "undecided": 1, "pass": 0}


def _interval(value: Any, where: str) -> Interval:
    if not isinstance(value, Interval):
        raise InputError(f"{where}: expected an Interval (lidframe.stats.interval), got {type(value).__name__}")
    return value


def _name(value: object) -> str:
    """A system's or an attacker's name as text (a numpy string or a path reads as its ``str``)."""
    return str(value)


@attrs.frozen
class AttackScore:
    """One attacker's disclosure of one system: its ALID and its LID q99, each with its interval.

    Attributes
    ----------
    system : str
        The system under audit (an anonymiser; the plain speech).
    attacker : str
        What attacked it, unique within the system (``"ge2e/semi-informed"``, ``"ecapa · logistic · uniform"``).
    alid, lid_q99 : Interval
        The estimate (bits) and its interval; NaN bounds where the run computed none, a NaN
        estimate where it did not compute the metric.
    """

    system: str = attrs.field(converter=_name)
    attacker: str = attrs.field(converter=_name)
    alid: Interval
    lid_q99: Interval

    def __attrs_post_init__(self) -> None:
        where = f"attack {quote(self.system)} / {quote(self.attacker)}"
        for key in WORST_CASE_METRICS:
            _interval(getattr(self, key), f"{where}: {key}")

    @classmethod
    def of_summary(cls, system: str, attacker: str, summary: Summary) -> AttackScore:
        """The attack's numbers from an evaluation's :class:`~lidframe.core.summary.Summary` (its intervals where it has them)."""
        found = summary.intervals or {}
        values = {}
        for key in WORST_CASE_METRICS:
            interval = found.get(key)
            estimate = float(getattr(summary, key))
            values[key] = (
                Interval(estimate, math.nan, math.nan)
                if interval is None
                else Interval(estimate, interval.low, interval.high, interval.level, interval.method)
            )
        return cls(system, attacker, values["alid"], values["lid_q99"])


def _has_bounds(interval: Interval) -> bool:
    return math.isfinite(interval.low) and math.isfinite(interval.high)


@attrs.frozen
class WorstPick:
    """The attacker that discloses most of one system by one metric, and how clearly.

    Attributes
    ----------
    metric : str
        ``"alid"`` or ``"lid_q99"``.
    attacker : str
        The pick: the first attacker given with the largest estimate.
    value : Interval
        Its estimate and interval (bits).
    runner_up : str or None
        The attacker with the next largest estimate; None when the pick is alone.
    runner_up_value : Interval or None
        Its estimate and interval.
    separation : {"alone", "tied", "separated", "overlapping", "no interval"}
        How the pick stands against the runner-up (module docstring).
    tied_with : tuple of str
        Every other attacker whose estimate equals the pick's, in the order given.
    """

    metric: str
    attacker: str
    value: Interval
    runner_up: str | None
    runner_up_value: Interval | None
    separation: Separation
    tied_with: tuple[str, ...] = ()

    @property
    def clear(self) -> bool:
        """Whether the pick is clearly the worst case: alone, or its interval clear of the runner-up's."""
        return self.separation in ("alone", "separated")

    def describe(self) -> str:
        """One sentence on the separation: ``"tied with ecapa"``, ``"its interval overlaps ecapa's (0.41 [0.30, 0.52])"``."""
        other = self.runner_up_value
        if self.separation == "alone" or other is None:
            return "the only attacker"
        if self.separation == "tied":
            return f"tied with {', '.join(self.tied_with)}"
        shown = f"{other.estimate:.2f}" + (f" [{other.low:.2f}, {other.high:.2f}]" if _has_bounds(other) else "")
        if self.separation == "separated":
            return f"clearly above the runner-up {self.runner_up} ({shown})"
        if self.separation == "overlapping":
            return f"not clearly separated: its interval overlaps that of {self.runner_up} ({shown})"
        return f"not shown separated from {self.runner_up} ({shown}): no interval to tell"

    def to_dict(self) -> dict[str, Any]:
        """The pick as JSON-able values (NaN as None)."""
        other = self.runner_up_value
        return json_clean(
            {
                "attacker": self.attacker,
                "estimate": self.value.estimate,
                "low": self.value.low,
                "high": self.value.high,
                "runner_up": self.runner_up,
                "runner_up_estimate": None if other is None else other.estimate,
                "runner_up_low": None if other is None else other.low,
                "runner_up_high": None if other is None else other.high,
                "separation": self.separation,
                "clear": self.clear,
                "tied_with": list(self.tied_with),
                "note": self.describe(),
            }
        )


def _separation(pick: Interval, other: Interval) -> Separation:
    if other.estimate == pick.estimate:
        return "tied"
    if not (_has_bounds(pick) and _has_bounds(other)):
        return "no interval"
    return "separated" if pick.low > other.high else "overlapping"


def _pick(metric: str, scores: list[AttackScore]) -> WorstPick | None:
    """The worst attacker of one system's *scores* by *metric*; None where no attacker has its estimate."""
    candidates = [(s.attacker, getattr(s, metric)) for s in scores]
    candidates = [(a, v) for a, v in candidates if not math.isnan(v.estimate)]
    if not candidates:
        return None
    # a stable sort, largest first: of equal estimates, the first given leads
    ranked = sorted(candidates, key=lambda item: -item[1].estimate)
    (attacker, value), rest = ranked[0], ranked[1:]
    if not rest:
        return WorstPick(metric, attacker, value, None, None, "alone")
    runner_up, other = rest[0]
    tied = tuple(a for a, v in rest if v.estimate == value.estimate)
    return WorstPick(metric, attacker, value, runner_up, other, _separation(value, other), tied)


@attrs.frozen
class SystemWorstCase:
    """One system's worst case across its attackers, by ALID and by LID q99.

    Attributes
    ----------
    system : str
    attackers : tuple of str
        Its attackers, in the order given.
    alid, lid_q99 : WorstPick or None
        The worst attacker by each metric; None where no attacker's estimate was computed.
    """

    system: str
    attackers: tuple[str, ...]
    alid: WorstPick | None
    lid_q99: WorstPick | None

    def pick(self, metric: str) -> WorstPick | None:
        """The pick by *metric* (one of :data:`WORST_CASE_METRICS`)."""
        if metric not in WORST_CASE_METRICS:
            raise InputError(f"the worst case is picked by {', '.join(WORST_CASE_METRICS)}, not {metric!r}")
        return self.alid if metric == "alid" else self.lid_q99

    def to_dict(self) -> dict[str, Any]:
        """The system's entry of ``summary.json``'s ``worst_case`` block."""
        return {
            "attackers": list(self.attackers),
            **{key: None if (p := self.pick(key)) is None else p.to_dict() for key in WORST_CASE_METRICS},
        }


def worst_attackers(scores: Iterable[AttackScore]) -> tuple[SystemWorstCase, ...]:
    """Per system, the attacker that discloses most by ALID and by LID q99 (module docstring).

    Parameters
    ----------
    scores : iterable of AttackScore
        One per (system, attacker) pair, in the order ties are broken by.

    Returns
    -------
    tuple of SystemWorstCase
        One per system, in order of first appearance.

    Raises
    ------
    InputError
        An item that is not an AttackScore, or a (system, attacker) pair given twice.
    """
    by_system: dict[str, list[AttackScore]] = {}
    for score in scores:
        if not isinstance(score, AttackScore):
            raise InputError(f"the worst case takes AttackScore records, got a {type(score).__name__}")
        held = by_system.setdefault(score.system, [])
        if any(s.attacker == score.attacker for s in held):
            raise InputError(
                f"attacker {quote(score.attacker)} of system {quote(score.system)} is given twice; each attack of a "
                "system needs its own name"
            )
        held.append(score)
    return tuple(
        SystemWorstCase(system, tuple(s.attacker for s in held), _pick("alid", held), _pick("lid_q99", held))
        for system, held in by_system.items()
    )


def _worst_key(judgement: Judgement) -> tuple[int, float]:
    """How badly a limit's judgement comes out: its outcome first, then its deciding bound (more disclosure: larger)."""
    at_most = judgement.limit.bound != "at_least"
    bound = judgement.high if at_most else judgement.low
    value = bound if math.isfinite(bound) else judgement.estimate
    disclosure = -math.inf if math.isnan(value) else (value if at_most else -value)
    return _OUTCOME_RANK[judgement.outcome], disclosure


@attrs.frozen
class WorstVerdict:
    """A system's verdict over its attackers: per limit, the judgement of the attacker that comes out worst.

    Attributes
    ----------
    verdict : Verdict
        The system's verdict: its policy, the system, and per limit the worst attacker's judgement.
    attackers : tuple of str
        Per limit (in the policy's order), the attacker whose judgement it is.
    """

    verdict: Verdict
    attackers: tuple[str, ...]

    @property
    def outcome(self) -> str:
        """``"fail"`` where any attacker fails a limit, ``"undecided"`` where none fails but one is, else ``"pass"``."""
        return self.verdict.outcome

    def to_dict(self) -> dict[str, Any]:
        """The verdict block (:meth:`Verdict.to_dict`) with each limit's ``attacker``."""
        block = self.verdict.to_dict()
        for limit, attacker in zip(block["limits"], self.attackers, strict=True):
            limit["attacker"] = attacker
        return block


def judge_worst(system: str, verdicts: Mapping[str, Verdict]) -> WorstVerdict:
    """The verdict of *system*'s worst case: per limit, the worst of its attackers' judgements (module docstring).

    Parameters
    ----------
    system : str
        The system under audit.
    verdicts : mapping of str to Verdict
        attacker -> its verdict on the system (:func:`lidframe.analyses.verdict.judge`),
        all under one policy; of equally bad judgements the first attacker given stands.

    Raises
    ------
    InputError
        No verdict, or verdicts under different policies.
    """
    if not verdicts:
        raise InputError(f"system {quote(system)}: no attacker's verdict to judge its worst case by")
    attackers = list(verdicts)
    policy = verdicts[attackers[0]].policy
    for attacker in attackers[1:]:
        if verdicts[attacker].policy != policy:
            raise InputError(
                f"system {quote(system)}: attacker {quote(attacker)} was judged under another policy than "
                f"{quote(attackers[0])}; judge every attacker under one policy"
            )
    worst_of_limit = []
    for k in range(len(policy.limits)):
        # max keeps the first of equal keys: the first attacker given stands for a tie
        worst_of_limit.append(max(attackers, key=lambda a: _worst_key(verdicts[a].judgements[k])))
    judgements = tuple(verdicts[a].judgements[k] for k, a in enumerate(worst_of_limit))
    return WorstVerdict(Verdict(policy=policy, system=system, judgements=judgements), tuple(worst_of_limit))


def worst_case_json(
    cases: Iterable[SystemWorstCase], verdicts: Mapping[str, WorstVerdict] | None = None
) -> dict[str, Any]:
    """The ``worst_case`` block of ``summary.json``: per system its worst attackers and, with a policy, its verdict.

    Parameters
    ----------
    cases : iterable of SystemWorstCase
        From :func:`worst_attackers`.
    verdicts : mapping of str to WorstVerdict, optional
        system -> :func:`judge_worst` of it; the block then also holds the outcome over
        every system (:func:`~lidframe.analyses.verdict.overall_outcome`).

    Returns
    -------
    dict
        ``{"metrics": ["alid", "lid_q99"], "systems": {system: {"attackers", "alid",
        "lid_q99"[, "verdict"]}}[, "outcome"]}``: each pick its attacker, estimate,
        interval, runner-up with its interval, separation and a sentence on it (NaN as None).
    """
    systems: dict[str, Any] = {}
    for case in cases:
        entry = case.to_dict()
        if verdicts is not None and case.system in verdicts:
            entry["verdict"] = verdicts[case.system].to_dict()
        systems[case.system] = entry
    block: dict[str, Any] = {"metrics": list(WORST_CASE_METRICS), "systems": systems}
    if verdicts:
        block["outcome"] = overall_outcome(v.outcome for v in verdicts.values())
    return block
