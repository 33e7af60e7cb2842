"""Which columns a grid report has: the tidy table's and the comparison tables'.

The tidy table (:func:`~lidframe.grid.report.tidy.tidy_table`) has the component columns
(:data:`lidframe.grid.store.KEYS`, with ``scenario`` after the mechanism when any cell has
one: :func:`component_columns`), then every scalar metric of the summary, its interval
bounds (:func:`ci_columns`), the k-utterance attacker's columns
(:func:`longitudinal_column`), the open-set columns :data:`OPEN_SET_COLUMNS`, the law's
criteria :data:`LEGAL_COLUMNS` and the utility columns :data:`UTILITY_COLUMNS`.  The comparison tables of ``summary.md``,
``summary.html`` and ``table.tex`` show :data:`_PAPER`, then :data:`_UTILITY_PAPER` when the
table has the utility columns (:func:`paper_columns`); the scenario table
:data:`SCENARIO_COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lidframe.grid.records import NONE
from lidframe.grid.store import KEYS
from lidframe.metrics import catalogue

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SCENARIO_COLUMNS",
    "OPEN_SET_COLUMNS",
    "LEGAL_ESTIMATES",
    "LEGAL_COLUMNS",
    "UTILITY_COLUMNS",
    "LONGITUDINAL_METRICS",
    "component_columns",
    "stored_scenario",
    "is_column",
    "interval_bounds",
    "longitudinal_column",
    "paper_columns",
]

#: The open-set columns of the tidy table (when any cell is open-set), from the summary's ``open_set``.
OPEN_SET_COLUMNS = (
    "outside",
    "outside_source",
    "alid_enrolled",
    "alid_outsider",
    "membership_enrolled",
    "misattribution_rate",
    "misattribution_threshold",
    "misattribution_rate_at_threshold",
)
#: The law's criteria in the tidy table (when any cell has a ``legal`` block): pi_link at N' = 2 and at
#: N' = N (the rank-1 rate), pi_sing at N, each with its interval bounds (:meth:`Interval.columns
#: <lidframe.stats.interval.Interval.columns>`).  Their chance levels are 1/2, 1/N and e^-1: only 1/N
#: differs between systems, so only it is a column (``pi_link_n_chance``).
LEGAL_ESTIMATES = ("pi_link_2", "pi_link_n", "pi_sing")
#: :data:`LEGAL_ESTIMATES` with their bounds, ``pi_link_n_chance``, and ``legal_absent``: why a criterion
#: of the cell is empty (``criterion: why``, ``; ``-joined), ``""`` when none is.
LEGAL_COLUMNS = (
    *("pi_link_2", "pi_link_2_low", "pi_link_2_high"),
    *("pi_link_n", "pi_link_n_low", "pi_link_n_high", "pi_link_n_chance"),
    *("pi_sing", "pi_sing_low", "pi_sing_high"),
    "legal_absent",
)
#: The utility columns of the tidy table (when any reported system names a utility file).
UTILITY_COLUMNS = ("wer", "wer_low", "wer_high", "rho_f0", "rho_f0_low", "rho_f0_high")
#: The metrics of each k-utterance attacker in the tidy table (:func:`longitudinal_column`).
LONGITUDINAL_METRICS = ("alid", "pdr", "lid_q99", "lid_max")
#: The summary's entries that are no column of the tidy table (besides its mappings and lists).
_NOT_COLUMNS = ("intervals", "bootstrap", "calibrator_fit")

#: The comparison tables' metrics: (summary key, title, format), each with its interval where the cell has one
#: (the catalogue's "paper" table, :data:`lidframe.metrics.catalogue.TABLES`).
_PAPER = [(m.key, m.short, m.paper_format()) for m in catalogue.table("paper")]
#: The utility's place in the comparison tables, after :data:`_PAPER` (its bounds ``<key>_low/_high``).
_UTILITY_PAPER = [(m.key, m.short, m.paper_format()) for m in catalogue.table("paper_utility")]
#: The columns of the scenario table (:func:`~lidframe.grid.report.comparison.scenario_rows`).
SCENARIO_COLUMNS = ("scenario", "code", "enrolment", "trials", "model")


def stored_scenario(cell: Mapping[str, Any]) -> str:
    """A stored cell's scenario as stored (``-`` for none, and for a mapping of an earlier layout without the key)."""
    return str(cell.get("scenario", NONE))


def component_columns(cells: Sequence[Mapping[str, Any]]) -> list[str]:
    """The component columns: :data:`lidframe.grid.store.KEYS`, with ``scenario`` after the mechanism when any cell has one."""
    if all(stored_scenario(cell) == NONE for cell in cells):
        return list(KEYS)
    return [*KEYS[:3], "scenario", *KEYS[3:]]


def is_column(key: str, value: Any) -> bool:
    """Whether the summary's entry *key* is a column of the tidy table: a scalar, not :data:`_NOT_COLUMNS`."""
    return key not in _NOT_COLUMNS and not isinstance(value, (dict, list))


def interval_bounds(key: str) -> tuple[str, str]:
    """The columns of the low and high bound of the interval of the tidy table's column *key*: ``<key>_low``, ``<key>_high``.

    One name for every interval: a cell's bootstrap interval of a summary metric, and the
    utility's (:data:`UTILITY_COLUMNS`).
    """
    return f"{key}_low", f"{key}_high"


def longitudinal_column(fusion: str, k: object, metric: str) -> str:
    """The column of a k-utterance attacker's *metric*: ``long_<fusion>_k<k>_<metric>``."""
    return f"long_{fusion}_k{k}_{metric}"


def paper_columns(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The comparison's metrics: :data:`_PAPER`, then WER and rho_F0 when the table has the utility columns."""
    return _PAPER + (_UTILITY_PAPER if "wer" in frame.columns else [])
