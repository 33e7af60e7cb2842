"""Tables and figures from a grid's result store (what ``lidframe report OUT_DIR`` writes).

:func:`load_results` reads the store and :func:`tidy_table` makes the table;
:func:`write_report` writes into ``OUT_DIR/report/``:

``table.csv`` / ``table.parquet``
    the tidy table, one row per finished cell (system, attacker, mechanism, calibrator,
    prior, seed -- and ``scenario`` after the mechanism when any cell has one, the grid's
    ``scenarios`` axis -- every summary metric, and ``<metric>_ci_low`` / ``_ci_high``
    where the grid computed intervals), sorted by the cell's components; timings are left out so the
    same spec gives a byte-identical table.  When any reported system names a utility file
    (``[systems.NAME] utility``), the last columns are :data:`UTILITY_COLUMNS` (WER and
    rho_F0 with their interval bounds, the same on every row of a system, NaN for a system
    without one); without, the table is as before.  When any cell is open-set (its prior's
    ``outside`` > 0) every row also has the open-set columns :data:`OPEN_SET_COLUMNS`
    (``outside`` 0 and the others empty for a closed-set cell; in an open-set cell
    ``alid`` and the other top-level LID columns are over every trial).
``summary.md`` / ``summary.html``
    with scenarios, first a table of the scenarios the cells hold (:func:`scenario_rows`:
    scenario, code, enrolment, trials, model); then
    a comparison table like the LID paper's Table 4 per (attacker, scenario, calibrator, prior):
    systems sorted by ALID, with N, EER, ALID, PDR, LID+, LID-, LIDmax, each followed
    by its bootstrap interval ``[low, high]`` when the spec asked for intervals
    (``[grid.bootstrap]``), and a line naming their level, method, resamples and seed; with
    utility, WER and rho_F0 (with the utility's own intervals) after LIDmax, and a line
    naming each system's utility file and its SHA-256.  In the
    Markdown, ``|`` and ``\\`` in a name are escaped (:func:`markdown_cell`) and names in
    headings are code spans that no backtick in them ends, so no name breaks a row.
``table.tex``
    the same comparison as a LaTeX tabular (system names with every LaTeX special
    character escaped, :func:`latex_escape`).
``lid_ccdf.png``
    share of trials with LID > x per system (the paper's Fig. 4): one panel per
    calibrator x prior, every combination of the grid.
``eer_vs_lid.png``
    EER against ALID (filled) and LIDmax (hollow) per system (Fig. 5), the systems named
    in a legend; one panel per calibrator x prior, titled with it.
``calibrator_sensitivity.png``
    ALID and LIDmax per calibrator and system.
``report.html``
    the audit report of the grid (:func:`lidframe.report.report_from_grid`): headlines,
    the sortable comparison, the figures above as inline SVG, per system the per-speaker
    table and dot plot of its first cell (:func:`with_per_speaker`, the same
    :func:`lidframe.analyses.per_speaker.per_speaker` as ``lidframe evaluate --report``'s,
    with within-speaker intervals), provenance with the digests of the store and of every
    per-trial file read (and of each utility file: :func:`lidframe.report.report_from_grid`
    is given the utility of each system, which draws the privacy-utility chart).

Each system's utility file is read again by every report (:func:`lidframe.grid.utility.grid_utility`),
never taken from the store: it is no input of any cell, so a changed file changes the
report's WER and rho_F0 without recomputing or staling a cell.

The two overview figures are drawn by :mod:`lidframe.report.figures`, the same code that
draws them in ``report.html``.

Every file is first written into a temporary folder beside ``report/``; only when all
of them are complete are they moved into ``report/`` (each by an atomic rename), and the
report files of an earlier run that this one does not write (the figures and
``report.html``, after ``--no-figures``) are removed, so ``report/`` never mixes two
reports.  Nothing there is touched when the store or a per-trial file cannot be read.

Every per-trial file is checked against the SHA-256 stored with its cell
(:func:`lidframe.grid.store.verify_per_trial_files`), with or without figures: a file
changed, or swapped with another cell's, after the grid wrote it is refused, naming it.
A store of an earlier layout, which recorded no such digests, is reported with a
warning that its per-trial files were not checked (:func:`report_warnings`).
"""

from __future__ import annotations

import contextlib
import html
import math
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lidframe.data.fileio import StrPath
from lidframe.data.scenario import SCENARIOS
from lidframe.errors import InputError
from lidframe.grid import store
from lidframe.grid.records import NONE, FinishedCell

if TYPE_CHECKING:
    import pandas as pd

    from lidframe.analyses.per_speaker import PerSpeakerResult
    from lidframe.grid.freshness import Freshness
    from lidframe.grid.utility import UtilityFile
    from lidframe.report.model import Report
    from lidframe.stats.bootstrap import Bootstrap
    from lidframe.utility import Utility

__all__ = [
    "load_results",
    "tidy_table",
    "write_report",
    "freshness_warnings",
    "report_warnings",
    "latex_escape",
    "markdown_cell",
    "scenario_rows",
    "SCENARIO_COLUMNS",
    "UTILITY_COLUMNS",
    "utility_note",
    "SCENARIO_CODES",
    "cell_per_speaker",
    "with_per_speaker",
]

