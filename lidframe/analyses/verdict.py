"""A verdict policy: an auditor's thresholds, judged against an evaluation with its intervals.

A policy is a TOML file of limits, one ``[[limit]]`` table each::

    name = "Example privacy policy"     # optional: how the page and JSON name the policy

    [[limit]]
    metric = "alid"           # a key of the metric catalogue (lidframe.metrics.catalogue)
    at_most = 0.05            # bits; or at_least = ..., for a metric where lower means more disclosure

    [[limit]]
    metric = "pi_link"        # linkability at N' candidates (docs/legal.md)
    n_prime = 2               # an integer >= 2, or "N" (the enrolled speakers: the rank-1 rate)
    at_most_times_chance = 1.2   # the limit is 1.2 x chance (1/N' here)

Judged metrics are those of a :class:`~lidframe.core.summary.Summary` whose direction says
which way discloses more (LID aggregates, identification and binary metrics, the open-set
ones), and the legal criteria ``pi_link`` (with ``n_prime``) and ``pi_sing`` of its
:class:`~lidframe.analyses.legal_criteria.LegalCriteria`.  ``at_most_times_chance`` is for
the metrics that have a chance level: ``pi_link`` (1/N'), ``pi_sing`` (e^-1) and
``rank1_rate`` (1/N; its interval is that of pi_link(N), which equals it).

Interval-aware outcomes
    A limit ``value <= x`` **passes** only where the interval's upper bound is at most
    *x*; it **fails** where the lower bound is above *x* (the whole interval breaks it);
    otherwise it is **undecided** (the interval holds *x*: the data cannot tell).  For
    ``at_least`` the bounds swap roles.  A metric lidframe gives an interval but the run
    computed none (no bootstrap) is undecided, saying so; a metric lidframe has no interval
    for is judged on its estimate, saying so; a metric the run did not compute (NaN, a
    criterion absent) is undecided, with the reason.

The policy passes when every limit passes; it fails when any fails; otherwise it is
undecided.  ``lidframe evaluate --policy P`` exits with :data:`EXIT_NOT_MET` unless it
passes, and records the policy file's SHA-256 beside the verdict (``summary.json``'s
``verdict`` block, :meth:`Verdict.to_dict`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from lidframe.analyses.legal_criteria import LegalCriteria
from lidframe.core.summary import Summary
from lidframe.data.documents import read_toml
from lidframe.data.fileio import StrPath, json_clean
from lidframe.errors import InputError
from lidframe.metrics import catalogue
from lidframe.metrics.legal import SINGLING_OUT_CHANCE

__all__ = [
    "EXIT_NOT_MET",
    "Limit",
    "Policy",
    "Judgement",
    "Verdict",
    "overall_outcome",
    "read_policy",
    "judge",
]

#: The exit status of a command whose policy is not met (failed or undecided); 2 is bad input.
EXIT_NOT_MET = 3
#: The largest policy file read (bytes).
MAX_POLICY_BYTES = 1 << 20

Outcome = Literal["pass", "fail", "undecided"]
_BOUNDS = ("at_most", "at_least", "at_most_times_chance")
_LIMIT_KEYS = ("metric", "n_prime", *_BOUNDS)
_LEGAL = ("pi_link", "pi_sing")
_WITH_CHANCE = ("pi_link", "pi_sing", "rank1_rate")
_OPEN_SET = {
    "alid_enrolled": lambda view: view.enrolled.alid,
    "alid_outsider": lambda view: math.nan if view.outsider is None else view.outsider.alid,
    "membership_enrolled": lambda view: view.membership_enrolled.alid,
    "misattribution_rate": lambda view: view.misattribution_rate,
    "misattribution_rate_at_threshold": lambda view: view.misattribution_rate_at_threshold,
}


@attrs.frozen(kw_only=True)
class Limit:
    """One ``[[limit]]`` of a policy.

    Attributes
    ----------
    metric : str
        A catalogue key (``"alid"``, ``"pi_link"``).
    bound : {"at_most", "at_least", "at_most_times_chance"}
        Which side of the threshold passes.
    value : float
        The threshold (in the metric's unit), or the multiple of chance.
    n_prime : int or None
        ``pi_link``'s candidate-set size N'; 0 means N (the enrolled speakers); None elsewhere.
    """

    metric: str
    bound: str
    value: float
    n_prime: int | None = None

    def describe(self, *, plain: bool = False) -> str:
        """The limit in words: ``"ALID ≤ 0.05 bits"``, ``"π_link(N′=2) ≤ 1.2 × chance"``.

        *plain*: in ASCII, as the console and JSON write it (``"ALID <= 0.05 bits"``).
        """
        row = catalogue.metric(self.metric)
        name = row.short if plain else row.label
        if self.n_prime is not None:
            name = f"{name}(N{chr(39) if plain else '′'}={'N' if self.n_prime == 0 else self.n_prime})"
        at_most, at_least, times = ("<=", ">=", "x") if plain else ("≤", "≥", "×")
        if self.bound == "at_most_times_chance":
            return f"{name} {at_most} {self.value:g} {times} chance"
        unit = " bits" if row.unit == "bits" else ""
        return f"{name} {at_most if self.bound == 'at_most' else at_least} {self.value:g}{unit}"


@attrs.frozen(kw_only=True)
class Policy:
    """A verdict policy read by :func:`read_policy`: its limits, in file order, and what identifies the file."""

    name: str
    limits: tuple[Limit, ...]
    path: str
    sha256: str


@attrs.frozen(kw_only=True)
class Judgement:
    """One limit judged: the measured value with its interval, the threshold it met or not, and why.

    Attributes
    ----------
    limit : Limit
    estimate, low, high : float
        The metric's estimate and interval (NaN where there is none).
    threshold : float
        The limit in the metric's unit (a multiple of chance made absolute).
    outcome : {"pass", "fail", "undecided"}
    reason : str
        One sentence: what decided the outcome.
    """

    limit: Limit
    estimate: float
    low: float
    high: float
    threshold: float
    outcome: Outcome
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """The judgement as JSON-able values (NaN as None)."""
        return json_clean(
            {
                "limit": self.limit.describe(plain=True),
                "metric": self.limit.metric,
                "n_prime": self.limit.n_prime,
                "bound": self.limit.bound,
                "value": self.limit.value,
                "threshold": self.threshold,
                "estimate": self.estimate,
                "low": self.low,
                "high": self.high,
                "outcome": self.outcome,
                "reason": self.reason,
            }
        )


@attrs.frozen(kw_only=True)
class Verdict:
    """A policy judged against one system: every limit's judgement and the overall outcome."""

    policy: Policy
    system: str
    judgements: tuple[Judgement, ...]

    @property
    def outcome(self) -> Outcome:
        """``"pass"`` when every limit passes, ``"fail"`` when one fails, else ``"undecided"``."""
        return overall_outcome(j.outcome for j in self.judgements)

    def to_dict(self) -> dict[str, Any]:
        """The ``verdict`` block of ``summary.json``."""
        return {
            "policy": self.policy.name,
            "policy_file": self.policy.path,
            "policy_sha256": self.policy.sha256,
            "system": self.system,
            "outcome": self.outcome,
            "limits": [j.to_dict() for j in self.judgements],
        }


def overall_outcome(outcomes: Iterable[str]) -> Outcome:
    """The outcome of several: ``"fail"`` when any fails, else ``"undecided"`` when any is, else ``"pass"``.

    A verdict's over its limits (:attr:`Verdict.outcome`), and a page's over its systems.
    """
    found = set(outcomes)
    if "fail" in found:
        return "fail"
    return "undecided" if "undecided" in found else "pass"


def _limit(path: StrPath, index: int, table: object) -> Limit:
    """The ``[[limit]]`` number *index* (from 1) of a policy file, checked."""
    where = f"{path}: limit {index}"
    if not isinstance(table, Mapping):
        raise InputError(f"{where}: expected a [[limit]] table")
    unknown = sorted(set(table) - set(_LIMIT_KEYS))
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}; expected {', '.join(_LIMIT_KEYS)}")
    key = table.get("metric")
    try:
        row = catalogue.metric(str(key))
    except KeyError:
        raise InputError(f"{where}: metric {key!r} is not a key of the metric catalogue (docs/metrics.md)") from None
    if row.direction == 0 or not (key in _LEGAL or key in _OPEN_SET or key in _summary_keys()):
        raise InputError(f"{where}: metric {key!r} is not one a policy judges (a size, a setting or an analysis's)")
    bounds = [b for b in _BOUNDS if b in table]
    if len(bounds) != 1:
        raise InputError(f"{where}: expected exactly one of {', '.join(_BOUNDS)}, found {len(bounds)}")
    bound, value = bounds[0], table[bounds[0]]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{where}: {bound} = {value!r}; expected a finite number")
    if bound == "at_most_times_chance" and (key not in _WITH_CHANCE or value <= 0):
        raise InputError(
            f"{where}: at_most_times_chance needs a positive multiple and one of {', '.join(_WITH_CHANCE)}"
        )
    return Limit(metric=row.key, bound=bound, value=float(value), n_prime=_n_prime(where, row.key, table))


