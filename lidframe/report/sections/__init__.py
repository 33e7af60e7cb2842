"""The sections of every report page, one module each, and the list that puts them on the page.

Every kind of page -- the demos', ``lidframe evaluate --report``'s, the grid's
(``lidframe report``), ``lidframe dp-audit --report``'s -- holds the same sections, in the
order of :data:`PAGE_SECTIONS`, and each system's section the subsections of
:data:`SYSTEM_SECTIONS`.  A section that has nothing to show for a report does not vanish:
it says why (:func:`absent_sections`, :func:`absent_system_sections`), so that a reader
who looks for the open set, the ladder or the per-speaker table of a page learns whether it
was left out, and how to get it.

The page has two parts (:attr:`PageSection.part`).  The **summary** -- the verdict, the
headlines, the law's three criteria and the worst speakers -- is what a regulator reads
and what prints on at most two A4 pages; the **appendices** -- the glossary, the tables and
figures of every other section, each system's own section and the provenance -- follow
it, collapsed on screen (``<details>``) and printed in full.

Each section is a module here that holds its records, the builder pieces that compute
them, its tables and its figures, and two functions: ``show`` (what the page shows of
it) and ``absent`` (why it does not apply, or None).  :mod:`lidframe.report.render` walks
the lists: one template per section, ``templates/sections/<key>.html.j2``.  A new
section is its module, its template and one line in :data:`PAGE_SECTIONS`.

============================  ==========================================================
section                       modules
============================  ==========================================================
``verdict``                   :mod:`~lidframe.report.sections.verdict`
``headlines``                 :mod:`~lidframe.report.sections.headlines` (its appendix
                              ``rows``: the cards of the rows that head no system)
``worst-attacker``            :mod:`~lidframe.report.sections.worst_attacker` (records:
                              :mod:`lidframe.analyses.worst_attacker`)
``comparison``                :mod:`~lidframe.report.sections.comparison`
``identification``            :mod:`~lidframe.report.sections.identification`
``legal``                     :mod:`~lidframe.report.sections.legal` (its appendix
                              ``linkability``: every other row's criteria, the curve)
``worst-speakers``            :mod:`~lidframe.report.sections.worst_speakers`
``glossary``                  :mod:`~lidframe.report.sections.glossary` (its entries: the
                              metric catalogue's rows of the metrics the page shows)
``ladder``                    :mod:`~lidframe.report.sections.ladder` (records:
                              :mod:`~lidframe.report.sections.ladder_model`)
``utility``                   :mod:`~lidframe.report.sections.utility`, its chart
                              :mod:`~lidframe.report.sections.utility_chart`
``open-set``                  :mod:`~lidframe.report.sections.open_set` (records:
                              :mod:`~lidframe.report.sections.open_set_model`)
``dp``                        :mod:`~lidframe.report.sections.dp`
each system                   :mod:`~lidframe.report.sections.systems`; its subsections
                              :mod:`~lidframe.report.sections.sensitivity`,
                              :mod:`~lidframe.report.sections.per_speaker`
``provenance``                :mod:`~lidframe.report.sections.provenance` (records:
                              :mod:`~lidframe.report.sections.provenance_model`;
                              :mod:`~lidframe.report.sections.environment`,
                              :mod:`~lidframe.report.sections.settings`)
============================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.report.sections import (
    comparison,
    dp,
    glossary,
    headlines,
    identification,
    ladder,
    legal,
    open_set,
    per_speaker,
    provenance,
    sensitivity,
    utility,
    verdict,
    worst_attacker,
    worst_speakers,
)

if TYPE_CHECKING:
    from lidframe.report.figures import FigureMaker
    from lidframe.report.model import Report
    from lidframe.report.sections.headlines import Card

__all__ = [
    "PageSection",
    "PAGE_SECTIONS",
    "SYSTEM_SECTIONS",
    "NOT_APPLICABLE_CLASS",
    "SUMMARY",
    "APPENDIX",
    "Page",
    "Shown",
    "absent_sections",
    "absent_system_sections",
]

#: The class of the paragraph that says why a section does not apply (the tests find it by it).
NOT_APPLICABLE_CLASS = "not-applicable"
#: The page's two parts (:attr:`PageSection.part`): what prints on at most two A4 pages, and what follows it.
SUMMARY, APPENDIX = "summary", "appendix"


@attrs.frozen
class PageSection:
    """One section of every page.

    Attributes
    ----------
    key : str
        Its name here and in :func:`absent_sections`; in :data:`PAGE_SECTIONS` also its
        anchor on the page (``<section id="...">``), and its template
        (:attr:`template`).
    title : str
        Its heading (``<h2>`` on the page; ``<h3>`` for a system's subsection).
    nav : str
        Its link in the page's navigation; default its title.
    show : callable, optional
        What the page shows of it: ``show(page)`` for a page section, ``show(page,
        system, table_id)`` (None where the cell has none) for a system's subsection.
    why_absent : callable, optional
        Why it does not apply, or None where it does: ``why_absent(report)``, or
        ``why_absent(report, cells)`` for a system's subsection.  None: it always applies.
    after_systems : bool
        It comes after the systems' sections (the provenance); the others come before.
    part : {"summary", "appendix"}
        Where it stands: in the summary, or among the appendices (collapsed on screen,
        printed in full).  The systems' sections are appendices.
    """

    key: str
    title: str
    nav: str = attrs.field(default=attrs.Factory(lambda self: self.title, takes_self=True))
    show: Callable[..., Any] | None = attrs.field(default=None, eq=False, repr=False)
    why_absent: Callable[..., str | None] | None = attrs.field(default=None, eq=False, repr=False)
    after_systems: bool = False
    part: str = attrs.field(default=APPENDIX, validator=attrs.validators.in_((SUMMARY, APPENDIX)))

    @property
    def template(self) -> str:
        """Its template, relative to the report's template folder."""
        return f"sections/{self.key}.html.j2"

    def shown(self, page: Page) -> Shown:
        """What *page* shows of this section: why it does not apply, or its content."""
        reason = None if self.why_absent is None else self.why_absent(page.report)
        content = None if reason is not None or self.show is None else self.show(page)
        return Shown(self, reason, content)


#: The sections of every page, in page order; the systems' own sections come between the
#: last before them and the first with ``after_systems`` (one per system, :data:`SYSTEM_SECTIONS` each).
PAGE_SECTIONS: tuple[PageSection, ...] = (
    # the summary: what a regulator reads, on at most two A4 pages
    PageSection("verdict", "Verdict", show=verdict.show, why_absent=verdict.absent, part=SUMMARY),
    PageSection("headlines", "Headlines", show=headlines.show, part=SUMMARY),
    PageSection(
        "legal",
        "Singling out, linkability, inference",
        nav="Legal criteria",
        show=legal.show,
        why_absent=legal.absent,
        part=SUMMARY,
    ),
    PageSection(
        "worst-speakers",
        "Worst speakers",
        show=worst_speakers.show,
        why_absent=worst_speakers.absent,
        part=SUMMARY,
    ),
    # the appendices, collapsed on screen and printed in full
    PageSection("glossary", "Glossary", show=glossary.show),
    PageSection("rows", "Every row's headline", show=headlines.show_rows, why_absent=headlines.absent_rows),
    PageSection(
        "worst-attacker",
        "Worst case across attackers",
        nav="Worst attacker",
        show=worst_attacker.show,
        why_absent=worst_attacker.absent,
    ),
    PageSection("comparison", "Comparison", show=comparison.show),
    PageSection(
        "linkability",
        "Legal criteria in full",
        show=legal.show_curve,
        why_absent=legal.absent_curve,
    ),
    PageSection(
        "identification",
        "Identification against chance",
        nav="Identification",
        show=identification.show,
        why_absent=identification.absent,
    ),
    PageSection("ladder", "Threat-model ladder", show=ladder.show, why_absent=ladder.absent),
    PageSection("utility", "Privacy and utility", show=utility.show, why_absent=utility.absent),
    PageSection("open-set", "Open set", show=open_set.show, why_absent=open_set.absent),
    PageSection(
        "dp", "DP audit: measured disclosure against the bounds", nav="DP audit", show=dp.show, why_absent=dp.absent
    ),
    PageSection("provenance", "Settings and provenance", show=provenance.show, after_systems=True),
)
#: The subsections of every system's section, in page order (its cards and LID figures come first).
SYSTEM_SECTIONS: tuple[PageSection, ...] = (
    PageSection("sensitivity", "Calibrator sensitivity", show=sensitivity.item, why_absent=sensitivity.absent),
    PageSection("per-speaker", "Per speaker", show=per_speaker.item, why_absent=per_speaker.absent),
)


@attrs.frozen(eq=False)
class Page:
    """What every section of one page is made from.

    Attributes
    ----------
    report : Report
    maker : FigureMaker
        Draws the page's figures, numbered in the order the sections ask for them (page order).
    cards : tuple of Card
        The headline card of each system of the report, in order (the headlines show them,
        each system's section links to its own).
    metric_keys : tuple of str
        The metric catalogue's keys of every metric the page shows (its glossary's
        entries); empty while the page is first laid out (:mod:`lidframe.report.render`).
    """

    report: Report
    maker: FigureMaker
    cards: tuple[Card, ...]
    metric_keys: tuple[str, ...] = ()

    @classmethod
    def of(cls, report: Report, maker: FigureMaker) -> Page:
        """The page of *report*, its figures drawn by *maker*."""
        return cls(report, maker, tuple(headlines.headline_card(s, k) for k, s in enumerate(report.systems, start=1)))


@attrs.frozen(eq=False)
class Shown:
    """One section as a page shows it: its entry, why it does not apply (None: it does), and its content."""

    section: PageSection
    reason: str | None
    content: Any


def absent_sections(report: Report) -> dict[str, str]:
    """Why each section of :data:`PAGE_SECTIONS` that has nothing to show for *report* does not apply.

    Parameters
    ----------
    report : Report

    Returns
    -------
    dict
        key -> one or two sentences (what is missing, and what would show it), for the
        sections without content only: ``verdict`` without a verdict policy,
        ``worst-attacker`` where every system has one attacker,
        ``identification`` without any system's CMC curve, ``legal`` without any
        system's legal criteria, ``worst-speakers`` without any per-speaker record,
        ``ladder`` without a ladder, ``utility`` without
        any system's utility, ``open-set`` when no system is open-set, ``dp`` outside a DP
        audit.  The headlines, the glossary, the comparison and the provenance always have content.
    """
    found = {s.key: s.why_absent(report) for s in PAGE_SECTIONS if s.why_absent is not None}
    return {key: reason for key, reason in found.items() if reason is not None}


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
        found = {s.key: s.why_absent(report, cells) for s in SYSTEM_SECTIONS if s.why_absent is not None}
        out[name] = {key: reason for key, reason in found.items() if reason is not None}
    return out