_KEYS = list(store.KEYS)
#: The columns of the scenario table (:func:`scenario_rows`).
SCENARIO_COLUMNS = ("scenario", "code", "enrolment", "trials", "model")
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
#: Every file a report may write (those of an earlier report that this one does not write are removed).
REPORT_FILES = (
    "table.csv",
    "table.parquet",
    "summary.md",
    "summary.html",
    "table.tex",
    "lid_ccdf.png",
    "eer_vs_lid.png",
    "calibrator_sensitivity.png",
    "dp_vs_mu.png",
    "report.html",
)
#: LaTeX's special characters and what stands for each in text.
_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
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
#: The utility columns of the tidy table (when any reported system names a utility file).
UTILITY_COLUMNS = ("wer", "wer_low", "wer_high", "rho_f0", "rho_f0_low", "rho_f0_high")
#: The utility's place in the comparison tables, after :data:`_PAPER` (its bounds ``<key>_low/_high``).
_UTILITY_PAPER = [("wer", "WER", "{:.2f}"), ("rho_f0", "ρ_F0", "{:.2f}")]
_PAPER = [
    ("n_enrolled", "N", "{:d}"),
    ("eer", "EER", "{:.2f}"),
    ("alid", "ALID", "{:.2f}"),
    ("pdr", "PDR", "{:.2f}"),
    ("lid_pos", "LID+", "{:.2f}"),
    ("lid_neg", "LID-", "{:.2f}"),
    ("lid_max", "LIDmax", "{:.2f}"),
]


def load_results(out_dir: StrPath) -> list[FinishedCell]:
    """Finished cells of a grid output folder: component columns, summary, per-trial path.

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid's output folder (holds ``results.sqlite``).

    Returns
    -------
    list of FinishedCell
        One record per logical cell with status ``ok``: ``system``, ``attacker``,
        ``mechanism`` (None when the cell has none), ``calibrator``, ``prior``, ``seed``,
        ``summary`` (the parsed JSON summary, a dict), ``per_trial`` (the per-trial file,
        relative to *out_dir*), ``cell_id`` and ``per_trial_sha256``.  ``cell["summary"]``
        still reads a cell as the stored row (:meth:`FinishedCell.to_dict`, ``-`` for none).

    Raises
    ------
    InputError
        No store, or one that cannot be read (:func:`lidframe.grid.store.check_store`).
    """
    return store.read_finished(out_dir)


def latex_escape(text: object) -> str:
    """*text* for a LaTeX document: each of ``\\ & % $ # _ { } ~ ^`` escaped, line breaks made spaces.

    Examples
    --------
    >>> print(latex_escape("b3_50% & {x}"))
    b3\\_50\\% \\& \\{x\\}
    """
    return "".join(_LATEX.get(c, " " if c in "\r\n" else c) for c in str(text))


def markdown_cell(text: object) -> str:
    """*text* for a Markdown table cell: ``\\`` and ``|`` escaped, line breaks made spaces.

    Examples
    --------
    >>> print(markdown_cell("a|b"))
    a\\|b
    """
    return " ".join(str(text).replace("\\", "\\\\").replace("|", "\\|").split())


