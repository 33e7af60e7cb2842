"""The page's section "Worst case across attackers": per audited system, the attacker that discloses most.

Its record is :func:`lidframe.analyses.worst_attacker.worst_attackers` of the report's
rows (:func:`worst_cases`): each row is one attack of its system under audit
(:attr:`~lidframe.report.model.ReportSystem.system`, or its name), named by
:func:`attack_name` -- a grid cell by its attacker, rung, calibrator and prior, a demo's
row ``"pitch/ge2e/semi-informed"`` by what follows its system (``"ge2e/semi-informed"``),
a DP audit's by its attacker.  The section is an appendix (the summary's headlines point
to it; the summary prints on two A4 pages): a small table with a row per system
(:func:`worst_table`), its worst attacker by ALID and by LID q99 with
their intervals, a note where the pick is not clearly separated from the runner-up and,
with a verdict policy, the verdict of the system's worst case
(:func:`lidframe.analyses.worst_attacker.judge_worst` of its rows' verdicts,
:func:`worst_verdicts`): a system fails where any of its attackers makes it fail.
:func:`worst_case_json` is the same record as the ``worst_case`` block of ``summary.json``.
The section applies where a system has several attackers; elsewhere it says so
(:func:`absent`).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.analyses.worst_attacker import (
    WORST_CASE_METRICS,
    AttackScore,
    SystemWorstCase,
    WorstPick,
    WorstVerdict,
    judge_worst,
    worst_attackers,
)
from lidframe.analyses.worst_attacker import (
    worst_case_json as _worst_case_json,
)
from lidframe.metrics import catalogue
from lidframe.report.tables import Cell, Column, Table, interval_text, page_format, sort_key, text_cell
from lidframe.stats.interval import Interval

if TYPE_CHECKING:
    from lidframe.report.headline import Headline
    from lidframe.report.model import Report, ReportSystem
    from lidframe.report.sections import Page

__all__ = [
    "attack_name",
    "attack_scores",
    "worst_cases",
    "worst_verdicts",
    "worst_case_json",
    "worst_table",
    "WorstAttackerSection",
    "show",
    "absent",
]

#: How a pick's cell notes a worst case that is not clearly this attacker (the separation's short form).
_SHORT = {"tied": "tied with {}", "overlapping": "overlaps {}", "no interval": "no interval to separate it from {}"}


def attack_name(system: ReportSystem) -> str:
    """What attacked the row's system: its :attr:`~lidframe.report.model.ReportSystem.attack`, else its label.

    A label ``"<system>/<attacker>"`` (the real-voice demo's ``"pitch/ge2e/semi-informed"``,
    or results labelled so and mapped to their system by ``report_from_results(...,
    systems=...)``) is named by what follows its system (``"ge2e/semi-informed"``).
    """
    if system.attack:
        return system.attack
    prefix = f"{system.system or system.name}/"
    label = system.label
    return label[len(prefix) :] if label.startswith(prefix) and len(label) > len(prefix) else label


def _interval(headline: Headline, key: str) -> Interval:
    """The headline's estimate of *key* with its interval (NaN bounds without one)."""
    estimate = float(getattr(headline, key))
    found = headline.intervals.get(key)
    if found is None:
        return Interval(estimate, math.nan, math.nan)
    return Interval(estimate, found.low, found.high, found.level, found.method)


def _attack_names(report: Report) -> list[str]:
    """:func:`attack_name` of each row; a system two of whose rows would share a name is named by its labels instead."""
    names = [attack_name(s) for s in report.systems]
    audited = [s.system or s.name for s in report.systems]
    counts = Counter(zip(audited, names, strict=True))
    clashing = {system for (system, _), n in counts.items() if n > 1}
    return [s.label if system in clashing else name for s, system, name in zip(report.systems, audited, names)]


def attack_scores(report: Report) -> list[AttackScore]:
    """One :class:`~lidframe.analyses.worst_attacker.AttackScore` per row of *report*, in page order."""
    return [
        AttackScore(s.system or s.name, name, _interval(s.headline, "alid"), _interval(s.headline, "lid_q99"))
        for s, name in zip(report.systems, _attack_names(report), strict=True)
    ]


def worst_cases(report: Report) -> tuple[SystemWorstCase, ...]:
    """Each audited system's worst attacker by ALID and by LID q99 (:func:`~lidframe.analyses.worst_attacker.worst_attackers`)."""
    return worst_attackers(attack_scores(report))


