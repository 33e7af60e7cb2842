"""report.html's "Privacy and utility" section: the utility table, the privacy-utility chart, and its absence.

The utility records are made by hand (:func:`tests.report.conftest.utility_record`): the
table must print their numbers, formatted here (:mod:`tests.report.formatting`).  The
chart's plotted data are read back from its matplotlib Axes -- each point's errorbar
container: its x and y, and the extents of its bars -- and must be each system's WER and
WER interval, and each row's ALID and LIDmax, computed here from the per-trial LIDs that
``lidframe.evaluate`` returned (their mean and maximum), with the speaker-bootstrap
intervals of its summary.  A page without a utility says why and how to get one;
``lidframe evaluate --report DIR --utility U.json`` puts the section on the page, and a
bad ``--utility`` file is one line, exit status 2, nothing written.
"""

from __future__ import annotations

import hashlib
import json

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lidframe
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from lidframe.report import LadderEntry, render_html, report_from_grid, report_from_results
from lidframe.report.sections import NOT_APPLICABLE_CLASS
from lidframe.report.sections.utility import SystemUtility
from tests.bad_input.conftest import assert_refused
from tests.report.conftest import CREATED, run_cli, utility_record
from tests.report.formatting import fmt_count, fmt_percent
from tests.report.htmltree import parse

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

GE2E, ECAPA = "pretrained on clear speech", "small encoder trained here"
#: (label, system, attacker, scenario, leakage of the simulated scores, bootstrapped), in page order:
#: the real-voice demo's layout -- plain speech as the reference of two attackers, anonymised systems up
#: the ladder, a random floor without a utility.  ``pitch/ge2e/ignorant`` has no intervals.
ROWS = (
    ("plain/ge2e", "plain", "ge2e", None, 1.0, True),
    ("plain/ecapa", "plain", "ecapa", None, 0.9, True),
    ("mcadams/ge2e/ignorant", "mcadams", "ge2e", "ignorant", 0.1, True),
    ("mcadams/ge2e/semi-informed", "mcadams", "ge2e", "semi-informed", 0.5, True),
    ("mcadams/ecapa/semi-informed", "mcadams", "ecapa", "semi-informed", 0.4, True),
    ("pitch/ge2e/ignorant", "pitch", "ge2e", "ignorant", 0.2, False),
    ("pitch/ge2e/semi-informed", "pitch", "ge2e", "semi-informed", 0.6, True),
    ("random", "random", "random", None, 0.0, True),
)
#: system -> its utility: plain and mcadams with intervals (mcadams with a rho_F0), pitch without any.
UTILITY = {
    "plain": {"wer": 0.152, "wer_interval": (0.101, 0.233)},
    "mcadams": {"wer": 0.709, "wer_interval": (0.612, 0.804), "rho_f0": 0.614, "rho_interval": (0.55, 0.68)},
    "pitch": {"wer": 0.628},
}
NOTE = "WER on the 15 eval trials of the flite voices; ρ_F0 against the plain speech."


def _entry(label: str, system: str, attacker: str, scenario: str | None) -> LadderEntry:
    if scenario is None:
        return LadderEntry(label, system, attacker, None, "original", "original", GE2E)
    enrolment = "original" if scenario == "ignorant" else "anonymised"
    return LadderEntry(label, system, attacker, scenario, enrolment, "anonymised", ECAPA)


@pytest.fixture(scope="module")
def ladder_run():
    """(report, results, utilities) of the demo's layout."""
    results = {}
    for seed, (label, _, _, _, leakage, boot) in enumerate(ROWS):
        dev, ev = simulate_system(leakage=leakage, seed=seed, n_enrolled=12, trials_per_speaker=4)
        results[label] = lidframe.evaluate(dev, ev, bootstrap=lidframe.Bootstrap(n_boot=100) if boot else None)
    utilities = {system: utility_record(**values) for system, values in UTILITY.items()}
    report = report_from_results(
        results,
        systems={label: system for label, system, *_ in ROWS},
        ladder=[_entry(label, system, attacker, scenario) for label, system, attacker, scenario, _, _ in ROWS],
        utility=utilities,
        utility_note=NOTE,
        created=CREATED,
    )
    return report, results, utilities


