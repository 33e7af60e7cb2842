"""The audit report: one self-contained HTML page per run (``report.html``).

The wing turns what lidframe computed -- ``evaluate`` Results (with their calibrator
sensitivity and per-speaker tables), a grid's finished cells, a DP audit -- into a
:class:`~lidframe.report.model.Report` record (:mod:`lidframe.report.build`,
:mod:`lidframe.report.build_grid`) and renders that as one HTML file
(:mod:`lidframe.report.render`).  The page is made of sections
(:mod:`lidframe.report.sections`, one module each with its records, tables and figures,
listed in page order by :data:`~lidframe.report.sections.PAGE_SECTIONS`): headlines per
system with a one-sentence reading computed from the numbers, a sortable comparison table
with intervals, LID figures as inline SVG, and the settings and input-file digests behind
every number (the command line, lidframe's version with its source digest or git commit,
the versions of numpy, scipy, scikit-learn and torch, the attackers with their settings
and checkpoint digests, the fitted calibrators as tables).  The page makes no network
request, reads offline and prints.  Given a threat-model ladder
(``report_from_results(..., ladder=[LadderEntry(...), ...])``), the page also shows each
anonymised system's disclosure rung by rung; given each system's utility
(``utility={system: lidframe.utility.utility(...)}``), what its anonymisation costs the
speech (word error rate, ρ_F0) beside it, in a privacy-utility chart.

Every figure of lidframe is drawn here, the analyses only compute: matplotlib access and
drawing primitives in :mod:`lidframe.report.plotting`, the LID figures in
:mod:`lidframe.report.lid_figures`, the per-speaker dot plot and each analysis's plot
(``plot_lid_ccdf``, ``plot_nsweep``, ``plot_longitudinal``, ``plot_dp_audit``) in
:mod:`lidframe.report.analysis_figures`, the page's own in its sections.

It sits between the analyses and the grid: it reads ``core``, ``analyses`` and
``privacy`` results, and ``grid`` and ``cli`` call it.  Importing it loads neither
jinja2 nor matplotlib (``pip install 'lidframe[report]'``): rendering does.

>>> from lidframe.data.simulate import simulate_system
>>> import lidframe
>>> dev, ev = simulate_system(leakage=0.5, seed=0)
>>> report = report_from_results({"anon": lidframe.evaluate(dev, ev)})
>>> report.systems[0].reading.endswith("bits of a possible 4.86.")
True
"""

from lidframe.report.build import lid_ceiling_bits, report_from_dp_audit, report_from_results
from lidframe.report.build_grid import report_from_grid
from lidframe.report.headline import Headline
from lidframe.report.model import Report, ReportSystem
from lidframe.report.render import REPORT_FILE, check_report_dir, render_html, require_renderer, write_report
from lidframe.report.sections.environment import Environment, environment
from lidframe.report.sections.ladder_model import Ladder, LadderEntry, ladder_from_results
from lidframe.report.sections.provenance_model import (
    AttackerSettings,
    InputFile,
    Provenance,
    SystemSettings,
    command_line,
)
from lidframe.report.sections.utility import SystemUtility
from lidframe.stats.interval import Interval

__all__ = [
    "Report",
    "ReportSystem",
    "Headline",
    "Interval",
    "Provenance",
    "SystemSettings",
    "SystemUtility",
    "InputFile",
    "Environment",
    "AttackerSettings",
    "LadderEntry",
    "Ladder",
    "report_from_results",
    "report_from_grid",
    "report_from_dp_audit",
    "ladder_from_results",
    "lid_ceiling_bits",
    "command_line",
    "environment",
    "render_html",
    "write_report",
    "check_report_dir",
    "require_renderer",
    "REPORT_FILE",
]
