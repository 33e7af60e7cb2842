"""The section of each system (a name: its cells) on the page, between the DP audit and the provenance.

Each holds links to its cells' headline cards, its LID figures (:func:`system_figures`:
the LID CCDF of its cells and the histogram of its first), then one subsection per entry
of :data:`lidframe.report.sections.SYSTEM_SECTIONS` (its calibrator sensitivity, its
per-speaker table): each cell's item, or why none of its cells has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.report.lid_figures import lid_ccdf_figure, lid_histogram_figure

if TYPE_CHECKING:
    from lidframe.report.figures import FigureMaker, InlineFigure
    from lidframe.report.sections import Page, PageSection
    from lidframe.report.sections.headlines import Card

__all__ = ["Subsection", "SystemSection", "system_figures", "system_sections"]


@attrs.frozen
class Subsection:
    """One subsection of a system's section: its entry of the list, each cell's item, or why there is none.

    Attributes
    ----------
    section : PageSection
        Its entry of :data:`lidframe.report.sections.SYSTEM_SECTIONS` (title, partial template).
    reason : str or None
        Why none of the system's cells has one; None when one has.
    items : tuple
        What each cell that has one shows (the section's ``item``), in order.
    """

    section: PageSection
    reason: str | None
    items: tuple[Any, ...]


@attrs.frozen
class SystemSection:
    """The section of one system: links to its cards, its figures, its subsections."""

    anchor: str
    name: str
    cards: tuple[Card, ...]
    figures: tuple[InlineFigure, ...]
    subsections: tuple[Subsection, ...]


def system_figures(maker: FigureMaker, name: str) -> list[InlineFigure]:
    """The figures of one system: its LID CCDF (all its cells) and the histogram of its first cell."""
    cells = [s for s in maker.report.systems if s.name == name and s.lid_bits is not None]
    if not cells:
        return []
    fig = lid_ccdf_figure(
        {s.label: s.lid_bits for s in cells if s.lid_bits is not None},
        title=f"{name}: share of trials with LID > x",
        log2_n=maker.log2_n(cells),
        styles={s.label: maker.styles[s.label] for s in cells},
    )
    out = [maker.inline(fig, f"LID CCDF of {name} ({maker.setting(cells)}).")]
    first = cells[0]
    assert first.lid_bits is not None
    fig = lid_histogram_figure(
        first.lid_bits,
        title=f"{first.label}: LID per trial (calibrator {first.calibrator}, prior {first.prior})",
        log2_n=first.headline.log2_n,
        color=maker.styles[first.label]["color"],
    )
    out.append(
        maker.inline(
            fig,
            f"Histogram of LID over the {first.lid_bits.size} trials of {first.label} "
            f"(calibrator {first.calibrator}, prior {first.prior}).",
        )
    )
    return out


def system_sections(page: Page, subsections: Sequence[PageSection]) -> list[SystemSection]:
    """One section per system name of *page*'s report, with the *subsections* (``SYSTEM_SECTIONS``) of each.

    The figures are drawn in the order of the page's figure numbers: per cell, each
    subsection's figures (a cell's sensitivity, then its per-speaker figure), then the
    system's LID figures, so that their SVG ids stay what they were.
    """
    report = page.report
    sections = []
    for index, name in enumerate(report.system_names(), start=1):
        cells = [s for s in report.systems if s.name == name]
        items: dict[str, list[Any]] = {sub.key: [] for sub in subsections}
        for k, system in enumerate(cells, start=1):
            for sub in subsections:
                found = None if sub.show is None else sub.show(page, system, f"{sub.key}-{index}-{k}")
                if found is not None:
                    items[sub.key].append(found)
        shown = tuple(
            Subsection(sub, None if sub.why_absent is None else sub.why_absent(report, cells), tuple(items[sub.key]))
            for sub in subsections
        )
        sections.append(
            SystemSection(
                anchor=f"system-{index}",
                name=name,
                cards=tuple(page.cards[report.systems.index(s)] for s in cells),
                figures=tuple(system_figures(page.maker, name)),
                subsections=shown,
            )
        )
    return sections