def _n_prime(where: str, key: str, table: Mapping[str, Any]) -> int | None:
    """The limit's N' (0 for ``"N"``): required for ``pi_link``, refused elsewhere."""
    if key != "pi_link":
        if "n_prime" in table:
            raise InputError(f"{where}: n_prime is for metric 'pi_link' only")
        return None
    value = table.get("n_prime")
    if value == "N":
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise InputError(f'{where}: n_prime = {value!r}; expected an integer >= 2 or "N"')
    return value


def _summary_keys() -> frozenset[str]:
    return frozenset(m.key for g in ("lid", "binary", "identification") for m in catalogue.metrics_of(g))


def read_policy(path: StrPath) -> Policy:
    """The verdict policy in the TOML file at *path* (module docstring), every limit checked.

    Raises
    ------
    InputError
        One line naming the file (and the limit, numbered from 1): not TOML, no limit, an
        unknown key or metric, not exactly one bound, a threshold that is not a finite number.
    """
    what = "a verdict policy (TOML with [[limit]] tables)"
    raw, doc = read_toml(path, what, max_bytes=MAX_POLICY_BYTES)
    unknown = sorted(set(doc) - {"name", "limit"})
    if unknown:
        raise InputError(f"{path}: unknown key {unknown[0]!r}; expected name and [[limit]] tables")
    tables = doc.get("limit")
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{path}: no [[limit]] table; expected {what}")
    name = doc.get("name", Path(path).stem)
    if not isinstance(name, str):
        raise InputError(f"{path}: name = {name!r}; expected a string")
    limits = tuple(_limit(path, i, t) for i, t in enumerate(tables, start=1))
    return Policy(name=name, limits=limits, path=str(path), sha256=hashlib.sha256(raw).hexdigest())


