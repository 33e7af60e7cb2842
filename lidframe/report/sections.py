"""The sections every report page holds, and why one does not apply to a report.

Every kind of page -- the demos', ``lidframe evaluate --report``'s, the grid's
(``lidframe report``), ``lidframe dp-audit --report``'s -- holds the same sections, in the
order of :data:`PAGE_SECTIONS`, and each system's section the subsections of
:data:`SYSTEM_SECTIONS`.  A section that has nothing to show for a report does not vanish:
it says why (:func:`absent_sections`, :func:`absent_system_sections`), so that a reader
who looks for the open set, the ladder or the per-speaker table of a page learns whether it
was left out, and how to get it.

This module only decides; :mod:`lidframe.report.render` passes the reasons to the page and
the template prints each one in place of its section's content.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from lidframe.report.model import Report, ReportSystem

__all__ = [
    "PageSection",
    "PAGE_SECTIONS",
    "SYSTEM_SECTIONS",
    "NOT_APPLICABLE_CLASS",
    "absent_sections",
    "absent_system_sections",
]

#: The class of the paragraph that says why a section does not apply (the tests find it by it).
NOT_APPLICABLE_CLASS = "not-applicable"


@attrs.frozen
class PageSection:
    """One section of every page.

    Attributes
    ----------
    key : str
        Its name here and in :func:`absent_sections`; in :data:`PAGE_SECTIONS` also its
        anchor on the page (``<section id="...">``).
    title : str
        Its heading (``<h2>`` on the page; ``<h3>`` for a system's subsection).
    """

    key: str
    title: str


#: The sections of every page, in page order; the systems' own sections come between
#: ``dp`` and ``provenance`` (one per system, :data:`SYSTEM_SECTIONS` each).
PAGE_SECTIONS: tuple[PageSection, ...] = (
    PageSection("headlines", "Headlines"),
    PageSection("comparison", "Comparison"),
    PageSection("ladder", "Threat-model ladder"),
    PageSection("utility", "Privacy and utility"),
    PageSection("open-set", "Open set"),
    PageSection("dp", "DP audit: measured disclosure against the bounds"),
    PageSection("provenance", "Settings and provenance"),
)
#: The subsections of every system's section, in page order (its cards and LID figures come first).
SYSTEM_SECTIONS: tuple[PageSection, ...] = (
    PageSection("sensitivity", "Calibrator sensitivity"),
    PageSection("per-speaker", "Per speaker"),
)


def _names(items: Sequence[str]) -> str:
    return ", ".join(items)


def absent_sections(report: Report) -> dict[str, str]:
    """Why each section of :data:`PAGE_SECTIONS` that has nothing to show for *report* does not apply.

    Parameters
    ----------
    report : Report

    Returns
    -------
    dict
        key -> one or two sentences (what is missing, and what would show it), for the
        sections without content only: ``ladder`` without a ladder, ``utility`` without
        any system's utility, ``open-set`` when no system is open-set, ``dp`` outside a DP
        audit.  The headlines, the comparison and the provenance always have content.
    """
    absent: dict[str, str] = {}
    if report.ladder is None:
        if report.kind == "dp-audit":
            absent["ladder"] = (
                "Not applicable: a DP audit releases embeddings through the Gaussian mechanism; no anonymiser is "
                "attacked up the VoicePrivacy threat-model ladder."
            )
        elif report.kind == "grid":
            absent["ladder"] = (
                "Not drawn for a grid: a grid's scenarios axis makes each scenario's cells systems of their own "
                "(named with their scenario, in the comparison above). The ladder section, each anonymised system "
                "by rung, is drawn by the real-voice demo (lidframe demo) and by "
                "report_from_results(..., ladder=...)."
            )
        else:
            absent["ladder"] = (
                "Not evaluated: no system was attacked up the VoicePrivacy threat-model ladder (ignorant o-a: "
                "original enrolment, anonymised trials; lazy-informed and semi-informed a-a: anonymised enrolment, "
                "anonymised trials). The real-voice demo (lidframe demo) does; from Python, "
                "report_from_results(..., ladder=...)."
            )
    if not report.utility:
        absent["utility"] = _utility_reason(report)
        if report.utility_note:  # the caller's word on why there is none (the demo's: no recogniser here)
            absent["utility"] = f"{report.utility_note.rstrip('.')}. {absent['utility']}"
    if not any(s.open_set is not None for s in report.systems):
        if report.kind == "dp-audit":
            absent["open-set"] = (
                "Not applicable: a DP audit's trials are all of enrolled speakers (the closed set), and its "
                "attackers weigh no 'nobody enrolled'."
            )
        else:
            absent["open-set"] = (
                "Not evaluated: every system here was evaluated in the closed set (a prior without outside), so "
                "every trial's speaker is taken to be enrolled and outsider trials are left out. A prior such as "
                "'uniform?outside=0.2' (--prior) adds the open set: the outsiders' membership disclosure and "
                "misattribution."
            )
    if report.dp_audit is None:
        mechanisms = report.kind == "grid" and any("[" in s.name for s in report.systems)
        absent["dp"] = (
            "Not a DP audit: lidframe dp-audit --report measures the Gaussian speaker mechanism against its "
            "bounds."
            + (
                " This grid's mechanism cells are systems of this page (named with their [mechanism]); their "
                "measured values against mu, with the bounds, are drawn in dp_vs_mu.png beside this page."
                if mechanisms
                else ""
            )
        )
    return absent


#: How to measure a system's utility, the first step of every page's advice.
_MEASURE_UTILITY = (
    "lidframe utility --data DIR --reference ORIGINAL --bootstrap --json U.json measures it on the system's "
    "(anonymised) speech, against the original speech it was made from (docs/utility.md)"
)


def _utility_reason(report: Report) -> str:
    """Why a page has no privacy-utility section, and how the kind of page gets one."""
    if report.kind == "dp-audit":
        return (
            "Not applicable: a DP audit releases speaker embeddings through the Gaussian mechanism; there is no "
            "speech whose words a recogniser could get wrong, so no word error rate or ρ_F0 to set beside the "
            "disclosure."
        )
    if report.kind == "grid":
        then = (
            'then give each system of the grid spec its utility = "U.json" key, and lidframe report draws the '
            "privacy-utility chart"
        )
    else:
        then = (
            "then lidframe evaluate --report DIR --utility U.json draws the privacy-utility chart; from Python, "
            "report_from_results(..., utility={system: read_utility('U.json')})"
        )
    return (
        "Not measured: no system's utility (the word error rate of a recogniser and ρ_F0 on its speech) was given, "
        f"so the disclosure above stands without what the anonymisation costs the speech. {_MEASURE_UTILITY}; "
        f"{then}. The real-voice demo (lidframe demo) measures it for its systems."
    )


def _sensitivity_reason(report: Report, cells: Sequence[ReportSystem]) -> str:
    if report.kind == "dp-audit":
        return (
            "Not applicable: the audit's attackers have their calibrators fixed (the Bayes attacker identity, the "
            "cosine attacker --calibrator); its settings are under Settings and provenance."
        )
    if report.kind == "grid":
        combos = list(dict.fromkeys((s.calibrator, s.prior) for s in cells))
        calibrators = list(dict.fromkeys(c for c, _ in combos))
        if len(calibrators) > 1:
            return (
                f"In a grid the calibrators are cells of their own: this system's {_names(calibrators)} are compared "
                "in its headline cards and its LID CCDF above."
            )
        return (
            f"Not computed: this grid gives the system one calibrator ({calibrators[0]}); list more in its "
            "calibrators to compare them."
        )
    return (
        "Not computed for this page: lidframe sensitivity --report (or lidframe.analyses.sensitivity) fits every "
        "calibrator on the same dev set and shows the one that discloses most."
    )


def _per_speaker_reason(report: Report) -> str:
    if report.kind == "dp-audit":
        return (
            "Not available: a DP audit keeps each attacker's aggregates only (ALID, LID q99, LIDmax, EER), not the "
            "per-trial LIDs a per-speaker table splits by speaker."
        )
    if report.kind == "grid":
        return (
            "Not computed: lidframe report adds the per-speaker table of each system's first cell "
            "(lidframe.grid.report.with_per_speaker); this page was built without it."
        )
    return (
        "Not computed for this page: lidframe evaluate --report and the demos add it; from Python, pass "
        "per_speaker= (lidframe.analyses.per_speaker) to report_from_results."
    )


def absent_system_sections(report: Report) -> dict[str, dict[str, str]]:
    """Why each subsection of :data:`SYSTEM_SECTIONS` that a system's section would leave empty does not apply.

    Parameters
    ----------
    report : Report

    Returns
    -------
    dict
        system name (:meth:`Report.system_names`) -> {key -> why}, for the subsections
        that none of the system's cells has: ``sensitivity`` (no sensitivity record) and
        ``per-speaker`` (no per-speaker record).
    """
    out: dict[str, dict[str, str]] = {}
    for name in report.system_names():
        cells = [s for s in report.systems if s.name == name]
        absent: dict[str, str] = {}
        if all(s.sensitivity is None for s in cells):
            absent["sensitivity"] = _sensitivity_reason(report, cells)
        if all(s.per_speaker is None for s in cells):
            absent["per-speaker"] = _per_speaker_reason(report)
        out[name] = absent
    return out
