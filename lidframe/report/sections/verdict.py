"""The page's section "Verdict": every system judged against an auditor's verdict policy.

Its record is the report's :class:`~lidframe.analyses.verdict.Policy` and each system's
:class:`~lidframe.analyses.verdict.Verdict` (:attr:`~lidframe.report.model.ReportSystem.verdict`,
made by :func:`lidframe.analyses.verdict.judge` from the system's summary and legal
record).  The section opens the summary: the policy's name, file and SHA-256, the
outcome over every system, and

- on a page of one system, a table with a row per limit: the limit, the estimate, its
  interval, the threshold in the metric's unit, the outcome and the reason
  (:func:`limit_table`);
- on a page of several (a demo, a grid's cells), a table with a row per system and a
  column per limit, each cell the outcome with the estimate and its interval under it
  (:func:`verdict_matrix`); the reasons are the same three sentences, said once under it.

Interval-aware, as docs/verdict.md says: a limit passes only where its whole interval
does.  Without a policy the section says how to give one (:func:`absent`).  The builders
judge each system with :func:`with_verdict` and name the policy file among the inputs,
its digest the one the verdict was judged from (:func:`policy_input`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.errors import InputError
from lidframe.metrics import catalogue
from lidframe.report.tables import Cell, Column, Table, interval_text, page_format, sort_key, text_cell
from lidframe.stats.interval import Interval

if TYPE_CHECKING:
    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.analyses.verdict import Judgement, Limit, Policy
    from lidframe.core.summary import Summary
    from lidframe.report.model import Report, ReportSystem
    from lidframe.report.sections import Page
    from lidframe.report.sections.provenance_model import InputFile

__all__ = [
    "OUTCOME_TEXT",
    "POLICY_ROLE",
    "with_verdict",
    "policy_input",
    "limit_table",
    "verdict_matrix",
    "VerdictSection",
    "show",
    "absent",
]

#: The policy file's role among the page's input files.
POLICY_ROLE = "verdict policy"

#: How the page writes each outcome.
OUTCOME_TEXT = {"pass": "PASS", "fail": "FAIL", "undecided": "UNDECIDED"}


def with_verdict(
    system: ReportSystem, policy: Policy | None, summary: Summary, legal: LegalCriteria | None
) -> ReportSystem:
    """*system* with its verdict under *policy* (:func:`lidframe.analyses.verdict.judge`); as it is without a policy."""
    if policy is None:
        return system
    from lidframe.analyses.verdict import judge

    return attrs.evolve(system, verdict=judge(policy, summary, legal, system=system.label))


def policy_input(policy: Policy | None) -> list[InputFile]:
    """The policy file as an input of the page, with the SHA-256 it was judged from; [] without a policy.

    Raises
    ------
    InputError
        The file is gone, or is not the one read (its digest changed since).
    """
    if policy is None:
        return []
    from lidframe.report.sections.provenance_model import InputFile

    found = InputFile.of(POLICY_ROLE, policy.path)
    if found.sha256 != policy.sha256:
        raise InputError(
            f"{policy.path}: the verdict policy changed while the run ran (SHA-256 {found.sha256[:12]}…, read as "
            f"{policy.sha256[:12]}…); run again"
        )
    return [found]


def _formatter(limit: Limit) -> Callable[[Any], str]:
    """The page's format of the limit's metric (a percentage for a fraction, 2 decimals for bits)."""
    return page_format(catalogue.metric(limit.metric))


def _measured(judgement: Judgement) -> tuple[str, str]:
    """(estimate, interval) of a judgement as the page prints them (``""``: no interval)."""
    fmt = _formatter(judgement.limit)
    interval = Interval(judgement.estimate, judgement.low, judgement.high)
    return fmt(judgement.estimate), interval_text(interval, fmt)


def limit_table(system: ReportSystem, table_id: str = "verdict-table") -> Table:
    """A row per limit of *system*'s verdict: limit, estimate, interval, threshold, outcome, reason.

    Every number carries its full precision in ``data-sort``; the interval's cell sorts by
    its upper bound (the one that decides an ``at_most`` limit).
    """
    verdict = system.verdict
    assert verdict is not None
    columns = (
        Column("limit", False),
        Column("estimate", True, "the metric's value in this evaluation"),
        Column("interval", True, "its interval (the run's bootstrap), where computed"),
        Column("threshold", True, "the limit in the metric's unit (a multiple of chance made absolute)"),
        Column("outcome", False),
        Column("reason", False),
    )
    rows = []
    for j in verdict.judgements:
        fmt = _formatter(j.limit)
        estimate, interval = _measured(j)
        rows.append(
            (
                Cell(j.limit.describe(), j.limit.describe()),
                Cell(estimate, sort_key(j.estimate)),
                Cell(interval or "—", sort_key(j.high)),
                Cell(fmt(j.threshold), sort_key(j.threshold)),
                text_cell(OUTCOME_TEXT[j.outcome]),
                text_cell(j.reason),
            )
        )
    caption = f"{system.label}: {OUTCOME_TEXT[verdict.outcome]}, limit by limit"
    return Table(table_id, caption, columns, tuple(rows))


def verdict_matrix(systems: Sequence[ReportSystem], policy: Policy, table_id: str = "verdict-table") -> Table:
    """A row per system (cell) and a column per limit: each cell's outcome, its estimate and interval under it."""
    columns = [Column("system", False), Column("verdict", False)]
    columns += [Column(limit.describe(), False, key=limit.metric) for limit in policy.limits]
    rows = []
    for system in systems:
        verdict = system.verdict
        assert verdict is not None
        cells = [text_cell(system.label), text_cell(OUTCOME_TEXT[verdict.outcome])]
        for j in verdict.judgements:
            estimate, interval = _measured(j)
            cells.append(Cell(OUTCOME_TEXT[j.outcome], j.outcome, f"{estimate} {interval}".strip()))
        rows.append(tuple(cells))
    caption = "Each system against each limit: the outcome, with the estimate and its interval under it"
    return Table(table_id, caption, tuple(columns), tuple(rows))