def _code(text: object) -> str:
    """*text* as a Markdown code span, fenced by more backticks than it holds in a row."""
    text = " ".join(str(text).split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _comment(text: object) -> str:
    """*text* on one line (a LaTeX comment ends at the line break)."""
    return " ".join(str(text).split())


def _scenario(cell: Mapping[str, Any]) -> str:
    """A stored cell's scenario as stored (``-`` for none, and for a mapping of an earlier layout without the key)."""
    return str(cell.get("scenario", NONE))


def _keys(cells: Sequence[Mapping[str, Any]]) -> list[str]:
    """The component columns: :data:`lidframe.grid.store.KEYS`, with ``scenario`` after the mechanism when any cell has one."""
    if all(_scenario(cell) == NONE for cell in cells):
        return list(_KEYS)
    return [*_KEYS[:3], "scenario", *_KEYS[3:]]


def scenario_rows(names: Sequence[str]) -> list[tuple[str, str, str, str, str]]:
    """One row per scenario among *names*, in ladder order: :data:`SCENARIO_COLUMNS` in a grid spec's terms.

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


#: What a scenario's code means, said wherever the codes appear (the comparison headings, the page).
SCENARIO_CODES = (
    "A code names the enrolment speech, then the trial speech, o original and a anonymised: "
    "o-a is original enrolment, anonymised trials; a-a is anonymised enrolment, anonymised trials."
)
#: What the scenario table says under it.
_SCENARIO_NOTE = (
    f"{SCENARIO_CODES} Each split is scored the scenario's way: dev (which fits the calibrator) as well as eval; "
    "an attacker that has no model (random, precomputed) scores as it is in every scenario."
)


def tidy_table(results: Sequence[Mapping[str, Any]], *, utility: Mapping[str, Utility] | None = None) -> pd.DataFrame:
    """One row per cell, every scalar metric and CI bound as columns, sorted by the components.

    Parameters
    ----------
    results : sequence of FinishedCell or mapping
        Cells as :func:`load_results` returns them (or their ``to_dict()``).
    utility : mapping of str to Utility, optional
        Each system's utility (:class:`lidframe.utility.Utility`, by its name in the spec).

    Returns
    -------
    pandas.DataFrame
        One row per cell: the component columns (``scenario`` after ``mechanism`` when any
        cell has a scenario), then every scalar summary metric,
        ``<metric>_ci_low`` / ``<metric>_ci_high`` and ``long_<fusion>_k<k>_<metric>`` columns,
        the open-set columns :data:`OPEN_SET_COLUMNS` when any cell is open-set, and last,
        when any cell's system has a utility, :data:`UTILITY_COLUMNS`: the system's WER
        (a fraction of its reference words) and mean rho_F0, each with the low and high
        bound of its bootstrap interval; NaN where the system has none (no utility, no
        reference speech, no interval).  Without utility there are no such columns.
    """
    import pandas as pd

    rows = []
    stored_cells = [r.to_dict() if isinstance(r, FinishedCell) else r for r in results]
    any_open = any(cell["summary"].get("open_set") for cell in stored_cells)
    utility = dict(utility or {})
    any_utility = any(cell["system"] in utility for cell in stored_cells)
    keys = _keys(stored_cells)
    for stored in stored_cells:
        # as stored: "-" for a component the cell has none of
        row = {k: _scenario(stored) if k == "scenario" else stored[k] for k in keys}
        s = stored["summary"]
        for key, value in s.items():
            if key in ("intervals", "bootstrap", "calibrator_fit") or isinstance(value, (dict, list)):
                continue
            # the summary's "calibrator"/"prior" describe the fitted components; the cell's
            # own columns keep the spec strings
            row[f"{key}_describe" if key in _KEYS else key] = value
        if any_open:
            row.update(_open_set_columns(s.get("open_set")))
        for metric, (low, high) in (s.get("intervals") or {}).items():
            row[f"{metric}_ci_low"], row[f"{metric}_ci_high"] = low, high
        for fusion, per_k in (s.get("longitudinal") or {}).items():  # k-utterance attacker columns
            for entry in per_k:
                for metric in ("alid", "pdr", "lid_q99", "lid_max"):
                    row[f"long_{fusion}_k{entry['k']}_{metric}"] = entry[metric]
        if any_utility:
            row.update(_utility_columns(utility.get(stored["system"])))
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise InputError("no finished cells to report")
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


def _open_set_columns(open_set: Mapping[str, Any] | None) -> dict[str, Any]:
    """The :data:`OPEN_SET_COLUMNS` of one cell: from its summary's ``open_set``, or outside 0 (closed set)."""
    if not open_set:
        return {key: (0.0 if key == "outside" else None) for key in OPEN_SET_COLUMNS}
    from lidframe.report.model import open_set_estimates

    estimates = open_set_estimates(open_set)  # the groups' ALID, the rates
    return {key: estimates[key] if key in estimates else open_set.get(key) for key in OPEN_SET_COLUMNS}


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


#: A comparison table's group: (attacker, calibrator, prior, scenario), the scenario ``-`` for none.
_Group = tuple[str, str, str, str]


def _paper_tables(frame: pd.DataFrame) -> list[tuple[_Group, pd.DataFrame]]:
    groups = []
    base = frame[frame["seed"] == frame["seed"].min()].copy()
    base["system"] = [s if m == "-" else f"{s} [{m}]" for s, m in zip(base["system"], base["mechanism"])]
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


def _heading(group: _Group, code: Any = str) -> str:
    """A comparison table's heading: ``attacker X, calibrator Y, prior Z``, with ``scenario S (code)`` when it has one."""
    attacker, calibrator, prior, scenario = group
    where = f"attacker {code(attacker)}"
    if scenario != NONE:
        where += f", scenario {code(scenario)}" + (f" ({SCENARIOS[scenario].code})" if scenario in SCENARIOS else "")
    return f"{where}, calibrator {code(calibrator)}, prior {code(prior)}"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cell(fmt: str, value: Any) -> str:
    if _missing(value):
        return "-"
    return fmt.format(int(value) if fmt == "{:d}" else value)


def _shown(row: Mapping[str, Any], key: str, fmt: str) -> str:
    """A value of the comparison, followed by its interval ``[low, high]`` where the cell has one."""
    text = _cell(fmt, row[key])
    bounds = ("_low", "_high") if key in UTILITY_COLUMNS else ("_ci_low", "_ci_high")
    low, high = (row.get(f"{key}{bound}") for bound in bounds)
    if text == "-" or _missing(low) or _missing(high):
        return text
    return f"{text} [{_cell(fmt, low)}, {_cell(fmt, high)}]"


def _paper(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The comparison's metrics: :data:`_PAPER`, then WER and rho_F0 when the table has the utility columns."""
    return _PAPER + (_UTILITY_PAPER if "wer" in frame.columns else [])


def _shown_rows(part: pd.DataFrame) -> list[list[str]]:
    """The comparison rows of one group as text: the system, then each metric of :func:`_paper`."""
    paper = _paper(part)
    return [[str(row["system"]), *(_shown(row, key, fmt) for key, _, fmt in paper)] for row in part.to_dict("records")]


def _interval_note(results: Sequence[Mapping[str, Any]], group: _Group, seed: int) -> str | None:
    """The line that says what the brackets of a group's table are, or None without intervals."""
    attacker, calibrator, prior, scenario = group
    settings = [
        r["summary"].get("bootstrap") or {}
        for r in results
        if (r["attacker"], r["calibrator"], r["prior"], r["seed"], _scenario(r))
        == (attacker, calibrator, prior, seed, scenario)
        and r["summary"].get("intervals")
    ]
    if not settings:
        return None
    described = sorted(
        {
            f"{float(s['level']):.0%} bootstrap intervals in brackets ({s.get('method', '?')}, "
            f"{s.get('n_boot', '?')} resamples of {s.get('unit', '?')}s, seed {s.get('seed', seed)})"
            for s in settings
            if "level" in s
        }
    )
    return "; ".join(described) if described else "bootstrap intervals in brackets"


def _markdown(
    frame: pd.DataFrame,
    results: Sequence[Mapping[str, Any]],
    warnings: Sequence[str] = (),
    utility: str | None = None,
) -> str:
    lines = ["# Grid report", ""]
    paper = _paper(frame)
    for warning in warnings:
        lines += [f"> **Warning.** {warning}", ""]
    scenarios = scenario_rows(list(frame["scenario"])) if "scenario" in frame.columns else []
    if scenarios:
        lines += ["## Scenarios", ""]
        lines.append("| " + " | ".join(SCENARIO_COLUMNS) + " |")
        lines.append("|---" * len(SCENARIO_COLUMNS) + "|")
        lines += ["| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in scenarios]
        lines += ["", _SCENARIO_NOTE, ""]
    seed = int(frame["seed"].min())
    for group, part in _paper_tables(frame):
        lines += [f"## {_heading(group, _code)}", ""]
        lines.append("| system | " + " | ".join(t for _, t, _ in paper) + " |")
        lines.append("|---|" + "---|" * len(paper))
        for shown in _shown_rows(part):
            lines.append("| " + " | ".join(markdown_cell(cell) for cell in shown) + " |")
        lines.append("")
        note = _interval_note(results, group, seed)
        if note:
            lines += [note + ".", ""]
    if utility:
        lines += [utility, ""]
    lines.append(
        "LID in bits (LID <= log2 N under a uniform prior); EER on the ROC convex hull; systems sorted by ALID."
    )
    return "\n".join(lines) + "\n"


def _summary_html(
    frame: pd.DataFrame,
    results: Sequence[Mapping[str, Any]],
    warnings: Sequence[str] = (),
    utility: str | None = None,
) -> str:
    import pandas as pd

    paper = _paper(frame)
    parts = ["<!doctype html><meta charset='utf-8'><title>lidframe grid report</title>\n"]
    parts += [f"<p><strong>Warning.</strong> {html.escape(warning)}</p>\n" for warning in warnings]
    scenarios = scenario_rows(list(frame["scenario"])) if "scenario" in frame.columns else []
    if scenarios:
        parts.append("<h2>Scenarios</h2>\n")
        parts.append(pd.DataFrame(scenarios, columns=list(SCENARIO_COLUMNS)).to_html(index=False))
        parts.append(f"\n<p>{html.escape(_SCENARIO_NOTE)}</p>\n")
    seed = int(frame["seed"].min())
    for group, part in _paper_tables(frame):
        parts.append(f"<h2>{_heading(group, lambda g: html.escape(str(g)))}</h2>\n")
        shown = pd.DataFrame(_shown_rows(part), columns=["system"] + [k for k, _, _ in paper])
        parts.append(shown.to_html(index=False))
        note = _interval_note(results, group, seed)
        if note:
            parts.append(f"\n<p>{html.escape(note)}.</p>\n")
    if utility:
        parts.append(f"<p>{html.escape(utility)}</p>\n")
    return "".join(parts)


def _latex_title(title: str) -> str:
    """A comparison column's title in LaTeX: LID+ and LID- with their signs raised, rho_F0 as math."""
    if title == "ρ_F0":
        return r"$\rho_{F0}$"
    if title.startswith("LID") and title != "LIDmax":
        return title.replace("+", "$^+$").replace("-", "$^-$")
    return title


def _latex(
    frame: pd.DataFrame,
    results: Sequence[Mapping[str, Any]],
    warnings: Sequence[str] = (),
    utility: str | None = None,
) -> str:
    paper = _paper(frame)
    out = [_comment(f"% Warning. {warning}") for warning in warnings]
    if utility:
        out.append(_comment(f"% {utility}"))
    if "scenario" in frame.columns:
        for name, code, enrolment, trials, model in scenario_rows(list(frame["scenario"])):
            out.append(_comment(f"% scenario {name} ({code}): enrolment {enrolment}, trials {trials}, model {model}"))
    seed = int(frame["seed"].min())
    for group, part in _paper_tables(frame):
        out.append(_comment(f"% {_heading(group)}"))
        note = _interval_note(results, group, seed)
        if note:
            out.append(_comment(f"% {note}"))
        out.append("\\begin{tabular}{l" + "r" * len(paper) + "}")
        out.append("\\hline")
        out.append("System & " + " & ".join(_latex_title(t) for _, t, _ in paper) + " \\\\")
        out.append("\\hline")
        for name, *values in _shown_rows(part):
            out.append(f"{latex_escape(name)} & " + " & ".join(values) + " \\\\")
        out.append("\\hline")
        out.append("\\end{tabular}")
        out.append("")
    return "\n".join(out)


def _figures(frame: pd.DataFrame, folder: Path, report: Report) -> list[str]:
    from lidframe.report.figures import FigureMaker
    from lidframe.report.plotting import plain_text, pyplot, save_figure

    plt = pyplot()
    written = []
    # the overview figures of report.html (lid_ccdf, eer_vs_lid), drawn by the same code
    for name, fig, _ in FigureMaker(report).overview_figures():
        save_figure(fig, folder / f"{name}.png")
        written.append(f"{name}.png")

    base = frame[
        (frame["attacker"] == frame["attacker"].iloc[0])
        & (frame["prior"] == frame["prior"].iloc[0])
        & (frame["seed"] == frame["seed"].min())
        & (frame["mechanism"] == frame["mechanism"].iloc[0])
    ]
    if "scenario" in frame.columns:  # one scenario per bar (a score-file system's cells have none)
        base = base[base["scenario"].isin([base["scenario"].iloc[0], NONE])]
    systems = sorted(base["system"].unique())
    calibrators = list(dict.fromkeys(base["calibrator"]))
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.0), dpi=120)
    width = 0.8 / max(1, len(calibrators))
    for i, calibrator in enumerate(calibrators):
        part = base[base["calibrator"] == calibrator].set_index("system").reindex(systems)
        for ax, metric in zip(axes, ("alid", "lid_max")):
            ax.bar(np.arange(len(systems)) + i * width, part[metric], width, label=calibrator)
    for ax, title in zip(axes, ("ALID (bits)", "LIDmax (bits)")):
        ax.set_xticks(np.arange(len(systems)) + 0.4 - width / 2)
        ax.set_xticklabels(systems, rotation=30, ha="right", fontsize=8)
        ax.set_title(title)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    shown = f"prior {base['prior'].iloc[0]}"
    if frame["attacker"].nunique() > 1:
        shown += f", attacker {base['attacker'].iloc[0]}"
    if frame["mechanism"].nunique() > 1:
        shown += f", mechanism {base['mechanism'].iloc[0]}"
    if "scenario" in frame.columns and frame["scenario"].nunique() > 1:
        shown += f", scenario {base['scenario'].iloc[0]}"
    fig.suptitle(plain_text(f"Calibrator sensitivity ({shown})"), fontsize=10)
    fig.tight_layout()
    save_figure(fig, folder / "calibrator_sensitivity.png")
    written.append("calibrator_sensitivity.png")
    if (frame["mechanism"] != "-").any():
        _dp_figure(frame, folder / "dp_vs_mu.png")
        written.append("dp_vs_mu.png")
    return written


def _dp_figure(frame: pd.DataFrame, path: Path) -> None:
    """Measured EER, ALID and LIDmax against mu per system, with the GDP bound curves.

    Each system and attacker has one colour and marker in both panels (ALID solid, LIDmax
    dashed with hollow marks); the legend says the mutual-information bound is on ALID.
    """
    from lidframe.privacy.mechanism import gdp_eer_bound, gdp_mi_bound_bits
    from lidframe.registry import parse_spec
    from lidframe.report.analysis_figures import MI_BOUND_LABEL
    from lidframe.report.plotting import curve_styles, pyplot, save_figure

    plt = pyplot()
    part = frame[
        (frame["mechanism"] != "-")
        & (frame["calibrator"] == frame["calibrator"].iloc[0])
        & (frame["prior"] == frame["prior"].iloc[0])
        & (frame["seed"] == frame["seed"].min())
    ].copy()
    part["mu"] = [float(parse_spec(m)[1]["mu"]) for m in part["mechanism"]]
    grid = np.linspace(part["mu"].min() * 0.8, part["mu"].max() * 1.1, 200)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.0), dpi=120)
    left.plot(grid, [gdp_eer_bound(m) for m in grid], color="0.3", ls=":", label="bound Phi(-mu/2) on EER")
    right.plot(grid, [gdp_mi_bound_bits(m) for m in grid], color="0.3", ls=":", label=MI_BOUND_LABEL)
    if "scenario" in part.columns:  # a system in each scenario is its own line
        part["system"] = [s if c == NONE else f"{s} ({c})" for s, c in zip(part["system"], part["scenario"])]
    groups = list(part.groupby(["system", "attacker"], sort=True))
    styles = curve_styles([f"{system} / {attacker}" for (system, attacker), _ in groups])
    for (system, attacker), rows in groups:  # one colour and marker per system and attacker, in both panels
        rows = rows.sort_values("mu")
        name = f"{system} / {attacker}"
        colour, marker = styles[name]["color"], styles[name]["marker"]
        left.plot(rows["mu"], rows["eer"], color=colour, marker=marker, label=name)
        right.plot(rows["mu"], rows["alid"], color=colour, marker=marker, label=f"{name} ALID")
        right.plot(
            rows["mu"], rows["lid_max"], color=colour, marker=marker, mfc="white", ls="--", label=f"{name} LIDmax"
        )
    left.set_xlabel("mu")
    left.set_ylabel("EER")
    right.set_xlabel("mu")
    right.set_ylabel("bits")
    right.set_ylim(-0.2, max(1.0, float(part["lid_max"].max()) * 1.2))
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"Gaussian speaker mechanism in the grid ({part['calibrator'].iloc[0]}, {part['prior'].iloc[0]})")
    fig.tight_layout()
    save_figure(fig, path)


