"""The worst case across attackers on the page, in ``summary.json`` and from ``lidframe report``.

Every pick the page, a demo's ``summary.json`` and a grid report's ``summary.json`` show
is recomputed here from the Results' own summaries (per system, the attacker whose ALID,
and the one whose LID q99, is largest: the first given of equal ones), and every verdict
from the rule that a system fails where any of its attackers fails a limit.
"""

from __future__ import annotations

import json
import math

import pytest

import lidframe
from lidframe.analyses.verdict import EXIT_NOT_MET, read_policy
from lidframe.data.simulate import simulate_system
from tests.report.conftest import run_cli
from tests.report.htmltree import parse

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

#: label -> leakage: two systems, each attacked by two or three attackers ("SYSTEM/ATTACKER").
ATTACKS = {
    "pitch/ge2e": 0.2,
    "pitch/ecapa": 0.7,
    "pitch/random": 0.0,
    "mcadams/ge2e": 0.25,
    "mcadams/ecapa": 0.3,
}
POLICY = '[[limit]]\nmetric = "alid"\nat_most = 0.5\n'


@pytest.fixture(scope="module")
def results():
    boot = lidframe.Bootstrap(n_boot=100, seed=0)
    out = {}
    for seed, (label, leakage) in enumerate(ATTACKS.items()):
        dev, ev = simulate_system(leakage=leakage, seed=seed, n_enrolled=10, trials_per_speaker=5)
        out[label] = lidframe.evaluate(dev, ev, bootstrap=boot)
    return out


def _by_hand(summaries):
    """system -> metric -> (attacker, estimate, low, high): the largest estimate, the first given of equal ones."""
    expected = {}
    for label, summary in summaries.items():
        system, attacker = label.split("/", 1)
        for key in ("alid", "lid_q99"):
            held = expected.setdefault(system, {}).get(key)
            value = float(summary.value(key))
            if held is None or value > held[1]:
                interval = summary.intervals[key]
                expected[system][key] = (attacker, value, interval.low, interval.high)
    return expected


def _table_rows(html):
    table = parse(html).find("table", id="worst-attacker-table")
    return [list(tr.find_all("td")) for tr in table.find("tbody").find_all("tr")]


def test_the_page_names_each_systems_worst_attacker_with_its_interval(results, tmp_path):
    from lidframe.report import render_html, report_from_results

    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    report = report_from_results(
        results, systems={label: label.split("/")[0] for label in results}, policy=read_policy(path)
    )
    expected = _by_hand({label: r.summary for label, r in results.items()})
    rows = _table_rows(render_html(report))
    assert [row[0].text() for row in rows] == list(expected)
    for row in rows:
        system = row[0].text()
        assert row[1].text() == str(sum(label.startswith(f"{system}/") for label in results))
        for k, key in enumerate(("alid", "lid_q99")):
            attacker, value, low, high = expected[system][key]
            assert row[2 + 2 * k].text().split(" ")[0] == attacker
            assert row[3 + 2 * k].text() == f"{value:.2f} [{low:.2f}, {high:.2f}]"
            assert float(row[3 + 2 * k].attrs["data-sort"]) == value
        # the verdict of the worst case: fail where one attacker's whole ALID interval lies above the limit
        lows = [results[label].summary.intervals["alid"] for label in results if label.startswith(f"{system}/")]
        highs_pass = all(i.high <= 0.5 for i in lows)
        outcome = "FAIL" if any(i.low > 0.5 for i in lows) else "PASS" if highs_pass else "UNDECIDED"
        assert row[-1].text().split(" ")[0] == outcome
    # pitch: its ecapa attacker alone breaks the limit, the others meet it; the system fails
    pitch = {label: results[label].summary.intervals["alid"] for label in results if label.startswith("pitch/")}
    assert pitch["pitch/ecapa"].low > 0.5 and pitch["pitch/random"].high <= 0.5
    assert "ALID ≤ 0.5 bits: ecapa" in rows[0][-1].text()


def test_a_demos_summary_json_holds_the_worst_case(results, tmp_path):
    from lidframe.demo import write_demo_outputs

    systems = {label: label.split("/")[0] for label in results}
    write_demo_outputs(
        tmp_path, results, table="t", record={"seed": 0}, inputs={}, title="t", notes=[], settings={},
        systems=systems, log=lambda _: None,
    )  # fmt: skip
    summary = json.loads((tmp_path / "summary.json").read_text())
    block = summary["worst_case"]
    assert block["metrics"] == ["alid", "lid_q99"]
    # the JSON's own per-row summaries (NaN as null) give the same picks
    stored = {label: _JsonSummary(entry) for label, entry in summary["systems"].items()}
    expected = _by_hand(stored)
    assert list(block["systems"]) == list(expected)
    for system, entry in block["systems"].items():
        assert entry["attackers"] == [label.split("/", 1)[1] for label in results if systems[label] == system]
        for key in ("alid", "lid_q99"):
            attacker, value, low, high = expected[system][key]
            pick = entry[key]
            assert (pick["attacker"], pick["estimate"]) == (attacker, pytest.approx(value, rel=1e-12))
            assert (pick["low"], pick["high"]) == pytest.approx((low, high), rel=1e-12)
            assert pick["separation"] in ("separated", "overlapping", "tied", "no interval")
            assert pick["clear"] == (pick["separation"] == "separated")
    page = (tmp_path / "report.html").read_text()
    assert parse(page).find("section", id="worst-attacker").find_all("table")


