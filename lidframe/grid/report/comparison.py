"""What the comparison tables of a grid report show (written by :mod:`lidframe.grid.report.writers`).

Per (attacker, scenario, calibrator, prior) of the first seed, one table of the systems
sorted by ALID (:func:`paper_tables`, titled by :func:`heading`), each metric of
:func:`~lidframe.grid.report.columns.paper_columns` with its interval ``[low, high]``
where the cell has one (:func:`shown_rows`), and the line that says what the brackets are
(:func:`interval_note`); with scenarios, the table of the scenarios the cells hold
(:func:`scenario_rows`) and what their codes mean; with utility, the paragraph that says
what WER and rho_F0 are and where they were read (:func:`utility_note`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lidframe.data.scenario import SCENARIOS
from lidframe.grid.records import NONE, FinishedCell, stored_name
from lidframe.grid.report.columns import interval_bounds, paper_columns
from lidframe.grid.stored import as_finished_cell

if TYPE_CHECKING:
    import pandas as pd

    from lidframe.grid.utility import UtilityFile

__all__ = [
    "Group",
    "paper_tables",
    "heading",
    "shown_rows",
    "interval_note",
    "scenario_rows",
    "SCENARIO_CODES",
    "SCENARIO_NOTE",
    "utility_note",
]

#: What each side and model of a scenario is, in a grid spec's terms.
_GRID_SIDES = {
    "original": "original speech (the split's original_enrol)",
    "anonymised": "anonymised speech (the split's enrol)",
}
_GRID_MODELS = {
    "trained on clear speech": "trained on clear speech (the attacker as given in grid.attackers)",
    "adapted on anonymised training speech": (
        "adapted on anonymised training speech (the system's [systems.NAME.adapted] checkpoint, for an attacker "
        "that takes one)"
    ),
}
#: What a scenario's code means, said wherever the codes appear (the comparison headings, the page).
SCENARIO_CODES = (
    "A code names the enrolment speech, then the trial speech, o original and a anonymised: "
    "o-a is original enrolment, anonymised trials; a-a is anonymised enrolment, anonymised trials."
)
#: What the scenario table says under it.
SCENARIO_NOTE = (
    f"{SCENARIO_CODES} Each split is scored the scenario's way: dev (which fits the calibrator) as well as eval; "
    "an attacker that has no model (random, precomputed) scores as it is in every scenario."
)


#: A comparison table's group: (attacker, calibrator, prior, scenario), the scenario ``-`` for none.
Group = tuple[str, str, str, str]


def paper_tables(frame: pd.DataFrame) -> list[tuple[Group, pd.DataFrame]]:
    """The comparison tables of the tidy *frame*'s first seed: per group, its rows sorted by ALID, most first.

    A system with a mechanism is named ``system [mechanism]``; the groups are in order of
    attacker, scenario (ladder order), calibrator and prior.
    """
    groups = []
    base = frame[frame["seed"] == frame["seed"].min()].copy()
    # the frame's components are text (``-`` for none, as table.csv writes them)
    base["system"] = [s if m == NONE else f"{s} [{m}]" for s, m in zip(base["system"], base["mechanism"])]
    if "scenario" not in base.columns:
        base["scenario"] = NONE
    for (attacker, scenario, calibrator, prior), part in base.groupby(
        ["attacker", "scenario", "calibrator", "prior"], sort=True
    ):
        group = (str(attacker), str(calibrator), str(prior), str(scenario))
        groups.append((group, part.sort_values("alid", ascending=False, kind="stable")))
    return sorted(groups, key=lambda g: (g[0][0], _ladder(g[0][3]), g[0][1], g[0][2]))


def _ladder(scenario: str) -> int:
    """A scenario's rung (its place in :data:`SCENARIOS`); -1 for none."""
    return list(SCENARIOS).index(scenario) if scenario in SCENARIOS else -1


def heading(group: Group, code: Any = str) -> str:
    """A comparison table's heading: ``attacker X, calibrator Y, prior Z``, with ``scenario S (code)`` when it has one."""
    attacker, calibrator, prior, scenario = group
    where = f"attacker {code(attacker)}"
    if scenario != NONE:
        where += f", scenario {code(scenario)}" + (f" ({SCENARIOS[scenario].code})" if scenario in SCENARIOS else "")
    return f"{where}, calibrator {code(calibrator)}, prior {code(prior)}"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cell(fmt: str, value: Any) -> str:
    """*value* of a row of the tidy frame as the tables print it: the text edge, where a missing value is ``-``."""
    if _missing(value):
        return "-"
    return fmt.format(int(value) if fmt == "{:d}" else value)