def _containers(ax) -> dict[str, object]:
    from matplotlib.container import ErrorbarContainer

    return {c.get_label(): c for c in ax.containers if isinstance(c, ErrorbarContainer)}


def _bars(container) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """(x extent of its horizontal bar, y extent of its vertical bar), read from the bars' segments; None: no bar."""
    horizontal = vertical = None
    for collection in container.lines[2]:
        for segment in collection.get_segments():
            (x0, y0), (x1, y1) = segment
            if y0 == y1:
                horizontal = (min(x0, x1), max(x0, x1))
            else:
                assert x0 == x1
                vertical = (min(y0, y1), max(y0, y1))
    assert (horizontal is not None) == container.has_xerr and (vertical is not None) == container.has_yerr
    return horizontal, vertical


def _expected_extent(value: float, interval) -> tuple[float, float] | None:
    """The bar of an interval as the chart draws it: from its low to its high end (and the value, should it miss)."""
    if interval is None:
        return None
    low, high = float(interval[0]), float(interval[1])
    return (min(low, value), max(high, value))


def test_the_chart_plots_each_systems_wer_against_each_rows_alid_and_lid_max(ladder_run):
    from lidframe.report.figures import FigureMaker

    report, results, utilities = ladder_run
    fig, caption = FigureMaker(report).utility_figure()
    alid_ax, max_ax = fig.axes[:2]
    charted = [label for label, system, *_ in ROWS if system in UTILITY]
    for ax, metric in ((alid_ax, "alid"), (max_ax, "lid_max")):
        found = _containers(ax)
        assert sorted(found) == sorted(charted)  # one point per row of a system with a utility; random left out
        for label, system, *_ in ROWS:
            if system not in UTILITY:
                continue
            result, u = results[label], utilities[system]
            lid = np.asarray(result.lid)[~np.asarray(result.is_outsider)]  # the closed-set trials' LIDs (bits)
            value = float(np.mean(lid)) if metric == "alid" else float(np.max(lid))
            point = found[label].lines[0]
            assert point.get_xdata()[0] == pytest.approx(100.0 * UTILITY[system]["wer"], rel=1e-12)
            assert point.get_ydata()[0] == pytest.approx(value, rel=1e-9, abs=1e-12)
            horizontal, vertical = _bars(found[label])
            wer_interval = UTILITY[system].get("wer_interval")
            expected_x = _expected_extent(
                100 * u.wer, None if wer_interval is None else [100 * v for v in wer_interval]
            )
            assert horizontal == (None if expected_x is None else pytest.approx(expected_x, rel=1e-12))
            bounds = (result.summary.get("intervals") or {}).get(metric)
            expected_y = _expected_extent(value, bounds)
            assert vertical == (None if expected_y is None else pytest.approx(expected_y, rel=1e-9, abs=1e-12))
    # the bars that are missing are said to be, by name
    assert "none for pitch, measured without a bootstrap" in caption
    assert "none for pitch/ge2e/ignorant" in caption
    assert "Up and left: leaks identity and keeps the words; down and right: hides identity and loses the words" in (
        caption
    )
    assert NOTE.rstrip(".") in caption and "log2 N = 3.58" in caption  # log2 12
    assert "biased low" in caption and "†" in max_ax.get_title()


