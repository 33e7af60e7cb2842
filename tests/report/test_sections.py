"""Every kind of report page holds the same sections; one that does not apply says why, it does not vanish.

The pages: the real-voice demo's (its layout: systems with several attackers, the
threat-model ladder, per-speaker tables, each system's utility but the random floor's,
each row's open set beside its closed set and its calibrator sensitivity; built here from
simulated Results with the demo's rows and outsiders, and utility records made by hand),
the simulated demo's (``lidframe demo --simulated``), ``lidframe evaluate
--report``'s, the grid's (``lidframe report``), ``lidframe dp-audit --report``'s, and a
report of several systems built from Python.  The sections expected come from one list,
:data:`lidframe.report.sections.PAGE_SECTIONS` (each system's subsections from
:data:`~lidframe.report.sections.SYSTEM_SECTIONS`), for every page alike.
"""

from __future__ import annotations

import pytest

from lidframe.report.sections import (
    NOT_APPLICABLE_CLASS,
    PAGE_SECTIONS,
    SYSTEM_SECTIONS,
    absent_sections,
    absent_system_sections,
)
from tests.report.htmltree import Node, parse

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

#: The kinds of page, as the tests name them.
KINDS = ("demo", "simulated demo", "evaluate", "grid", "dp-audit", "systems")


def _main(page: Node) -> Node:
    return page.find("main")


def _top_sections(page: Node) -> list[Node]:
    """The page's sections in order: the summary's, then the appendices' (each system's among them)."""
    parts = [n for n in _main(page).children if n.tag == "div"]
    assert [p.attrs.get("id") for p in parts] == ["summary", "appendices"]
    return [n for part in parts for n in part.children if n.tag == "section"]


def _classes(node: Node) -> list[str]:
    return (node.attrs.get("class") or "").split()


def _reason(section: Node) -> str | None:
    """The text of the section's not-applicable paragraph, None without one."""
    found = [p for p in section.find_all("p") if NOT_APPLICABLE_CLASS in _classes(p)]
    assert len(found) <= 1
    return found[0].text() if found else None


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_page_holds_the_same_sections(pages, kind):
    page = parse(pages[kind].read_text(encoding="utf-8"))
    sections = _top_sections(page)
    systems = [s for s in sections if "system" in _classes(s)]
    assert systems, "no system section"
    # the page's own sections, in the list's order, the systems' between the DP audit and the provenance
    keys = [s.attrs["id"] for s in sections if "system" not in _classes(s)]
    assert keys == [s.key for s in PAGE_SECTIONS]
    order = [s.attrs["id"] for s in sections]
    first, last = order.index(systems[0].attrs["id"]), order.index(systems[-1].attrs["id"])
    assert order[first - 1] == PAGE_SECTIONS[-2].key and order[last + 1] == PAGE_SECTIONS[-1].key
    assert order[first : last + 1] == [s.attrs["id"] for s in systems]
    # each named in the navigation
    links = [a.attrs["href"] for a in page.find("nav").find_all("a")]
    assert [f"#{s.key}" for s in PAGE_SECTIONS] == [link for link in links if link[1:] in keys]
    # every section with its heading; one that does not apply says why, and shows nothing else
    for section, expected in zip([s for s in sections if "system" not in _classes(s)], PAGE_SECTIONS):
        heading = section.find("h2").text()
        assert heading == expected.title, (kind, heading)
        letters = [n.text() for n in section.find_all("span") if "letter" in _classes(n)]
        assert letters == ([] if expected.part == "summary" else [letters[0]]), (kind, expected.key, letters)
        reason = _reason(section)
        if reason is not None:
            assert len(reason) > 40, (kind, expected.key, reason)
            assert not section.find_all("table") and not section.find_all("figure"), (kind, expected.key)
        else:
            assert section.find_all("table") or section.find_all("div"), (kind, expected.key)
    # every system's section holds the subsections of the list, in order: a table, or why not
    for system in systems:
        titles = [h.text() for h in system.find_all("h3") if h.text() in {s.title for s in SYSTEM_SECTIONS}]
        assert list(dict.fromkeys(titles)) == [s.title for s in SYSTEM_SECTIONS], (kind, titles)  # one per cell