def _legal_measured(limit: Limit, legal: LegalCriteria | None) -> tuple[float, float, float, float, str]:
    """(estimate, low, high, chance, why missing or "") of a limit on ``pi_link`` or ``pi_sing``."""
    nan = math.nan
    criterion = "linkability" if limit.metric == "pi_link" else "singling_out"
    if legal is None:
        return nan, nan, nan, nan, "not computed: no legal block"
    record = getattr(legal, criterion)
    if record is None:
        return nan, nan, nan, nan, f"not computed: {legal.absent.get(criterion, 'absent')}"
    if limit.metric == "pi_sing":
        return record.pi_sing, record.low, record.high, SINGLING_OUT_CHANCE, ""
    n_prime = legal.n_enrolled if limit.n_prime == 0 else limit.n_prime
    point = next((p for p in record.points if p.n_prime == n_prime), None)
    if point is None:
        shown = ", ".join(str(p.n_prime) for p in record.points)
        return nan, nan, nan, nan, f"not computed at N′ = {n_prime} (the curve has N′ = {shown})"
    return point.pi_link, point.low, point.high, point.chance, ""


def _measured(limit: Limit, summary: Summary, legal: LegalCriteria | None) -> tuple[float, float, float, float, str]:
    """(estimate, low, high, chance, why missing or "") of *limit*'s metric in the evaluation."""
    nan = math.nan
    if limit.metric in _LEGAL:
        return _legal_measured(limit, legal)
    if limit.metric in _OPEN_SET:
        if summary.open_set is None:
            return nan, nan, nan, nan, "not computed: a closed-set evaluation"
        estimate = float(_OPEN_SET[limit.metric](summary.open_set))
    else:
        estimate = float(summary.value(limit.metric))
    interval = None if summary.intervals is None else summary.intervals.get(limit.metric)
    low, high = (nan, nan) if interval is None else (interval.low, interval.high)
    chance = 1.0 / summary.n_enrolled if limit.metric == "rank1_rate" else nan
    if limit.metric == "rank1_rate" and legal is not None and legal.linkability is not None:
        at_n = legal.linkability.points[-1]  # pi_link(N) is the rank-1 rate: its interval is rank-1's
        if at_n.n_prime == legal.n_enrolled:
            low, high = at_n.low, at_n.high
    return estimate, low, high, chance, "" if math.isfinite(estimate) else "not computed (NaN)"


