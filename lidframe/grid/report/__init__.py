"""Tables and figures from a grid's result store (what ``lidframe report OUT_DIR`` writes).

:func:`load_results` reads the store and :func:`tidy_table` makes the table;
:func:`write_report` writes into ``OUT_DIR/report/``:

``table.csv`` / ``table.parquet``
    the tidy table, one row per finished cell (system, attacker, mechanism, calibrator,
    prior, seed -- and ``scenario`` after the mechanism when any cell has one, the grid's
    ``scenarios`` axis -- every summary metric, and ``<metric>_low`` / ``_high``
    where the grid computed intervals), sorted by the cell's components; timings are left out so the
    same spec gives a byte-identical table.  When any reported system names a utility file
    (``[systems.NAME] utility``), the last columns are :data:`UTILITY_COLUMNS` (WER and
    rho_F0 with their interval bounds, the same on every row of a system, NaN for a system
    without one); without, the table is as before.  When any cell is open-set (its prior's
    ``outside`` > 0) every row also has the open-set columns :data:`OPEN_SET_COLUMNS`
    (``outside`` 0 and the others empty for a closed-set cell; in an open-set cell
    ``alid`` and the other top-level LID columns are over every trial).  When any cell
    has the law's criteria (``[grid] legal``, the default), every row has
    :data:`LEGAL_COLUMNS`: ``pi_link_2``, ``pi_link_n`` (the rank-1 rate) and ``pi_sing``
    with their bounds, ``pi_link_n_chance`` (1/N) and ``legal_absent`` (why a criterion
    of the cell is empty; ``""`` when none is).
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
(:func:`lidframe.grid.stored.verify_per_trial_files`), with or without figures: a file
changed, or swapped with another cell's, after the grid wrote it is refused, naming it.
A store of an earlier layout, which recorded no such digests, is reported with a
warning that its per-trial files were not checked (:func:`report_warnings`).

The package, by concern: which columns the tables have (:mod:`~lidframe.grid.report.columns`),
the tidy table (:mod:`~lidframe.grid.report.tidy`), what the comparison tables show
(:mod:`~lidframe.grid.report.comparison`) and their Markdown, HTML and LaTeX text
(:mod:`~lidframe.grid.report.writers`), the figures (:mod:`~lidframe.grid.report.figures`),
the per-speaker tables of cells (:mod:`~lidframe.grid.report.per_speaker`), the warnings
(:mod:`~lidframe.grid.report.staleness`) and :func:`write_report`, which runs them in order
(:mod:`~lidframe.grid.report.write`).
"""

from lidframe.grid.report.columns import LEGAL_COLUMNS, OPEN_SET_COLUMNS, SCENARIO_COLUMNS, UTILITY_COLUMNS
from lidframe.grid.report.comparison import SCENARIO_CODES, scenario_rows, utility_note
from lidframe.grid.report.per_speaker import cell_per_speaker, with_per_speaker
from lidframe.grid.report.staleness import freshness_warnings, report_warnings
from lidframe.grid.report.tidy import tidy_table
from lidframe.grid.report.write import load_results, write_report
from lidframe.grid.report.writers import latex_escape, markdown_cell

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
    "OPEN_SET_COLUMNS",
    "LEGAL_COLUMNS",
    "utility_note",
    "SCENARIO_CODES",
    "cell_per_speaker",
    "with_per_speaker",
]
