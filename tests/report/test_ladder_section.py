"""report.html's "Threat-model ladder" section: the numbers of each rung, the rung table, the figure.

Every number of the section is compared with its Result's ``summary`` read here (ALID,
LIDmax and their bootstrap intervals, EER: exactly through the cells' full-precision
``data-sort``, and as printed, formatted here); each cell's place with the header of its
attacker and rung; the rung table with the VoicePrivacy rungs written out below as
docs/scenarios.md states them; the figure's error bars with the intervals.  A label
without a Result is refused, naming it, and a report without a ladder has no section.
"""

from __future__ import annotations

import math
from html.parser import HTMLParser
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lidframe
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from lidframe.report import LadderEntry, ladder_from_results, report_from_results
from tests.report.conftest import CREATED
from tests.report.formatting import fmt_bits, fmt_percent, sort_text
from tests.report.htmltree import parse
from tests.report.test_browser import browser, open_appendices  # noqa: F401 (a fixture)

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

#: The rungs as docs/scenarios.md states them: name -> (code, enrolment, trials, model).
RUNGS = {
    "ignorant": ("o-a", "original", "anonymised", "trained on clear speech"),
    "lazy-informed": ("a-a", "anonymised", "anonymised", "trained on clear speech"),
    "semi-informed": ("a-a", "anonymised", "anonymised", "adapted on anonymised training speech"),
}
CLEAR = "encoder pretrained on clear speech"
ADAPTED = "encoder with its output layer adapted on the system's anonymised speech"
SMALL = "small encoder trained on the system's train speakers"


def entry(label: str, system: str, attacker: str, scenario: str | None, model: str) -> LadderEntry:
    if scenario is None:
        return LadderEntry(label, system, attacker, None, "original", "original", model)
    _, enrolment, trials, _ = RUNGS[scenario]
    return LadderEntry(label, system, attacker, scenario, enrolment, trials, model)


#: (entry, leakage of its simulated scores, whether it is bootstrapped).  ``anon-b`` has no
#: lazy-informed rung and no ``small`` attacker (cells not evaluated), and its ignorant row
#: has no intervals.
ROWS = (
    (entry("plain/enc", "plain", "enc", None, CLEAR), 1.0, True),
    (entry("anon-a/enc/ignorant", "anon-a", "enc", "ignorant", CLEAR), 0.1, True),
    (entry("anon-a/enc/lazy-informed", "anon-a", "enc", "lazy-informed", CLEAR), 0.3, True),
    (entry("anon-a/enc/semi-informed", "anon-a", "enc", "semi-informed", ADAPTED), 0.6, True),
    (entry("anon-a/small/semi-informed", "anon-a", "small", "semi-informed", SMALL), 0.4, True),
    (entry("anon-b/enc/ignorant", "anon-b", "enc", "ignorant", CLEAR), 0.05, False),
    (entry("anon-b/enc/semi-informed", "anon-b", "enc", "semi-informed", ADAPTED), 0.3, True),
    (entry("random", "random", "random", None, "seeded random embeddings"), 0.0, True),
)
ENTRIES = [row[0] for row in ROWS]


@pytest.fixture(scope="module")
def results():
    out = {}
    for k, (e, leakage, boot) in enumerate(ROWS):
        dev, ev = simulate_system(leakage=leakage, seed=10 + k, n_enrolled=8, trials_per_speaker=4)
        bootstrap = lidframe.Bootstrap(n_boot=100, unit="speaker", seed=k) if boot else None
        out[e.label] = lidframe.evaluate(dev, ev, bootstrap=bootstrap)
    return out


@pytest.fixture(scope="module")
def page(results):
    """(the report with a ladder, its parsed page, the page's text)."""
    from lidframe.report import render_html

    report = report_from_results(results, systems={e.label: e.system for e in ENTRIES}, ladder=ENTRIES, created=CREATED)
    text = render_html(report)
    return report, parse(text), text


def section_of(root):
    return root.find("section", id="ladder")


def metric_spans(cell):
    return {span.attrs["data-metric"]: span for span in cell.find_all("span", **{"class": "metric"})}