def test_a_system_keeps_its_colour_and_a_rung_its_marker(ladder_run):
    """Colour per system, the colour of the page's other figures; marker per attacker and rung, alike across systems."""
    from lidframe.report.figures import FigureMaker

    report, _, _ = ladder_run
    maker = FigureMaker(report)
    fig, _ = maker.utility_figure()
    points = {label: c.lines[0] for label, c in _containers(fig.axes[0]).items()}
    # the colours of the LID CCDF of every system (the comparison's first figure), drawn independently
    name, ccdf, _ = maker.overview_figures()[0]
    assert name == "lid_ccdf"
    ccdf_colour = {line.get_label(): line.get_color() for line in ccdf.axes[0].get_lines()}
    from matplotlib.colors import to_hex

    for label, system, *_ in ROWS:
        if system not in UTILITY:
            continue
        assert to_hex(points[label].get_color()) == to_hex(ccdf_colour[label]), label
    rung = {label: (attacker, scenario) for label, _, attacker, scenario, *_ in ROWS}
    marker = {label: line.get_marker() for label, line in points.items()}
    for a, b in [(a, b) for a in points for b in points if a < b]:
        assert (marker[a] == marker[b]) == (rung[a] == rung[b]), (a, b)
    # the markers' legend names each attacker and rung, the colours' each system
    legends = [[t.get_text() for t in legend.get_texts()] for legend in fig.legends]
    assert ["plain", "mcadams", "pitch"] in legends
    assert "ge2e · semi-informed (a-a)" in legends[1] and "ecapa · plain speech (o-o)" in legends[1]


@pytest.mark.slow
def test_one_system_without_any_interval_is_drawn_without_bars_and_the_caption_says_so():
    from lidframe.report.figures import FigureMaker

    dev, ev = simulate_system(leakage=0.4, seed=11, n_enrolled=8, trials_per_speaker=4)
    result = lidframe.evaluate(dev, ev)
    report = report_from_results({"anon": result}, utility={"anon": utility_record(0.42)}, created=CREATED)
    fig, caption = FigureMaker(report).utility_figure()
    for ax, value in zip(fig.axes[:2], (result.summary.alid, result.summary.lid_max)):
        (container,) = _containers(ax).values()
        assert not container.has_xerr and not container.has_yerr
        assert container.lines[0].get_xdata()[0] == pytest.approx(42.0)
        assert container.lines[0].get_ydata()[0] == pytest.approx(value)
    assert "No horizontal error bars" in caption and "No vertical error bars" in caption
    assert len(fig.legends) == 1  # the system's colour; no markers to tell apart
    page = parse(render_html(report))
    section = page.find("section", id="utility")
    assert section.find_all("figure") and section.find("table", id="utility-table")
    assert not [p for p in section.find_all("p") if NOT_APPLICABLE_CLASS in (p.attrs.get("class") or "")]