def _shown(row: Mapping[str, Any], key: str, fmt: str) -> str:
    """A value of the comparison, followed by its interval ``[low, high]`` where the cell has one."""
    text = _cell(fmt, row[key])
    low, high = (row.get(column) for column in interval_bounds(key))
    if _missing(row[key]) or _missing(low) or _missing(high):
        return text
    return f"{text} [{_cell(fmt, low)}, {_cell(fmt, high)}]"


def shown_rows(part: pd.DataFrame) -> list[list[str]]:
    """The comparison rows of one group as text: the system, then each metric of :func:`~lidframe.grid.report.columns.paper_columns`."""
    paper = paper_columns(part)
    return [[str(row["system"]), *(_shown(row, key, fmt) for key, _, fmt in paper)] for row in part.to_dict("records")]


def interval_note(results: Sequence[FinishedCell | Mapping[str, Any]], group: Group, seed: int) -> str | None:
    """The line that says what the brackets of a group's table are, or None without intervals.

    *results* are the finished cells (or their mappings, :func:`~lidframe.grid.stored.as_finished_cell`);
    *group* and *seed* those of a comparison table, as the tidy table writes them (``-`` for none).
    """
    attacker, calibrator, prior, scenario = group
    settings = [
        cell.summary.bootstrap
        for cell in map(as_finished_cell, results)
        # the group is the table's, whose components are text: a cell's None is its "-"
        if (stored_name(cell.attacker), cell.calibrator, cell.prior, cell.seed, stored_name(cell.scenario))
        == (attacker, calibrator, prior, seed, scenario)
        and cell.summary.intervals
    ]
    if not settings:
        return None
    described = sorted(
        {
            f"{b.level:.0%} bootstrap intervals in brackets ({b.method}, {b.n_boot} resamples of {b.unit}s, "
            f"seed {b.seed}; {b.covers()})"
            for b in settings
            if b is not None
        }
    )
    return "; ".join(described) if described else "bootstrap intervals in brackets"


def scenario_rows(names: Sequence[str]) -> list[tuple[str, str, str, str, str]]:
    """One row per scenario among *names*, in ladder order: :data:`~lidframe.grid.report.columns.SCENARIO_COLUMNS` in a grid spec's terms.

    Parameters
    ----------
    names : sequence of str
        Scenario names (others, such as ``-``, are left out).

    Returns
    -------
    list of tuple
        ``(scenario, code, enrolment, trials, model)``, e.g. ``("ignorant", "o-a", "original
        speech (the split's original_enrol)", "anonymised speech (the split's trials)",
        "trained on clear speech (the attacker as given in grid.attackers)")``.
    """
    found = set(names)
    return [
        (
            s.name,
            s.code,
            _GRID_SIDES[s.enrolment],
            f"{s.trials} speech (the split's trials)",
            _GRID_MODELS[s.model],
        )
        for s in SCENARIOS.values()
        if s.name in found
    ]


def utility_note(found: Mapping[str, UtilityFile], *, page: bool = False) -> str | None:
    """What the WER and rho_F0 of a grid report are and where they were read: one paragraph; None without utility.

    Parameters
    ----------
    found : mapping of str to UtilityFile
        Each system's utility as :func:`lidframe.grid.utility.grid_utility` read it.
    page : bool
        The note of ``report.html`` (whose utility section says what the numbers are, the
        recogniser and the intervals): only where they were read.  False: the paragraph
        under the tables of ``summary.md``, ``summary.html`` and ``table.tex``.

    Returns
    -------
    str or None
        E.g. ``"WER and ρ_F0: the utility of each system's speech (...), the same in every
        cell of the system, read now from plain: /d/plain.json (SHA-256 0123456789ab…); -
        where a system has none. WER by pocketsphinx; 95% bootstrap intervals in brackets
        (bca, 1000 resamples of speakers)."``
    """
    if not found:
        return None
    files = "; ".join(f"{name}: {entry.path} (SHA-256 {entry.sha256[:12]}…)" for name, entry in found.items())
    if page:
        return (
            "Read afresh, when this report was written, from each system's utility file ([systems.NAME] utility "
            f"in the grid spec), the same for every cell of the system: {files}."
        )
    recognisers = ", ".join(dict.fromkeys(entry.utility.recogniser for entry in found.values()))
    text = (
        "WER and ρ_F0: the utility of each system's speech (lidframe utility: the word error rate of a recogniser, "
        "a fraction of the reference words, and the mean correlation of the F0 contours with the original speech's), "
        f"the same in every cell of the system, read now from {files}; - where a system has none. "
        f"WER by {recognisers}"
    )
    described = sorted(
        {
            f"{float(b['level']):.0%} bootstrap intervals in brackets ({b.get('method', '?')}, "
            f"{b.get('n_boot', '?')} resamples of {b.get('unit', '?')}s)"
            for b in (entry.utility.bootstrap or {} for entry in found.values() if entry.utility.intervals)
            if "level" in b
        }
    )
    return text + ("; " + "; ".join(described) if described else "") + "."