class _JsonSummary(dict):
    """A ``Result.to_dict()`` of summary.json read as _by_hand reads a Summary: metrics by key, intervals as records."""

    def __init__(self, entry):
        super().__init__(entry)
        self.intervals = {key: _Bounds(*entry["intervals"][key]) for key in ("alid", "lid_q99")}

    def value(self, key):
        return self[key]


class _Bounds:
    def __init__(self, low, high):
        self.low, self.high = low, high


def test_a_system_with_one_attacker_each_has_no_worst_case_block(results, tmp_path):
    from lidframe.demo import write_demo_outputs
    from lidframe.report import render_html, report_from_results

    one = {label: results[label] for label in ("pitch/ge2e", "mcadams/ge2e")}
    write_demo_outputs(
        tmp_path, one, table="t", record={}, inputs={}, title="t", notes=[], settings={}, log=lambda _: None
    )
    assert "worst_case" not in json.loads((tmp_path / "summary.json").read_text())
    section = parse(render_html(report_from_results(one))).find("section", id="worst-attacker")
    assert not section.find_all("table") and "One attacker per system" in section.text()


GRID = """
[grid]
calibrators = ["logistic"]
priors = ["uniform"]
seeds = [0]

[grid.bootstrap]
n_boot = 100

[systems."anon/weak"]
dev = "weak_dev.npz"
eval = "weak_eval.npz"

[systems."anon/strong"]
dev = "strong_dev.npz"
eval = "strong_eval.npz"

[systems.other]
dev = "other_dev.npz"
eval = "other_eval.npz"
"""


@pytest.mark.slow
def test_lidframe_report_judges_each_system_on_its_worst_attacker(tmp_path):
    """A grid of score sets named SYSTEM/ATTACKER: summary.json, the printed table and the exit status."""
    import pandas as pd

    for k, (name, leakage) in enumerate({"weak": 0.0, "strong": 0.7, "other": 0.0}.items()):
        dev, ev = simulate_system(leakage=leakage, seed=k, n_enrolled=10, trials_per_speaker=5)
        dev.save(tmp_path / f"{name}_dev.npz")
        ev.save(tmp_path / f"{name}_eval.npz")
    (tmp_path / "grid.toml").write_text(GRID)
    (tmp_path / "policy.toml").write_text(POLICY)
    code, _ = run_cli(["grid", tmp_path / "grid.toml", "--out", tmp_path / "out"])
    assert code == 0
    code, printed = run_cli(["report", tmp_path / "out", "--policy", tmp_path / "policy.toml", "--no-figures"])
    table = pd.read_csv(tmp_path / "out" / "report" / "table.csv")
    # the cells' own numbers: anon's strong attacker alone exceeds the limit, its weak one meets it
    cells = {row.system: row for row in table.itertuples()}
    assert cells["anon/strong"].alid_low > 0.5 and cells["anon/weak"].alid_high <= 0.5
    assert cells["other"].alid_high <= 0.5
    assert code == EXIT_NOT_MET
    summary = json.loads((tmp_path / "out" / "report" / "summary.json").read_text())
    assert summary["systems"] == ["anon", "other"] and summary["cells"] == 3
    block = summary["worst_case"]
    anon = block["systems"]["anon"]
    assert sorted(anon["attackers"]) == ["strong", "weak"]
    for key in ("alid", "lid_q99"):
        best = max(("strong", "weak"), key=lambda a: getattr(cells[f"anon/{a}"], key))
        assert anon[key]["attacker"] == best
        assert anon[key]["estimate"] == pytest.approx(getattr(cells[f"anon/{best}"], key), rel=1e-9)
        assert anon[key]["low"] == pytest.approx(getattr(cells[f"anon/{best}"], f"{key}_low"), rel=1e-9)
    assert anon["verdict"]["outcome"] == "fail" and anon["verdict"]["limits"][0]["attacker"] == "strong"
    assert block["systems"]["other"]["verdict"]["outcome"] == "pass"
    assert block["outcome"] == "fail"
    assert "worst case across attackers" in printed
    assert "anon: ALID <= 0.5 bits: fail under strong" in printed
    assert not math.isnan(anon["alid"]["estimate"])
