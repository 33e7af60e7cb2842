"""A page that can be handed on: a summary, then lettered appendices; a glossary of every metric shown, from the catalogue.

Without a browser (the print is measured in :mod:`tests.report.test_print_summary`):

- the summary holds exactly the verdict, the headlines, the law's three criteria and the
  worst speakers (the list is written here, not read from the code), and ends with its
  end marker; everything else -- the glossary, the comparison, every figure, each system's
  tables, the provenance -- is an appendix, lettered A, B, C, ... in page order, each in a
  ``<details>`` that is closed on screen;
- every metric the page marks (``data-metric-key``) has its glossary entry and every entry
  is one the page marks; each entry's label, description and note are the catalogue's
  row; every table header and card entry titled with a catalogue label is marked;
- no description or note of the catalogue is written a second time in lidframe.report;
- minDCF and actDCF name the operating point they were measured at (read here from the
  Result's binary view, a non-default one too), and max |LLR| its ZEBRA tag (computed
  here from the tag bounds of Nautsch et al., 2020).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import lidframe
from lidframe.core.options import EvaluateOptions
from lidframe.data.simulate import simulate_system
from lidframe.metrics import catalogue
from lidframe.metrics.detection import OperatingPoint
from tests.report.htmltree import Node, parse
from tests.report.test_sections import KINDS

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

#: The summary's sections, in order (the issue's list: the verdict, the headline per system, the three criteria,
#: the worst speakers).
SUMMARY = ("verdict", "headlines", "legal", "worst-speakers")
#: ZEBRA's tags of max |LLR| (log10): (upper bound, tag); above the last, F.
ZEBRA = ((0.0, "0"), (1.0, "A"), (2.0, "B"), (4.0, "C"), (5.0, "D"), (6.0, "E"))


def _classes(node: Node) -> list[str]:
    return (node.attrs.get("class") or "").split()


def _elements(node: Node) -> list[Node]:
    return [c for c in node.children if not c.tag.startswith("#")]


def _tag(value: float) -> str:
    return next((tag for bound, tag in ZEBRA if value <= bound), "F")


def _letters(n: int) -> list[str]:
    return [chr(ord("A") + k) if k < 26 else "A" + chr(ord("A") + k - 26) for k in range(n)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_the_summary_holds_the_listed_parts_and_the_appendices_the_rest(pages, kind):
    page = parse(pages[kind].read_text(encoding="utf-8"))
    summary, appendices = page.find("div", id="summary"), page.find("div", id="appendices")
    parts = _elements(summary)
    assert [s.attrs["id"] for s in parts if s.tag == "section"] == list(SUMMARY)
    assert parts[-1].tag == "p" and parts[-1].attrs["id"] == "summary-end"
    assert not summary.find_all("details") and not summary.find_all("figure")
    # every other section is an appendix: a <details>, closed on screen, lettered in page order
    sections = _elements(appendices)
    assert all(s.tag == "section" and "appendix" in _classes(s) for s in sections)
    for section in sections:
        (details,) = _elements(section)
        assert details.tag == "details" and "open" not in details.attrs
        assert _elements(details)[0].tag == "summary"
    letters = [next(n for n in s.find("summary").find_all("span") if "letter" in _classes(n)).text() for s in sections]
    assert letters == [f"Appendix {letter}." for letter in _letters(len(sections))]
    ids = [s.attrs["id"] for s in sections]
    assert ids[0] == "glossary" and ids[-1] == "provenance" and {"comparison", "linkability"} <= set(ids)
    assert len([s for s in sections if "system" in _classes(s)]) == len(
        page.find_all("section", **{"class": "system appendix"})
    )
    # the per-speaker tables, the fitted calibrators, every figure: appendices
    assert all(appendices.find_all(f.tag, id=f.attrs["id"]) for f in page.find_all("figure"))
    for table in page.find_all("table"):
        if table.attrs.get("id", "").startswith(("per-speaker", "calibrator", "comparison", "inputs")):
            assert appendices.find_all("table", id=table.attrs["id"]), table.attrs["id"]


def _marked(node: Node) -> set[str]:
    return {n.attrs["data-metric-key"] for n in node.iter() if n.attrs.get("data-metric-key")}


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_every_metric_shown_has_its_glossary_entry_from_the_catalogue(pages, kind):
    page = parse(pages[kind].read_text(encoding="utf-8"))
    glossary = page.find("section", id="glossary")
    entries = glossary.find_all("div", **{"class": "glossary-entry"})
    keys = [e.attrs["data-glossary-key"] for e in entries]
    shown = _marked(page.find("body")) - _marked(glossary)
    assert shown and set(keys) == shown, (kind, set(keys) ^ shown)
    assert keys == [m.key for m in catalogue.METRICS if m.key in shown]  # once each, in catalogue order
    for entry, key in zip(entries, keys, strict=True):
        row = catalogue.metric(key)
        assert entry.attrs["id"] == f"glossary-{key}"
        assert entry.find("strong").text() == " ".join(row.label.split())
        assert entry.find("span", **{"class": "description"}).text() == " ".join(row.description.split())
        notes = entry.find_all("span", **{"class": "note-text"})
        assert [n.text() for n in notes] == ([" ".join(row.note.split())] if row.note else [])
    # every header and card entry titled with a metric's label says which metric it is
    labels = {m.label: m.key for m in catalogue.METRICS}
    labels.update({m.titled: m.key for m in catalogue.METRICS})
    for th in page.find_all("th"):
        title = th.text().replace("↕", "").strip()
        if title in labels and th.attrs.get("scope") == "col" and th.attrs.get("data-type") == "number":
            marked = th.attrs.get("data-metric-key")
            assert marked and catalogue.metric(marked).label in (title, title.removesuffix(" (bits)")), (kind, title)
    for item in page.find_all("dt"):
        parent = item.parent
        if item.text() in labels and parent is not None and parent.attrs.get("data-sort") is not None:
            assert parent.attrs.get("data-metric-key") == labels[item.text()], (kind, item.text())


def test_no_description_of_the_catalogue_is_written_twice():
    """The catalogue is the one source: lidframe.report takes every description and note from its rows."""
    root = Path(lidframe.__file__).parent / "report"
    sources = {path: path.read_text(encoding="utf-8") for path in root.rglob("*") if path.suffix in {".py", ".j2"}}
    for m in catalogue.METRICS:
        for text in (m.description, m.note):
            if len(text) < 20:  # "median LID (bits)" and the like may be a phrase of a sentence
                continue
            copies = [path.name for path, source in sources.items() if text in source]
            assert copies == [], (m.key, copies)


def _report_of(operating_point: OperatingPoint | None = None):
    from lidframe.report import render_html, report_from_results

    dev, ev = simulate_system(leakage=0.6, seed=21, n_enrolled=9, trials_per_speaker=5)
    options = None if operating_point is None else EvaluateOptions(operating_point=operating_point)
    result = lidframe.evaluate(dev, ev, options=options)
    return result, parse(render_html(report_from_results({"anon": result})))


@pytest.mark.parametrize("point", [None, OperatingPoint(p_target=0.05, c_miss=10.0, c_fa=1.0)])
def test_min_and_act_dcf_name_their_operating_point(point):
    result, page = _report_of(point)
    op = result.summary.binary.operating_point
    assert (op.p_target, op.c_miss, op.c_fa) == ((0.01, 1.0, 1.0) if point is None else (0.05, 10.0, 1.0))
    text = f"P_target = {op.p_target:g}, C_miss = {op.c_miss:g}, C_fa = {op.c_fa:g}"
    for key in ("min_dcf", "act_dcf"):
        entry = page.find("div", id=f"glossary-{key}")
        assert entry.find("span", **{"class": "run"}).text() == f"measured at {text}"
    assert f"minDCF and actDCF at {text}" in page.find("table", id="comparison-table").find("caption").text()


def test_max_llr_carries_its_zebra_tag():
    result, page = _report_of()
    value = result.summary.binary.max_abs_llr_log10
    table = page.find("table", id="comparison-table")
    heads = table.find("thead").find_all("th")
    column = next(k for k, th in enumerate(heads) if th.attrs.get("data-metric-key") == "max_abs_llr_log10")
    cell = table.find("tbody").find_all("tr")[0].find_all("td")[column]
    assert float(cell.attrs["data-sort"]) == value
    assert cell.text() == f"{value:.3f} ({_tag(value)})"
    note = page.find("div", id="glossary-max_abs_llr_log10").find("span", **{"class": "note-text"}).text()
    for bound, tag in ZEBRA[1:]:
        assert f"{tag} (≤ {bound:g})" in note
    assert "F (> 6)" in note and "D_ECE" in page.find("section", id="glossary").text()


def test_the_glossary_notes_hold_for_the_numbers():
    """What the notes claim, checked on evaluations: ALID below 0 under a calibration that does not hold on eval,
    and an open-set LIDmax above log2 N but within log2(N / (1 - π_∅))."""
    dev, _ = simulate_system(leakage=0.9, seed=4, n_enrolled=10, trials_per_speaker=6)
    _, ev = simulate_system(leakage=0.0, seed=5, n_enrolled=10, trials_per_speaker=6)
    assert lidframe.evaluate(dev, ev).summary.alid < 0  # calibrated on a leaky dev set, evaluated on a random one
    assert "negative" in catalogue.metric("alid").note
    outside = 0.2
    dev, ev = simulate_system(leakage=1.0, seed=6, n_enrolled=10, trials_per_speaker=6, n_outsiders=4)
    s = lidframe.evaluate(dev, ev, prior=f"uniform?outside={outside}").summary
    ceiling = max(math.log2(s.n_enrolled / (1 - outside)), -math.log2(outside))
    assert math.log2(s.n_enrolled) < s.lid_max <= ceiling + 1e-9
    assert "log2(N / (1 − π_∅))" in catalogue.metric("lid_max").note


def _card(label: str, level: str):
    from lidframe.report.sections.headlines import Card

    return Card(f"card-{label}", label, label, "logistic", "uniform", (), "", level)


@pytest.mark.parametrize(
    ("levels", "shared"),
    [
        (("95 % intervals", "95 % intervals", "95 % intervals"), "95 % intervals"),
        (("95 % intervals", "no intervals computed"), ""),  # they differ: each card says its own
        (("95 % intervals",), ""),  # one card: nothing to share
        ((), ""),
    ],
)
def test_the_cards_interval_level_is_shared_only_where_every_card_states_it(levels, shared):
    from lidframe.report.sections.headlines import _shared_interval_level

    cards = tuple(_card(f"s{k}", level) for k, level in enumerate(levels))
    assert _shared_interval_level(cards) == shared


@pytest.mark.slow
def test_the_demo_summary_says_the_cards_interval_level_and_small_dev_warning_once(pages):
    """Printed, the summary says once above the cards what their brackets are (each card's own line is for the screen)."""
    page = parse(Path(pages["demo"]).read_text(encoding="utf-8"))
    section = page.find("section", id="headlines")
    levels = {p.text() for p in section.find_all("p", **{"class": "ci-level"})}
    assert len(levels) == 1 and next(iter(levels)).startswith("95 % speaker-bootstrap intervals in brackets")
    shared = section.find("p", **{"class": "explain ci-level-shared"})
    assert shared is not None and shared.text() == f"Every card: {next(iter(levels))}."
    assert "ci-shared" in section.find("div", **{"class": "cards ci-shared"}).attrs["class"]
    # every headline card is of a 10-speaker dev set: the warning names them all at once
    warnings = section.find_all("p", **{"class": "dev-warning"})
    assert len(warnings) == 1 and warnings[0].text().startswith("Every system: the dev set is too small")
