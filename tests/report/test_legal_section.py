"""The page's section "Singling out, linkability, inference": the numbers of the JSON's legal block, side by side.

Every number the section prints is compared with the ``legal`` block that the same
``lidframe evaluate --json --report`` run wrote: exactly through ``data-sort`` (and the
chance levels through ``data-chance``), and as printed.  A random attacker's page must read
its linkability as chance, and a pi_sing under e^-1 is never read as "below chance".
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lidframe
from lidframe import InputError
from lidframe.analyses.legal import SinglingOut
from lidframe.analyses.legal_criteria import LegalCriteria, legal_criteria
from lidframe.data.simulate import simulate_system
from lidframe.report import report_from_results
from lidframe.report.sections import absent_sections
from lidframe.report.sections.legal import criteria_cards
from tests.report.conftest import run_cli
from tests.report.htmltree import parse

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")


def percent(value) -> str:
    return f"{100 * value:.1f} %"


def interval(low, high) -> str:
    return f"[{100 * low:.1f}, {100 * high:.1f}] %"


def section_of(page_text: str):
    return parse(page_text).find("section", id="legal")


def items_of(section) -> dict[str, object]:
    """data-metric -> its element, over the section's cards."""
    return {d.attrs["data-metric"]: d for d in section.find_all("div") if "data-metric" in d.attrs}