# ------------------------------------------------------------------ per speaker
#: The arrays of a cell's per-trial file the per-speaker table reads (``lidframe.grid.execute``
#: writes them): ``posterior_true`` is missing from files of early lidframe versions, the
#: open-set arrays from a closed-set cell's, and ``true_rank`` from every file a grid writes now.
_SPEAKER_ARRAYS = ("trial_ids", "trial_speakers", "lid")
_SPEAKER_OPTIONAL = ("posterior_true", "outsider", "membership_bits", "top_posterior", "true_rank")


def _cell_bootstrap(cell: Mapping[str, Any], bootstrap: Bootstrap | None) -> Bootstrap:
    """The interval settings of a cell's per-speaker table: *bootstrap*, the grid's ``[grid.bootstrap]``, or the default.

    The cell's seed is the seed unless *bootstrap* is given.
    """
    from lidframe.stats.bootstrap import Bootstrap

    if bootstrap is not None:
        return bootstrap
    stored = dict(cell["summary"].get("bootstrap") or {})
    known = {"n_boot", "level", "method", "unit", "seed"}
    settings = {k: v for k, v in stored.items() if k in known and v is not None}
    settings.setdefault("seed", int(cell["seed"]))
    return Bootstrap(**settings)


def cell_per_speaker(
    cell: Mapping[str, Any], out_dir: StrPath, *, bootstrap: Bootstrap | None = None
) -> PerSpeakerResult:
    """The per-speaker table of one finished grid cell, from its per-trial file.

    The table is :func:`lidframe.analyses.per_speaker.per_speaker`'s -- the one ``lidframe
    evaluate --report`` and the demos show -- of the cell's per-trial LIDs, as a
    :class:`~lidframe.core.evaluation.Result` rebuilt from the file: the trials, their
    speakers, LIDs, posteriors of the true speaker and, in the open set, the outsider flags,
    membership disclosures and top enrolled posteriors.  What the file does not hold:

    * the enrolled speakers without a trial, whose ids it does not name: the table counts
      them (``n_speakers_without_trials``, from the summary's N) but has no row for them;
    * the attacker's rank of the true speaker (a grid's files keep none): ``rank1_rate``
      is NaN (shown as not computed);
    * in a file of an early lidframe, without ``posterior_true``, the speaker's prior:
      ``lid_ceiling`` is NaN.

    Parameters
    ----------
    cell : FinishedCell or mapping
        As :func:`load_results` returns it (``summary``, ``per_trial``, ``seed``).
    out_dir : str or os.PathLike
        The grid folder (the per-trial path is relative to it).
    bootstrap : Bootstrap, optional
        The within-speaker intervals' settings; default the grid's ``[grid.bootstrap]``
        (with the cell's seed), else :class:`~lidframe.stats.bootstrap.Bootstrap`'s
        defaults with the cell's seed: the table always has intervals.

    Returns
    -------
    PerSpeakerResult
        Shapes as :func:`~lidframe.analyses.per_speaker.per_speaker`'s: one row per
        enrolled speaker with trials, most disclosed first (then, in the open set, one per
        outsider speaker).

    Raises
    ------
    InputError
        The per-trial file is missing, damaged, or does not match the cell's summary.
    """
    import attrs

    from lidframe.analyses.per_speaker import per_speaker
    from lidframe.core.result import Result
    from lidframe.data.npzfile import read_npz

    out = Path(out_dir)
    summary = cell["summary"]
    path = out / str(cell["per_trial"])
    if not path.is_file():
        raise InputError(f"{path}: the per-trial file of a grid cell is missing; rerun lidframe grid on {out}")
    arrays = read_npz(
        path,
        _SPEAKER_ARRAYS,
        _SPEAKER_OPTIONAL,
        kinds=dict.fromkeys(("lid", *_SPEAKER_OPTIONAL), "numbers"),
        what="per-trial LID file",
    )
    lid = np.asarray(arrays["lid"], dtype=np.float64).ravel()
    trial_speakers = np.asarray(arrays["trial_speakers"]).astype(str).ravel()
    trial_ids = np.asarray(arrays["trial_ids"]).astype(str).ravel()
    optional = {k: np.asarray(arrays[k], dtype=np.float64).ravel() for k in _SPEAKER_OPTIONAL if k in arrays}
    sizes = {lid.size, trial_speakers.size, trial_ids.size, *(v.size for v in optional.values())}
    if len(sizes) != 1:
        raise InputError(f"{path}: its arrays have different lengths {sorted(sizes)}; rerun lidframe grid on {out}")
    open_set = summary.get("open_set") or {}
    outside = float(open_set.get("outside") or 0.0)
    outsider = optional["outsider"] != 0 if "outsider" in optional else np.isnan(lid)
    if outside > 0 and not {"membership_bits", "top_posterior"} <= set(optional):
        outside = 0.0  # an open-set summary, a file without the open-set arrays: its enrolled trials only
        outsider = np.isnan(lid) | outsider
    enrolled = np.unique(trial_speakers[~outsider])
    n_enrolled = int(summary.get("n_enrolled") or enrolled.size)
    if enrolled.size == 0 or enrolled.size > n_enrolled:
        raise InputError(
            f"{path}: {enrolled.size} enrolled speakers with trials, but the cell's summary has N = {n_enrolled}; "
            f"the file is stale: delete it and rerun lidframe grid on {out}"
        )
    column = np.searchsorted(enrolled, trial_speakers[~outsider])
    log_prior = np.full(enrolled.size, np.nan)
    if "posterior_true" in optional:
        # LID = log2(p / ((1 - π_∅) π_j)): the prior of each trial's speaker, from its LID and posterior
        with np.errstate(divide="ignore", invalid="ignore"):
            per_trial = np.log(optional["posterior_true"][~outsider]) - lid[~outsider] * math.log(2.0)
        per_trial -= math.log1p(-outside) if outside > 0 else 0.0
        finite = np.isfinite(per_trial)
        log_prior[column[finite]] = per_trial[finite]
    ranks = optional.get("true_rank")
    result = Result(
        lid=lid,
        posterior_true=optional.get("posterior_true", np.full(lid.size, np.nan)),
        true_rank=np.zeros(lid.size, dtype=np.int64) if ranks is None else ranks.astype(np.int64),
        is_outsider=outsider,
        trial_ids=trial_ids,
        trial_speakers=trial_speakers,
        enrolled=enrolled,
        log_prior=log_prior,
        summary=summary,  # the stored summary (a dict): per_speaker reads its calibrator and prior
        calibrator=None,
        prior=None,
        outside=outside,
        membership_bits=optional.get("membership_bits") if outside > 0 else None,
        top_posterior=optional.get("top_posterior") if outside > 0 else None,
    )
    table = per_speaker(result, bootstrap=_cell_bootstrap(cell, bootstrap))
    rows = table.rows
    if ranks is None:  # no rank in the file: not computed, rather than 0
        rows = tuple(attrs.evolve(row, rank1_rate=math.nan) for row in rows)
    return attrs.evolve(
        table,
        rows=rows,
        n_enrolled=n_enrolled,
        log2_n=float(summary.get("log2_n", math.log2(n_enrolled))),
        n_speakers_without_trials=n_enrolled - int(enrolled.size),
    )


