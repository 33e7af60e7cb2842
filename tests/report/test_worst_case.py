"""The worst case across calibrators and priors: the analysis, the page's headline, ``lidframe sensitivity --report``.

The worst case is recomputed here from one ``lidframe.evaluate`` per (calibrator, prior)
-- never from the analysis's own rows -- and compared with the record, the console
table, the JSON and the page.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import lidframe
from lidframe.analyses.sensitivity import sensitivity
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from tests.bad_input.conftest import assert_refused
from tests.report.conftest import CREATED, run_cli
from tests.report.htmltree import parse

CALIBRATORS = ["logistic", "isotonic", "beta"]
PRIORS = ["uniform", "watchlist?ids=eval-spk000,eval-spk001&weight=4"]
#: metric -> the direction that favours the attacker (docs/calibrators.md, "Sensitivity").
DIRECTIONS = {"alid": max, "pdr": max, "lid_q99": max, "lid_max": max, "cllr": min}


@pytest.fixture(scope="module")
def sets():
    return simulate_system(
        leakage=0.4, leaky_share=0.2, leaky_leakage=0.8, seed=21, n_enrolled=12, trials_per_speaker=5
    )


@pytest.fixture(scope="module")
def by_hand(sets):
    """(calibrator, prior) -> the summary of lidframe.evaluate under them, one call each."""
    dev, ev = sets
    return {(c, p): lidframe.evaluate(dev, ev, calibrator=c, prior=p).summary for p in PRIORS for c in CALIBRATORS}


def worst_by_hand(by_hand, metric):
    pick = DIRECTIONS[metric]
    value = pick(s[metric] for s in by_hand.values())
    (where,) = [key for key, s in by_hand.items() if s[metric] == value][:1]
    return value, where


def test_sensitivity_over_calibrators_and_priors_is_every_evaluation(sets, by_hand):
    dev, ev = sets
    result = sensitivity(dev, ev, CALIBRATORS, prior=PRIORS)
    assert [(r.calibrator, r.prior) for r in result.rows] == list(by_hand)
    for row in result.rows:
        summary = by_hand[(row.calibrator, row.prior)]
        for metric in DIRECTIONS:
            assert row[metric] == summary[metric], (row.calibrator, row.prior, metric)
    for metric in DIRECTIONS:
        value, (calibrator, prior) = worst_by_hand(by_hand, metric)
        assert result.worst_case[metric] == {"value": value, "calibrator": calibrator, "prior": prior}, metric
        values = [s[metric] for s in by_hand.values()]
        assert result.spread[metric] == pytest.approx(max(values) - min(values), abs=1e-12)
    assert set(result.results) == {f"{c} · {p}" for c, p in by_hand}
    json.dumps(result.to_dict())


def test_one_prior_keeps_the_rows_and_keys_of_before(sets):
    dev, ev = sets
    result = sensitivity(dev, ev, ["logistic", "isotonic"])
    assert list(result.results) == ["logistic", "isotonic"] and {r.prior for r in result.rows} == {"uniform"}
    assert result.worst_case["alid"]["prior"] == "uniform"


def test_priors_repeated_or_of_both_kinds_are_refused(sets):
    dev, ev = sets
    with pytest.raises(InputError, match="priors repeated"):
        sensitivity(dev, ev, ["logistic"], prior=["uniform", "uniform"])
    with pytest.raises(InputError, match="open-set.*closed-set"):
        sensitivity(dev, ev, ["logistic"], prior=["uniform", "uniform?outside=0.2"])
    with pytest.raises(InputError, match="at least one prior"):
        sensitivity(dev, ev, ["logistic"], prior=[])


def worst_items(card) -> dict[str, dict]:
    block = card.find("div", **{"class": "worst-case"})
    return {d.attrs["data-worst"]: d.attrs for d in block.find_all("div") if "data-worst" in d.attrs}


def test_the_worst_case_is_a_headline_of_the_system(sets, by_hand):
    from lidframe.report import render_html, report_from_results

    dev, ev = sets
    result = sensitivity(dev, ev, CALIBRATORS, prior=PRIORS)
    report = report_from_results(
        {"uneven": lidframe.evaluate(dev, ev), "other": lidframe.evaluate(dev, ev)},
        sensitivity={"uneven": result},
        created=CREATED,
    )
    root = parse(render_html(report))
    card, other = root.find_all("article")
    items = worst_items(card)
    assert list(items) == ["alid", "lid_q99", "lid_max", "pdr"]
    for metric, found in items.items():
        value, (calibrator, prior) = worst_by_hand(by_hand, metric)
        assert float(found["data-sort"]) == value, metric
        assert (found["data-calibrator"], found["data-prior"]) == (calibrator, prior), metric
    heading = card.find("div", **{"class": "worst-case"}).find("h4").text()
    assert heading == f"Worst case over {len(CALIBRATORS)} calibrators × {len(PRIORS)} priors"
    assert not other.find_all("div", **{"class": "worst-case"})  # no sensitivity record: no worst case
    assert root.find("p", id="worst-case-note")


def test_without_a_sensitivity_record_there_is_no_worst_case(rendered):
    root = parse(rendered["evaluate"][1])
    assert not root.find_all("div", **{"class": "worst-case"}) and not root.find_all("p", id="worst-case-note")


# ------------------------------------------------------------------ lidframe sensitivity --report
@pytest.fixture(scope="module")
def cli_run(sets, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sensitivity")
    dev, ev = sets
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    argv = ["sensitivity", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz"]
    argv += ["--calibrators", ",".join(CALIBRATORS), *(x for p in PRIORS for x in ("--prior", p))]
    argv += ["--json", folder / "s.json", "--report", folder / "audit", "--name", "anon uneven"]
    code, out = run_cli(argv)
    assert code == 0, out
    return folder, out, json.loads((folder / "s.json").read_text())


def test_sensitivity_report_page_has_the_worst_case_of_the_json(cli_run, by_hand):
    folder, out, record = cli_run
    page = folder / "audit" / "report.html"
    assert [line for line in out.splitlines() if line.strip()][-1] == f"wrote the audit report to {page}"
    root = parse(page.read_text(encoding="utf-8"))
    assert root.find("p", **{"class": "meta"}).text().startswith("sensitivity report · 1 system ·")
    (card,) = root.find_all("article")
    assert card.find("h3").text() == "anon uneven"  # --name, not the file's stem
    # the headline is the first calibrator under the first prior
    first = by_hand[(CALIBRATORS[0], PRIORS[0])]
    alid = next(d for d in card.find_all("div") if d.attrs.get("data-metric") == "ALID (bits)")
    assert float(alid.attrs["data-sort"]) == first["alid"]
    rows = record["rows"]
    assert [(r["calibrator"], r["prior"]) for r in rows] == list(by_hand)
    for metric, found in worst_items(card).items():
        best = DIRECTIONS[metric](r[metric] for r in rows)
        assert float(found["data-sort"]) == best == record["worst_case"][metric]["value"]
        assert found["data-prior"] == record["worst_case"][metric]["prior"]
    # the calibrator sensitivity table: one row per calibrator and prior, with a prior column
    table = next(t for t in root.find_all("table") if t.attrs.get("id", "").startswith("sensitivity-"))
    headers = [th.text() for th in table.find("thead").find_all("th")]
    body = [tr.find_all("td") for tr in table.find("tbody").find_all("tr")]
    assert [(r[0].text(), r[headers.index("prior")].text()) for r in body] == list(by_hand)
    # the console: P1, P2 name the priors, and the worst case says which
    assert "\nP1 = prior uniform\nP2 = prior watchlist?" in out
    assert "  under prior" in out
    assert root.find("section", id="provenance")


def test_sensitivity_report_target_is_checked_before_any_work(sets, tmp_path, capsys, monkeypatch):
    import lidframe.analyses.sensitivity as analysis

    monkeypatch.setattr(analysis, "sensitivity", lambda *a, **k: pytest.fail("computed before checking --report"))
    dev, ev = sets
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    (tmp_path / "notes.txt").write_text("mine")
    argv = ["sensitivity", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz"]
    assert_refused(
        [*argv, "--report", tmp_path / "notes.txt"], capsys, expect=["--report", "not a folder"], watch=[tmp_path]
    )
    assert_refused(
        [*argv, "--prior", "uniform", "--prior", "nosuchprior"], capsys, expect=["nosuchprior"], watch=[tmp_path]
    )


def test_sensitivity_console_with_one_prior_is_as_before(cli_run, sets, tmp_path, capsys):
    """One prior: no prior column, no legend, the worst case named by calibrator."""
    from lidframe.cli.sensitivity import format_sensitivity_table

    dev, ev = sets
    table = format_sensitivity_table(sensitivity(dev, ev, ["logistic", "isotonic"]))
    header = table.splitlines()[0].split()
    assert header[:2] == ["calibrator", "ALID"] and "P1 =" not in table and "under prior" not in table
    assert table.endswith("devLogLoss min)")
    assert not math.isnan(float(table.splitlines()[2].split()[1]))
    assert np.isfinite([float(x) for x in table.splitlines()[1].split()[1:]]).all()
