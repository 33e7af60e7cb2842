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
        "top enrolled posterior is above 0.5",
    ):
        assert phrase in text
    assert "marked auto" not in text  # no π_∅ from the dev set here
    figure, roc = section.find_all("figure")  # the open set's, then its membership ROC
    assert "Membership attack of open" in roc.find("figcaption").text()
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
    # no π_∅ but in the glossary (whose note on LIDmax says what an open set does to its ceiling)
    assert all("π_∅" not in s.text() for s in closed.find_all("section") if s.attrs.get("id") != "glossary")
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


def brute_tpr_at_fpr(members: np.ndarray, outsiders: np.ndarray, budget: float) -> tuple[int, int]:
    """(members flagged, outsiders flagged) of the best threshold 'score >= t' with FPR <= budget, by sweeping every t.

    Among the thresholds of the largest TPR within the budget, the one that flags the fewest outsiders.
    """
    best = (0, 0)
    for t in [np.inf, *np.unique(np.concatenate([members, outsiders]))]:
        tp, fp = int((members >= t).sum()), int((outsiders >= t).sum())
        if fp / outsiders.size <= budget and (tp > best[0] or (tp == best[0] and fp < best[1])):
            best = (tp, fp)
    return best


def clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    """The exact binomial interval from the beta quantiles (0 and 1 at the ends)."""
    from scipy.stats import beta

    alpha = 1 - level
    low = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def test_the_membership_table_is_a_brute_force_threshold_sweep():
    """TPR at FPR 1 % and 0.1 % on the page: every threshold swept here, the intervals from the beta quantiles."""
    from lidframe.report import render_html, report_from_results

    dev, ev = simulate_system(leakage=0.8, seed=6, n_enrolled=30, trials_per_speaker=4, n_outsiders=40)
    result = lidframe.evaluate(dev, ev, prior=OPEN)
    closed = lidframe.evaluate(dev, ev)  # no membership attack: not a row, and not said to be missing
    section = parse(render_html(report_from_results({"open": result, "closed": closed}))).find("section", id="open-set")
    titles = [th.text() for th in section.find("table", id="membership-table").find("thead").find_all("th")]
    assert titles == ["system", "FPR budget", "membership TPR", "enrolled flagged", "membership FPR",
                      "outsiders flagged", "threshold", "resolved"]  # fmt: skip
    rows = [tr.find_all("td") for tr in section.find("table", id="membership-table").find("tbody").find_all("tr")]
    assert [(c[0].text(), c[1].text()) for c in rows] == [("open", "1 %"), ("open", "0.1 %")]
    # each trial's membership posterior p(enrolled | s): (1 - π_∅) 2^membership_bits for an enrolled trial, and
    # 1 - π_∅ 2^LID for an outsider trial (its LID is log2 of p(nobody | s) / π_∅)
    outsider = result.is_outsider
    posterior = np.where(outsider, 1 - 0.2 * 2.0**result.lid, 0.8 * 2.0**result.membership_bits)
    members, outsiders = posterior[~outsider], posterior[outsider]
    assert outsiders.size == 160
    for cells, budget in zip(rows, (0.01, 0.001)):
        tp, fp = brute_tpr_at_fpr(members, outsiders, budget)
        assert cells[3].text() == f"{tp:,} of {members.size:,}" and cells[5].text() == f"{fp:,} of {outsiders.size:,}"
        assert float(cells[2].attrs["data-sort"]) == pytest.approx(tp / members.size, rel=1e-15)
        low, high = clopper_pearson(tp, members.size, 0.95)
        assert (
            cells[2].text() == f"{fmt_percent(tp / members.size)} [{fmt_percent(low)[:-2]}, {fmt_percent(high)[:-2]}] %"
        )
        low, high = clopper_pearson(fp, outsiders.size, 0.95)
        assert (
            cells[4].text()
            == f"{fmt_percent(fp / outsiders.size)} [{fmt_percent(low)[:-2]}, {fmt_percent(high)[:-2]}] %"
        )
        assert cells[7].text() == (
            "yes" if outsiders.size * budget >= 1 else "no: under 1/budget = 1,000 outsider trials"
        )
    assert "No membership attack measured" not in section.text()
    assert "judged where membership-inference work judges it" in section.text()


def test_an_open_set_without_outsiders_says_it_has_no_membership_attack():
    from lidframe.report import render_html, report_from_results

    dev, ev = simulate_system(leakage=0.4, seed=6, n_enrolled=8, trials_per_speaker=4)
    result = lidframe.evaluate(dev, ev, prior=OPEN)
    assert result.summary.open_set.membership_detection is None
    section = parse(render_html(report_from_results({"open": result}))).find("section", id="open-set")
    assert not section.find_all("table", id="membership-table")
    assert "No membership attack measured for open: its eval set has no outsider trials" in section.text()


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