def with_per_speaker(
    report: Report, cells: Sequence[Mapping[str, Any]], out_dir: StrPath, *, bootstrap: Bootstrap | None = None
) -> Report:
    """*report* (:func:`lidframe.report.report_from_grid` of *cells*) with a per-speaker table for each system.

    Per system (a section of the page) its first cell -- the one whose histogram the
    section shows -- gets :func:`cell_per_speaker`: the page then has, like the pages of
    ``lidframe evaluate --report`` and the demos, the system's speakers from the most to
    the least disclosed with their within-speaker intervals, and the dot plot that names
    the top and bottom ones.

    Parameters
    ----------
    report : Report
        Of the grid's cells; each cell's per-trial file is found by its digest entry in the
        provenance (``per-trial LID of <label>``).
    cells : sequence of FinishedCell or mapping
        The cells the report was built from.
    out_dir : str or os.PathLike
        The grid folder.
    bootstrap : Bootstrap, optional
        As for :func:`cell_per_speaker`.

    Returns
    -------
    Report
        A new record; *report* is not changed.
    """
    import attrs

    out = Path(out_dir)
    by_path = {str(out / str(c["per_trial"])): c for c in cells}
    prefix = "per-trial LID of "
    path_of = {f.role[len(prefix) :]: f.path for f in report.provenance.inputs if f.role.startswith(prefix)}
    systems, done = [], set()
    for system in report.systems:
        cell = by_path.get(path_of.get(system.label, ""))
        if system.name in done or cell is None or system.per_speaker is not None:
            systems.append(system)
            continue
        done.add(system.name)
        systems.append(attrs.evolve(system, per_speaker=cell_per_speaker(cell, out, bootstrap=bootstrap)))
    return attrs.evolve(report, systems=systems)