# ------------------------------------------------------------------ the table
def _rho(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def _interval_text(interval, scale: float, digits: int, unit: str = "") -> str:
    if interval is None:
        return ""
    return f"[{scale * interval[0]:.{digits}f}, {scale * interval[1]:.{digits}f}]{unit}"


@st.composite
def utilities(draw):
    wer = draw(st.floats(0.0, 1.6))
    wer_interval = draw(st.none() | st.tuples(st.floats(0.0, wer), st.floats(wer, 2.0)))
    rho = draw(st.none() | st.floats(-1.0, 1.0))
    rho_interval = None
    if rho is not None and wer_interval is not None:
        rho_interval = draw(st.tuples(st.floats(-1.0, rho), st.floats(rho, 1.0)))
    return {
        "wer": wer,
        "wer_interval": wer_interval,
        "rho_f0": rho,
        "rho_interval": rho_interval,
        "utterances": draw(st.integers(1, 20_000)),
        "speakers": draw(st.integers(1, 500)),
        "reference_words": draw(st.integers(1, 200_000)),
    }


@pytest.fixture(scope="module")
def two_systems():
    results = {}
    for seed, name in enumerate(("plain", "anon")):
        dev, ev = simulate_system(leakage=0.9 - 0.5 * seed, seed=seed, n_enrolled=8, trials_per_speaker=4)
        results[name] = lidframe.evaluate(dev, ev)
    return report_from_results(results, created=CREATED)


@settings(max_examples=40, deadline=None)
@given(st.lists(utilities(), min_size=1, max_size=2))
def test_the_table_prints_the_utility_records(two_systems, drawn):
    from lidframe.report.sections.utility import utility_table

    names = ["plain", "anon"][: len(drawn)]
    given_records = {name: utility_record(**values) for name, values in zip(names, drawn)}
    report = attrs.evolve(two_systems, utility=[SystemUtility(n, u, [n]) for n, u in given_records.items()])
    table = utility_table(report)
    titles = [c.title for c in table.columns]
    assert titles[:6] == ["system", "WER", "ρ_F0", "utterances", "speakers", "reference words"]
    assert len(table.rows) == len(drawn)
    for row, name, values in zip(table.rows, names, drawn):
        cell = dict(zip(titles, row))
        assert cell["system"].text == name
        assert cell["WER"].text == fmt_percent(values["wer"])
        assert cell["WER"].note == _interval_text(values["wer_interval"], 100.0, 1, " %")
        assert float(cell["WER"].sort) == values["wer"]
        assert cell["ρ_F0"].text == _rho(values["rho_f0"])
        assert cell["ρ_F0"].note == _interval_text(values["rho_interval"], 1.0, 3)
        for key in ("utterances", "speakers", "reference_words"):
            assert cell[key.replace("_", " ")].text == fmt_count(values[key])
        assert cell["recogniser"].text == given_records[name].recogniser


@pytest.mark.slow
def test_the_page_shows_the_table_the_note_and_the_chart(ladder_run):
    report, _, _ = ladder_run
    page = parse(render_html(report))
    section = page.find("section", id="utility")
    assert section.find("h2").text() == "Privacy and utility"
    table = section.find("table", id="utility-table")
    rows = table.find("tbody").find_all("tr")
    assert [r.find_all("td")[0].text() for r in rows] == list(UTILITY)  # page order; random has none
    for row, values in zip(rows, UTILITY.values()):
        cells = [td.text() for td in row.find_all("td")]
        wer = fmt_percent(values["wer"])
        if "wer_interval" in values:
            wer += " " + _interval_text(values["wer_interval"], 100.0, 1, " %")
        assert cells[1] == wer
        rho = _rho(values.get("rho_f0"))
        if "rho_interval" in values:
            rho += " " + _interval_text(values["rho_interval"], 1.0, 3)
        assert cells[2] == rho
    text = section.text()
    assert NOTE in text
    assert "Without a utility, and left out of the chart: random." in text
    assert "plain: 95 % bootstrap intervals (1,000 resamples of speakers, bca, seed 0)" in text
    assert "pitch: no intervals" in text
    (figure,) = section.find_all("figure")
    assert "Privacy against utility" in figure.find("figcaption").text()
    assert [a.attrs["href"] for a in page.find("nav").find_all("a")][:12] == [
        "#verdict", "#headlines", "#legal", "#worst-speakers", "#glossary", "#rows", "#worst-attacker",
        "#comparison", "#linkability", "#identification", "#ladder", "#utility",
    ]  # fmt: skip


def test_a_page_without_a_utility_says_why_and_how(rendered):
    for kind, (built, html) in rendered.items():
        section = parse(html).find("section", id="utility")
        (reason,) = [p for p in section.find_all("p") if NOT_APPLICABLE_CLASS in (p.attrs.get("class") or "")]
        assert not section.find_all("table") and not section.find_all("figure")
        if kind == "dp-audit":
            assert reason.text().startswith("Not applicable")
        else:
            assert "lidframe utility --data DIR --reference ORIGINAL" in reason.text(), kind
        assert built.report.utility == ()


# ------------------------------------------------------------------ builders refuse what they cannot show
def test_a_utility_of_no_system_or_not_a_utility_is_refused():
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=6, trials_per_speaker=3)
    result = lidframe.evaluate(dev, ev)
    with pytest.raises(InputError, match=r"utility given for 'anon-x', which is not one of the systems: .*'anon'"):
        report_from_results({"anon": result}, utility={"anon-x": utility_record(0.1)})
    with pytest.raises(InputError, match=r"utility of 'anon' is a dict, not a lidframe.utility.Utility"):
        report_from_results({"anon": result}, utility={"anon": {"wer": 0.1}})
    # a note without a utility is the caller's word on why there is none: the section says it first
    from lidframe.report.sections import absent_sections

    alone = report_from_results({"anon": result}, utility_note="The recogniser is not installed here.")
    assert absent_sections(alone)["utility"].startswith("The recogniser is not installed here. Not measured:")
    with pytest.raises(InputError, match="utility_note must be a non-empty sentence"):
        report_from_results({"anon": result}, utility={"anon": utility_record(0.1)}, utility_note="  ")
    # a label of its own system, or a system of several labels (systems=), both take a utility
    report = report_from_results(
        {"a/1": result, "a/2": result, "b": result}, systems={"a/1": "a", "a/2": "a"},
        utility={"a": utility_record(0.2), "b": utility_record(0.3)},
    )  # fmt: skip
    assert [(u.system, u.labels) for u in report.utility] == [("a", ("a/1", "a/2")), ("b", ("b",))]