def worst_verdicts(report: Report) -> dict[str, WorstVerdict]:
    """system -> the verdict of its worst case over its rows' verdicts; empty without a policy."""
    grouped: dict[str, dict[str, Any]] = {}
    for s, name in zip(report.systems, _attack_names(report), strict=True):
        if s.verdict is not None:
            grouped.setdefault(s.system or s.name, {})[name] = s.verdict
    return {system: judge_worst(system, verdicts) for system, verdicts in grouped.items()}


def _several(cases: tuple[SystemWorstCase, ...]) -> bool:
    return any(len(case.attackers) > 1 for case in cases)


def worst_case_json(report: Report) -> dict[str, Any] | None:
    """The ``worst_case`` block of ``summary.json`` (:func:`lidframe.analyses.worst_attacker.worst_case_json`).

    None where no system has several attackers (the block would repeat each system's only row).
    """
    cases = worst_cases(report)
    if not _several(cases):
        return None
    return _worst_case_json(cases, worst_verdicts(report) or None)


def _pick_cells(pick: WorstPick | None, key: str) -> tuple[Cell, Cell]:
    """(attacker, value) cells of one pick: the attacker with a note where it is not clearly the worst case."""
    if pick is None:
        return text_cell(None), text_cell(None)
    note = "" if pick.clear else _SHORT[pick.separation].format(", ".join(pick.tied_with) or pick.runner_up)
    fmt = page_format(catalogue.metric(key))
    value = Cell(fmt(pick.value.estimate), sort_key(pick.value.estimate), interval_text(pick.value, fmt))
    return Cell(pick.attacker, pick.attacker, note), value


def _verdict_cell(verdict: WorstVerdict | None) -> Cell:
    """The system's worst-case outcome, with the limits that decide it and the attacker of each under it."""
    from lidframe.report.sections.verdict import OUTCOME_TEXT

    if verdict is None:
        return text_cell(None)
    outcome = verdict.outcome
    deciding = [
        f"{j.limit.describe()}: {attacker}"
        for j, attacker in zip(verdict.verdict.judgements, verdict.attackers, strict=True)
        if j.outcome == outcome and outcome != "pass"
    ]
    return Cell(OUTCOME_TEXT[outcome], outcome, "; ".join(deciding))


def worst_table(report: Report, table_id: str = "worst-attacker-table") -> Table:
    """A row per audited system: its attackers, the worst by ALID and by LID q99 with intervals, and its verdict.

    The verdict column is there only with a policy.  Every number carries its full
    precision in ``data-sort``.
    """
    cases = worst_cases(report)
    verdicts = worst_verdicts(report)
    columns = [Column("system", False), Column("attackers", True, "how many attacks of the system the page holds")]
    for key in WORST_CASE_METRICS:
        label = catalogue.metric(key).label
        columns += [
            Column(f"worst by {label}", False, f"the attacker with the highest {label}"),
            Column(label, True, key=key),
        ]
    if verdicts:
        columns.append(Column("verdict", False, "the policy judged on the system's worst case over its attackers"))
    rows = []
    for case in cases:
        cells = [text_cell(case.system), Cell(str(len(case.attackers)), sort_key(len(case.attackers)))]
        for key in WORST_CASE_METRICS:
            cells += _pick_cells(case.pick(key), key)
        if verdicts:
            cells.append(_verdict_cell(verdicts.get(case.system)))
        rows.append(tuple(cells))
    caption = "Per system, the attacker that discloses most, by ALID and by LID q99 (bits), with its interval"
    return Table(table_id, caption, tuple(columns), tuple(rows))


@attrs.frozen
class WorstAttackerSection:
    """What the section shows: the table, and whether a pick is not clearly separated (the note on it).

    Attributes
    ----------
    table : Table
        :func:`worst_table`.
    unclear : int
        How many picks are not clearly the worst case (tied, overlapping, without an interval).
    verdict : bool
        Whether the table has the verdict column.
    """

    table: Table
    unclear: int
    verdict: bool


def show(page: Page) -> WorstAttackerSection:
    """The section of *page* (whose report has a system with several attackers: :func:`absent` says None)."""
    cases = worst_cases(page.report)
    unclear = sum(1 for case in cases for key in WORST_CASE_METRICS if (p := case.pick(key)) and not p.clear)
    table = worst_table(page.report)
    return WorstAttackerSection(table, unclear, any(c.title == "verdict" for c in table.columns))


def absent(report: Report) -> str | None:
    """Why the section does not apply to *report* (every system has one attacker); None when it does."""
    if _several(worst_cases(report)):
        return None
    return "One attacker per system here: each system's headline is its worst case."