class _MetricTexts(HTMLParser):
    """label -> metric -> the text of its ``span.metric`` in document order, whitespace collapsed."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: dict[str, dict[str, str]] = {}
        self.label: str | None = None
        self.metric: str | None = None
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "td":
            self.label = attrs.get("data-label")
        elif tag == "span" and self.metric is not None:
            self.depth += 1
        elif tag == "span" and attrs.get("class") == "metric" and self.label is not None:
            self.metric, self.depth, self.parts = attrs["data-metric"], 0, []

    def handle_endtag(self, tag):
        if tag != "span" or self.metric is None:
            return
        if self.depth:
            self.depth -= 1
            return
        assert self.label is not None
        self.found.setdefault(self.label, {})[self.metric] = " ".join("".join(self.parts).split())
        self.metric = None

    def handle_data(self, data):
        if self.metric is not None:
            self.parts.append(data)


def metric_texts(page: str) -> dict[str, dict[str, str]]:
    parser = _MetricTexts()
    parser.feed(page)
    return parser.found


def expected_texts(summary) -> dict[str, str]:
    """What each metric of a cell prints, formatted here from the summary."""
    intervals = summary.intervals or {}
    alid = f"ALID {fmt_bits(summary.alid)}"
    lid_max = f"LIDmax {fmt_bits(summary.lid_max)}"
    if "alid" in intervals:
        alid += f" [{fmt_bits(intervals['alid'].low)}, {fmt_bits(intervals['alid'].high)}]"
    if "lid_max" in intervals:
        lid_max += f" [{fmt_bits(intervals['lid_max'].low)}, {fmt_bits(intervals['lid_max'].high)}]†"
    return {"alid": alid, "lid_max": lid_max, "eer": f"EER {fmt_percent(summary['eer'])}"}


# ------------------------------------------------------------------ the numbers
def test_every_cell_shows_its_results_summary(page, results):
    _, root, text = page
    section = section_of(root)
    shown = metric_texts(text)
    for e in ENTRIES:
        (cell,) = section.find_all("td", data_label=e.label)
        summary = results[e.label].summary
        spans = metric_spans(cell)
        assert list(spans) == ["alid", "lid_max", "eer"], e.label
        assert spans["alid"].attrs["data-sort"] == sort_text(summary.alid)
        assert spans["lid_max"].attrs["data-sort"] == sort_text(summary.lid_max)
        assert spans["eer"].attrs["data-sort"] == sort_text(summary["eer"])
        assert shown[e.label] == expected_texts(summary), e.label


def test_the_ladder_record_holds_the_results_numbers(page, results):
    report, _, _ = page
    assert [c.label for c in report.ladder.cells] == [e.label for e in ENTRIES]
    for cell in report.ladder.cells:
        summary = results[cell.label].summary
        intervals = summary.intervals or {}
        assert cell.entry == next(e for e in ENTRIES if e.label == cell.label)
        assert cell.alid == summary.alid and cell.lid_max == summary.lid_max
        assert cell.eer == summary["eer"] or (math.isnan(cell.eer) and math.isnan(summary["eer"]))
        assert cell.log2_n == summary.log2_n and cell.n_enrolled == summary.n_enrolled
        for name, got in (("alid", cell.alid_interval), ("lid_max", cell.lid_max_interval)):
            if name in intervals:
                assert (got.low, got.high) == (intervals[name].low, intervals[name].high)
            else:
                assert got is None
        if intervals:
            assert cell.interval_level == summary["bootstrap"]["level"]


def test_each_cell_sits_under_its_attacker_and_rung(page):
    _, root, _ = page
    table = section_of(root).find("table", id="ladder-table")
    first, second = table.find("thead").find_all("tr")
    groups = [(th.attrs["data-attacker"], int(th.attrs.get("colspan", "1"))) for th in first.find_all("th")[1:]]
    assert groups == [("enc", 3), ("small", 1)]
    columns = [(th.attrs["data-attacker"], th.attrs["data-rung"]) for th in second.find_all("th")]
    assert columns == [
        ("enc", "ignorant"),
        ("enc", "lazy-informed"),
        ("enc", "semi-informed"),
        ("small", "semi-informed"),
    ]
    assert [th.find("span").text() for th in second.find_all("th")] == ["o-a", "a-a", "a-a", "a-a"]
    body, reference = table.find_all("tbody")
    rows = {tr.attrs["data-system"]: tr for tr in body.find_all("tr")}
    assert list(rows) == ["anon-a", "anon-b"]  # the anonymised systems, in order
    for e in ENTRIES:
        if e.scenario is None:
            continue
        cells = rows[e.system].find_all("td")
        assert cells[columns.index((e.attacker, e.scenario))].attrs["data-label"] == e.label
    # what was not evaluated is an empty cell, said so
    missing = [c for c in rows["anon-b"].find_all("td") if "data-label" not in c.attrs]
    assert len(missing) == 2 and all(c.text() == "—" for c in missing)
    # the plain speech: its attacker's cell spans that attacker's columns; the random floor spans them all
    plain, floor = reference.find_all("tr")
    assert plain.find("th").text() == "plain nothing anonymised (o-o)"
    assert [(c.attrs.get("data-label"), int(c.attrs.get("colspan", "1"))) for c in plain.find_all("td")] == [
        ("plain/enc", 3),
        (None, 1),
    ]
    assert [(c.attrs["data-label"], c.attrs["colspan"]) for c in floor.find_all("td")] == [("random", "4")]
    assert floor.find("th").text() == "random nothing anonymised (o-o), attacker random"


def test_lidmax_intervals_are_flagged_biased_low(page, results):
    _, root, _ = page
    section = section_of(root)
    note = section.find("p", id="ladder-lidmax-note").text()
    assert "biased low" in note and "LID q99" in note
    for e in ENTRIES:
        span = metric_spans(section.find("td", data_label=e.label))["lid_max"]
        marks = span.find_all("span", **{"class": "biased"})
        assert [m.text() for m in marks] == (["†"] if "lid_max" in (results[e.label].summary.intervals or {}) else [])


# ------------------------------------------------------------------ the words and the rung table
def test_the_section_says_what_the_ladder_is_and_what_the_codes_mean(page):
    _, root, text = page
    section = section_of(root)
    assert section.find("h2").text() == "Threat-model ladder"
    assert '<a href="#ladder">Threat-model ladder</a>' in text
    explain = " ".join(p.text() for p in section.find_all("p", **{"class": "explain"}))
    for words in (
        "ignorant attacker (o-a) enrols each speaker's original speech",
        "lazy-informed attacker (a-a) first runs its enrolment speech through the same anonymiser",
        "semi-informed attacker (a-a) also scores with a model adapted on anonymised training speech",
        "the first letter is the enrolment speech and the second the trial speech: o original, a anonymised",
        f"log2 N = {fmt_bits(math.log2(8))}",
        "95% bootstrap intervals in brackets",
    ):
        assert words in explain, words


def test_the_rung_table_states_the_sides_and_the_models(page):
    _, root, _ = page
    table = section_of(root).find("table", id="ladder-rungs")
    headers = [th.text() for th in table.find("thead").find_all("th")]
    assert headers == ["rung", "code", "enrolment", "trials", "model"]
    rows = table.find("tbody").find_all("tr")
    assert [tr.attrs["data-rung"] for tr in rows] == [*RUNGS, "reference"]
    models = {
        "ignorant": [("enc", CLEAR)],
        "lazy-informed": [("enc", CLEAR)],
        "semi-informed": [("enc", ADAPTED), ("small", SMALL)],
        "reference": [("enc", CLEAR), ("random", "seeded random embeddings")],
    }
    for tr in rows:
        name = tr.attrs["data-rung"]
        code, enrolment, trials, model = RUNGS.get(name, ("o-o", "original", "original", "no rung: nothing anonymised"))
        cells = tr.find_all("td")
        assert tr.find("th").text() == name
        assert [c.text() for c in cells[:3]] == [code, f"{enrolment} speech", f"{trials} speech"]
        assert cells[3].parts[0].strip() == model
        items = [(li.attrs["data-attacker"], li.text()) for li in cells[3].find_all("li")]
        assert items == [(a, f"attacker {a}: {text}") for a, text in models[name]]


# ------------------------------------------------------------------ the figure
def test_the_section_has_one_figure_of_alid_per_rung(page):
    _, root, _ = page
    (figure,) = section_of(root).find_all("figure")
    caption = figure.find("figcaption").text()
    assert "ALID (bits) of each anonymised system at each rung" in caption
    assert "95% bootstrap intervals" in caption and "log2 N" in caption
    svg = figure.find("svg")
    assert svg.attrs["aria-label"] == caption


def test_the_figure_draws_each_alid_with_its_interval_and_the_ceiling(page, results):
    from lidframe.report.sections.ladder import ladder_figure

    report, _, _ = page
    fig = ladder_figure(report.ladder)
    (ax,) = [a for a in fig.axes if a.containers]
    lines: dict[str, Any] = {str(container.get_label()): container for container in ax.containers}
    assert set(lines) == {"anon-a, enc", "anon-a, small", "anon-b, enc"}
    for name, labels in {
        "anon-a, enc": ["anon-a/enc/ignorant", "anon-a/enc/lazy-informed", "anon-a/enc/semi-informed"],
        "anon-a, small": ["anon-a/small/semi-informed"],
        "anon-b, enc": ["anon-b/enc/ignorant", "anon-b/enc/semi-informed"],
    }.items():
        line, _, (bars,) = lines[name].lines
        y = [results[label].summary.alid for label in labels]
        np.testing.assert_allclose(line.get_ydata(), y)
        # each bar runs from the interval's low to its high end (none: a bar of no length)
        ends = np.array([seg[:, 1] for seg in bars.get_segments()])
        for (low, high), label, value in zip(ends, labels, y, strict=True):
            interval = (results[label].summary.intervals or {}).get("alid")
            want = (value, value) if interval is None else (interval.low, interval.high)
            np.testing.assert_allclose((low, high), want, atol=1e-12)
    x_ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert x_ticks == ["ignorant\n(o-a)", "lazy-informed\n(a-a)", "semi-informed\n(a-a)"]
    ys = [np.asarray(line.get_ydata(), dtype=np.float64) for line in ax.get_lines()]
    flat = {round(float(y[0]), 9) for y in ys if y.size and np.all(y == y[0])}
    assert round(math.log2(8), 9) in flat  # the ceiling
    assert round(results["plain/enc"].summary.alid, 9) in flat  # the plain speech's reference line
    import matplotlib.pyplot as plt

    plt.close(fig)


# ------------------------------------------------------------------ what is refused, and absent
def test_a_label_without_a_result_is_refused_naming_it(results):
    stray = entry("anon-c/enc/ignorant", "anon-c", "enc", "ignorant", CLEAR)
    with pytest.raises(ValueError, match=r"ladder entry 'anon-c/enc/ignorant': no Result with that label"):
        report_from_results(results, ladder=[*ENTRIES, stray], created=CREATED)


@pytest.mark.slow
def test_no_ladder_no_section(results):
    from lidframe.report import render_html

    two = {label: results[label] for label in ("plain/enc", "anon-a/enc/semi-informed")}
    report = report_from_results(two, created=CREATED)
    from lidframe.report.sections import absent_sections

    assert report.ladder is None
    text = render_html(report)
    root = parse(text)
    # every page keeps the section and says why it does not apply (issue 27): no table, no figure
    (section,) = root.find_all("section", id="ladder")
    assert not section.find_all("table") and not section.find_all("figure") and not section.find_all("img")
    (why,) = [p for p in section.find_all("p") if "not-applicable" in p.attrs.get("class", "")]
    assert why.text().strip() == absent_sections(report)["ladder"]


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([ENTRIES[0]], "the ladder needs at least one entry with a scenario"),
        ([ENTRIES[1], ENTRIES[1]], "ladder entry 'anon-a/enc/ignorant' appears twice"),
        (
            [ENTRIES[1], attrs.evolve(ENTRIES[1], label="plain/enc")],
            "ladder entry 'plain/enc': the same system .* as ladder entry 'anon-a/enc/ignorant'",
        ),
        ([ENTRIES[1], {"label": "plain/enc"}], "ladder entry 1 is a dict, not a LadderEntry"),
    ],
)
def test_a_ladder_that_does_not_add_up_is_refused(results, entries, message):
    with pytest.raises(InputError, match=message):
        ladder_from_results(entries, results)


SIDES = ("original", "anonymised")


@given(
    scenario=st.sampled_from([*RUNGS, None, "informed"]),
    enrolment=st.sampled_from([*SIDES, "clear"]),
    trials=st.sampled_from([*SIDES, ""]),
)
def test_an_entry_is_accepted_only_with_the_sides_of_its_rung(scenario, enrolment, trials):
    """The sides of docs/scenarios.md's table (both original without a scenario), or one line naming the label."""
    if scenario in RUNGS:
        valid = (enrolment, trials) == RUNGS[scenario][1:3]
    elif scenario is None:
        valid = (enrolment, trials) == ("original", "original")
    else:
        valid = False
    if valid:
        made = LadderEntry("sys/att", "sys", "att", scenario, enrolment, trials, "a model")
        assert made.code == f"{enrolment[0]}-{trials[0]}"
        assert made.code == (RUNGS[scenario][0] if scenario else "o-o")
    else:
        with pytest.raises(InputError, match=r"^ladder entry 'sys/att': ") as raised:
            LadderEntry("sys/att", "sys", "att", scenario, enrolment, trials, "a model")
        assert "\n" not in str(raised.value)


