"""The tidy table of a grid report: one row per finished cell (``table.csv``, ``table.parquet``).

Its columns are :mod:`lidframe.grid.report.columns`'s; timings are left out, so that the
same spec gives a byte-identical table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lidframe.errors import InputError
from lidframe.grid.records import FinishedCell
from lidframe.grid.report.columns import (
    LEGAL_COLUMNS,
    LONGITUDINAL_METRICS,
    OPEN_SET_COLUMNS,
    UTILITY_COLUMNS,
    component_columns,
    interval_bounds,
    is_column,
    longitudinal_column,
    stored_scenario,
)
from lidframe.grid.store import KEYS
from lidframe.grid.stored import as_finished_cell

if TYPE_CHECKING:
    import pandas as pd

    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.utility import Utility

__all__ = ["tidy_table", "NOT_STORED"]

#: ``legal_absent`` of a cell stored without the ``legal`` block, in a table whose other cells have one.
NOT_STORED = "not computed: the cell was stored without the legal block ([grid] legal = false, or an earlier lidframe)"


def tidy_table(results: Sequence[Mapping[str, Any]], *, utility: Mapping[str, Utility] | None = None) -> pd.DataFrame:
    """One row per cell, every scalar metric and CI bound as columns, sorted by the components.

    Parameters
    ----------
    results : sequence of FinishedCell or mapping
        Cells as :func:`~lidframe.grid.report.write.load_results` returns them (or their ``to_dict()``).
    utility : mapping of str to Utility, optional
        Each system's utility (:class:`lidframe.utility.Utility`, by its name in the spec).

    Returns
    -------
    pandas.DataFrame
        One row per cell: the component columns (``scenario`` after ``mechanism`` when any
        cell has a scenario), then every scalar summary metric,
        ``<metric>_low`` / ``<metric>_high`` and ``long_<fusion>_k<k>_<metric>`` columns,
        the open-set columns :data:`OPEN_SET_COLUMNS` when any cell is open-set, the law's
        criteria :data:`LEGAL_COLUMNS` when any cell has its ``legal`` block (NaN where a
        criterion is absent, ``legal_absent`` saying why), and last,
        when any cell's system has a utility, :data:`UTILITY_COLUMNS`: the system's WER
        (a fraction of its reference words) and mean rho_F0, each with the low and high
        bound of its bootstrap interval; NaN where the system has none (no utility, no
        reference speech, no interval).  Without utility there are no such columns.
    """
    import pandas as pd

    cells = [as_finished_cell(r) for r in results]
    any_open = any(cell.summary.open_set is not None for cell in cells)
    utility = dict(utility or {})
    any_utility = any(cell.system in utility for cell in cells)
    any_legal = any(cell.legal is not None for cell in cells)
    keys = component_columns([cell.to_dict() for cell in cells])
    rows = []
    for cell in cells:
        row = _row(cell, keys, open_set=any_open)
        if any_legal:
            row.update(_legal_columns(cell.legal))
        if any_utility:
            row.update(_utility_columns(utility.get(cell.system)))
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise InputError("no finished cells to report")
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


def _row(cell: FinishedCell, keys: Sequence[str], *, open_set: bool) -> dict[str, Any]:
    """A cell's row of the tidy table but its utility columns, in column order.

    Its components (*keys*, as stored: ``-`` for none), every scalar summary metric, the
    open-set columns (with *open_set*), its interval bounds and k-utterance columns.  The
    table is a text edge: it walks the summary's JSON form (:meth:`Summary.to_dict
    <lidframe.core.summary.Summary.to_dict>`, a missing value None), as the store holds it.
    """
    stored = cell.to_dict()
    row = {k: stored_scenario(stored) if k == "scenario" else stored[k] for k in keys}
    s = cell.summary.to_dict()
    for key, value in s.items():
        if is_column(key, value):
            # the summary's "calibrator"/"prior" describe the fitted components; the cell's
            # own columns keep the spec strings
            row[f"{key}_describe" if key in KEYS else key] = value
    if open_set:
        row.update(_open_set_columns(s.get("open_set")))
    for metric, (low, high) in (s.get("intervals") or {}).items():
        low_column, high_column = interval_bounds(metric)
        row[low_column], row[high_column] = low, high
    for fusion, per_k in (cell.longitudinal or {}).items():  # k-utterance attacker columns
        for entry in per_k:
            for metric in LONGITUDINAL_METRICS:
                row[longitudinal_column(fusion, entry["k"], metric)] = entry[metric]
    return row


def _open_set_columns(open_set: Mapping[str, Any] | None) -> dict[str, Any]:
    """The :data:`OPEN_SET_COLUMNS` of one cell: from its summary's ``open_set``, or outside 0 (closed set)."""
    if not open_set:
        return {key: (0.0 if key == "outside" else None) for key in OPEN_SET_COLUMNS}
    from lidframe.report.sections.open_set_model import open_set_estimates

    estimates = open_set_estimates(open_set)  # the groups' ALID, the rates
    return {key: estimates[key] if key in estimates else open_set.get(key) for key in OPEN_SET_COLUMNS}


def _legal_columns(legal: LegalCriteria | None) -> dict[str, Any]:
    """The :data:`LEGAL_COLUMNS` of one cell: its legal block's pi_link(2), pi_link(N), pi_sing, or NaN and why not."""
    values: dict[str, Any] = dict.fromkeys(LEGAL_COLUMNS, math.nan)
    if legal is None:
        values["legal_absent"] = NOT_STORED
        return values
    curve, single = legal.linkability, legal.singling_out
    if curve is not None:
        at = {point.n_prime: (point, interval) for point, interval in zip(curve.points, curve.intervals)}
        for column, n_prime in (("pi_link_2", 2), ("pi_link_n", curve.n_enrolled)):
            if n_prime in at:
                point, interval = at[n_prime]
                values[column] = point.pi_link
                values.update(interval.columns(column))
        if curve.n_enrolled in at:  # 1/N; that of pi_link_2 is 1/2 in every cell, so no column
            values["pi_link_n_chance"] = at[curve.n_enrolled][0].chance
    if single is not None:
        values["pi_sing"] = single.pi_sing
        values.update(single.interval.columns("pi_sing"))
    values["legal_absent"] = "; ".join(f"{criterion}: {why}" for criterion, why in legal.absent.items())
    return values


def _utility_columns(utility: Utility | None) -> dict[str, float]:
    """The :data:`UTILITY_COLUMNS` of one system: its WER and rho_F0 with their interval bounds (NaN where none)."""
    values = dict.fromkeys(UTILITY_COLUMNS, math.nan)
    if utility is None:
        return values
    intervals = utility.intervals or {}
    for metric, estimate in (("wer", utility.wer), ("rho_f0", utility.rho_f0)):
        values[metric] = math.nan if estimate is None else float(estimate)
        interval = intervals.get(metric)
        if interval is not None and estimate is not None:
            values[f"{metric}_low"], values[f"{metric}_high"] = float(interval.low), float(interval.high)
    return values