def evaluate_page(folder, *, leakage: float, trials: int, seed: int = 2, flags=()) -> tuple[str, dict, str]:
    dev, ev = simulate_system(leakage=leakage, seed=seed, n_enrolled=12, trials_per_speaker=trials)
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    argv = ["evaluate", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz", *flags]
    code, out = run_cli([*argv, "--json", folder / "s.json", "--report", folder / "audit"])
    assert code == 0, out
    page = (folder / "audit" / "report.html").read_text(encoding="utf-8")
    return page, json.loads((folder / "s.json").read_text()), out


def test_the_section_shows_the_numbers_of_the_json(cli_runs):
    run = cli_runs["evaluate"]
    legal = run.record["legal"]
    section = section_of(run.page.read_text(encoding="utf-8"))
    assert section.find("h2").text() == "Singling out, linkability, inference"
    items = items_of(section)
    points = legal["linkability"]["points"]
    single = legal["singling_out"]
    want = {
        "pi_sing": (single["pi_sing"], single["low"], single["high"], single["chance"]),
        "pi_link_2": tuple(points[0][k] for k in ("pi_link", "low", "high", "chance")),
        "pi_link_n": tuple(points[-1][k] for k in ("pi_link", "low", "high", "chance")),
    }
    assert points[0]["n_prime"] == 2 and points[-1]["n_prime"] == run.record["n_enrolled"]
    for key, (value, low, high, chance) in want.items():
        item = items[key]
        assert float(item.attrs["data-sort"]) == value and float(item.attrs["data-chance"]) == chance, key
        assert item.find("dd").text() == f"{percent(value)} {interval(low, high)} chance {percent(chance)}", key
    for key in ("alid", "lid_q99"):  # inference: the headline's LID
        assert float(items[key].attrs["data-sort"]) == run.record[key]
        low, high = run.record["intervals"][key]
        assert items[key].find("dd").text() == f"{run.record[key]:.2f} [{low:.2f}, {high:.2f}] chance 0.00"
    # the quotable sentences carry the same numbers
    cards = {c.attrs["data-criterion"]: c for c in section.find_all("div") if "data-criterion" in c.attrs}
    assert list(cards) == ["singling-out", "linkability", "inference"]
    sentence = cards["singling-out"].find("p", **{"class": "reading"}).text()
    assert (
        f"in {percent(single['pi_sing'])} of its attempts (interval {interval(single['low'], single['high'])})"
        in sentence
    )
    assert f"over {single['draws']} seeded draws per speaker" in sentence
    # the curve's every point, in the table of its appendix
    section = parse(run.page.read_text(encoding="utf-8")).find("section", id="linkability")
    rows = section.find("table", id="linkability-table").find("tbody").find_all("tr")
    assert [float(r.find_all("td")[1].attrs["data-sort"]) for r in rows] == [p["n_prime"] for p in points]
    assert [float(r.find_all("td")[2].attrs["data-sort"]) for r in rows] == [p["pi_link"] for p in points]
    assert [float(r.find_all("td")[3].attrs["data-sort"]) for r in rows] == [p["chance"] for p in points]
    (figure,) = section.find_all("figure")
    assert figure.find_all("svg") and "chance 1/N′ (dashed)" in figure.find("figcaption").text()


def test_a_random_attackers_page_reads_linkability_as_chance(tmp_path):
    page, record, _ = evaluate_page(tmp_path, leakage=0.0, trials=6, flags=["--bootstrap", "--n-boot", "300"])
    points = record["legal"]["linkability"]["points"]
    assert all(p["low"] <= p["chance"] <= p["high"] for p in points)  # the control: chance inside every interval
    section = section_of(page)
    linkability = section.find("div", data_criterion="linkability").find("p", **{"class": "reading"}).text()
    assert linkability.count("consistent with chance") == 2 and "above chance" not in linkability
    assert f"against {percent(0.5)} by chance" in linkability
    inference = section.find("div", data_criterion="inference").text()
    assert "consistent with nothing learnt" in inference


def test_a_leaky_systems_page_reads_linkability_above_chance(tmp_path):
    page, record, _ = evaluate_page(tmp_path, leakage=0.8, trials=6, flags=["--bootstrap", "--n-boot", "300"])
    linkability = section_of(page).find("div", data_criterion="linkability").text()
    assert linkability.count("above chance (its interval lies above it)") == 2


def test_one_trial_per_speaker_shows_why_singling_out_is_absent(tmp_path):
    page, record, _ = evaluate_page(tmp_path, leakage=0.5, trials=1)
    why = record["legal"]["absent"]["singling_out"]
    card = section_of(page).find("div", data_criterion="singling-out")
    assert card.find("p", **{"class": "criterion-absent"}).text() == " ".join(f"Not computed: {why}".split())
    assert not [d for d in card.find_all("div") if "data-metric" in d.attrs]


def _single(pi: float, low: float, high: float) -> SinglingOut:
    return SinglingOut(
        n=10, l=1, pi_sing=pi, low=low, high=high, chance=math.exp(-1), draws=20, level=0.95, method="bca"
    )


@pytest.fixture(scope="module")
def evaluated():
    dev, ev = simulate_system(leakage=0.4, seed=4, n_enrolled=10, trials_per_speaker=3)
    return ev, lidframe.evaluate(dev, ev, bootstrap=lidframe.Bootstrap(n_boot=100))


def test_a_pi_sing_under_e_minus_1_is_not_read_as_below_chance(evaluated):
    ev, result = evaluated
    computed = legal_criteria(result, ev, bootstrap=None)
    for pi, low, high, verdict in (
        (0.30, 0.28, 0.33, "not above chance (under e^−1, where a random predicate calibrated on few recordings"),
        (0.37, 0.33, 0.41, "consistent with chance (its interval holds it)"),
        (0.50, 0.45, 0.55, "above chance (its interval lies above it)"),
        (0.30, math.nan, math.nan, "without an interval, not told apart from chance"),
    ):
        legal = LegalCriteria(
            linkability=computed.linkability,
            singling_out=_single(pi, low, high),
            n_enrolled=10,
            n_trials=30,
            seed=0,
        )
        report = report_from_results({"x": result}, legal={"x": legal})
        cards = criteria_cards(report.systems[0])
        assert cards is not None
        sentence = cards.cards[0].sentence
        assert verdict in sentence and "below chance" not in sentence, sentence


def test_without_a_legal_record_the_section_says_how_to_get_one(evaluated):
    ev, result = evaluated
    report = report_from_results({"x": result})
    assert "lidframe evaluate computes singling out and linkability" in absent_sections(report)["legal"]
    with pytest.raises(InputError, match="legal of 'x' is a dict, not a LegalCriteria"):
        report_from_results({"x": result}, legal={"x": {}})
    with pytest.raises(InputError, match="legal given for 'y'"):
        report_from_results({"x": result}, legal={"y": legal_criteria(result, ev, bootstrap=None)})


# ---------------------------------------------------------------- the compact table of more than two systems
def _link(ev, result, low2: float, high2: float, lown: float, highn: float):
    """*result*'s linkability curve with the intervals of pi_link(2) and pi_link(N) set (the values kept)."""
    import attrs

    curve = legal_criteria(result, ev, bootstrap=None).linkability
    points = list(curve.points)
    points[0] = attrs.evolve(points[0], low=low2, high=high2)
    points[-1] = attrs.evolve(points[-1], low=lown, high=highn)
    return attrs.evolve(curve, points=points)


#: label -> (pi_link(2) interval, pi_link(N) interval, pi_sing's (value, low, high)): each reading of chance once.
CASES = {
    "above": ((0.55, 0.9), (0.2, 0.9), (0.5, 0.45, 0.55)),
    "holds": ((0.3, 0.7), (0.0, 0.9), (0.37, 0.33, 0.41)),
    "under": ((0.1, 0.4), (0.0, 0.05), (0.30, 0.28, 0.33)),
    "none": ((math.nan, math.nan), (math.nan, math.nan), (0.30, math.nan, math.nan)),
}


@pytest.fixture(scope="module")
def many(evaluated):
    """A report of four systems (CASES) with legal records, and its page."""
    from lidframe.report import render_html

    ev, result = evaluated
    legal = {}
    for label, (two, n, (pi, low, high)) in CASES.items():
        legal[label] = LegalCriteria(
            linkability=_link(ev, result, *two, *n),
            singling_out=_single(pi, low, high),
            n_enrolled=10,
            n_trials=30,
            seed=0,
        )
    report = report_from_results(dict.fromkeys(CASES, result), legal=legal)
    return legal, render_html(report)


def _table_rows(page_text: str) -> dict[str, object]:
    table = section_of(page_text).find("table", id="legal-table")
    return {tr.attrs["data-system"]: tr for tr in table.find("tbody").find_all("tr")}


def test_more_than_two_systems_show_one_compact_table_of_the_legal_records_numbers(many):
    legal, page = many
    section = section_of(page)
    assert not [d for d in section.find_all("div") if "data-criterion" in d.attrs]  # no card in the summary
    assert "Appendix" in section.find("p", **{"class": "explain"}).text()
    rows = _table_rows(page)
    assert list(rows) == list(CASES)
    for label, tr in rows.items():
        points, single = legal[label].linkability.points, legal[label].singling_out
        want = {
            "pi_link_2": (points[0].pi_link, points[0].low, points[0].high, 0.5),
            "pi_link_n": (points[-1].pi_link, points[-1].low, points[-1].high, 1 / 10),
            "pi_sing": (single.pi_sing, single.low, single.high, math.exp(-1)),
        }
        assert points[0].n_prime == 2 and points[-1].n_prime == 10
        cells = {td.attrs["data-metric"]: td for td in tr.find_all("td") if "data-metric" in td.attrs}
        for key, (value, low, high, chance) in want.items():
            td = cells[key]
            assert float(td.attrs["data-sort"]) == value and float(td.attrs["data-chance"]) == pytest.approx(chance)
            shown = percent(value) if math.isnan(low) else f"{percent(value)} {interval(low, high)}"
            assert td.text() == shown, (label, key)
        assert tr.find("td", data_chance_of="pi_link_n").text() == percent(0.1)
    # every system's three cards, with their quotable sentences, are in the appendix
    appendix = parse(page).find("section", id="linkability")
    assert [d.attrs["data-system"] for d in appendix.find_all("div") if "data-system" in d.attrs] == list(CASES)


def test_the_compact_tables_reading_follows_the_interval(many):
    _, page = many
    rows = _table_rows(page)
    readings = {
        label: {td.attrs["data-reading"]: td.text() for td in tr.find_all("td") if "data-reading" in td.attrs}
        for label, tr in rows.items()
    }
    assert readings["above"] == {"pi_link_2": "above", "pi_link_n": "above", "pi_sing": "above"}
    assert readings["holds"] == {"pi_link_2": "consistent", "pi_link_n": "consistent", "pi_sing": "consistent"}
    # an interval under chance: linkability below, a pi_sing under e^-1 never read as below chance
    assert readings["under"] == {"pi_link_2": "below", "pi_link_n": "below", "pi_sing": "not above"}
    assert readings["none"] == {"pi_link_2": "no interval", "pi_link_n": "no interval", "pi_sing": "no interval"}


@settings(max_examples=60, deadline=None)
@given(
    chance=st.floats(0.01, 0.99),
    low=st.floats(0.0, 1.0),
    width=st.floats(0.0, 1.0),
)
def test_a_number_is_read_above_chance_only_where_its_interval_lies_above_it(chance, low, width):
    from lidframe.report.sections.legal import chance_reading
    from lidframe.stats.interval import Interval

    high = min(1.0, low + width)
    reading = chance_reading(Interval(math.nan, low, high), chance)
    assert (reading == "above") == (low > chance)
    assert (reading == "under") == (high < chance)
    assert (reading == "holds") == (low <= chance <= high)
    assert chance_reading(None, chance) == "none"


def test_one_or_two_systems_keep_their_cards_in_the_summary(many, evaluated):
    from lidframe.report import render_html

    legal, _ = many
    _, result = evaluated
    two = {label: legal[label] for label in ("above", "under")}
    page = render_html(report_from_results(dict.fromkeys(two, result), legal=two))
    section = section_of(page)
    assert not section.find_all("table", id="legal-table")
    assert [d.attrs["data-system"] for d in section.find_all("div") if "data-system" in d.attrs] == list(two)


def test_the_demo_pages_compact_table_is_its_summary_jsons_legal_blocks(pages):
    """The test's real-voice demo page (six systems): the table holds each headline row's legal block."""
    page = pages["demo"].read_text(encoding="utf-8")
    record = json.loads((pages["demo"].parent / "summary.json").read_text())
    rows = _table_rows(page)
    assert len(rows) == 6
    for label, tr in rows.items():
        block = record["systems"][label]["legal"]
        points = block["linkability"]["points"]
        want = {"pi_link_2": points[0]["pi_link"], "pi_link_n": points[-1]["pi_link"]}
        want["pi_sing"] = block["singling_out"]["pi_sing"]
        got = {
            td.attrs["data-metric"]: float(td.attrs["data-sort"])
            for td in tr.find_all("td")
            if "data-metric" in td.attrs
        }
        assert got == want, label