def freshness_warnings(freshness: Freshness, results: Sequence[FinishedCell], out_dir: StrPath) -> list[str]:
    """What a report of *results* must say about their freshness: one line per problem, none when current.

    Parameters
    ----------
    freshness : Freshness
        From :func:`lidframe.grid.freshness.check_freshness`.
    results : sequence of FinishedCell
        The reported cells (:func:`load_results`).
    out_dir : str or os.PathLike
        The grid folder (named in the rerun command).
    """
    from collections import Counter

    if freshness.unchecked is not None:
        return [
            "These numbers were not checked against the current inputs: "
            f"{freshness.unchecked}. A cell is current only if lidframe grid would not recompute it."
        ]
    stale = [r for r in results if r.cell_id in freshness.stale]
    if not stale:
        return []
    reasons = Counter(freshness.stale[r.cell_id] for r in stale).most_common()
    why = "; ".join(f"{reason} ({count})" for reason, count in reasons[:3])
    more = f"; {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
    components = ("system", "attacker", "mechanism", "scenario", "calibrator", "prior")
    cells = ", ".join(
        " / ".join(str(r[k]) for k in components if k != "scenario" or r.scenario is not None)  # "-" for none
        + f" / seed {r.seed}"
        for r in stale[:8]
    )
    cells += f" and {len(stale) - 8} more" if len(stale) > 8 else ""
    return [
        f"STALE: {len(stale)} of {len(results)} cells were computed from inputs that have changed since ({why}{more}), "
        f"so their numbers are not those of the current inputs: {cells}. "
        f"Rerun lidframe grid {freshness.spec} --out {out_dir} to recompute them."
    ]


