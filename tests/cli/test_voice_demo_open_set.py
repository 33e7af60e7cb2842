"""The real-voice demo's open set and calibrator sensitivity, piece by piece (its synthesis is too slow for a test).

Score files with outsider trials stand in for the attackers' (the demo's rows, simulated
scores): each row's closed-set evaluation is that of its score sets without the outsider
trials, its open-set one is under :data:`~lidframe.demo.voice.plan.OPEN_SET_PRIOR`, its
sensitivity is one evaluation per calibrator; the printed table ends with the open-set
columns, and the page has the sections "Open set" and, per row, "Calibrator sensitivity".
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import lidframe
from lidframe.data.simulate import simulate_system
from lidframe.demo.voice import OPEN_SET_PRIOR, SENSITIVITY_CALIBRATORS, demo_rows
from lidframe.demo.voice.plan import _DemoRun
from lidframe.demo.voice.run import _evaluate_open_set, _evaluate_rows, _sensitivity_rows

ROWS = [row for row in demo_rows() if row.label in ("plain/ge2e", "mcadams/ge2e/ignorant", "random")]


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """row label -> split -> a score file of 8 enrolled speakers (4 trials each) and 3 outsiders (4 trials each)."""
    folder = tmp_path_factory.mktemp("scores")
    found = {}
    for k, row in enumerate(ROWS):
        dev, ev = simulate_system(leakage=0.6 - 0.3 * k, seed=k, n_enrolled=8, trials_per_speaker=4, n_outsiders=3)
        found[row.label] = {}
        for split, data in (("dev", dev), ("eval", ev)):
            path = folder / f"{k}_{split}.npz"
            data.save(path)
            found[row.label][split] = path
    return found


@pytest.fixture(scope="module")
def evaluated(scored, tmp_path_factory):
    lines: list[str] = []
    run = _DemoRun(tmp_path_factory.mktemp("out"), seed=0, epochs=1, jobs=1, progress=False, log=lines.append)
    closed = _evaluate_rows(run, ROWS, scored, n_boot=100)
    return closed, _evaluate_open_set(run, ROWS, scored), _sensitivity_rows(run, ROWS, scored), lines


def test_the_closed_set_rows_are_those_of_the_score_sets_without_their_outsiders(scored, evaluated):
    from lidframe.data.scoreset import ScoreSet
    from lidframe.stats.bootstrap import Bootstrap

    closed, _, _, _ = evaluated
    for row in ROWS:
        dev, ev = (ScoreSet.load(scored[row.label][split]) for split in ("dev", "eval"))
        assert ev.n_outsider_trials == 12 and dev.n_outsider_trials == 12
        alone = lidframe.evaluate(
            dev.closed_set(), ev.closed_set(), bootstrap=Bootstrap(n_boot=100, unit="speaker", seed=0)
        )
        mine, theirs = closed[row.label].summary.to_dict(), alone.summary.to_dict()
        for key in ("alid", "lid_max", "lid_q99", "pdr", "eer", "n_enrolled_trials", "intervals"):
            assert mine[key] == theirs[key], (row.label, key)
        assert mine["n_outsider_trials"] == 12


def test_the_open_set_rows_give_every_trial_a_lid_under_the_demos_prior(scored, evaluated):
    closed, opened, _, lines = evaluated
    assert list(opened) == [row.label for row in ROWS]
    for label, result in opened.items():
        assert result.outside == pytest.approx(0.2) and result.summary.calibrator == "logistic"
        outsider = np.asarray(result.is_outsider, dtype=bool)
        assert outsider.sum() == 12 and np.isfinite(result.lid).all()
        # the outsiders' ALID is their mean membership disclosure, at most -log2 0.2
        assert result.summary.open_set.outsider.alid == pytest.approx(result.lid[outsider].mean(), abs=1e-12)
        assert result.lid[outsider].max() <= -np.log2(0.2) + 1e-9
        assert np.array_equal(result.trial_ids, closed[label].trial_ids)
    assert f"[evaluate] the open set: 3 rows again under {OPEN_SET_PRIOR} (12 outsider eval trials)" in lines


def test_without_outsider_trials_there_is_no_open_set(tmp_path):
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=6, trials_per_speaker=3)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    run = _DemoRun(tmp_path, seed=0, epochs=1, jobs=1, progress=False, log=lambda _: None)
    paths = {row.label: {"dev": tmp_path / "dev.npz", "eval": tmp_path / "eval.npz"} for row in ROWS}
    assert _evaluate_open_set(run, ROWS, paths) == {}


def test_each_rows_sensitivity_is_one_evaluation_per_calibrator(scored, evaluated):
    _, _, sensitivity, _ = evaluated
    row = ROWS[1]
    record = sensitivity[row.label]
    assert [r.calibrator for r in record.rows] == list(SENSITIVITY_CALIBRATORS)
    assert "identity" not in SENSITIVITY_CALIBRATORS
    for found in record.rows:
        alone = lidframe.evaluate(scored[row.label]["dev"], scored[row.label]["eval"], calibrator=found.calibrator)
        assert found.alid == pytest.approx(alone.summary.alid, abs=1e-12)
        assert found.lid_max == pytest.approx(alone.summary.lid_max, abs=1e-12)
    best = max(record.rows, key=lambda r: r.alid)
    assert (
        record.worst_case["alid"]["value"] == pytest.approx(best.alid)
        and record.worst_case["alid"]["calibrator"] == best.calibrator
    )


def test_the_printed_table_ends_with_the_open_set_columns(evaluated):
    from lidframe.demo.voice import demo_text

    closed, opened, _, _ = evaluated
    text = demo_text(ROWS, closed, {}, "the utility column is left out: test", open_set=opened)
    lines = text.splitlines()
    assert lines[0].split()[0] == "system/attacker/scenario" and lines[0].split()[-2:] == ["outALID", "misattr"]
    for row, line in zip(ROWS, lines[1:]):
        result = opened[row.label]
        outsider = np.asarray(result.is_outsider, dtype=bool)
        out_alid, misattr = (float(v) for v in line.split()[-2:])
        assert out_alid == pytest.approx(result.lid[outsider].mean(), abs=6e-4)
        assert misattr == pytest.approx(np.mean(result.top_posterior[outsider] > 0.5), abs=6e-4)
        assert line.split()[0] == row.label and line.split()[4] == "12"  # the table's "out" column
    plain = demo_text(ROWS, closed, {}, "the utility column is left out: test")
    assert "outALID" not in plain.splitlines()[0]


@pytest.mark.slow  # rendering 3 rows' sensitivity and open-set figures
def test_the_demo_page_has_the_open_set_and_each_rows_sensitivity(evaluated, tmp_path):
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from lidframe.demo import write_demo_outputs
    from tests.report.htmltree import parse

    closed, opened, sensitivity, _ = evaluated
    page = write_demo_outputs(
        tmp_path, closed, table="t", record={"open_set": {"prior": OPEN_SET_PRIOR}}, inputs={}, title="demo",
        notes=[], settings={}, systems={row.label: row.system for row in ROWS}, ladder=ROWS, log=lambda _: None,
        open_set=opened, sensitivity=sensitivity,
    )  # fmt: skip
    root = parse(page.read_text(encoding="utf-8"))
    section = root.find("section", id="open-set")
    assert section.find("table", id="open-set-table") is not None
    shown = {tr.find_all("td")[0].text().strip() for tr in section.find("tbody").find_all("tr")}
    assert shown == {row.label for row in ROWS}
    captions = [c.text() for c in root.find_all("caption")]
    for row in ROWS:
        assert any(c.startswith(f"Calibrator sensitivity of {row.label}") for c in captions), row.label
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert set(summary["sensitivity"]) == {row.label for row in ROWS}
    for label, record in summary["sensitivity"].items():
        assert [r["calibrator"] for r in record["rows"]] == list(SENSITIVITY_CALIBRATORS)
        assert record["worst_case"]["alid"]["value"] == pytest.approx(sensitivity[label].worst_case["alid"]["value"])
    # the closed set stays the page's headline and per-trial table
    frame = (tmp_path / "per_trial.csv").read_text().splitlines()
    assert len(frame) == 1 + sum(r.lid.size for r in closed.values())


def test_a_calibrator_that_cannot_fit_a_row_is_left_out_of_its_sensitivity_and_said(scored, tmp_path, monkeypatch):
    """A fused row of a tiny corpus had a dev class without spread: gaussian could not fit it and the demo stopped.

    Here gaussian is made to refuse every dev set as the Gaussian back end refused that one; the row's
    sensitivity keeps the other calibrators (equal to a sensitivity over them alone), and the log names
    the one left out and why.
    """
    from lidframe.analyses import sensitivity as module
    from lidframe.demo.voice import SENSITIVITY_CALIBRATORS
    from lidframe.errors import InputError

    real = module.sensitivity

    def refusing(dev, eval_, calibrators, *args, **kwargs):
        if "gaussian" in calibrators:
            raise InputError("fitting calibrator gaussian: a class of dev scores has zero variance")
        return real(dev, eval_, calibrators, *args, **kwargs)

    monkeypatch.setattr(module, "sensitivity", refusing)
    lines: list[str] = []
    run = _DemoRun(tmp_path / "out", seed=0, epochs=1, jobs=1, progress=False, log=lines.append)
    row = ROWS[0]
    found = _sensitivity_rows(run, [row], {row.label: scored[row.label]})
    others = [c for c in SENSITIVITY_CALIBRATORS if c != "gaussian"]
    assert [r.calibrator for r in found[row.label].rows] == others
    alone = real(scored[row.label]["dev"], scored[row.label]["eval"], others)
    assert found[row.label].to_dict() == alone.to_dict()
    assert f"sensitivity {row.label}: calibrator gaussian left out: fitting calibrator gaussian: a class" in "\n".join(
        lines
    )
