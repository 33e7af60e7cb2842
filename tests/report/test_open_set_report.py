"""report.html in the open set: an "Open set" section with the summary's numbers, absent in the closed set.

Every number of the section is compared with the Result's ``summary.open_set`` (exactly,
through the cells' full-precision ``data-sort``, and as printed, formatted here), the
page written by ``lidframe evaluate --report`` with the JSON of the same run, and the
reading sentence and ceiling with values worked out by hand.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import lidframe
from lidframe import ScoreSet, Uniform, WatchList
from lidframe.data.simulate import simulate_system
from tests.report.conftest import CREATED, run_cli
from tests.report.formatting import fmt_bits, fmt_percent, sort_text
from tests.report.htmltree import parse
from tests.report.test_browser import browser, check_page  # noqa: F401 (a fixture, and the page checks)

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

OPEN = "uniform?outside=0.2"
GROUPS = ("all trials", "enrolled", "outsider", "membership of enrolled")


def with_outsiders(data: ScoreSet, n_dropped: int) -> ScoreSet:
    """*data* with its last *n_dropped* enrolled speakers removed: their trials become outsider trials."""
    return ScoreSet(data.scores[:, :-n_dropped], data.enrolled[:-n_dropped], data.trial_speakers, data.trial_ids)


@pytest.fixture(scope="module")
def sets():
    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=10, trials_per_speaker=6)
    return with_outsiders(dev, 2), with_outsiders(ev, 2)


@pytest.fixture(scope="module")
def pages(sets):
    """(results, the page of an open and a closed system, the page of the closed system alone)."""
    from lidframe.report import render_html, report_from_results

    dev, ev = sets
    results = {
        "open": lidframe.evaluate(dev, ev, prior=OPEN, bootstrap=lidframe.Bootstrap(n_boot=100)),
        "closed": lidframe.evaluate(dev, ev),
    }
    both = render_html(report_from_results(results, created=CREATED))
    closed = render_html(report_from_results({"closed": results["closed"]}, created=CREATED))
    return results, parse(both), parse(closed), both


def group_values(summary, name: str):
    o = summary.open_set
    if name == "all trials":
        n = summary.n_enrolled_trials + summary.n_outsider_trials
        return n, summary, (summary.intervals or {}).get("alid")
    group, key = {
        "enrolled": (o.enrolled, "alid_enrolled"),
        "outsider": (o.outsider, "alid_outsider"),
        "membership of enrolled": (o.membership_enrolled, "membership_enrolled"),
    }[name]
    return group.n_trials, group, (summary.intervals or {}).get(key)


def test_the_open_set_table_shows_each_group_of_the_summary(pages):
    results, root, _, _ = pages
    summary = results["open"].summary
    section = root.find("section", id="open-set")
    assert section.find("h2").text() == "Open set"
    table = section.find("table", id="open-set-table")
    headers = [th.text().replace("↕", "").strip() for th in table.find("thead").find_all("th")]
    assert headers == ["system", "group", "trials", "ALID", "PDR", "LID+", "LID−", "LIDmax"]
    rows = [tr.find_all("td") for tr in table.find("tbody").find_all("tr")]
    assert [r[0].text() for r in rows] == ["open"] * 4  # the closed system has no row
    assert [r[1].text() for r in rows] == list(GROUPS)
    for cells in rows:
        n, group, interval = group_values(summary, cells[1].text())
        assert cells[2].text() == f"{n:,}" and cells[2].attrs["data-sort"] == str(n)
        for cell, key, fmt in zip(
            cells[3:], ("alid", "pdr", "lid_pos", "lid_neg", "lid_max"), (fmt_bits, fmt_percent, *[fmt_bits] * 3)
        ):
            value = getattr(group, key)
            assert cell.attrs["data-sort"] == sort_text(value), (cells[1].text(), key)
            shown = fmt(value)
            if key == "alid":
                shown += f" [{fmt_bits(interval.low)}, {fmt_bits(interval.high)}]"
            assert cell.text() == shown, (cells[1].text(), key)


def test_the_misattribution_table_shows_the_rates_and_the_prior_mass(pages):
    results, root, _, _ = pages
    summary = results["open"].summary
    o = summary.open_set
    table = root.find("section", id="open-set").find("table", id="misattribution-table")
    (cells,) = [tr.find_all("td") for tr in table.find("tbody").find_all("tr")]
    intervals = summary.intervals
    texts = [c.text() for c in cells]
    low, high = intervals["misattribution_rate"].low, intervals["misattribution_rate"].high
    low_t, high_t = (
        intervals["misattribution_rate_at_threshold"].low,
        intervals["misattribution_rate_at_threshold"].high,
    )
    assert texts == [
        "open",
        "0.2",
        "given",
        f"{summary.n_outsider_trials:,}",
        f"{fmt_percent(o.misattribution_rate)} [{fmt_percent(low)[:-2]}, {fmt_percent(high)[:-2]}] %",
        "0.9",
        f"{fmt_percent(o.misattribution_rate_at_threshold)} [{fmt_percent(low_t)[:-2]}, {fmt_percent(high_t)[:-2]}] %",
    ]
    assert cells[4].attrs["data-sort"] == repr(o.misattribution_rate)
    # the rate by hand from the Result's per-trial arrays
    result = results["open"]
    assert o.misattribution_rate == np.mean(result.top_posterior[result.is_outsider] > 0.5)


def test_the_section_reads_for_an_auditor_and_draws_the_figure(pages):
    results, root, _, page = pages
    section = root.find("section", id="open-set")
    text = section.find("p").text()
    for phrase in (
        "membership disclosure: above 0 bits the attacker learned that the voice is not enrolled",
        "Misattribution is the harm an outsider suffers when the attacker links the voice to an enrolled person",
        "top enrolled posterior exceeds 0.5",
    ):
        assert phrase in text
    assert "marked auto" not in text  # no π_∅ from the dev set here
    (figure,) = section.find_all("figure")
    result = results["open"]
    n_out = int(result.is_outsider.sum())
    caption = figure.find("figcaption").text()
    assert f"the {result.lid.size - n_out} enrolled and the {n_out} outsider trials" in caption
    assert "threshold 0.9" in caption and figure.find("svg").attrs["role"] == "img"
    assert '<a href="#open-set">Open set</a>' in page


def test_a_closed_set_page_has_no_open_set_section(pages):
    _, _, closed, _ = pages
    # the section stays (every page has the same sections, issue 27) and says why it does not apply
    assert not closed.find_all("table", id="open-set-table")
    assert "π_∅" not in closed.text()
    (section,) = closed.find_all("section", id="open-set")
    assert "Not evaluated: every system here was evaluated in the closed set" in section.text()


def test_the_open_headline_reads_every_trial_against_its_ceiling(pages, sets):
    results, root, _, _ = pages
    result = results["open"]
    lid = result.lid
    assert np.isfinite(lid).all()
    card = root.find("article", id="card-1")
    q99 = result.summary.lid_q99
    above = int((lid > q99).sum())
    ceiling = math.log2(8 / 0.8)  # uniform over 8 enrolled, 1 - 0.2 of the mass on them; -log2 0.2 is lower
    reading = card.find("p", **{"class": "reading"}).text()
    assert f"({above} of {lid.size})" in reading and f"of a possible {ceiling:.2f}" in reading


def test_the_ceiling_is_the_largest_minus_log2_prior_of_a_true_hypothesis(sets):
    from lidframe.report import lid_ceiling_bits

    dev, ev = sets
    assert lid_ceiling_bits(lidframe.evaluate(dev, ev, prior=Uniform(outside=0.2))) == pytest.approx(
        math.log2(8) - math.log2(0.8)
    )
    # nobody enrolled is the least likely hypothesis: its ceiling -log2 0.01 is the largest
    assert lidframe.report.lid_ceiling_bits(lidframe.evaluate(dev, ev, prior=Uniform(outside=0.01))) == pytest.approx(
        -math.log2(0.01)
    )
    watch = WatchList(list(ev.enrolled[:2]), 4.0, outside=0.3)
    result = lidframe.evaluate(dev, ev, prior=watch)
    unwatched = 1 / (2 * 4 + 6)  # the prior given enrolment of a speaker not on the list
    want = max(-math.log2(0.7 * unwatched), -math.log2(0.3))
    assert lid_ceiling_bits(result) == pytest.approx(want)


def test_evaluate_report_shows_the_numbers_of_the_json(sets, tmp_path):
    dev, ev = sets
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    argv = ["evaluate", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz", "--prior", "uniform?outside=auto",
            "--misattribution-threshold", "0.75", "--json", tmp_path / "s.json", "--report", tmp_path / "audit"]  # fmt: skip
    code, out = run_cli(argv)
    assert code == 0, out
    summary = json.loads((tmp_path / "s.json").read_text())
    o = summary["open_set"]
    root = parse((tmp_path / "audit" / "report.html").read_text())
    section = root.find("section", id="open-set")
    assert "marked auto is the dev set's share of outsider trials" in section.find("p").text()
    rows = [tr.find_all("td") for tr in section.find("table", id="open-set-table").find("tbody").find_all("tr")]
    stored = {"all trials": summary, "enrolled": o["enrolled"], "outsider": o["outsider"],
              "membership of enrolled": o["membership_enrolled"]}  # fmt: skip
    for cells in rows:
        group = stored[cells[1].text()]
        for cell, key in zip(cells[3:], ("alid", "pdr", "lid_pos", "lid_neg", "lid_max")):
            assert cell.attrs["data-sort"] == sort_text(group[key])
    (cells,) = [
        tr.find_all("td") for tr in section.find("table", id="misattribution-table").find("tbody").find_all("tr")
    ]
    assert cells[1].attrs["data-sort"] == repr(o["outside"]) and cells[2].text().startswith("auto")
    assert cells[4].attrs["data-sort"] == sort_text(o["misattribution_rate"])
    assert cells[5].text() == "0.75" and cells[6].attrs["data-sort"] == sort_text(o["misattribution_rate_at_threshold"])
    settings = {dt.text(): dd.text() for dt, dd in zip(root.find_all("dt"), root.find_all("dd"))}
    assert settings.get("--misattribution-threshold") == "0.75"
    # the per-speaker section of the same page has the outsider speakers, flagged
    speakers = [tr.find_all("td") for tr in root.find("table", id="per-speaker-1-1").find("tbody").find_all("tr")]
    flags = [cells[-3].text() for cells in speakers]
    assert flags == ["False"] * 8 + ["True"] * 2


@pytest.mark.browser
@pytest.mark.slow
def test_the_open_set_page_in_headless_chromium(browser, pages, tmp_path):  # noqa: F811 (the imported fixture)
    """The checks of tests/report/test_browser.py, and the open-set table sorts by ALID in the page."""
    from selenium.webdriver.common.by import By

    from tests.report.test_browser import _click_header

    _, _, _, page = pages
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    check_page(browser, path, "evaluate", tmp_path)
    assert _click_header(browser, "open-set-table", "ALID") == "ascending"
    cells = browser.find_elements(By.CSS_SELECTOR, "#open-set-table tbody tr td:nth-child(4)")
    values = [float(c.get_attribute("data-sort")) for c in cells]
    assert values == sorted(values) and len(values) == 4