def test_the_demo_rows_make_a_ladder_of_the_demos_shape():
    """The real-voice demo's rows are ladder entries that pass its checks; their ladder's shape."""
    from lidframe.demo.voice import demo_rows

    rows = demo_rows()
    made = [LadderEntry(**attrs.asdict(row)) for row in rows]  # re-validated field for field
    assert made == rows
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=6, trials_per_speaker=3)
    one = lidframe.evaluate(dev, ev)
    ladder = ladder_from_results(made, dict.fromkeys((r.label for r in rows), one))
    anonymised = [r.system for r in rows if r.scenario is not None]
    assert ladder.systems() == list(dict.fromkeys(anonymised))
    assert ladder.columns()[:3] == [("ge2e", rung) for rung in RUNGS]
    assert [c.label for c in ladder.references()] == [r.label for r in rows if r.scenario is None]


@pytest.mark.slow
def test_the_demo_outputs_pass_the_ladder_on(results, tmp_path):
    from lidframe.demo import write_demo_outputs

    two = {label: results[label] for label in ("plain/enc", "anon-a/enc/semi-informed")}
    ladder = [e for e in ENTRIES if e.label in two]
    page_path = write_demo_outputs(
        tmp_path, two, table="t", record={}, inputs={}, title="demo", notes=[], settings={}, ladder=ladder,
        log=lambda _: None,
    )  # fmt: skip
    assert page_path is not None
    section = section_of(parse(page_path.read_text(encoding="utf-8")))
    assert [c.attrs["data-label"] for c in section.find_all("td") if "data-label" in c.attrs] == [
        "anon-a/enc/semi-informed",
        "plain/enc",
    ]