def test_a_grid_takes_a_utility_per_system_for_every_cell_of_it(grid_built):
    from lidframe.report.sections.utility_chart import utility_points

    cells, out = grid_built.sources["cells"], grid_built.sources["out"]
    weak = [c for c in cells if c.to_dict()["system"] == "weak"]
    report = report_from_grid(
        cells, out_dir=out, created=CREATED, utility={"weak": utility_record(0.3), "strong": utility_record(0.8)}
    )
    by_system = {u.system: u.labels for u in report.utility}
    assert list(by_system) == ["strong", "weak"]  # the grid's order (sorted by system)
    assert len(by_system["weak"]) == len(weak) == 4
    assert all(label.startswith("weak") for label in by_system["weak"])
    points, title = utility_points(report)
    assert title == "calibrator · prior"
    variants = {p.label: p.variant for p in points}
    assert len(set(variants.values())) == 4  # one marker per calibrator and prior, shared by both systems
    for p in points:
        row = next(s for s in report.systems if s.label == p.label)
        assert p.variant == f"calibrator {row.calibrator} · prior {row.prior}"
        assert p.wer == {"weak": 0.3, "strong": 0.8}[p.system]
    with pytest.raises(InputError, match="not one of the grid's systems"):
        report_from_grid(cells, out_dir=out, utility={"medium": utility_record(0.3)})


# ------------------------------------------------------------------ the demos and lidframe evaluate
@pytest.mark.slow
def test_the_demo_outputs_hold_the_utility_in_summary_json_and_on_the_page(tmp_path):
    from lidframe.demo import write_demo_outputs

    results = {}
    for seed, label in enumerate(("plain/enc", "anon/enc", "random")):
        dev, ev = simulate_system(leakage=1.0 - 0.45 * seed, seed=seed, n_enrolled=8, trials_per_speaker=4)
        results[label] = lidframe.evaluate(dev, ev)
    utility = {"plain": utility_record(0.15, wer_interval=(0.1, 0.2)), "anon": utility_record(0.7, rho_f0=0.6)}
    arguments = {
        "table": "t", "record": {"seed": 0}, "inputs": {}, "title": "demo", "notes": [], "settings": {},
        "systems": {"plain/enc": "plain", "anon/enc": "anon"}, "log": lambda _: None,
    }  # fmt: skip
    page = write_demo_outputs(tmp_path, results, **arguments, utility=utility, utility_note=NOTE)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["utility"] == json.loads(json.dumps({system: u.to_dict() for system, u in utility.items()}))
    assert summary["utility_note"] == NOTE and summary["seed"] == 0
    section = parse(page.read_text()).find("section", id="utility")
    assert [r.find_all("td")[0].text() for r in section.find("tbody").find_all("tr")] == ["plain", "anon"]
    # a utility of no system: one line naming it, and nothing written
    folder = tmp_path / "bad"
    folder.mkdir()
    with pytest.raises(InputError, match="'mcadams', which is not one of the systems"):
        write_demo_outputs(folder, results, **arguments, utility={"mcadams": utility_record(0.5)})
    assert list(folder.iterdir()) == []
    # without one, summary.json has no utility key and the page says why
    write_demo_outputs(folder, results, **arguments)
    assert "utility" not in json.loads((folder / "summary.json").read_text())