def _outcome(limit: Limit, estimate: float, low: float, high: float, threshold: float) -> tuple[Outcome, str]:
    at_most = limit.bound != "at_least"
    has_interval = math.isfinite(low) and math.isfinite(high)
    if not has_interval:
        if catalogue.metric(limit.metric).interval:
            return "undecided", "no interval: run with the bootstrap, the policy judges the interval's bound"
        ok = estimate <= threshold if at_most else estimate >= threshold
        return ("pass" if ok else "fail"), "judged on its estimate: lidframe computes no interval for it"
    worst, best = (high, low) if at_most else (low, high)
    if (worst <= threshold) if at_most else (worst >= threshold):
        return "pass", f"the interval's {'upper' if at_most else 'lower'} bound meets the limit"
    if (best > threshold) if at_most else (best < threshold):
        return "fail", "the whole interval breaks the limit"
    return "undecided", "the interval holds the limit: the data cannot tell"


def judge(policy: Policy, summary: Summary, legal: LegalCriteria | None = None, *, system: str = "") -> Verdict:
    """Judge every limit of *policy* against one evaluation (module docstring, "Interval-aware outcomes").

    Parameters
    ----------
    policy : Policy
        From :func:`read_policy`.
    summary : Summary
        The evaluation's summary, with its intervals where it has them.
    legal : LegalCriteria or None
        Its legal block (``pi_link``, ``pi_sing``); None: limits on them are undecided.
    system : str
        The system's name, for the record.
    """
    judgements = []
    for limit in policy.limits:
        estimate, low, high, chance, missing = _measured(limit, summary, legal)
        threshold = limit.value * chance if limit.bound == "at_most_times_chance" else limit.value
        outcome: Outcome
        if missing:
            outcome, reason = "undecided", missing
        else:
            outcome, reason = _outcome(limit, estimate, low, high, threshold)
        judgements.append(
            Judgement(
                limit=limit, estimate=estimate, low=low, high=high, threshold=threshold, outcome=outcome, reason=reason
            )
        )
    return Verdict(policy=policy, system=system, judgements=tuple(judgements))