# ------------------------------------------------------------------ on a phone
@pytest.mark.browser
@pytest.mark.slow
def test_the_section_fits_a_420_px_screen(browser, page, tmp_path):  # noqa: F811 (the fixture)
    """At 420 CSS px the page does not scroll sideways: the ladder table scrolls in its own box."""
    _, _, text = page
    path = tmp_path / "report.html"
    path.write_text(text, encoding="utf-8")
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 420, "height": 900, "deviceScaleFactor": 1, "mobile": True}
    )
    try:
        browser.get(path.as_uri())
        open_appendices(browser)  # the ladder is an appendix, closed on screen
        width = browser.execute_script("return document.documentElement.clientWidth")
        assert width == 420
        assert browser.execute_script("return document.documentElement.scrollWidth") <= width
        boxes = browser.execute_script(
            "return Array.from(document.querySelectorAll('#ladder table')).map(t => {"
            " const w = t.closest('.table-wrap'); return [t.id, w !== null, w ? w.getBoundingClientRect().right : 0,"
            " getComputedStyle(w).overflowX]; });"
        )
        assert [b[0] for b in boxes] == ["ladder-table", "ladder-rungs"]
        assert all(inside and right <= width and overflow == "auto" for _, inside, right, overflow in boxes), boxes
        # the rung table needs no scrolling at all: each rung is a block of labelled lines
        rungs = browser.execute_script(
            "const t = document.getElementById('ladder-rungs'); return [t.scrollWidth, t.clientWidth];"
        )
        assert rungs[0] <= rungs[1]
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