@attrs.frozen
class VerdictSection:
    """What the section shows: the policy, the outcome over every system, and the table.

    Attributes
    ----------
    policy : Policy
    outcome : str
        ``"pass"``, ``"fail"`` or ``"undecided"`` over every judged system.
    outcome_text : str
        As the page writes it (``"FAIL"``).
    counts : str
        How many systems pass, fail and are undecided (``"1 of 5 systems pass, 3 fail, 1
        undecided"``).
    table : Table
        :func:`limit_table` for one system, :func:`verdict_matrix` for several.
    metrics : tuple of str
        The catalogue key of each row of :func:`limit_table` (the page's ``data-metric-key``
        of the row); empty for the matrix, whose columns carry theirs.
    reasons : tuple of (str, str)
        (outcome, why) of every reason the table's judgements give, in order, once each
        (under the matrix, which has no room for them).
    """

    policy: Policy
    outcome: str
    outcome_text: str
    counts: str
    table: Table
    reasons: tuple[tuple[str, str], ...]
    metrics: tuple[str, ...] = ()


def _counts(outcomes: Sequence[str], noun: str) -> str:
    n = len(outcomes)
    parts = [f"{outcomes.count('pass')} of {n} {noun}{'' if n == 1 else 's'} pass"]
    parts += [f"{outcomes.count(o)} {o}" for o in ("fail", "undecided") if o in outcomes]
    return ", ".join(parts)


def show(page: Page) -> VerdictSection:
    """The section of *page* (whose report has a policy: :func:`absent` says None)."""
    report = page.report
    policy = report.policy
    assert policy is not None
    judged = [s for s in report.systems if s.verdict is not None]
    outcomes = [s.verdict.outcome for s in judged if s.verdict is not None]
    table = limit_table(judged[0]) if len(judged) == 1 else verdict_matrix(judged, policy)
    reasons = dict.fromkeys(
        (j.outcome, j.reason) for s in judged if s.verdict is not None for j in s.verdict.judgements
    )
    from lidframe.analyses.verdict import overall_outcome

    outcome = overall_outcome(outcomes)
    noun = "cell" if report.kind == "grid" else "system"
    metrics = tuple(limit.metric for limit in policy.limits) if len(judged) == 1 else ()
    counts = _counts(outcomes, noun)
    return VerdictSection(policy, outcome, OUTCOME_TEXT[outcome], counts, table, tuple(reasons), metrics)


def absent(report: Report) -> str | None:
    """Why the section does not apply to *report* (no verdict policy was given); None when it does."""
    if report.policy is not None and any(s.verdict is not None for s in report.systems):
        return None
    if report.kind == "dp-audit":
        return "No verdict: a DP audit is judged against the mechanism's bounds (its appendix), not a verdict policy."
    # one printed line: the summary prints on two A4 pages (issue 41)
    return "No verdict policy given (--policy P.toml judges each system against an auditor's limits: docs/verdict.md)."