@pytest.fixture()
def scores(tmp_path):
    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=10, trials_per_speaker=4)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    return tmp_path


@pytest.mark.slow
def test_evaluate_report_with_utility_shows_the_section(scores, capsys):
    u = utility_record(0.25, wer_interval=(0.2, 0.31), rho_f0=0.8, rho_interval=(0.7, 0.86))
    path = scores / "U.json"
    path.write_text(json.dumps(u.to_dict()))  # what lidframe utility --json writes
    code, out = run_cli(
        ["evaluate", "--dev", scores / "dev.npz", "--eval", scores / "eval.npz", "--name", "anon", "--n-boot", "100",
         "--report", scores / "audit", "--utility", path]
    )  # fmt: skip
    assert code == 0, out
    page = parse((scores / "audit" / "report.html").read_text())
    section = page.find("section", id="utility")
    (row,) = section.find("tbody").find_all("tr")
    cells = [td.text() for td in row.find_all("td")]
    assert cells[:3] == ["anon", "25.0 % [20.0, 31.0] %", "0.800 [0.700, 0.860]"]
    assert "Utility read from --utility" in section.text() and u.data in section.text()
    assert section.find_all("figure")
    # the utility's file among the inputs, with its digest
    inputs = page.find("table", id="inputs-table").text()
    assert str(path) in inputs and hashlib.sha256(path.read_bytes()).hexdigest() in inputs


def test_evaluate_refuses_a_bad_utility_file_in_one_line(scores, capsys):
    base = ["evaluate", "--dev", scores / "dev.npz", "--eval", scores / "eval.npz"]
    (scores / "garbled.json").write_text("{not json")
    good = utility_record(0.3).to_dict()
    (scores / "partial.json").write_text(json.dumps({k: v for k, v in good.items() if k != "wer"}))
    (scores / "wrong.json").write_text(json.dumps({**good, "utterances": "many"}))
    (scores / "good.json").write_text(json.dumps(good))
    cases = {
        "missing": (["--report", scores / "r", "--utility", scores / "none.json"], ["--utility", "none.json"]),
        "not JSON": (["--report", scores / "r", "--utility", scores / "garbled.json"], ["--utility", "garbled.json"]),
        "a key missing": (["--report", scores / "r", "--utility", scores / "partial.json"], ["partial.json", "'wer'"]),
        "a key of the wrong type": (
            ["--report", scores / "r", "--utility", scores / "wrong.json"],
            ["wrong.json", "'utterances'", "integer"],
        ),
        "without --report": (["--utility", scores / "good.json"], ["--utility", "good.json", "--report"]),
    }
    for case, (extra, expect) in cases.items():
        line = assert_refused([*base, *extra], capsys, expect=expect, watch=[scores])
        assert line.startswith("lidframe: error: --utility"), (case, line)
        assert not (scores / "r").exists(), case


@pytest.mark.slow
def test_importing_the_report_does_not_import_the_utility_wing():
    """lidframe.utility loads the attackers' audio front end (and torch): the report imports it only when given one."""
    import subprocess
    import sys

    code = "import sys, lidframe.report; print('lidframe.utility' in sys.modules, 'torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
