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