@pytest.mark.slow
def test_the_sections_that_show_something_differ_by_kind(pages):
    """The control: the pages are not all alike -- each kind shows what it has and says why not for the rest."""
    absent = {}
    for kind in KINDS:
        page = parse(pages[kind].read_text(encoding="utf-8"))
        own = [s for s in _top_sections(page) if "system" not in _classes(s)]
        absent[kind] = {s.attrs["id"] for s in own if _reason(s) is not None}
    # no page here was given a verdict policy (tests/report/test_verdict_section.py gives them one)
    assert absent["demo"] == {
        "verdict",
        "dp",
    }  # the ladder, the utility, the open set and the legal criteria are there, and several rows per system
    # one row per system: its headline is its worst case across attackers
    assert {"verdict", "rows", "ladder", "dp", "utility", "worst-attacker"} <= absent["simulated demo"]
    assert absent["dp-audit"] == {
        "verdict",
        "legal",
        "linkability",
        "worst-speakers",
        "identification",
        "ladder",
        "open-set",
        "utility",
    }
    # evaluate computes the legal criteria
    assert absent["evaluate"] == {"verdict", "rows", "ladder", "utility", "open-set", "dp", "worst-attacker"}
    assert absent["systems"] == {
        "verdict",
        "rows",
        "legal",
        "linkability",
        "ladder",
        "utility",
        "open-set",
        "dp",
        "worst-attacker",
    }
    # a grid's cells hold the legal criteria, but no ranks: no CMC curve
    assert absent["grid"] == {"verdict", "identification", "ladder", "utility", "open-set", "dp"}


def test_the_reasons_follow_the_report(evaluate_built, systems_built, dp_built, grid_built):
    """absent_sections / absent_system_sections: a reason exactly where the record has nothing to show."""
    for built in (evaluate_built, systems_built, dp_built, grid_built):
        report = built.report
        absent = absent_sections(report)
        assert ("ladder" in absent) == (report.ladder is None)
        assert ("utility" in absent) == (not report.utility)
        assert ("open-set" in absent) == all(s.open_set is None for s in report.systems)
        assert ("dp" in absent) == (report.dp_audit is None)
        assert ("legal" in absent) == all(s.legal is None for s in report.systems)
        assert ("identification" in absent) == all(s.cmc is None for s in report.systems)
        assert set(absent) <= {s.key for s in PAGE_SECTIONS}
        per_system = absent_system_sections(report)
        assert list(per_system) == report.system_names()
        for name, reasons in per_system.items():
            cells = [s for s in report.systems if s.name == name]
            assert ("sensitivity" in reasons) == all(s.sensitivity is None for s in cells)
            assert ("per-speaker" in reasons) == all(s.per_speaker is None for s in cells)
            assert set(reasons) <= {s.key for s in SYSTEM_SECTIONS}
    # the DP audit's reasons are its own, not the evaluate page's advice
    dp = absent_system_sections(dp_built.report)
    assert all("DP audit keeps" in r["per-speaker"] for r in dp.values())
    assert "a-a" in absent_sections(evaluate_built.report)["ladder"]
    assert "anonymised enrolment, anonymised trials" in absent_sections(evaluate_built.report)["ladder"]
    # without a utility each kind of page says how to get one: the command, then its own way to pass it
    for built, way in (
        (evaluate_built, "--utility U.json"),
        (systems_built, "--utility U.json"),
        (grid_built, "utility ="),
    ):
        reason = absent_sections(built.report)["utility"]
        assert "lidframe utility --data DIR --reference ORIGINAL" in reason and "--json U.json" in reason, reason
        assert way in reason and "lidframe demo" in reason, reason
    assert "Not applicable" in absent_sections(dp_built.report)["utility"]