def report_warnings(freshness: Freshness, results: Sequence[FinishedCell], out_dir: StrPath) -> list[str]:
    """Everything a report of *results* must warn about: :func:`freshness_warnings`, then unchecked per-trial files.

    Parameters
    ----------
    freshness : Freshness
        From :func:`lidframe.grid.freshness.check_freshness`.
    results : sequence of FinishedCell
        The reported cells (:func:`load_results`); a cell whose ``per_trial_sha256`` is
        None (a store of an earlier layout) could not have its per-trial file checked.
    out_dir : str or os.PathLike
        The grid folder.
    """
    warnings = freshness_warnings(freshness, results, out_dir)
    unchecked = sum(1 for r in results if r.per_trial_sha256 is None)
    if unchecked:
        warnings.append(
            f"The per-trial files of {unchecked} of {len(results)} cells were not checked against their cells: "
            f"{Path(out_dir) / 'results.sqlite'} was written by an earlier lidframe, which stored no digest of them. "
            f"Rerun lidframe grid {freshness.spec or 'SPEC'} --out {out_dir} to recompute those cells and record them."
        )
    return warnings


def write_report(out_dir: StrPath, *, figures: bool = True, freshness: Freshness | None = None) -> list[str]:
    """Write the report files of a grid output folder; return their paths.

    Parameters
    ----------
    out_dir : str or os.PathLike
        The grid's output folder; the files go to ``out_dir/report/`` (module docstring).
    figures : bool
        Also draw the PNG figures and write ``report.html`` (both need matplotlib; the
        page also jinja2).
    freshness : Freshness, optional
        Whether the finished cells are current (default: :func:`check_freshness` of the
        spec ``grid.json`` names).  Stale cells -- whose inputs changed since they were
        computed -- are still reported, but ``summary.md``, ``summary.html``,
        ``table.tex`` and ``report.html`` open with a warning naming them and why
        (:func:`freshness_warnings`); so does a report whose cells could not be checked,
        and one whose per-trial files could not be (:func:`report_warnings`).  Its spec
        (``freshness.spec``) also names each system's utility file, read now
        (:func:`lidframe.grid.utility.grid_utility`).

    Returns
    -------
    list of str
        Paths of the files written, ``report.html`` last when written.

    Raises
    ------
    InputError
        An unreadable store or per-trial file, a per-trial file that is not the one
        stored with its cell (changed or swapped), no finished cell, ``report`` not
        being a folder, a utility file that is gone or no longer a utility record, or
        jinja2 / matplotlib missing with *figures* -- with nothing in ``report/`` changed.
    """
    out = Path(out_dir)
    folder = out / "report"
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: is a file, not a folder; move it away (lidframe report writes its tables there)")
    if figures:
        from lidframe.report import require_renderer

        require_renderer()
    results = load_results(out)
    if not results:
        raise InputError(
            f"{out / 'results.sqlite'}: no finished cells to report (every stored cell failed; see its error column)"
        )
    # each per-trial file must be the one stored with its cell (not changed, not swapped with
    # another cell's) before anything reads it: a file that is not is refused by its digest
    store.verify_per_trial_files(out, results)
    if freshness is None:
        from lidframe.grid.freshness import check_freshness

        freshness = check_freshness(out)
    from lidframe.grid.utility import grid_utility

    # read now, never from the store: a changed utility file changes the report, not a cell
    found = grid_utility(out, spec=freshness.spec)
    reported = {r.system for r in results}
    found = {name: entry for name, entry in found.items() if name in reported}
    utility = {name: entry.utility for name, entry in found.items()}
    frame = tidy_table(results, utility=utility)
    note = utility_note(found)
    warnings = report_warnings(freshness, results, out)
    report = None
    if figures:  # reads (and digests) every per-trial file: a damaged one stops here, before any file is written
        from lidframe.report import report_from_grid

        scenarios = [
            f"Scenario {name} ({code}): enrolment {enrolment}; trials {trials}; model {model}."
            for name, code, enrolment, trials, model in scenario_rows([_scenario(r) for r in results])
        ]
        notes = [*warnings, *scenarios, *([_SCENARIO_NOTE] if scenarios else [])]
        # the privacy-utility chart: each system's utility, its file digested into the provenance
        report = report_from_grid(
            results,
            out_dir=out,
            settings={"grid folder": out},
            notes=notes,
            inputs={f"utility of {name}": entry.path for name, entry in found.items()},
            utility=utility or None,
            utility_note=utility_note(found, page=True),
        )
        report = with_per_speaker(report, results, out)
    staging = Path(tempfile.mkdtemp(prefix=".report.", dir=out))
    try:
        written = _write_all(results, frame, staging, report, warnings, note)
        folder.mkdir(exist_ok=True)
        for name in written:
            os.replace(staging / name, folder / name)
        for name in set(REPORT_FILES) - set(written):  # an earlier report's files that this one did not write
            with contextlib.suppress(FileNotFoundError):
                (folder / name).unlink()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [str(folder / name) for name in written]


def _write_all(
    results: Sequence[Mapping[str, Any]],
    frame: pd.DataFrame,
    folder: Path,
    report: Report | None,
    warnings: Sequence[str] = (),
    utility: str | None = None,
) -> list[str]:
    """Write every report file into *folder* (figures and the page when *report* is given); return their names.

    *utility* is the paragraph that says what the WER and rho_F0 columns are (:func:`utility_note`).
    """
    written = []
    frame.to_csv(folder / "table.csv", index=False, float_format="%.10g", na_rep="nan")
    written.append("table.csv")
    try:
        frame.to_parquet(folder / "table.parquet", index=False)
        written.append("table.parquet")
    except ImportError:
        pass  # pyarrow not installed: the CSV carries the same table
    (folder / "summary.md").write_text(_markdown(frame, results, warnings, utility), encoding="utf-8")
    (folder / "summary.html").write_text(_summary_html(frame, results, warnings, utility), encoding="utf-8")
    (folder / "table.tex").write_text(_latex(frame, results, warnings, utility), encoding="utf-8")
    written += ["summary.md", "summary.html", "table.tex"]
    if report is not None:
        from lidframe.report import render_html

        written += _figures(frame, folder, report)
        (folder / "report.html").write_text(render_html(report), encoding="utf-8")
        written.append("report.html")
    return written
